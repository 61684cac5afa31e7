#include "daemon_process.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <thread>

namespace memwatch::test {

using nlohmann::json;
using namespace std::chrono_literals;

DaemonProcess::DaemonProcess(std::string memwatchd, std::string dir, std::string db,
                             std::vector<std::string> extra_args)
    : memwatchd_(std::move(memwatchd)),
      dir_(std::move(dir)),
      db_(db.empty() ? dir_ + "/state/memwatch.db" : std::move(db)),
      extra_args_(std::move(extra_args)) {
  start();
}

void DaemonProcess::start() {
  std::vector<std::string> args = {memwatchd_, "--ingest", ingest(), "--query", query(),
                                   "--events", events(),   "--db",   db_,       "--foreground"};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string err = dir_ + "/daemon.err";
  pid_ = fork();
  if (pid_ == 0) {
    if (std::freopen(err.c_str(), "a", stderr) == nullptr) _exit(126);
    execv(argv[0], argv.data());
    _exit(127);
  }
  for (int i = 0; i < 200 && !std::filesystem::exists(dir_ + "/sock/query"); ++i)
    std::this_thread::sleep_for(10ms);
}

void DaemonProcess::stop(int sig) {
  if (pid_ <= 0) return;
  kill(pid_, sig);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

json DaemonProcess::ask(const json& request) {
  zmq::socket_t s(context_, zmq::socket_type::req);
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::rcvtimeo, 5000);
  s.connect(query());
  const std::string text = request.is_string() ? request.get<std::string>() : request.dump();
  s.send(zmq::buffer(text), zmq::send_flags::none);
  zmq::message_t reply;
  if (!s.recv(reply)) return json{{"ok", false}, {"error", "no reply"}};
  return json::parse(reply.to_string());
}

json DaemonProcess::wait_runs(const std::string& workload,
                              const std::function<bool(const json&)>& done) {
  json runs;
  for (int i = 0; i < 300; ++i) {
    runs = ask({{"op", "runs"}, {"workload", workload}})["runs"];
    if (done(runs)) break;
    std::this_thread::sleep_for(20ms);
  }
  return runs;
}

bool all_finished(const json& runs, std::size_t n) {
  if (runs.size() != n) return false;
  for (const auto& r : runs)
    if (r["status"] != "finished") return false;
  return true;
}

EventLog::EventLog(DaemonProcess& daemon) : socket_(daemon.context_, zmq::socket_type::sub) {
  socket_.set(zmq::sockopt::linger, 0);
  socket_.set(zmq::sockopt::subscribe, "");
  socket_.connect(daemon.events());
  // A subscription takes effect only once the daemon has it; nothing tells us when.
  std::this_thread::sleep_for(200ms);
}

std::optional<json> EventLog::wait_for(const std::function<bool(const json&)>& match,
                                       std::chrono::milliseconds timeout) {
  for (const json& e : seen_)
    if (match(e)) return e;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    socket_.set(zmq::sockopt::rcvtimeo, static_cast<int>(std::max(left.count(), 1L)));
    zmq::message_t message;
    if (!socket_.recv(message)) continue;
    seen_.push_back(json::parse(message.to_string()));
    if (match(seen_.back())) return seen_.back();
  }
  return std::nullopt;
}

}  // namespace memwatch::test
