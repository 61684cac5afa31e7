// The HELLO the store tests begin their runs with.
#pragma once

#include "memwatch/protocol/wire.hpp"

namespace memwatch::test {

inline protocol::Hello hello(const char* workload, double batch) {
  protocol::Hello h;
  h.pid = 1234;
  h.host = "node";
  h.workload = workload;
  h.start_unix_s = 100;
  h.params = {{"batch", batch}, {"dim", 64}};
  return h;
}

}  // namespace memwatch::test
