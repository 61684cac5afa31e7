// The run's report, schema memwatch.report/1, formatted and written without allocating so that
// the same code serves a clean exit, _exit and a fatal signal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "counting/counters.hpp"
#include "memwatch/protocol/job_block.hpp"
#include "memwatch/protocol/run_facts.hpp"
#include "settings/config.hpp"

namespace memwatch::shim {

using protocol::ExitCause;

struct ReportFacts {
  const Config* config;
  CounterSnapshot counters;  // its figures of source `process` are the fields below
  std::int64_t error_bound_bytes;
  std::int64_t rss_hwm_bytes;
  std::int64_t host_capacity_bytes;
  double elapsed_s;
  int pid;
  ExitCause cause;
  int detail;                    // the signal number, or the status given to _exit
  std::uint32_t device_sources;  // DeviceSource bits: which sources counted device memory
  std::int64_t device_capacity_bytes[kMaxDevices];  // 0: unknown
  const protocol::JobBlock* job;  // the job's block when this process is its root, else null
};

// Formats the report into buf; returns the JSON, empty if it did not fit.
std::string_view report_format(const ReportFacts& facts, char* buf, std::size_t capacity) noexcept;
// Expands %p in `path_template` to `pid` and writes `json` there, never replacing what is not a
// report (docs/security.md): a new path or a regular file gets a temporary file renamed into
// place, so a reader never sees half a report; a symbolic link is followed to what it names; a
// character device or a FIFO is written in place (a FIFO only when someone reads it); anything
// else is refused. nullptr when written, else why not ("it is a directory").
[[nodiscard]] const char* report_write(const char* path_template, int pid,
                                       std::string_view json) noexcept;

}  // namespace memwatch::shim
