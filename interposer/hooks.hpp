// What every hook shares: the one-branch test that sends the rare cases (not initialised yet,
// or memwatch's own threads) to an out-of-line slow path, and the heap counting itself.
#pragma once

#include <cstddef>
#include <cstdint>

#include "counters.hpp"
#include "real_functions.hpp"
#include "shim_arena.hpp"

#define MEMWATCH_HOOK extern "C" __attribute__((visibility("default")))

namespace memwatch::shim {

// True when this call is not a plain program call: the real functions are not known yet, or
// the calling thread runs memwatch's own code.
inline bool hooks_rare_case() noexcept {
  return __builtin_expect(
      tls_counters.internal != 0 || !g_ready.load(std::memory_order_relaxed), 0);
}

// The slow path of hooks_rare_case: resolves the real functions if needed; true when the call
// turns out to be the program's after all (a first call), false when it is the shim's own.
bool hooks_program_call() noexcept;

inline std::int64_t hooks_usable(void* p) noexcept {
  return static_cast<std::int64_t>(g_real.malloc_usable_size(p));
}

inline void hooks_count_alloc(void* p) noexcept {
  if (p != nullptr) counters_heap_add(hooks_usable(p));
}

}  // namespace memwatch::shim
