#include "allocator/shim_arena.hpp"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "allocator/private_jemalloc.hpp"

namespace memwatch::shim {

namespace arena_detail {
std::uintptr_t g_begin = 0;
std::uintptr_t g_size = 0;
}  // namespace arena_detail

namespace {

using arena_detail::g_begin;
using arena_detail::g_size;

// Address space only: untouched pages cost nothing, and the shim needs a few MiB at most.
constexpr std::size_t kReserveBytes = std::size_t{256} << 20;
constexpr std::size_t kBootstrapBytes = std::size_t{1} << 20;
constexpr std::size_t kHeader = 16;  // bootstrap blocks carry their size, 16-byte aligned

std::atomic<std::uintptr_t> g_bootstrap_cursor{0};
std::atomic<std::uintptr_t> g_extent_cursor{0};
std::atomic<unsigned> g_arena{0};  // 0: not created (jemalloc's arena 0 is never ours)

bool in_bootstrap(const void* p) noexcept {
  return reinterpret_cast<std::uintptr_t>(p) - g_begin < kBootstrapBytes;
}

std::uintptr_t align_up(std::uintptr_t v, std::uintptr_t a) noexcept {
  return (v + a - 1) & ~(a - 1);
}

// Bumps from the first megabyte. Never freed: dlsym's few small blocks are all it serves.
void* bootstrap_alloc(std::size_t size, std::size_t alignment) noexcept {
  if (alignment < kHeader) alignment = kHeader;
  std::uintptr_t cur = g_bootstrap_cursor.load(std::memory_order_relaxed);
  for (;;) {
    const std::uintptr_t block = align_up(cur + kHeader, alignment);
    const std::uintptr_t next = block + size;
    if (next > g_begin + kBootstrapBytes) return nullptr;
    if (g_bootstrap_cursor.compare_exchange_weak(cur, next, std::memory_order_relaxed)) {
      reinterpret_cast<std::size_t*>(block)[-1] = size;
      return reinterpret_cast<void*>(block);
    }
  }
}

// jemalloc extent hooks over the rest of the range: extents are bumped, never returned to the
// kernel (dalloc opts out, so jemalloc retains and reuses them), always committed.
void* extent_alloc(extent_hooks_t*, void* new_addr, std::size_t size, std::size_t alignment,
                   bool* zero, bool* commit, unsigned) {
  if (new_addr != nullptr) return nullptr;
  std::uintptr_t cur = g_extent_cursor.load(std::memory_order_relaxed);
  for (;;) {
    const std::uintptr_t block = align_up(cur, alignment);
    const std::uintptr_t next = block + size;
    if (next > g_begin + g_size) return nullptr;
    if (g_extent_cursor.compare_exchange_weak(cur, next, std::memory_order_relaxed)) {
      *zero = true;  // fresh anonymous pages
      *commit = true;
      return reinterpret_cast<void*>(block);
    }
  }
}
bool extent_dalloc(extent_hooks_t*, void*, std::size_t, bool, unsigned) {
  return true;
}
void extent_destroy(extent_hooks_t*, void*, std::size_t, bool, unsigned) {}
bool extent_commit(extent_hooks_t*, void*, std::size_t, std::size_t, std::size_t, unsigned) {
  return false;
}
bool extent_split(extent_hooks_t*, void*, std::size_t, std::size_t, std::size_t, bool, unsigned) {
  return false;
}
bool extent_merge(extent_hooks_t*, void*, std::size_t, void*, std::size_t, bool, unsigned) {
  return false;
}

extent_hooks_t g_extent_hooks = {
    extent_alloc,         extent_dalloc,          extent_destroy,           extent_commit,
    /*decommit*/ nullptr, /*purge_lazy*/ nullptr, /*purge_forced*/ nullptr, extent_split,
    extent_merge,
};

int arena_flags() noexcept {
  return static_cast<int>(MALLOCX_ARENA(g_arena.load(std::memory_order_acquire))) |
         MALLOCX_TCACHE_NONE;
}

}  // namespace

void shim_arena_reserve() noexcept {
  if (g_size != 0) return;
  const int saved_errno = errno;
  const long r = syscall(SYS_mmap, nullptr, kReserveBytes, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  errno = saved_errno;
  if (r == -1) return;  // shim_arena_contains stays false; allocations fall back, see alloc
  g_begin = static_cast<std::uintptr_t>(r);
  g_bootstrap_cursor.store(g_begin, std::memory_order_relaxed);
  g_extent_cursor.store(g_begin + kBootstrapBytes, std::memory_order_relaxed);
  g_size = kReserveBytes;
}

void shim_arena_create() noexcept {
  if (g_size == 0 || g_arena.load(std::memory_order_relaxed) != 0) return;
  unsigned arena = 0;
  std::size_t arena_size = sizeof arena;
  extent_hooks_t* hooks = &g_extent_hooks;
  if (je_mallctl("arenas.create", &arena, &arena_size, &hooks, sizeof hooks) == 0 && arena != 0)
    g_arena.store(arena, std::memory_order_release);
}

void* shim_arena_alloc(std::size_t size, std::size_t alignment, bool zero) noexcept {
  if (size == 0) size = 1;
  if (alignment < alignof(std::max_align_t)) alignment = alignof(std::max_align_t);
  if (g_arena.load(std::memory_order_acquire) != 0) {
    int flags = arena_flags() | static_cast<int>(MALLOCX_ALIGN(alignment));
    if (zero) flags |= MALLOCX_ZERO;
    if (void* p = je_mallocx(size, flags)) return p;
  }
  return bootstrap_alloc(size, alignment);  // bootstrap memory is fresh, hence zero
}

void shim_arena_free(void* p) noexcept {
  if (in_bootstrap(p)) return;
  je_dallocx(p, arena_flags());
}

std::size_t shim_arena_usable(void* p) noexcept {
  if (in_bootstrap(p)) return reinterpret_cast<std::size_t*>(p)[-1];
  return je_sallocx(p, 0);
}

void* shim_arena_realloc(void* p, std::size_t size) noexcept {
  if (size == 0) {
    shim_arena_free(p);
    return nullptr;
  }
  if (!in_bootstrap(p)) return je_rallocx(p, size, arena_flags());
  void* q = shim_arena_alloc(size, 0, false);
  if (q != nullptr) std::memcpy(q, p, std::min(size, reinterpret_cast<std::size_t*>(p)[-1]));
  return q;
}

}  // namespace memwatch::shim
