// Which pages of the address space hold anonymous memory the program mapped itself, one bit a
// page, so that munmap and mremap of any part of any mapping (including ones memwatch never
// counted, such as file mappings) change the mmap counter by exactly the pages that were counted.
//
// Lock-free: a static top level of 2^16 leaves, each a lazily mapped 128 KiB bitmap covering
// 4 GiB of address space; bits change with atomic fetch_or / fetch_and, so concurrent maps and
// unmaps of neighbouring pages stay exact.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memwatch::shim {

inline constexpr std::uintptr_t kPageSize = 4096;

// Marks [addr, addr+len) as counted; returns the bytes that were not counted before.
std::int64_t page_map_set(std::uintptr_t addr, std::size_t len) noexcept;
// Unmarks [addr, addr+len); returns the bytes that were counted.
std::int64_t page_map_clear(std::uintptr_t addr, std::size_t len) noexcept;
// The counted bytes in [addr, addr+len), without changing anything.
std::int64_t page_map_count(std::uintptr_t addr, std::size_t len) noexcept;

}  // namespace memwatch::shim
