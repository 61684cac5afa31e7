// Load on memwatchd: N simulated shims (DEALER sockets speaking the real wire format) report
// HELLO, SAMPLEs at a fixed rate and BYE, while a client measures query latency over ipc.
// Prints what was stored against what was sent, the ingest rate, and p50/p99 latency.
//   daemon_load QUERY_EPS INGEST_EPS [SHIMS=200] [HZ=100] [SECONDS=30]
// Several daemons on one shared store: comma-separated endpoints, shim i reporting to the
// (i mod n)th ingest endpoint and the status probes going round the query endpoints.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "memwatch/protocol/wire.hpp"

using namespace std::chrono;
using nlohmann::json;
namespace protocol = memwatch::protocol;

namespace {

json ask(zmq::socket_t& s, const json& request) {
  const std::string text = request.dump();
  s.send(zmq::buffer(text), zmq::send_flags::none);
  zmq::message_t reply;
  if (!s.recv(reply)) return json{{"ok", false}};
  return json::parse(reply.to_string());
}

// One simulated shim: its own socket, its own pace.
void shim(zmq::context_t& ctx, const std::string& ingest, int index, int hz, double seconds,
          const std::string& workload, std::atomic<long>& sent) {
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 60000);
  s.set(zmq::sockopt::sndhwm, 100000);
  s.connect(ingest);
  protocol::Hello hello;
  hello.pid = static_cast<std::uint32_t>(4000000 + index);  // no such process: never "killed" early
  hello.host = "load-generator";
  hello.workload = workload;
  hello.params = {{"shim", index}};
  s.send(zmq::buffer(protocol::encode(hello)), zmq::send_flags::none);
  const auto start = steady_clock::now();
  const auto period = duration<double>(1.0 / hz);
  long n = 0;
  for (;; ++n) {
    const auto due = start + duration_cast<steady_clock::duration>(period * n);
    if (due - start >= duration<double>(seconds)) break;
    std::this_thread::sleep_until(due);
    protocol::Sample sample{
        hello.pid, duration<double>(due - start).count(), n * 1000, n * 1000, n * 900, n * 100, 0,
        0};
    s.send(zmq::buffer(protocol::encode(sample)), zmq::send_flags::none);
  }
  protocol::Bye bye;
  bye.pid = hello.pid;
  bye.host_peak_bytes = n * 1000;
  s.send(zmq::buffer(protocol::encode(bye)), zmq::send_flags::none);
  sent += n;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t from = 0;
  for (std::size_t comma; (comma = text.find(',', from)) != std::string::npos; from = comma + 1)
    parts.push_back(text.substr(from, comma - from));
  parts.push_back(text.substr(from));
  return parts;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s QUERY_EP INGEST_EP [SHIMS] [HZ] [SECONDS]\n", argv[0]);
    return 2;
  }
  const std::vector<std::string> queries = split_commas(argv[1]), ingests = split_commas(argv[2]);
  const int shims = argc > 3 ? std::atoi(argv[3]) : 200;
  const int hz = argc > 4 ? std::atoi(argv[4]) : 100;
  const double seconds = argc > 5 ? std::atof(argv[5]) : 30;
  const std::string workload = "load-" + std::to_string(getpid());

  zmq::context_t ctx(2);
  // The querying client has a context of its own, as the CLI in its own process has: its
  // replies are not queued behind the simulated shims' frames in this process's I/O threads.
  zmq::context_t client_ctx(1);
  std::vector<zmq::socket_t> clients;
  for (const std::string& query : queries) {
    zmq::socket_t& client = clients.emplace_back(client_ctx, zmq::socket_type::req);
    client.set(zmq::sockopt::rcvtimeo, 10000);
    // A daemon that stops answering (one of several died) must not wedge the socket.
    client.set(zmq::sockopt::req_relaxed, 1);
    client.set(zmq::sockopt::req_correlate, 1);
    client.connect(query);
    if (ask(client, {{"op", "status"}})["ok"] != true) {
      std::fprintf(stderr, "daemon_load: no memwatchd answers at %s\n", query.c_str());
      return 1;
    }
  }
  zmq::socket_t& client = clients.front();

  std::atomic<long> sent{0};
  std::atomic<bool> done{false};
  std::vector<double> latency_ms;
  std::thread prober([&] {
    for (std::size_t turn = 0; !done; ++turn) {
      const auto t0 = steady_clock::now();
      ask(clients[turn % clients.size()], {{"op", "status"}});
      latency_ms.push_back(duration<double, std::milli>(steady_clock::now() - t0).count());
      std::this_thread::sleep_for(milliseconds(5));
    }
  });
  const auto t0 = steady_clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < shims; ++i)
    threads.emplace_back(shim, std::ref(ctx), ingests[static_cast<std::size_t>(i) % ingests.size()],
                         i, hz, seconds, workload, std::ref(sent));
  for (auto& t : threads) t.join();
  std::fprintf(stderr, "daemon_load: %d shims done after %.1f s; waiting for the store\n", shims,
               duration<double>(steady_clock::now() - t0).count());
  done = true;
  prober.join();

  json after;
  std::size_t finished = 0;
  long stored_samples = 0;
  for (int i = 0; i < 600; ++i) {  // up to a minute for the daemon to drain its queue
    after = ask(client, {{"op", "runs"}, {"workload", workload}});
    finished = 0;
    stored_samples = 0;
    for (const auto& r : after["runs"]) {
      finished += r["status"] == "finished";
      stored_samples += r["samples"].get<long>();
    }
    if (finished == static_cast<std::size_t>(shims) && stored_samples >= sent) break;
    std::this_thread::sleep_for(milliseconds(100));
  }
  const double elapsed = duration<double>(steady_clock::now() - t0).count();
  std::printf("daemon load: %d shims x %d Hz x %.0f s over ipc, %zu daemon%s\n", shims, hz, seconds,
              ingests.size(), ingests.size() > 1 ? "s on one store" : "");
  std::printf("  runs stored    %zu of %d (finished)\n", finished, shims);
  std::printf("  samples stored %ld of %ld sent (%ld lost)\n", stored_samples, sent.load(),
              sent.load() - stored_samples);
  std::printf("  ingest rate    %.0f samples/s over %.1f s\n",
              static_cast<double>(stored_samples) / elapsed, elapsed);
  std::printf(
      "  query latency  p50 %.3f ms, p95 %.3f ms, p99 %.3f ms, max %.3f ms "
      "(%zu status queries under load)\n",
      percentile(latency_ms, 0.5), percentile(latency_ms, 0.95), percentile(latency_ms, 0.99),
      percentile(latency_ms, 1.0), latency_ms.size());
  return 0;
}
