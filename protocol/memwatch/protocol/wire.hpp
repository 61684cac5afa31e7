// The ingest wire format between the shim's reporter thread (ZeroMQ DEALER) and memwatchd
// (ROUTER): one frame per message, little-endian, versioned, every length bounded so that a
// decoder facing garbage returns nothing instead of reading past the frame.
//
//   frame   := magic 'M' (u8), version (u8), type (u8), reserved (u8, zero), body
//   string  := length (u16, <= kMaxString) bytes
//   params  := count (u16, <= kMaxParams) { name: string, value: f64 (finite) }
//   list    := count (u16, <= kMaxDevices) { i64 }
//   figures := i64 each, in the order of figures.hpp: SAMPLE's figures, or the run figures (BYE)
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "memwatch/protocol/figures.hpp"
#include "memwatch/protocol/run_facts.hpp"

namespace memwatch::protocol {

inline constexpr std::uint8_t kMagic = 'M';
inline constexpr std::uint8_t kVersion =
    2;  // 2: BYE carries `processes`, HELLO the scheduler's job
inline constexpr std::size_t kMaxString = 4096;
inline constexpr std::size_t kMaxParams = 64;

enum class MessageType : std::uint8_t { hello = 1, sample = 2, bye = 3, verdict = 4 };
enum class VerdictKind : std::uint8_t { no_model = 0, fits = 1, over_capacity = 2 };

using Params = std::vector<std::pair<std::string, double>>;

// Sent once when the program starts, before it allocates much: the daemon answers a Verdict.
struct Hello {
  std::uint32_t pid = 0;
  std::string host;
  std::string workload;
  double start_unix_s = 0;
  Params params;
  std::int64_t host_capacity_bytes = 0;
  std::vector<std::int64_t> device_capacity_bytes;
  OnOom on_oom = OnOom::warn;
  std::string scheduler_job;  // the batch scheduler's job (Slurm: JOBID or JOBID.STEP); empty: none
  friend bool operator==(const Hello&, const Hello&) = default;
};

// Periodic, and at each new high-water step: the SAMPLE figures (figures.hpp).
struct Sample {
  std::uint32_t pid = 0;
  double t_s = 0;  // since the program started
  MEMWATCH_FIGURES(MEMWATCH_FIGURE_SAMPLE_MEMBER)
  friend bool operator==(const Sample&, const Sample&) = default;
};

// The final figures, as in the report: the run figures (figures.hpp) and each device's peak.
struct Bye {
  std::uint32_t pid = 0;
  double elapsed_s = 0;
  MEMWATCH_FIGURES(MEMWATCH_FIGURE_RUN_MEMBER)
  std::vector<std::int64_t> device_peaks;
  ExitCause cause = ExitCause::exit;
  std::int32_t detail = 0;  // signal number or _exit status
  friend bool operator==(const Bye&, const Bye&) = default;
};

// The models' targets, as a Verdict names them.
inline constexpr const char* kHostPeakTarget = "host_peak_bytes";
inline constexpr const char* kDevicePeakTarget = "device_peak_bytes";

// The daemon's answer to Hello.
struct Verdict {
  VerdictKind kind = VerdictKind::no_model;
  std::string target;  // kHostPeakTarget or kDevicePeakTarget: the model judged
  std::string formula;
  double predicted_bytes = 0;
  double upper_bytes = 0;
  double capacity_bytes = 0;
  std::string vary;            // the parameter varied for the largest fitting value
  double largest_fitting = 0;  // 0: none fits
  friend bool operator==(const Verdict&, const Verdict&) = default;
};

using Message = std::variant<Hello, Sample, Bye, Verdict>;

namespace wire_detail {

class Writer {
 public:
  explicit Writer(MessageType type) {
    out_.push_back(static_cast<char>(kMagic));
    out_.push_back(static_cast<char>(kVersion));
    out_.push_back(static_cast<char>(type));
    out_.push_back('\0');
  }
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u16(std::uint16_t v) { raw(&v, sizeof v); }
  void u32(std::uint32_t v) { raw(&v, sizeof v); }
  void i32(std::int32_t v) { raw(&v, sizeof v); }
  void i64(std::int64_t v) { raw(&v, sizeof v); }
  void f64(double v) { raw(&v, sizeof v); }
  void str(std::string_view s) {
    s = s.substr(0, kMaxString);
    u16(static_cast<std::uint16_t>(s.size()));
    out_.append(s);
  }
  void params(const Params& ps) {
    const std::size_t n = std::min(ps.size(), kMaxParams);
    u16(static_cast<std::uint16_t>(n));
    for (std::size_t i = 0; i < n; ++i) {
      str(ps[i].first);
      f64(ps[i].second);
    }
  }
  void list(const std::vector<std::int64_t>& vs) {
    const std::size_t n = std::min(vs.size(), static_cast<std::size_t>(kMaxDevices));
    u16(static_cast<std::uint16_t>(n));
    for (std::size_t i = 0; i < n; ++i) i64(vs[i]);
  }
  std::string take() { return std::move(out_); }

 private:
  static_assert(std::endian::native == std::endian::little, "the wire is little-endian");
  void raw(const void* p, std::size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

// Reads fields in order; the first short read or out-of-bounds length sets failed().
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  std::uint8_t u8() { return fixed<std::uint8_t>(); }
  std::uint16_t u16() { return fixed<std::uint16_t>(); }
  std::uint32_t u32() { return fixed<std::uint32_t>(); }
  std::int32_t i32() { return fixed<std::int32_t>(); }
  std::int64_t i64() { return fixed<std::int64_t>(); }
  double f64() {
    const double v = fixed<double>();
    if (!std::isfinite(v)) failed_ = true;
    return v;
  }
  std::string str() {
    const std::size_t n = u16();
    if (failed_ || n > kMaxString || n > in_.size()) {
      failed_ = true;
      return {};
    }
    std::string s(in_.substr(0, n));
    in_.remove_prefix(n);
    return s;
  }
  Params params() {
    const std::size_t n = u16();
    Params ps;
    if (n > kMaxParams) failed_ = true;
    for (std::size_t i = 0; i < n && !failed_; ++i) {
      std::string name = str();
      const double value = f64();
      ps.emplace_back(std::move(name), value);
    }
    return ps;
  }
  std::vector<std::int64_t> list() {
    const std::size_t n = u16();
    std::vector<std::int64_t> vs;
    if (n > static_cast<std::size_t>(kMaxDevices)) failed_ = true;
    for (std::size_t i = 0; i < n && !failed_; ++i) vs.push_back(i64());
    return vs;
  }
  // True when everything was read and nothing is left over.
  [[nodiscard]] bool complete() const { return !failed_ && in_.empty(); }

 private:
  template <typename T>
  T fixed() {
    T v{};
    if (in_.size() < sizeof(T)) {
      failed_ = true;
      return v;
    }
    std::memcpy(&v, in_.data(), sizeof(T));
    in_.remove_prefix(sizeof(T));
    return v;
  }
  std::string_view in_;
  bool failed_ = false;
};

template <typename E>
bool valid_enum(std::uint8_t v, E last) {
  return v <= static_cast<std::uint8_t>(last);
}

}  // namespace wire_detail

inline std::string encode(const Hello& m) {
  wire_detail::Writer w(MessageType::hello);
  w.u32(m.pid);
  w.str(m.host);
  w.str(m.workload);
  w.f64(m.start_unix_s);
  w.params(m.params);
  w.i64(m.host_capacity_bytes);
  w.list(m.device_capacity_bytes);
  w.u8(static_cast<std::uint8_t>(m.on_oom));
  w.str(m.scheduler_job);
  return w.take();
}

inline std::string encode(const Sample& m) {
  wire_detail::Writer w(MessageType::sample);
  w.u32(m.pid);
  w.f64(m.t_s);
  for_each_sample_figure(m, [&](const Figure&, std::int64_t v) { w.i64(v); });
  return w.take();
}

inline std::string encode(const Bye& m) {
  wire_detail::Writer w(MessageType::bye);
  w.u32(m.pid);
  w.f64(m.elapsed_s);
  for_each_run_figure(m, [&](const Figure&, std::int64_t v) { w.i64(v); });
  w.list(m.device_peaks);
  w.u8(static_cast<std::uint8_t>(m.cause));
  w.i32(m.detail);
  return w.take();
}

inline std::string encode(const Verdict& m) {
  wire_detail::Writer w(MessageType::verdict);
  w.u8(static_cast<std::uint8_t>(m.kind));
  w.str(m.target);
  w.str(m.formula);
  w.f64(m.predicted_bytes);
  w.f64(m.upper_bytes);
  w.f64(m.capacity_bytes);
  w.str(m.vary);
  w.f64(m.largest_fitting);
  return w.take();
}

inline std::string encode(const Message& m) {
  return std::visit([](const auto& v) { return encode(v); }, m);
}

// Any frame at all: a message, or nothing when it is not one of ours, of another version,
// truncated, over-long, or carries a non-finite number.
inline std::optional<Message> decode(std::string_view frame) {
  using namespace wire_detail;
  if (frame.size() < 4 || static_cast<std::uint8_t>(frame[0]) != kMagic ||
      static_cast<std::uint8_t>(frame[1]) != kVersion || frame[3] != '\0')
    return std::nullopt;
  const auto type = static_cast<MessageType>(frame[2]);
  Reader r(frame.substr(4));
  Message out;
  switch (type) {
    case MessageType::hello: {
      Hello m;
      m.pid = r.u32();
      m.host = r.str();
      m.workload = r.str();
      m.start_unix_s = r.f64();
      m.params = r.params();
      m.host_capacity_bytes = r.i64();
      m.device_capacity_bytes = r.list();
      const std::uint8_t on_oom = r.u8();
      if (!valid_enum(on_oom, OnOom::off)) return std::nullopt;
      m.on_oom = static_cast<OnOom>(on_oom);
      m.scheduler_job = r.str();
      out = std::move(m);
      break;
    }
    case MessageType::sample: {
      Sample m;
      m.pid = r.u32();
      m.t_s = r.f64();
      for_each_sample_figure(m, [&](const Figure&, std::int64_t& v) { v = r.i64(); });
      out = m;
      break;
    }
    case MessageType::bye: {
      Bye m;
      m.pid = r.u32();
      m.elapsed_s = r.f64();
      for_each_run_figure(m, [&](const Figure&, std::int64_t& v) { v = r.i64(); });
      m.device_peaks = r.list();
      const std::uint8_t cause = r.u8();
      if (!valid_enum(cause, ExitCause::killed)) return std::nullopt;
      m.cause = static_cast<ExitCause>(cause);
      m.detail = r.i32();
      out = std::move(m);
      break;
    }
    case MessageType::verdict: {
      Verdict m;
      const std::uint8_t kind = r.u8();
      if (!valid_enum(kind, VerdictKind::over_capacity)) return std::nullopt;
      m.kind = static_cast<VerdictKind>(kind);
      m.target = r.str();
      m.formula = r.str();
      m.predicted_bytes = r.f64();
      m.upper_bytes = r.f64();
      m.capacity_bytes = r.f64();
      m.vary = r.str();
      m.largest_fitting = r.f64();
      out = std::move(m);
      break;
    }
    default:
      return std::nullopt;
  }
  if (!r.complete()) return std::nullopt;
  return out;
}

}  // namespace memwatch::protocol
