// Submit-time sizing of a batch job (`memwatch advise`, called by slurm/job_submit.lua): what the
// site's policy makes of the job's request, given the daemon's bounds. A pure function, so the
// policies are tested without a scheduler.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memwatch::cli {

// Each policy does what the ones before it do: advise only tells the user; fill also sets the
// request of a job that gave none; raise also raises a request below the bound; reject also
// refuses a job that cannot fit the partition's nodes or the GPUs it asks for.
enum class SizingPolicy { advise, fill, raise, reject };

std::optional<SizingPolicy> sizing_policy_from(std::string_view name);

// The model's answer for one memory: the bound, and the largest value of the varied parameter
// whose bound fits the capacity (only asked for when the bound does not fit).
struct Bound {
  double peak_bytes = 0;
  double upper_bytes = 0;
  std::optional<double> largest_fitting;
};

struct JobRequest {
  std::string workload;
  std::string vary;                            // the parameter to name a fitting value of
  std::optional<std::int64_t> mem_bytes;       // --mem (per node); none when the user gave none
  std::optional<std::int64_t> node_mem_bytes;  // the partition's node memory, when known
  int gpus = 0;                                // GPUs per node the job asks for
  std::optional<std::int64_t> gpu_mem_bytes;   // memory of one of the node's GPUs, when known
};

struct Advice {
  enum class Decision { keep, set_mem, reject };
  Decision decision = Decision::keep;
  std::int64_t mem_mib = 0;  // the request to set (set_mem)
  std::string message;       // for the user; empty when there is nothing to say
};

std::string_view decision_name(Advice::Decision d);

// `host` and `device` are the bounds of the workload's models; none where it has none.
Advice advise_job(SizingPolicy policy, const JobRequest& job, const std::optional<Bound>& host,
                  const std::optional<Bound>& device);

// GPUs per node in Slurm's TRES text (`gres:gpu:2`, `gres/gpu:a100:2`, `gpu`, comma-separated
// with other resources); throws std::invalid_argument naming a malformed GPU item.
int gpus_in_tres(std::string_view tres);

}  // namespace memwatch::cli
