// libFuzzer target: any byte string handed to the ingest decoder decodes to nothing or to a
// message that encodes back to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "memwatch/protocol/wire.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view frame(reinterpret_cast<const char*>(data), size);
  const auto message = memwatch::protocol::decode(frame);
  if (message && memwatch::protocol::encode(*message) != frame) std::abort();
  return 0;
}
