// libFuzzer target: whatever a run's configuration and counters hold (a workload named by any
// argv[0], any parameter value, NaN and infinite figures, a short buffer), the report the shim
// formats is JSON that `memwatch sweep` reads back with its figures, or it is empty.
#include <fuzzer/FuzzedDataProvider.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reporting/report.hpp"

using namespace memwatch::shim;

namespace {

void copy_text(char* dst, std::size_t capacity, const std::string& src) {
  const std::size_t n = std::min(capacity - 1, src.size());
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

double any_double(FuzzedDataProvider& in) {
  return std::bit_cast<double>(in.ConsumeIntegral<std::uint64_t>());
}

void fill_config(FuzzedDataProvider& in, Config& c) {
  c = Config{};
  copy_text(c.workload, sizeof c.workload, in.ConsumeRandomLengthString(sizeof c.workload));
  c.param_count = in.ConsumeIntegralInRange(0, kMaxParams);
  for (int i = 0; i < c.param_count; ++i) {
    copy_text(c.params[i].name, sizeof c.params[i].name,
              in.ConsumeRandomLengthString(sizeof c.params[i].name));
    c.params[i].value = any_double(in);
  }
  c.allocator = in.ConsumeBool() ? Allocator::jemalloc : Allocator::system;
}

ReportFacts fill_facts(FuzzedDataProvider& in, const Config& c) {
  ReportFacts f{};
  f.config = &c;
  auto* figures = reinterpret_cast<std::int64_t*>(&f.counters);
  const std::size_t count = offsetof(CounterSnapshot, pid) / sizeof(std::int64_t);
  for (std::size_t i = 0; i < count; ++i) figures[i] = in.ConsumeIntegral<std::int64_t>();
  f.error_bound_bytes = in.ConsumeIntegral<std::int64_t>();
  f.rss_hwm_bytes = in.ConsumeIntegral<std::int64_t>();
  f.host_capacity_bytes = in.ConsumeIntegral<std::int64_t>();
  f.elapsed_s = any_double(in);
  f.pid = in.ConsumeIntegral<int>();
  f.cause = in.PickValueInArray({ExitCause::exit, ExitCause::underscore_exit, ExitCause::signal});
  f.detail = in.ConsumeIntegral<int>();
  f.device_sources = in.ConsumeIntegral<std::uint32_t>();
  for (auto& capacity : f.device_capacity_bytes) capacity = in.ConsumeIntegral<std::int64_t>();
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  static Config config;
  fill_config(in, config);
  const ReportFacts facts = fill_facts(in, config);
  std::vector<char> buffer(in.ConsumeIntegralInRange<std::size_t>(0, 64 * 1024));
  const std::string_view json = report_format(facts, buffer.data(), buffer.size());
  if (json.empty()) return 0;
  if (json.size() > buffer.size()) std::abort();
  const auto report = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!report.is_object() || report["schema"] != "memwatch.report/1") std::abort();
  if (report["pid"] != facts.pid || report["host"]["peak_bytes"] != facts.counters.host_peak)
    std::abort();
  if (report["params"].size() > static_cast<std::size_t>(config.param_count)) std::abort();
  return 0;
}
