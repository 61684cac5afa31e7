// Refits run in a worker thread, never on the socket thread: the loop asks for a workload to
// be refitted after each finished run, and picks up the workloads whose models changed. The
// worker has its own connection to the store (WAL lets it read while the loop writes), and
// checkpoints the WAL every second, which the loop's connection leaves to it.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace memwatch::daemon {

class ModelWorker {
 public:
  // `axes`: what memwatchd --axes states, for every fit.
  ModelWorker(std::string db_path, std::map<std::string, int> axes);
  ~ModelWorker();
  ModelWorker(const ModelWorker&) = delete;
  ModelWorker& operator=(const ModelWorker&) = delete;

  // Queues a refit of `workload` (requests for one workload coalesce).
  void request(const std::string& workload);
  // The workloads refitted since the last call, each with one line on what happened.
  std::vector<std::pair<std::string, std::string>> take_done();
  // Waits until nothing is queued or running (for tests and orderly shutdown).
  void drain();

 private:
  void run();

  std::string db_path_;
  std::map<std::string, int> axes_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::set<std::string> pending_;
  std::vector<std::pair<std::string, std::string>> done_;
  bool busy_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace memwatch::daemon
