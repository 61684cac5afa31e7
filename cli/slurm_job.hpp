// A Slurm job as `scontrol show job -o` describes it: what it asked for, whose it is, where it
// ran. Read by `memwatch report --slurm`; the controller keeps a finished job for MinJobAge.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memwatch::cli {

struct SlurmJob {
  std::string id;
  std::string user;
  std::string state;
  std::string partition;
  std::string nodes;
  std::optional<std::int64_t> mem_bytes;  // per node (MinMemoryNode); none when per CPU or unset
  int gpus = 0;                           // per node (TresPerNode)
};

// One line of `scontrol show job -o`.
SlurmJob slurm_job_from_line(std::string_view line);

// The job `id` (digits), or none when the controller does not know it (any more).
std::optional<SlurmJob> slurm_job(const std::string& id);

// The jobs of `user` the controller knows, newest first.
std::vector<SlurmJob> slurm_jobs_of(const std::string& user);

}  // namespace memwatch::cli
