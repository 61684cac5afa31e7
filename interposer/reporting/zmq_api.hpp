// libzmq, loaded only when a daemon is listening: a program measured without a daemon never
// maps ZeroMQ and its dependencies. zmq.h supplies the constants and types; the functions come
// through this table.
#pragma once

#include <zmq.h>

#include <cstddef>

namespace memwatch::shim {

struct ZmqApi {
  void* (*ctx_new)();
  int (*ctx_term)(void*);
  void* (*socket)(void*, int);
  int (*close)(void*);
  int (*connect)(void*, const char*);
  int (*setsockopt)(void*, int, const void*, std::size_t);
  int (*send)(void*, const void*, std::size_t, int);
  int (*recv)(void*, void*, std::size_t, int);
  int (*poll)(zmq_pollitem_t*, int, long);
};

// The table, loaded on first use; nullptr (and one line on stderr) when libzmq is missing.
const ZmqApi* zmq_api();

}  // namespace memwatch::shim
