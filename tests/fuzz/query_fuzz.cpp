// libFuzzer target: any byte string sent to the query socket gets a JSON object with "ok",
// never a crash, from a real store holding a run and a model.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "memwatch/model/model_json.hpp"
#include "query.hpp"

namespace {

memwatch::daemon::QueryTable& table() {
  using namespace memwatch;
  static daemon::Store store(":memory:");
  static daemon::ModelCache models(store);
  static bool filled = [] {
    protocol::Hello h;
    h.workload = "w";
    h.params = {{"batch", 2}};
    store.begin_run(h, 1);
    model::Dataset d;
    d.params = {"batch"};
    for (double b = 1; b <= 8; ++b) d.add({b}, 1000 + 100 * b);
    store.save_model("w", "host_peak_bytes", model::to_json(model::fit(d), -1), 8, 1);
    models.reload("w");
    return true;
  }();
  (void)filled;
  static daemon::QueryTable t({&store, &models, [] { return nlohmann::json::object(); }});
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string reply =
      table().answer(std::string_view(reinterpret_cast<const char*>(data), size));
  const auto j = nlohmann::json::parse(reply, nullptr, false);
  if (!j.is_object() || !j.contains("ok")) std::abort();
  return 0;
}
