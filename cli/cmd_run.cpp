// `memwatch run [--workload W] [--param k=v ...] [--report PATH] -- CMD ...`: runs CMD under
// the shim, for those who would rather not type LD_PRELOAD. Exits with CMD's status.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "args.hpp"
#include "memwatch/protocol/shim_options.hpp"
#include "shim_path.hpp"

namespace memwatch::cli {

namespace {

using protocol::shim_option;
using protocol::ShimOption;

// The shim's variable an option sets, whose meaning is its help.
constexpr Option sets(std::string_view name, std::string_view value, ShimOption variable) {
  return {name, value, shim_option(variable).meaning};
}

constexpr Option kOptions[] = {
    sets("workload", "W", ShimOption::workload),
    {"param", "NAME=VALUE", "a numeric parameter of the run; repeatable"},
    sets("report", "PATH", ShimOption::report),
    sets("capacity", "LIST", ShimOption::capacity),
    sets("endpoint", "EP", ShimOption::endpoint),
    {"shim", "PATH",
     "the libmemwatch.so to preload (default: MEMWATCH_SHIM, else the one built beside this "
     "memwatch)"},
};

constexpr Usage kUsage{
    "[--workload W] [--param NAME=VALUE ...] [--report PATH] [options] -- COMMAND [ARGS]",
    "Runs COMMAND under the shim, as LD_PRELOAD=libmemwatch.so would (what LD_PRELOAD holds "
    "already stays, after it), and exits with its status. Each option sets the shim's variable "
    "of its name (--param: MEMWATCH_PARAMS); `memwatch env` says their defaults.",
    kOptions};

void set_variable(ShimOption variable, const std::string& value) {
  setenv(shim_option(variable).variable, value.c_str(), 1);
}

}  // namespace

std::string help_run() {
  return usage_text("run", kUsage);
}

int cmd_run(std::span<char* const> argv) {
  const Args args(argv, kOptions);
  if (args.rest().empty()) throw UsageError("nothing to run: put the command after --");
  const std::string shim = find_shim(args.value("shim").value_or(""));

  std::string params;
  for (const std::string& p : args.values("param")) {
    const auto eq = p.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("--param expects name=number, got '" + p + "'");
    parse_number(std::string_view(p).substr(eq + 1), "--param " + p.substr(0, eq));
    params += (params.empty() ? "" : ",") + p;
  }
  // Keep whatever the caller preloads already; the shim goes first.
  std::string preload = shim;
  if (const char* existing = std::getenv("LD_PRELOAD"); existing && *existing)
    preload += std::string(":") + existing;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  if (!params.empty()) set_variable(ShimOption::params, params);
  if (auto w = args.value("workload")) set_variable(ShimOption::workload, *w);
  if (auto r = args.value("report")) set_variable(ShimOption::report, *r);
  if (auto e = args.value("endpoint")) set_variable(ShimOption::endpoint, *e);
  if (auto c = args.value("capacity")) set_variable(ShimOption::capacity, *c);
  unsetenv(shim_option(ShimOption::job).variable);  // a job of its own, even inside another

  std::vector<char*> command;
  for (const std::string& word : args.rest()) command.push_back(const_cast<char*>(word.c_str()));
  command.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    execvp(command[0], command.data());
    std::perror(("memwatch run: " + args.rest()[0]).c_str());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace memwatch::cli
