#include "reporting/zmq_api.hpp"

#include <dlfcn.h>

#include "reporting/log.hpp"

namespace memwatch::shim {

namespace {

template <typename Fn>
bool load(void* library, const char* name, Fn& slot) {
  slot = reinterpret_cast<Fn>(dlsym(library, name));
  return slot != nullptr;
}

const ZmqApi* load_api() {
  static ZmqApi api;
  void* library = dlopen("libzmq.so.5", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    log_line("libzmq.so.5 cannot be loaded (%s); running without the daemon", dlerror());
    return nullptr;
  }
  const bool ok =
      load(library, "zmq_ctx_new", api.ctx_new) && load(library, "zmq_ctx_term", api.ctx_term) &&
      load(library, "zmq_socket", api.socket) && load(library, "zmq_close", api.close) &&
      load(library, "zmq_connect", api.connect) &&
      load(library, "zmq_setsockopt", api.setsockopt) && load(library, "zmq_send", api.send) &&
      load(library, "zmq_recv", api.recv) && load(library, "zmq_poll", api.poll);
  if (!ok) {
    log_line("libzmq.so.5 lacks a function memwatch needs; running without the daemon");
    return nullptr;
  }
  return &api;
}

}  // namespace

const ZmqApi* zmq_api() {
  static const ZmqApi* api = load_api();
  return api;
}

}  // namespace memwatch::shim
