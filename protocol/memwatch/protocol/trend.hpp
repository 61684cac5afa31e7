// The capacity watch that the shim and the daemon both apply to a run's live memory, so that
// both warn on the same rule: once when live bytes pass a share of the capacity, and once when
// their growth is on course to pass it within a horizon. The growth rate is a least-squares
// slope over the last seconds of samples.
//
// Header only, allocation-free and lock-free (a fixed ring, owned by one thread): the shim runs
// it on its reporter thread, inside the traced program.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string_view>

namespace memwatch::protocol {

struct WatchSettings {
  double share = 0.9;       // of the capacity: the threshold
  double horizon_s = 30;    // on course: the threshold within this many seconds (0: never)
  double window_s = 10;     // the growth rate is fitted over this much recent time
  int min_points = 5;       // ... from at least this many samples
  double min_span_s = 2.0;  // ... spanning at least this long
};

namespace trend_detail {

inline bool parse_number(std::string_view text, double& out) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && std::isfinite(out);
}

}  // namespace trend_detail

// The settings' text, the same for the shim's environment and the daemon's options.
// "0.9" or "90%": a share in (0, 1], else -1.
inline double parse_watch_share(std::string_view text) {
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  const bool percent = text.ends_with('%');
  if (percent) text.remove_suffix(1);
  double share = 0;
  if (!trend_detail::parse_number(text, share)) return -1;
  if (percent) share /= 100;
  return share > 0 && share <= 1 ? share : -1;
}

// "30", "30s", "2.5 s": seconds, 0 or more, else -1.
inline double parse_watch_seconds(std::string_view text) {
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  if (text.ends_with('s')) text.remove_suffix(1);
  double seconds = 0;
  if (!trend_detail::parse_number(text, seconds) || seconds < 0) return -1;
  return seconds;
}

// Recent (time, bytes) samples in a fixed ring: when more than kPoints fall in the window, the
// oldest go first and the window is that much shorter.
class Trend {
 public:
  static constexpr int kPoints = 128;

  // Times must not go back; a sample that does starts the trend over.
  void add(double t_s, double bytes) noexcept {
    if (size_ > 0 && t_s < at(size_ - 1).t) size_ = 0;
    points_[(head_ + size_) % kPoints] = {t_s, bytes};
    if (size_ < kPoints)
      ++size_;
    else
      head_ = (head_ + 1) % kPoints;
  }
  void clear() noexcept { size_ = 0; }

  // The growth rate (bytes/s) that the whole window agrees on: the least of the least-squares
  // slopes over the window's samples and over each half of them, so that one step up followed by
  // a flat level (a model loaded, then steady training) is not taken for growth. 0 when the
  // samples are too few or span too short a time, or any of the three does not grow.
  [[nodiscard]] double rate(const WatchSettings& s) const noexcept {
    if (size_ == 0) return 0;
    const double last = at(size_ - 1).t;
    int first = size_ - 1;
    while (first > 0 && at(first - 1).t >= last - s.window_s) --first;
    const int n = size_ - first;
    if (n < s.min_points || last - at(first).t < s.min_span_s) return 0;
    const double middle = (at(first).t + last) / 2;
    int split = first;  // the first sample of the late half
    while (split < size_ - 1 && at(split).t < middle) ++split;
    const double whole = slope(first, size_);
    // The halves share the middle sample when one falls on it.
    const double early = slope(first, at(split).t == middle ? split + 1 : split);
    const double late = slope(split, size_);
    const double r = std::min({whole, early, late});
    return r > 0 ? r : 0;
  }

  [[nodiscard]] int size() const noexcept { return size_; }

 private:
  struct Point {
    double t, bytes;
  };
  [[nodiscard]] const Point& at(int i) const noexcept { return points_[(head_ + i) % kPoints]; }

  // Least-squares slope over samples [begin, end); 0 when fewer than two distinct times.
  [[nodiscard]] double slope(int begin, int end) const noexcept {
    const int n = end - begin;
    if (n < 2) return 0;
    double mean_t = 0, mean_b = 0;
    for (int k = 0; k < n; ++k) {
      mean_t += at(begin + k).t;
      mean_b += at(begin + k).bytes;
    }
    mean_t /= n;
    mean_b /= n;
    double cov = 0, var = 0;
    for (int k = 0; k < n; ++k) {
      const double dt = at(begin + k).t - mean_t;
      cov += dt * (at(begin + k).bytes - mean_b);
      var += dt * dt;
    }
    return var > 0 ? cov / var : 0;
  }

  Point points_[kPoints] = {};
  int head_ = 0;
  int size_ = 0;
};

enum class WatchKind { none, near_capacity, on_course };

struct WatchFinding {
  WatchKind kind = WatchKind::none;
  double live_bytes = 0;
  double capacity_bytes = 0;
  double threshold_bytes = 0;   // share x capacity
  double rate_bytes_per_s = 0;  // on_course: the growth rate
  double eta_s = 0;             // on_course: seconds until the threshold at that rate
};

// One memory of one run (host, or a device): each kind of warning at most once.
class CapacityWatch {
 public:
  // A sample of live bytes at `t_s`; `capacity` 0 when unknown (the trend still records, so a
  // capacity learnt later is judged at once).
  WatchFinding observe(double t_s, std::int64_t live, std::int64_t capacity,
                       const WatchSettings& s) noexcept {
    const auto bytes = static_cast<double>(live);
    trend_.add(t_s, bytes);
    WatchFinding f;
    if (capacity <= 0 || crossed_) return f;
    f.live_bytes = bytes;
    f.capacity_bytes = static_cast<double>(capacity);
    f.threshold_bytes = s.share * f.capacity_bytes;
    if (bytes > f.threshold_bytes) {
      crossed_ = true;
      f.kind = WatchKind::near_capacity;
      return f;
    }
    if (on_course_ || s.horizon_s <= 0) return f;
    const double rate = trend_.rate(s);
    if (rate <= 0) return f;
    const double eta = (f.threshold_bytes - bytes) / rate;
    if (eta > s.horizon_s) return f;
    on_course_ = true;
    f.kind = WatchKind::on_course;
    f.rate_bytes_per_s = rate;
    f.eta_s = eta;
    return f;
  }
  void reset() noexcept {
    trend_.clear();
    crossed_ = on_course_ = false;
  }

 private:
  Trend trend_;
  bool crossed_ = false;
  bool on_course_ = false;
};

}  // namespace memwatch::protocol
