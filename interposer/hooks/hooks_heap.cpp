// The malloc family. Each hook is the fast path: one branch for the rare cases, the real call,
// and a thread-local counter update. Bytes are counted as the allocator's usable size, the
// same figure on allocation and on free, so live bytes never drift.
#include <errno.h>
#include <unistd.h>

#include <cstring>

#include "hooks/hooks.hpp"

using namespace memwatch::shim;

namespace {

// The shim's own allocation, out of line; the real allocator, uncounted, if the arena cannot
// serve it (its range could not be reserved, or the bootstrap megabyte ran out).
[[gnu::noinline]] void* shim_alloc(std::size_t size, std::size_t alignment, bool zero) noexcept {
  if (void* p = shim_arena_alloc(size, alignment, zero)) return p;
  if (!g_ready.load(std::memory_order_acquire)) return nullptr;
  if (alignment > alignof(std::max_align_t)) return g_real.aligned_alloc(alignment, size);
  return zero ? g_real.calloc(1, size) : g_real.malloc(size);
}

bool power_of_two(std::size_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

}  // namespace

MEMWATCH_HOOK void* malloc(std::size_t size) {
  if (hooks_shim_call()) return shim_alloc(size, 0, false);
  void* p = g_real.malloc(size);
  hooks_count_alloc(p);
  return p;
}

MEMWATCH_HOOK void free(void* p) {
  if (p == nullptr) return;
  if (shim_arena_contains(p)) return shim_arena_free(p);
  // Counted before the real free, so the block cannot be reused and counted in between.
  counters_heap_add(-hooks_usable(p));
  g_real.free(p);
}

MEMWATCH_HOOK void* calloc(std::size_t count, std::size_t size) {
  std::size_t total = 0;
  if (__builtin_mul_overflow(count, size, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  if (hooks_shim_call()) return shim_alloc(total, 0, true);
  void* p = g_real.calloc(count, size);
  hooks_count_alloc(p);
  return p;
}

MEMWATCH_HOOK void* realloc(void* p, std::size_t size) {
  if (p == nullptr) return malloc(size);
  if (shim_arena_contains(p)) return shim_arena_realloc(p, size);
  // A program block stays the program's even when memwatch's own code resizes it.
  const std::int64_t old_bytes = hooks_usable(p);
  void* q = g_real.realloc(p, size);
  if (q != nullptr) {
    counters_heap_add(hooks_usable(q) - old_bytes);
  } else if (size == 0) {  // realloc(p, 0) freed p
    counters_heap_add(-old_bytes);
  }
  return q;
}

MEMWATCH_HOOK void* reallocarray(void* p, std::size_t count, std::size_t size) {
  std::size_t total = 0;
  if (__builtin_mul_overflow(count, size, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(p, total);
}

MEMWATCH_HOOK int posix_memalign(void** out, std::size_t alignment, std::size_t size) {
  if (alignment < sizeof(void*) || !power_of_two(alignment)) return EINVAL;
  if (hooks_shim_call()) {
    void* p = shim_alloc(size, alignment, false);
    if (p == nullptr) return ENOMEM;
    *out = p;
    return 0;
  }
  const int r = g_real.posix_memalign(out, alignment, size);
  if (r == 0) hooks_count_alloc(*out);
  return r;
}

MEMWATCH_HOOK void* aligned_alloc(std::size_t alignment, std::size_t size) {
  if (hooks_shim_call()) return shim_alloc(size, alignment, false);
  void* p = g_real.aligned_alloc(alignment, size);
  hooks_count_alloc(p);
  return p;
}

MEMWATCH_HOOK void* memalign(std::size_t alignment, std::size_t size) {
  if (hooks_shim_call()) return shim_alloc(size, alignment, false);
  void* p = g_real.memalign(alignment, size);
  hooks_count_alloc(p);
  return p;
}

MEMWATCH_HOOK void* valloc(std::size_t size) {
  if (hooks_shim_call()) return shim_alloc(size, static_cast<std::size_t>(getpagesize()), false);
  void* p = g_real.valloc(size);
  hooks_count_alloc(p);
  return p;
}

MEMWATCH_HOOK void* pvalloc(std::size_t size) {
  const auto page = static_cast<std::size_t>(getpagesize());
  if (hooks_shim_call()) return shim_alloc((size + page - 1) & ~(page - 1), page, false);
  void* p = g_real.pvalloc(size);
  hooks_count_alloc(p);
  return p;
}

MEMWATCH_HOOK std::size_t malloc_usable_size(void* p) {
  if (p == nullptr) return 0;
  if (shim_arena_contains(p)) return shim_arena_usable(p);
  return g_real.malloc_usable_size(p);
}
