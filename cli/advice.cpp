#include "advice.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace memwatch::cli {

namespace {

constexpr double kMiB = 1048576.0;

std::string gib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", bytes / (kMiB * 1024));
  return text;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// "; the largest batch that fits is 6", or nothing when that is not known.
std::string largest_clause(const JobRequest& job, const Bound& bound) {
  if (job.vary.empty() || !bound.largest_fitting) return "";
  if (*bound.largest_fitting <= 0) return "; no value of " + job.vary + " fits";
  return "; the largest " + job.vary + " that fits is " + number(*bound.largest_fitting);
}

}  // namespace

std::optional<SizingPolicy> sizing_policy_from(std::string_view name) {
  if (name == "advise") return SizingPolicy::advise;
  if (name == "fill") return SizingPolicy::fill;
  if (name == "raise") return SizingPolicy::raise;
  if (name == "reject") return SizingPolicy::reject;
  return std::nullopt;
}

std::string_view decision_name(Advice::Decision d) {
  switch (d) {
    case Advice::Decision::keep:
      return "keep";
    case Advice::Decision::set_mem:
      return "set_mem";
    case Advice::Decision::reject:
      return "reject";
  }
  return "keep";
}

Advice advise_job(SizingPolicy policy, const JobRequest& job, const std::optional<Bound>& host,
                  const std::optional<Bound>& device) {
  Advice advice;
  std::string problems;  // what cannot fit, for the message and for reject
  std::string notes;
  const std::string who = "memwatch: " + job.workload;

  if (device) {
    const double gpus_bytes =
        job.gpu_mem_bytes ? static_cast<double>(*job.gpu_mem_bytes) * job.gpus : 0.0;
    if (job.gpus == 0) {
      notes += "; its GPU memory bound is " + gib(device->upper_bytes) +
               " but the job asks for no GPU (--gres=gpu:N)";
    } else if (job.gpu_mem_bytes && device->upper_bytes > gpus_bytes) {
      problems += "; GPU memory up to " + gib(device->upper_bytes) + " exceeds its " +
                  std::to_string(job.gpus) + " GPU(s) of " +
                  gib(static_cast<double>(*job.gpu_mem_bytes)) + largest_clause(job, *device);
    }
  }

  if (host) {
    const auto need_mib = static_cast<std::int64_t>(std::ceil(host->upper_bytes / kMiB));
    const bool over_node =
        job.node_mem_bytes && host->upper_bytes > static_cast<double>(*job.node_mem_bytes);
    if (over_node)
      problems += "; host memory up to " + gib(host->upper_bytes) +
                  " exceeds the partition's nodes (" +
                  gib(static_cast<double>(*job.node_mem_bytes)) + ")" + largest_clause(job, *host);
    const bool may_set = policy != SizingPolicy::advise && !over_node;
    if (!job.mem_bytes) {
      if (may_set) {
        advice.decision = Advice::Decision::set_mem;
        advice.mem_mib = need_mib;
        notes += "; --mem set to " + std::to_string(need_mib) + "M, its bound (predicted " +
                 gib(host->peak_bytes) + ")";
      } else {
        notes += "; its bound is " + gib(host->upper_bytes) + " (predicted " +
                 gib(host->peak_bytes) + "): ask for --mem=" + std::to_string(need_mib) + "M";
      }
    } else if (static_cast<double>(*job.mem_bytes) < host->upper_bytes) {
      if (may_set && policy >= SizingPolicy::raise) {
        advice.decision = Advice::Decision::set_mem;
        advice.mem_mib = need_mib;
        notes += "; --mem raised from " + gib(static_cast<double>(*job.mem_bytes)) + " to " +
                 std::to_string(need_mib) + "M, its bound (predicted " + gib(host->peak_bytes) +
                 ")";
      } else {
        notes += "; --mem " + gib(static_cast<double>(*job.mem_bytes)) + " is below its bound " +
                 gib(host->upper_bytes) + " (predicted " + gib(host->peak_bytes) +
                 "): ask for --mem=" + std::to_string(need_mib) + "M";
      }
    }
  }

  if (!problems.empty() && policy == SizingPolicy::reject) {
    advice.decision = Advice::Decision::reject;
    advice.mem_mib = 0;
    advice.message = who + " cannot fit" + problems;
    return advice;
  }
  const std::string said = problems + notes;
  if (!said.empty()) advice.message = who + said.substr(1);  // drops the first ';'
  return advice;
}

int gpus_in_tres(std::string_view tres) {
  int gpus = 0;
  while (!tres.empty()) {
    const std::size_t comma = tres.find(',');
    std::string_view item = tres.substr(0, comma);
    tres = comma == std::string_view::npos ? std::string_view() : tres.substr(comma + 1);
    for (std::string_view prefix : {"gres:", "gres/"})
      if (item.starts_with(prefix)) item.remove_prefix(prefix.size());
    if (item != "gpu" && !item.starts_with("gpu:")) continue;
    // gpu, gpu:N, gpu:TYPE (one each) or gpu:TYPE:N
    const std::string_view rest = item.size() > 3 ? item.substr(4) : std::string_view();
    const std::size_t colon = rest.rfind(':');
    const std::string_view count = colon == std::string_view::npos ? rest : rest.substr(colon + 1);
    const bool digits = !count.empty() && count.find_first_not_of("0123456789") == count.npos;
    if (!digits && colon != std::string_view::npos)
      throw std::invalid_argument("'" + std::string(item) + "' is not gpu[:type][:count]");
    if (digits && count.size() > 6)
      throw std::invalid_argument("'" + std::string(item) + "' asks for too many GPUs");
    if (!digits) {
      ++gpus;
      continue;
    }
    int n = 0;
    for (char c : count) n = n * 10 + (c - '0');
    gpus += n;
  }
  return gpus;
}

}  // namespace memwatch::cli
