// What every hook shares: the one-branch test that sends the rare cases (not initialised yet,
// or memwatch's own threads) to an out-of-line slow path, and the heap counting itself.
#pragma once

#include <cstddef>
#include <cstdint>

#include "allocator/real_functions.hpp"
#include "allocator/shim_arena.hpp"
#include "counting/counters.hpp"

#define MEMWATCH_HOOK extern "C" __attribute__((visibility("default")))

namespace memwatch::shim {

// True when the calling thread runs memwatch's own code (or the real functions are being looked
// up): its allocations are the shim's, served from the shim's arena.
inline bool hooks_shim_call() noexcept {
  return __builtin_expect(tls_counters.internal != 0, 0);
}

// The usable size of a block the program holds. For glibc's allocator it is read from the
// chunk header in the block's own cache line (what glibc's malloc_usable_size computes for a
// chunk in use, without the call and without touching the next chunk); for any other allocator
// it is asked.
inline std::int64_t hooks_usable(void* p) noexcept {
  if (__builtin_expect(g_real_is_glibc, 1)) {
    // Chunk size in the high bits; bit 1 (IS_MMAPPED) costs a second header word.
    const std::size_t header = static_cast<const std::size_t*>(p)[-1];
    return static_cast<std::int64_t>((header & ~std::size_t{7}) - 8 - ((header & 2) << 2));
  }
  return static_cast<std::int64_t>(g_real.malloc_usable_size(p));
}

inline void hooks_count_alloc(void* p) noexcept {
  if (p != nullptr) counters_heap_add(hooks_usable(p));
}

}  // namespace memwatch::shim
