// memwatchd as users run it, for the tests: a real process in the foreground on endpoints of its
// own (ipc under DIR/sock, or the tcp ones given), asked over its query socket, stopped with the
// object. MEMWATCHD_PATH names the binary (each test target defines it).
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "free_ports.hpp"
#include "memwatch/protocol/curve_keys.hpp"
#include "process.hpp"

namespace memwatch::test {

struct DaemonSetup {
  std::string ingest, query, events;   // empty: ipc endpoints under DIR/sock
  std::string db;                      // empty: DIR/state/memwatch.db
  std::vector<std::string> more_args;  // --curve-keys DIR, say
  std::string client_keys;             // the key folder ask() uses as a CURVE client; empty: none
};

// Makes `socket` a CURVE client with the keys in `dir` (a `memwatch keygen` folder).
inline void make_curve_client(zmq::socket_t& socket, const std::string& dir) {
  protocol::CurveClientKeys keys;
  std::string error;
  if (!protocol::read_client_keys(dir, keys, error)) throw std::runtime_error(error);
  socket.set(zmq::sockopt::curve_serverkey, zmq::buffer(keys.server_public));
  socket.set(zmq::sockopt::curve_publickey, zmq::buffer(keys.client_public));
  socket.set(zmq::sockopt::curve_secretkey, zmq::buffer(keys.client_secret));
}

// A key folder made by `memwatch keygen DIR` (the CLI at `cli`); returns DIR.
inline std::string keygen(const std::string& cli, const std::string& dir) {
  const auto made = run({cli, "keygen", dir});
  if (made.exit_code != 0) throw std::runtime_error("keygen failed: " + made.err);
  return dir;
}

// `n` tcp endpoints on 127.0.0.1 whose ports were free a moment ago (held together while
// chosen, so they differ).
inline std::vector<std::string> free_tcp_endpoints(int n) {
  std::vector<std::string> endpoints;
  for (int port : free_loopback_ports(n))
    endpoints.push_back("tcp://127.0.0.1:" + std::to_string(port));
  return endpoints;
}

inline bool all_finished(const nlohmann::json& runs, std::size_t n) {
  if (runs.size() != n) return false;
  for (const auto& r : runs)
    if (r["status"] != "finished") return false;
  return true;
}

class Daemon {
 public:
  explicit Daemon(const std::string& dir, const std::string& db = "")
      : Daemon(dir, DaemonSetup{"", "", "", db, {}, ""}) {}
  Daemon(const std::string& dir, DaemonSetup setup) : dir_(dir), setup_(std::move(setup)) {
    if (setup_.ingest.empty()) setup_.ingest = "ipc://" + dir_ + "/sock/ingest";
    if (setup_.query.empty()) setup_.query = "ipc://" + dir_ + "/sock/query";
    if (setup_.events.empty()) setup_.events = "ipc://" + dir_ + "/sock/events";
    if (setup_.db.empty()) setup_.db = dir_ + "/state/memwatch.db";
    start();
  }
  ~Daemon() { stop(SIGTERM); }
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Returns once the daemon said its sockets are bound (or it ended, or 10 s passed).
  void start() {
    const std::size_t ready_before = count(log(), kReady);
    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ == 0) {
      die_with(parent);
      const std::string err = dir_ + "/daemon.err";
      if (freopen(err.c_str(), "a", stderr) == nullptr) _exit(126);
      dup2(STDERR_FILENO, STDOUT_FILENO);
      // A queue of its own: on a PostgreSQL store each daemon holds one (--queue).
      std::vector<std::string> args = {MEMWATCHD_PATH,
                                       "--ingest",
                                       setup_.ingest,
                                       "--query",
                                       setup_.query,
                                       "--events",
                                       setup_.events,
                                       "--store",
                                       setup_.db,
                                       "--queue",
                                       dir_ + "/state/queue.db",
                                       "--foreground"};
      args.insert(args.end(), setup_.more_args.begin(), setup_.more_args.end());
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    for (int i = 0; i < 1000 && count(log(), kReady) == ready_before; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  // The daemon's exit status (-1 when it was not running, 128+N after signal N).
  int stop(int sig) {
    if (pid_ <= 0) return -1;
    kill(pid_, sig);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  [[nodiscard]] const std::string& ingest() const { return setup_.ingest; }
  [[nodiscard]] const std::string& query() const { return setup_.query; }
  [[nodiscard]] const std::string& events() const { return setup_.events; }
  [[nodiscard]] std::string sock_dir() const { return dir_ + "/sock"; }
  [[nodiscard]] const std::string& client_keys() const { return setup_.client_keys; }
  // What the daemon wrote on stderr, every start together.
  [[nodiscard]] std::string log() const {
    std::ifstream in(dir_ + "/daemon.err");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  nlohmann::json ask(const nlohmann::json& request) {
    zmq::socket_t s(context_, zmq::socket_type::req);
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::rcvtimeo, 5000);
    if (!setup_.client_keys.empty()) make_curve_client(s, setup_.client_keys);
    s.connect(query());
    const std::string text = request.is_string() ? request.get<std::string>() : request.dump();
    s.send(zmq::buffer(text), zmq::send_flags::none);
    zmq::message_t reply;
    if (!s.recv(reply)) return nlohmann::json{{"ok", false}, {"error", kNoReply}};
    return nlohmann::json::parse(reply.to_string());
  }

  // Asks `request` again until a reply with ok:true satisfies `done`, the daemon stops
  // answering (asking on would only time out), or about 6 s pass; returns the last reply.
  nlohmann::json ask_until(const nlohmann::json& request,
                           const std::function<bool(const nlohmann::json&)>& done) {
    nlohmann::json reply;
    for (int i = 0; i < 300; ++i) {
      reply = ask(request);
      if (reply.value("error", "") == kNoReply || (reply["ok"] == true && done(reply))) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return reply;
  }

  // The runs of `workload` once `done(runs)`, or as they were at the deadline.
  nlohmann::json wait_runs(const std::string& workload,
                           const std::function<bool(const nlohmann::json&)>& done) {
    return ask_until({{"op", "runs"}, {"workload", workload}},
                     [&](const nlohmann::json& reply) { return done(reply["runs"]); })["runs"];
  }

  // A prediction from the model of `workload` (`target`), once it was fitted on `runs` runs.
  nlohmann::json wait_model(const std::string& workload, const std::string& target,
                            const nlohmann::json& params, int runs) {
    return ask_until(
        {{"op", "predict"}, {"workload", workload}, {"target", target}, {"params", params}},
        [runs](const nlohmann::json& reply) { return reply["runs"].get<int>() >= runs; });
  }

  zmq::context_t context_;

 private:
  static constexpr std::string_view kReady = "memwatchd: ingest ";
  static constexpr const char* kNoReply = "no reply";
  static std::size_t count(const std::string& text, std::string_view what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }

  std::string dir_;
  DaemonSetup setup_;
  pid_t pid_ = -1;
};

}  // namespace memwatch::test
