// Anonymous private mappings the program makes itself (the allocator's own mappings go through
// glibc's internal mmap and never reach these hooks). Reservations (PROT_NONE) are not memory
// and are not counted; the page map makes every unmap and remap exact, whatever part of
// whichever mapping it touches.
#include <sys/mman.h>

#include <cstdarg>
#include <cstdint>

#include "counting/page_map.hpp"
#include "hooks/hooks.hpp"

using namespace memwatch::shim;

namespace {

std::uintptr_t address(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

bool counted_kind(int prot, int flags) {
  return (flags & MAP_ANONYMOUS) != 0 && (flags & MAP_TYPE) == MAP_PRIVATE && prot != PROT_NONE;
}

void ensure_ready() {
  if (__builtin_expect(!g_ready.load(std::memory_order_relaxed), 0)) real_functions_resolve();
}

// `caller` is the hooked function's return address: the shim's own mappings (its jemalloc's)
// are not counted.
void* mmap_hook(void* addr, std::size_t len, int prot, int flags, int fd, off_t offset,
                const void* caller) {
  ensure_ready();
  void* p = g_real.mmap(addr, len, prot, flags, fd, offset);
  if (p == MAP_FAILED || tls_counters.internal != 0 || real_functions_called_from_shim(caller))
    return p;
  if (counted_kind(prot, flags)) {
    counters_mmap_add(page_map_set(address(p), len));
  } else if ((flags & MAP_FIXED) != 0) {
    // Something else now stands where counted pages were.
    counters_mmap_add(-page_map_clear(address(p), len));
  }
  return p;
}

}  // namespace

MEMWATCH_HOOK void* mmap(void* addr, std::size_t len, int prot, int flags, int fd, off_t offset) {
  return mmap_hook(addr, len, prot, flags, fd, offset, __builtin_return_address(0));
}

MEMWATCH_HOOK void* mmap64(void* addr, std::size_t len, int prot, int flags, int fd, off_t offset) {
  return mmap_hook(addr, len, prot, flags, fd, offset, __builtin_return_address(0));
}

MEMWATCH_HOOK int munmap(void* addr, std::size_t len) {
  ensure_ready();
  if ((address(addr) & (kPageSize - 1)) != 0 || len == 0) return g_real.munmap(addr, len);
  // Cleared first so that a new mapping at the same address, counted by another thread right
  // after the real munmap, is not cleared by us.
  const std::int64_t cleared = page_map_clear(address(addr), len);
  const int r = g_real.munmap(addr, len);
  if (r == 0) {
    counters_mmap_add(-cleared);
  } else if (cleared != 0) {
    page_map_set(address(addr), len);
  }
  return r;
}

MEMWATCH_HOOK void* mremap(void* old_addr, std::size_t old_len, std::size_t new_len, int flags,
                           ...) {
  ensure_ready();
  void* new_addr = nullptr;
  if ((flags & MREMAP_FIXED) != 0) {
    va_list args;
    va_start(args, flags);
    new_addr = va_arg(args, void*);
    va_end(args);
  }
  const bool counted = page_map_count(address(old_addr), old_len) != 0;
  void* p = g_real.mremap(old_addr, old_len, new_len, flags, new_addr);
  if (p == MAP_FAILED || !counted) return p;
  const std::int64_t removed = page_map_clear(address(old_addr), old_len);
  const std::int64_t added = page_map_set(address(p), new_len);
  counters_mmap_add(added - removed);
  return p;
}
