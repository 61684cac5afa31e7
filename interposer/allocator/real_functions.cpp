#include "allocator/real_functions.hpp"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "allocator/private_jemalloc.hpp"
#include "allocator/shim_arena.hpp"
#include "counting/counters.hpp"
#include "memwatch/protocol/shim_options.hpp"
#include "settings/config.hpp"

const char* je_malloc_conf = "dirty_decay_ms:-1";

namespace memwatch::shim {

std::atomic<bool> g_ready{false};
bool g_real_is_glibc = false;
std::uintptr_t g_shim_begin = 0;
std::uintptr_t g_shim_end = 0;

namespace {

// Records the span of the loaded object holding this function: the shim, its private jemalloc
// included.
int find_shim(dl_phdr_info* info, std::size_t, void*) {
  const auto probe = reinterpret_cast<std::uintptr_t>(&find_shim);
  std::uintptr_t begin = UINTPTR_MAX, end = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    begin = std::min<std::uintptr_t>(begin, info->dlpi_addr + ph.p_vaddr);
    end = std::max<std::uintptr_t>(end, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  if (probe < begin || probe >= end) return 0;
  g_shim_begin = begin;
  g_shim_end = end;
  return 1;
}

std::atomic<int> g_resolving{0};

template <typename Fn>
void lookup(void* handle, const char* name, Fn& slot) {
  slot = reinterpret_cast<Fn>(dlsym(handle, name));
}

// Read before the configuration exists (the first malloc may come before any constructor);
// getenv neither allocates nor locks. A bad value is said once the configuration is read.
bool wants_jemalloc() {
  const char* v = std::getenv(protocol::shim_option(protocol::ShimOption::allocator).variable);
  Allocator allocator = Allocator::system;
  return v != nullptr && config_parse_allocator(v, allocator) && allocator == Allocator::jemalloc;
}

// jemalloc has no pvalloc of its own.
void* je_pvalloc_(std::size_t n) {
  const auto page = static_cast<std::size_t>(getpagesize());
  return je_aligned_alloc(page, (n + page - 1) & ~(page - 1));
}

// The definitions that follow the shim's in the lookup order: glibc's, or another preloaded
// allocator's.
RealFunctions next_functions() noexcept {
  RealFunctions r{};
  lookup(RTLD_NEXT, "malloc", r.malloc);
  lookup(RTLD_NEXT, "free", r.free);
  lookup(RTLD_NEXT, "calloc", r.calloc);
  lookup(RTLD_NEXT, "realloc", r.realloc);
  lookup(RTLD_NEXT, "posix_memalign", r.posix_memalign);
  lookup(RTLD_NEXT, "aligned_alloc", r.aligned_alloc);
  lookup(RTLD_NEXT, "memalign", r.memalign);
  lookup(RTLD_NEXT, "valloc", r.valloc);
  lookup(RTLD_NEXT, "pvalloc", r.pvalloc);
  lookup(RTLD_NEXT, "malloc_usable_size", r.malloc_usable_size);
  lookup(RTLD_NEXT, "mmap", r.mmap);
  lookup(RTLD_NEXT, "munmap", r.munmap);
  lookup(RTLD_NEXT, "mremap", r.mremap);
  lookup(RTLD_NEXT, "_exit", r.exit_now);
  return r;
}

// MEMWATCH_ALLOCATOR=jemalloc: the heap is the shim's private jemalloc's, fast paths and all.
// Its options (jemalloc's malloc_conf, renamed with the rest; MALLOC_CONF still wins): freed
// pages stay with the allocator for the next block instead of going back to the kernel. A
// training step frees and takes again the same tens of MiB of activations every step, and
// jemalloc's default decay returned them in between, so every step faulted them in anew: on the
// C++ trainer (levels 4, filters 8, 48^3, batch 4) 4.1x the page faults and 2.6x the step time
// of glibc; with this, fewer faults than glibc and a faster step (bench/trainer-overhead).
RealFunctions jemalloc_functions(RealFunctions r) noexcept {
  r.malloc = je_malloc;
  r.free = je_free;
  r.calloc = je_calloc;
  r.realloc = je_realloc;
  r.posix_memalign = je_posix_memalign;
  r.aligned_alloc = je_aligned_alloc;
  r.memalign = je_memalign;
  r.valloc = je_valloc;
  r.pvalloc = je_pvalloc_;
  r.malloc_usable_size = je_malloc_usable_size;
  return r;
}

// Until the lookup has run, the malloc family's slots hold trampolines that run it and then
// forward: the hooks' fast path needs no "ready yet?" test of its own.
template <auto Slot, typename R, typename... Args>
R resolve_then(Args... args) {
  real_functions_resolve();
  return (g_real.*Slot)(args...);
}

}  // namespace

RealFunctions g_real = {
    resolve_then<&RealFunctions::malloc, void*, std::size_t>,
    resolve_then<&RealFunctions::free, void, void*>,
    resolve_then<&RealFunctions::calloc, void*, std::size_t, std::size_t>,
    resolve_then<&RealFunctions::realloc, void*, void*, std::size_t>,
    resolve_then<&RealFunctions::posix_memalign, int, void**, std::size_t, std::size_t>,
    resolve_then<&RealFunctions::aligned_alloc, void*, std::size_t, std::size_t>,
    resolve_then<&RealFunctions::memalign, void*, std::size_t, std::size_t>,
    resolve_then<&RealFunctions::valloc, void*, std::size_t>,
    resolve_then<&RealFunctions::pvalloc, void*, std::size_t>,
    resolve_then<&RealFunctions::malloc_usable_size, std::size_t, void*>,
    nullptr,
    nullptr,
    nullptr,
    nullptr,  // mmap, munmap, mremap, _exit: resolved by their hooks
};

void real_functions_resolve() noexcept {
  if (g_ready.load(std::memory_order_acquire)) return;
  int expected = 0;
  if (!g_resolving.compare_exchange_strong(expected, 1)) {
    // Another thread resolves (or this one, re-entered from dlsym): wait unless re-entered.
    if (tls_counters.internal != 0) return;
    while (!g_ready.load(std::memory_order_acquire)) {
    }
    return;
  }
  {
    InternalScope internal;
    shim_arena_reserve();
    dl_iterate_phdr(find_shim, nullptr);
    g_real = wants_jemalloc() ? jemalloc_functions(next_functions()) : next_functions();
    // glibc's malloc is also exported as __libc_malloc; the next malloc is glibc's exactly when
    // the two are the same function.
    g_real_is_glibc = !wants_jemalloc() && g_real.malloc != nullptr &&
                      reinterpret_cast<void*>(g_real.malloc) == dlsym(RTLD_NEXT, "__libc_malloc");
  }
  g_ready.store(true, std::memory_order_release);
}

}  // namespace memwatch::shim
