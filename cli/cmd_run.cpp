// `memwatch run [--workload W] [--param k=v ...] [--report PATH] -- CMD ...`: runs CMD under
// the shim, for those who would rather not type LD_PRELOAD. Exits with CMD's status.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "args.hpp"
#include "shim_path.hpp"

namespace memwatch::cli {

int cmd_run(std::span<char* const> argv) {
  const Args args(argv, {"workload", "param", "report", "shim", "endpoint", "capacity"}, {});
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
  if (!params.empty()) setenv("MEMWATCH_PARAMS", params.c_str(), 1);
  if (auto w = args.value("workload")) setenv("MEMWATCH_WORKLOAD", w->c_str(), 1);
  if (auto r = args.value("report")) setenv("MEMWATCH_REPORT", r->c_str(), 1);
  if (auto e = args.value("endpoint")) setenv("MEMWATCH_ENDPOINT", e->c_str(), 1);
  if (auto c = args.value("capacity")) setenv("MEMWATCH_CAPACITY", c->c_str(), 1);
  unsetenv("MEMWATCH_JOB");  // a job of its own, even when started inside another

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
