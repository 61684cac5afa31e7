// memwatchd: stores every run the shims report, answers queries, recovers killed runs.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <optional>
#include <span>
#include <string>

#include "curve_auth.hpp"
#include "options.hpp"
#include "server.hpp"

namespace {

std::atomic<bool> g_stop{false};

void request_stop(int) {
  g_stop.store(true);
}

// Detaches before any ZeroMQ context exists (its I/O threads would not survive a fork). The
// parent stays until the child reports its sockets bound, so start-up errors still reach the
// terminal and the exit status; returns the write end of that report pipe, in the child.
int detach() {
  int ready[2];
  if (pipe(ready) != 0) return -1;
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid > 0) {
    close(ready[1]);
    char status = 1;
    const bool told = read(ready[0], &status, 1) == 1;
    _exit(told && status == 0 ? 0 : 1);
  }
  close(ready[0]);
  setsid();
  return ready[1];
}

void report_ready(int fd, bool ok) {
  if (fd < 0) return;
  const char status = ok ? 0 : 1;
  [[maybe_unused]] ssize_t w = write(fd, &status, 1);
  close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  const std::span<char* const> args(argv + 1, static_cast<std::size_t>(argc - 1));
  for (const char* a : args) {
    if (std::string_view(a) == "--help" || std::string_view(a) == "-h") {
      std::fputs(memwatch::daemon::options_help().c_str(), stdout);
      return 0;
    }
  }
  std::string error;
  const auto options = memwatch::daemon::parse_options(args, error);
  if (!options) {
    std::fprintf(stderr, "memwatchd: %s\n", error.c_str());
    return 2;
  }
  std::optional<memwatch::daemon::CurveServerKeys> curve;
  if (!options->curve_keys.empty() &&
      !(curve = memwatch::daemon::load_server_keys(options->curve_keys, error))) {
    std::fprintf(stderr, "memwatchd: %s\n", error.c_str());
    return 2;
  }
  if (!memwatch::daemon::prepare_paths(*options, error)) {
    std::fprintf(stderr, "memwatchd: %s\n", error.c_str());
    return 1;
  }
  // Every file memwatchd makes (sockets, the store) is its user's alone: in a shared sticky
  // folder nobody else may connect to its sockets or read its store.
  umask(077);
  int ready_fd = -1;
  if (!options->foreground && (ready_fd = detach()) < 0) {
    std::fprintf(stderr, "memwatchd: cannot detach\n");
    return 1;
  }
  try {
    const std::string secured =
        curve ? ", CurveZMQ for " + std::to_string(curve->clients.size()) + " client keys" : "";
    memwatch::daemon::Server server(*options, std::move(curve));
    std::fprintf(stderr, "memwatchd: ingest %s, query %s, events %s, store %s%s\n",
                 options->ingest.c_str(), options->query.c_str(), options->events.c_str(),
                 memwatch::daemon::without_password(options->store).c_str(), secured.c_str());
    if (const auto health = server.store_health(); !health.reachable)
      std::fprintf(stderr, "memwatchd: %s; runs are queued in %s until the store answers\n",
                   health.why.c_str(), health.queue.c_str());
    report_ready(ready_fd, true);
    struct sigaction act {};
    act.sa_handler = request_stop;
    sigaction(SIGTERM, &act, nullptr);
    sigaction(SIGINT, &act, nullptr);
    signal(SIGPIPE, SIG_IGN);
    server.run(g_stop);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memwatchd: %s\n", e.what());
    report_ready(ready_fd, false);
    return 1;
  }
  return 0;
}
