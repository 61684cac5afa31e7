// The shim's own memory, kept apart from the program's so that it is never counted and never
// fragments the program's heap: one reserved range of address space, whose first megabyte
// serves the allocations made while the real allocator is still being looked up (dlsym may
// calloc), and whose rest backs a private jemalloc arena. A pointer is the shim's exactly when
// it lies in the range: one subtraction and one comparison, on every free.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memwatch::shim {

namespace arena_detail {
extern std::uintptr_t g_begin;
extern std::uintptr_t g_size;
}  // namespace arena_detail

inline bool shim_arena_contains(const void* p) noexcept {
  return reinterpret_cast<std::uintptr_t>(p) - arena_detail::g_begin < arena_detail::g_size;
}

// Reserves the range (a raw syscall, so it works before anything else); idempotent.
void shim_arena_reserve() noexcept;
// Creates the jemalloc arena over the range; until then allocations are bumped from its start.
void shim_arena_create() noexcept;

void* shim_arena_alloc(std::size_t size, std::size_t alignment, bool zero) noexcept;
void shim_arena_free(void* p) noexcept;
void* shim_arena_realloc(void* p, std::size_t size) noexcept;
std::size_t shim_arena_usable(void* p) noexcept;

}  // namespace memwatch::shim
