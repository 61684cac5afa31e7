// Threads started by memwatch's own threads (ZeroMQ's I/O thread, started by the reporter) are
// memwatch's too: they begin marked internal, so their allocations are never the program's.
// Threads the program starts pass straight through.
#include <dlfcn.h>
#include <pthread.h>

#include "hooks/hooks.hpp"

using namespace memwatch::shim;

namespace {

using CreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

struct InternalStart {
  void* (*routine)(void*);
  void* arg;
};

void* start_internal(void* p) {
  const InternalStart start = *static_cast<InternalStart*>(p);
  shim_arena_free(p);
  counters_thread_is_internal();
  return start.routine(start.arg);
}

CreateFn real_create() {
  static CreateFn fn = reinterpret_cast<CreateFn>(dlsym(RTLD_NEXT, "pthread_create"));
  return fn;
}

}  // namespace

MEMWATCH_HOOK int pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                                 void* (*routine)(void*), void* arg) {
  CreateFn create = real_create();
  if (!hooks_shim_call()) return create(thread, attr, routine, arg);
  auto* start = static_cast<InternalStart*>(shim_arena_alloc(sizeof(InternalStart), 0, false));
  if (start == nullptr) return create(thread, attr, routine, arg);
  *start = {routine, arg};
  const int r = create(thread, attr, start_internal, start);
  if (r != 0) shim_arena_free(start);
  return r;
}
