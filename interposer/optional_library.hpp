// The libraries memwatch reaches only when the program or the user asks for them (libzmq when a
// daemon listens, libcupti and libnvidia-ml once the program brought CUDA, libyaml for a
// trainer's config file): opened RTLD_LOCAL, so nothing of them joins the program's global
// scope, and their functions looked up into a table, all or none.
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <utility>

namespace memwatch::shim {

// The first of `names` that loads, or null.
inline void* optional_library_open(std::initializer_list<const char*> names) noexcept {
  for (const char* name : names)
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return handle;
  return nullptr;
}

// How a name is looked up: plain dlsym, or glibc's own where the shim's dlsym hook would wrap
// the answer (CUDA's names).
using SymbolLookup = void* (*)(void* handle, const char* name);

inline void* plain_dlsym(void* handle, const char* name) noexcept {
  return dlsym(handle, name);
}

// Fills every slot from `handle`: {"zmq_send", &api.send}, ...; false at the first name missing.
template <typename... Fns>
bool optional_library_bind(void* handle, SymbolLookup lookup,
                           std::pair<const char*, Fns*>... slots) noexcept {
  return (((*slots.second = reinterpret_cast<Fns>(lookup(handle, slots.first))) != nullptr) && ...);
}

}  // namespace memwatch::shim
