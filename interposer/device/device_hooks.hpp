// What the CUDA hooks share: the real dlsym, wrappers made per (function, real pointer), and
// the few driver and runtime queries the hooks need to learn a device or a pool's size.
//
// A wrapper is handed out for exactly the function that was asked for: every family below
// (one hooked CUDA function and its signature) has kWrapperSlots trampolines, each bound to one
// real pointer. cuGetProcAddress may return different real functions for the same name
// (per-thread default stream variants, versions), and each gets its own trampoline.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <utility>

#include "device/device_count.hpp"
#include "hooks/hooks.hpp"
#include "reporting/log.hpp"

namespace memwatch::shim {

// Keeps the first non-null answer in `slot`: concurrent lookups agree on one function.
template <typename Fn>
void set_once(std::atomic<Fn>& slot, void* p) noexcept {
  Fn expected = nullptr;
  if (p != nullptr) slot.compare_exchange_strong(expected, reinterpret_cast<Fn>(p));
}

// The query functions' lookup, made until one has finished: every thread that arrives before
// then makes it too (set_once keeps the first answer), since one that went on without the
// queries would count its blocks on device 0.
template <typename Lookup>
void look_up_once(std::atomic<bool>& done, Lookup&& lookup) noexcept {
  if (done.load(std::memory_order_acquire)) return;
  lookup();
  done.store(true, std::memory_order_release);
}

// glibc's dlsym, never the shim's hook (whose RTLD_NEXT answers depend on the caller).
void* device_real_dlsym(void* handle, const char* name) noexcept;

// The real function behind an exported hook: the next definition after the shim, else the one
// a library of `libraries` defines (a library loaded RTLD_LOCAL that hands out its exported
// functions by pointer is not next in the global scope). Null, said once, when none does.
void* device_next_symbol(const char* name, std::initializer_list<const char*> libraries) noexcept;

// device_next_symbol, looked up once per hook and kept in `slot`.
template <typename Fn>
Fn device_next(std::atomic<Fn>& slot, const char* name,
               std::initializer_list<const char*> libraries) noexcept {
  Fn fn = slot.load(std::memory_order_acquire);
  if (__builtin_expect(fn != nullptr, 1)) return fn;
  fn = reinterpret_cast<Fn>(device_next_symbol(name, libraries));
  slot.store(fn, std::memory_order_release);
  return fn;
}

// The program's CUDA calls reached the shim: CUPTI may now be started (on the reporter thread).
void device_note_cuda_seen() noexcept;
bool device_cuda_seen() noexcept;
// False while CUPTI counts: the hooks then count nothing, frees included (CUPTI takes out of
// the shared table what the hooks recorded before it came up).
bool device_hooks_count() noexcept;
void device_set_cupti_counting(bool on) noexcept;

// The wrapper to hand out for `real`, fetched by the program under `name` (an exported name
// such as "cuMemAlloc_v2" or "cudaMalloc"); `real` itself when memwatch does not hook it.
// `handle` is the dlopen handle it came from (its other functions are looked up there).
void* device_wrap_exported(void* handle, const char* name, void* real) noexcept;
// The driver's part of that: `name` is one of libcuda's exported names.
void* device_wrap_driver_exported(void* handle, const char* name, void* real) noexcept;
// The same for a driver function fetched by base name and version through cuGetProcAddress or
// cudaGetDriverEntryPoint*.
void* device_wrap_driver(const char* name, int cuda_version, void* real) noexcept;
// Looks up the driver's query functions through `lookup` where none is known yet.
using DriverLookup = void* (*)(void* context, const char* name);
void device_driver_queries_from(DriverLookup lookup, void* context) noexcept;
void device_runtime_queries_from(void* handle) noexcept;

// The reserved size of `device`'s current stream-ordered pool, through the driver's queries.
bool device_pool_reserved(int device, std::uint64_t& pool, std::int64_t& reserved) noexcept;
// The PCI bus id of `device` ("0000:3b:00.0"), through the driver; false if unknown.
bool device_pci_bus_id(int device, char* out, int size) noexcept;

// True when `address` lies in libmemwatch.so itself (RTLD_DEFAULT finds our own hooks).
bool device_in_shim(const void* address) noexcept;

// A hook's call: whether it is the program's own (not nested in another counted call), and
// whether the hooks count, decided before the real call so that CUPTI taking over during the
// call loses nothing (an allocation both see is recorded once, by the table).
struct HookScope {
  DeviceCallScope depth;
  const bool outer = depth.outer();
  const bool count = outer && device_hooks_count();
};

inline constexpr int kWrapperSlots = 8;

template <auto Impl, typename Sig>
struct Family;

// Impl receives the real function first, then the call's arguments.
template <auto Impl, typename R, typename... Args>
struct Family<Impl, R (*)(Args...)> {
  using Fn = R (*)(Args...);
  static inline std::atomic<Fn> real[kWrapperSlots];

  template <int I>
  static R trampoline(Args... args) {
    return Impl(real[I].load(std::memory_order_acquire), args...);
  }

  template <std::size_t... I>
  static constexpr auto make_table(std::index_sequence<I...>) {
    return std::array<Fn, kWrapperSlots>{&trampoline<static_cast<int>(I)>...};
  }

  static Fn wrap(Fn r) noexcept {
    static constexpr auto table = make_table(std::make_index_sequence<kWrapperSlots>{});
    if (r == nullptr || device_in_shim(reinterpret_cast<const void*>(r))) return r;
    for (int i = 0; i < kWrapperSlots; ++i) {
      Fn seen = real[i].load(std::memory_order_acquire);
      if (seen == r) return table[static_cast<std::size_t>(i)];
      if (seen == nullptr && real[i].compare_exchange_strong(seen, r)) {
        return table[static_cast<std::size_t>(i)];
      }
      if (seen == r) return table[static_cast<std::size_t>(i)];
    }
    log_line("too many distinct versions of one CUDA function; one is not counted");
    return r;
  }
};

}  // namespace memwatch::shim
