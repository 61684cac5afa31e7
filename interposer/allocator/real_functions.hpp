// The functions the hooks stand in front of: the next definition after the shim (glibc's, or
// another preloaded allocator's), or the shim's private jemalloc's when MEMWATCH_ALLOCATOR=jemalloc
// hosts the program's heap. Looked up once, on the first hooked call of the process.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace memwatch::shim {

struct RealFunctions {
  void* (*malloc)(std::size_t);
  void (*free)(void*);
  void* (*calloc)(std::size_t, std::size_t);
  void* (*realloc)(void*, std::size_t);
  int (*posix_memalign)(void**, std::size_t, std::size_t);
  void* (*aligned_alloc)(std::size_t, std::size_t);
  void* (*memalign)(std::size_t, std::size_t);
  void* (*valloc)(std::size_t);
  void* (*pvalloc)(std::size_t);
  std::size_t (*malloc_usable_size)(void*);
  void* (*mmap)(void*, std::size_t, int, int, int, off_t);
  int (*munmap)(void*, std::size_t);
  void* (*mremap)(void*, std::size_t, std::size_t, int, ...);
  void (*exit_now)(int);  // _exit
};

// Before the lookup, the malloc family's slots are trampolines that run it (a thread re-entered
// from dlsym is internal and never reaches them); the other slots are null until g_ready.
extern RealFunctions g_real;
extern std::atomic<bool> g_ready;
// The real malloc is glibc's own (not another preloaded allocator, not jemalloc hosting), so
// its chunk layout can be read directly. Set once, before g_ready.
extern bool g_real_is_glibc;

// The shim's own code range, its private jemalloc included. jemalloc maps its memory through
// the hooked mmap (its arenas, and the program's heap when it hosts it): a mapping made from
// here is allocator metadata or heap, never the program's own mmap.
extern std::uintptr_t g_shim_begin;
extern std::uintptr_t g_shim_end;

inline bool real_functions_called_from_shim(const void* return_address) noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(return_address);
  return a - g_shim_begin < g_shim_end - g_shim_begin;
}

// Looks the functions up if nobody has; while that runs (dlsym may allocate), the calling
// thread is marked internal so its allocations come from the shim's bootstrap memory.
void real_functions_resolve() noexcept;

}  // namespace memwatch::shim
