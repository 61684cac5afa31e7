#include "slurm_job.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>

#include "advice.hpp"
#include "memwatch/protocol/parse.hpp"

namespace memwatch::cli {

namespace {

// Each KEY=VALUE word of the line (values with spaces, like Command=, are cut; none is read).
std::string field(std::string_view line, std::string_view key) {
  std::size_t at = 0;
  while (at < line.size()) {
    const std::size_t end = std::min(line.find(' ', at), line.size());
    const std::string_view word = line.substr(at, end - at);
    if (word.size() > key.size() && word.starts_with(key) && word[key.size()] == '=')
      return std::string(word.substr(key.size() + 1));
    at = end + 1;
  }
  return "";
}

// The output of `scontrol ARGS...`; the words are checked by the callers (digits, a name).
std::string scontrol(const std::string& args) {
  const std::string command = "scontrol " + args + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) throw std::runtime_error("cannot run scontrol");
  std::string out;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe.get())) out.append(buffer, n);
  return out;
}

std::vector<SlurmJob> jobs_in(const std::string& text) {
  std::vector<SlurmJob> jobs;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = std::string_view(text).substr(at, end - at);
    if (line.starts_with("JobId=")) jobs.push_back(slurm_job_from_line(line));
    at = end + 1;
  }
  return jobs;
}

}  // namespace

SlurmJob slurm_job_from_line(std::string_view line) {
  SlurmJob job;
  job.id = field(line, "JobId");
  const std::string user = field(line, "UserId");  // root(0)
  job.user = user.substr(0, user.find('('));
  job.state = field(line, "JobState");
  job.partition = field(line, "Partition");
  job.nodes = field(line, "NodeList");
  // Slurm writes sizes in its own units, M being MiB.
  if (const std::string mem = field(line, "MinMemoryNode"); !mem.empty())
    if (const std::int64_t bytes = protocol::parse_size(mem); bytes > 0) job.mem_bytes = bytes;
  try {
    job.gpus = gpus_in_tres(field(line, "TresPerNode"));
  } catch (const std::invalid_argument&) {
    job.gpus = 0;
  }
  return job;
}

std::optional<SlurmJob> slurm_job(const std::string& id) {
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos)
    throw std::invalid_argument("a Slurm job id is digits, got '" + id + "'");
  auto jobs = jobs_in(scontrol("show job -o " + id));
  if (jobs.empty()) return std::nullopt;
  return jobs.front();
}

std::vector<SlurmJob> slurm_jobs_of(const std::string& user) {
  if (!protocol::valid_name(user)) throw std::invalid_argument("not a user name: '" + user + "'");
  std::vector<SlurmJob> jobs;
  for (SlurmJob& job : jobs_in(scontrol("show job -o")))
    if (job.user == user) jobs.push_back(std::move(job));
  std::sort(jobs.begin(), jobs.end(), [](const SlurmJob& a, const SlurmJob& b) {
    return std::stoll(a.id) > std::stoll(b.id);
  });
  return jobs;
}

}  // namespace memwatch::cli
