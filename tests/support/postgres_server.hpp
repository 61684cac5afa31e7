// A real PostgreSQL server for tests: initdb and pg_ctl (Debian's postgresql) on a temporary
// folder and a free port, reached over its own Unix socket folder, stopped with the object
// whatever happens. Run as root (CI), the server runs as the `postgres` user, as PostgreSQL
// insists.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "free_ports.hpp"
#include "process.hpp"

namespace memwatch::test {

class PostgresServer {
 public:
  PostgresServer() : port_(free_loopback_ports(1)[0]) {
    home_ = dir_.file("pg");
    mkdir(home_.c_str(), 0700);
    if (geteuid() == 0) {
      chmod(dir_.path().c_str(), 0711);  // the server's user passes through the test's folder
      must(run({"/bin/chown", "postgres:postgres", home_}), "chown");
    }
    must(run(as_owner({bin("initdb"), "-D", home_ + "/data", "-U", "memwatch", "--auth=trust", "-E",
                       "UTF8", "--no-sync"})),
         "initdb");
    start();
  }
  ~PostgresServer() { stop(); }
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  void start() {
    must(run(as_owner({bin("pg_ctl"), "-D", home_ + "/data", "-l", home_ + "/log", "-w", "-o",
                       "-p " + std::to_string(port_) + " -k " + home_ +
                           " -c listen_addresses='' -c fsync=off",
                       "start"})),
         "pg_ctl start");
    running_ = true;
  }
  // Stops at once, as a crash would (the next start recovers); "fast" as an operator's restart
  // does, ending every session first.
  void stop(const std::string& mode = "immediate") {
    if (!running_) return;
    run(as_owner({bin("pg_ctl"), "-D", home_ + "/data", "-m", mode, "-w", "stop"}));
    running_ = false;
  }
  // The first column of `sql`'s rows in `database`, one line each (psql's unaligned output).
  std::string query(const std::string& database, const std::string& sql) {
    const Finished f = run(as_owner({bin("psql"), "-h", home_, "-p", std::to_string(port_), "-U",
                                     "memwatch", "-d", database, "-tAc", sql}));
    must(f, "psql " + sql);
    std::string out = f.out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }
  // A database of its own for each caller that names one.
  std::string create_database(const std::string& name) {
    must(run(as_owner(
             {bin("createdb"), "-h", home_, "-p", std::to_string(port_), "-U", "memwatch", name})),
         "createdb " + name);
    return url(name);
  }
  [[nodiscard]] std::string url(const std::string& database) const {
    return "postgresql://memwatch@/" + database + "?host=" + home_ +
           "&port=" + std::to_string(port_);
  }

 private:
  static std::string bin(const std::string& tool) { return std::string(PG_BINDIR) + "/" + tool; }
  std::vector<std::string> as_owner(std::vector<std::string> argv) const {
    if (geteuid() != 0) return argv;
    argv.insert(argv.begin(), {"/usr/sbin/runuser", "-u", "postgres", "--"});
    return argv;
  }
  static void must(const Finished& f, const std::string& what) {
    if (f.exit_code != 0) throw std::runtime_error(what + " failed: " + f.err + f.out);
  }

  TempDir dir_;
  int port_;
  std::string home_;
  bool running_ = false;
};

}  // namespace memwatch::test
