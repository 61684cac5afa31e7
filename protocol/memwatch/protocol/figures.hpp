// The measured figures, each defined once. Everything that carries them is generated from this
// list: the counters' snapshot (counter_block.hpp), the report's fields, the SAMPLE and BYE
// messages (wire.hpp), the store's run columns and their read-back, the `runs` query's JSON and
// the sweep's CSV columns (which the modeler knows as measurements, never parameters). A new
// figure is one line here; one counted by the shim also needs its field in CounterBlock and the
// code that counts it.
//
//   X(id, name, kind, stat, follows, source, sample, run, group, key)
//
//   id       its member in CounterSnapshot (and, for source counter, in CounterBlock)
//   name     its name everywhere else: the wire's and the store's struct members, JSON keys of
//            the `runs` query, SQL columns, CSV columns
//   kind     what it measures: host, device, pinned, managed, threads, process, processes (how
//            many processes took part: 1 for a process, its members for a job)
//   stat     live (now) or peak (the high-water mark)
//   follows  the live figure a peak restarts from in a forked child (a live figure: itself)
//   source   counter: a field of the shared-memory CounterBlock; process: read by the shim
//            from the kernel at the end (the snapshot's member is the reader's to fill)
//   sample   yes: sent in every SAMPLE
//   run      yes: one of a run's results: sent in BYE, stored in its row, answered by `runs`, a
//            column of the sweep's CSV
//   group, key  where the report (memwatch.report/1) puts it: in the "host" object or at the
//            top level (""), under `key`. Every figure is in the report.
//
// The order is the wire's: SAMPLE and BYE carry their figures in list order, so a figure is
// added at the end of the messages it joins (and the wire's version goes up).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

// clang-format off
#define MEMWATCH_FIGURES(X)                                                                       \
  X(host_live,       host_live_bytes,    host,    live, host_live,       counter, yes, no,  "host", "live_bytes")         \
  X(host_peak,       host_peak_bytes,    host,    peak, host_live,       counter, yes, yes, "host", "peak_bytes")         \
  X(heap_live,       heap_live_bytes,    host,    live, heap_live,       counter, yes, no,  "host", "heap_live_bytes")    \
  X(heap_peak,       heap_peak_bytes,    host,    peak, heap_live,       counter, no,  yes, "host", "heap_peak_bytes")    \
  X(mmap_live,       mmap_live_bytes,    host,    live, mmap_live,       counter, yes, no,  "host", "mmap_live_bytes")    \
  X(mmap_peak,       mmap_peak_bytes,    host,    peak, mmap_live,       counter, no,  yes, "host", "mmap_peak_bytes")    \
  X(device_sum_live, device_live_bytes,  device,  live, device_sum_live, counter, yes, no,  "",     "device_live_bytes")  \
  X(device_sum_peak, device_peak_bytes,  device,  peak, device_sum_live, counter, yes, yes, "",     "device_peak_bytes")  \
  X(pinned_live,     pinned_live_bytes,  pinned,  live, pinned_live,     counter, no,  no,  "",     "pinned_live_bytes")  \
  X(pinned_peak,     pinned_peak_bytes,  pinned,  peak, pinned_live,     counter, no,  yes, "",     "pinned_peak_bytes")  \
  X(managed_live,    managed_live_bytes, managed, live, managed_live,    counter, no,  no,  "",     "managed_live_bytes") \
  X(managed_peak,    managed_peak_bytes, managed, peak, managed_live,    counter, no,  yes, "",     "managed_peak_bytes") \
  X(threads_live,    threads_live,       threads, live, threads_live,    counter, no,  no,  "",     "threads_live")       \
  X(threads_peak,    threads_peak,       threads, peak, threads_live,    counter, no,  no,  "",     "threads_peak")       \
  X(rss_hwm,         rss_hwm_bytes,      process, peak, rss_hwm,         process, no,  yes, "",     "rss_hwm_bytes")      \
  X(processes,       processes,          processes, peak, processes,     counter, no,  yes, "",     "processes")
// clang-format on

// Expands its arguments only for a figure whose column is `yes` (or whose source is `counter`).
#define MEMWATCH_FIGURE_IF_yes(...) __VA_ARGS__
#define MEMWATCH_FIGURE_IF_no(...)
#define MEMWATCH_FIGURE_IF_counter(...) __VA_ARGS__
#define MEMWATCH_FIGURE_IF_process(...)

// Struct members named after the figures: `std::int64_t name = 0;` for every SAMPLE figure, or
// every run figure (BYE, the store's Run).
#define MEMWATCH_FIGURE_SAMPLE_MEMBER(id, name, kind, stat, follows, source, sample, run, group, \
                                      key)                                                       \
  MEMWATCH_FIGURE_IF_##sample(std::int64_t name = 0;)
#define MEMWATCH_FIGURE_RUN_MEMBER(id, name, kind, stat, follows, source, sample, run, group, key) \
  MEMWATCH_FIGURE_IF_##run(std::int64_t name = 0;)

namespace memwatch::protocol {

enum class FigureKind : std::uint8_t { host, device, pinned, managed, threads, process, processes };
enum class FigureStat : std::uint8_t { live, peak };
enum class FigureSource : std::uint8_t { counter, process };

// A figure's description; kFigures holds them in list order.
struct Figure {
  std::string_view name;
  FigureKind kind;
  FigureStat stat;
  FigureSource source;
  bool sample;                    // in every SAMPLE
  bool run;                       // a run's result: BYE, the store, `runs`, the sweep's CSV
  std::string_view report_group;  // "host", or "" for the report's top level
  std::string_view report_key;
};

enum class FigureId : std::size_t {
#define MEMWATCH_FIGURE_ID(id, ...) id,
  MEMWATCH_FIGURES(MEMWATCH_FIGURE_ID)
#undef MEMWATCH_FIGURE_ID
};

inline constexpr Figure kFigures[] = {
#define MEMWATCH_FIGURE_IS_yes true
#define MEMWATCH_FIGURE_IS_no false
#define MEMWATCH_FIGURE_DESCRIBE(id, name, kind, stat, follows, source, sample, run, group, key) \
  Figure{#name,                                                                                  \
         FigureKind::kind,                                                                       \
         FigureStat::stat,                                                                       \
         FigureSource::source,                                                                   \
         MEMWATCH_FIGURE_IS_##sample,                                                            \
         MEMWATCH_FIGURE_IS_##run,                                                               \
         group,                                                                                  \
         key},
    MEMWATCH_FIGURES(MEMWATCH_FIGURE_DESCRIBE)
#undef MEMWATCH_FIGURE_DESCRIBE
#undef MEMWATCH_FIGURE_IS_yes
#undef MEMWATCH_FIGURE_IS_no
};

inline constexpr std::size_t kFigureCount = std::size(kFigures);

constexpr const Figure& figure(FigureId id) noexcept {
  return kFigures[static_cast<std::size_t>(id)];
}

// Where a figure of kFigures is in it.
constexpr std::size_t figure_index(const Figure& f) noexcept {
  return static_cast<std::size_t>(&f - kFigures);
}

// Where `name` is in kFigures, or kFigureCount.
constexpr std::size_t figure_index(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kFigureCount; ++i)
    if (kFigures[i].name == name) return i;
  return kFigureCount;
}

// fn(const Figure&, value) for every figure of a snapshot (members named by id), in list order.
template <class Snapshot, class Fn>
constexpr void for_each_figure(Snapshot& s, Fn&& fn) {
#define MEMWATCH_FIGURE_VISIT(id, ...) fn(figure(FigureId::id), s.id);
  MEMWATCH_FIGURES(MEMWATCH_FIGURE_VISIT)
#undef MEMWATCH_FIGURE_VISIT
}

// fn(const Figure&, value) for every SAMPLE figure of a struct with members named by name.
template <class Message, class Fn>
constexpr void for_each_sample_figure(Message& m, Fn&& fn) {
#define MEMWATCH_FIGURE_VISIT(id, name, kind, stat, follows, source, sample, run, group, key) \
  MEMWATCH_FIGURE_IF_##sample(fn(figure(FigureId::id), m.name);)
  MEMWATCH_FIGURES(MEMWATCH_FIGURE_VISIT)
#undef MEMWATCH_FIGURE_VISIT
}

// fn(const Figure&, value) for every run figure of a struct with members named by name (Bye,
// the store's Run).
template <class Record, class Fn>
constexpr void for_each_run_figure(Record& r, Fn&& fn) {
#define MEMWATCH_FIGURE_VISIT(id, name, kind, stat, follows, source, sample, run, group, key) \
  MEMWATCH_FIGURE_IF_##run(fn(figure(FigureId::id), r.name);)
  MEMWATCH_FIGURES(MEMWATCH_FIGURE_VISIT)
#undef MEMWATCH_FIGURE_VISIT
}

// A snapshot's SAMPLE figures into a message (members named by name).
template <class Snapshot, class Message>
constexpr void copy_sample_figures(const Snapshot& s, Message& m) {
#define MEMWATCH_FIGURE_COPY(id, name, kind, stat, follows, source, sample, run, group, key) \
  MEMWATCH_FIGURE_IF_##sample(m.name = s.id;)
  MEMWATCH_FIGURES(MEMWATCH_FIGURE_COPY)
#undef MEMWATCH_FIGURE_COPY
}

// A snapshot's run figures into a record (members named by name).
template <class Snapshot, class Record>
constexpr void copy_run_figures(const Snapshot& s, Record& r) {
#define MEMWATCH_FIGURE_COPY(id, name, kind, stat, follows, source, sample, run, group, key) \
  MEMWATCH_FIGURE_IF_##run(r.name = s.id;)
  MEMWATCH_FIGURES(MEMWATCH_FIGURE_COPY)
#undef MEMWATCH_FIGURE_COPY
}

// The sweep's CSV after its parameter columns: every run figure, then how the run went. The
// modeler reads these as measurements, never as parameters.
inline std::vector<std::string> sweep_measure_columns() {
  std::vector<std::string> columns;
  for (const Figure& f : kFigures)
    if (f.run) columns.emplace_back(f.name);
  columns.emplace_back("elapsed_s");
  columns.emplace_back("exit_status");
  return columns;
}

}  // namespace memwatch::protocol
