#include "reporting/zmq_api.hpp"

#include <dlfcn.h>

#include "optional_library.hpp"
#include "reporting/log.hpp"

namespace memwatch::shim {

namespace {

const ZmqApi* load_api() {
  static ZmqApi api;
  void* library = optional_library_open({"libzmq.so.5"});
  if (library == nullptr) {
    log_line("libzmq.so.5 cannot be loaded (%s); running without the daemon", dlerror());
    return nullptr;
  }
  const bool ok = optional_library_bind(
      library, plain_dlsym, std::pair{"zmq_ctx_new", &api.ctx_new},
      std::pair{"zmq_ctx_term", &api.ctx_term}, std::pair{"zmq_socket", &api.socket},
      std::pair{"zmq_close", &api.close}, std::pair{"zmq_connect", &api.connect},
      std::pair{"zmq_setsockopt", &api.setsockopt}, std::pair{"zmq_send", &api.send},
      std::pair{"zmq_recv", &api.recv}, std::pair{"zmq_poll", &api.poll});
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
