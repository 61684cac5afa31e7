#include "process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace memwatch::test {

namespace {

std::vector<std::string> merged_environment(const Environment& extra) {
  std::map<std::string, std::string> all;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    const auto eq = entry.find('=');
    if (eq != std::string::npos) all[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [key, value] : extra) {
    if (value == "\x01unset")
      all.erase(key);
    else
      all[key] = value;
  }
  std::vector<std::string> flat;
  for (const auto& [key, value] : all) flat.push_back(key + "=" + value);
  return flat;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Forks and execs `argv` with `env` added; the child's stdout and stderr become `out_fd` and
// `err_fd` where those are not negative.
pid_t spawn(const std::vector<std::string>& argv_in, const Environment& env, int out_fd,
            int err_fd) {
  std::vector<std::string> argv = argv_in;
  std::vector<std::string> envs = merged_environment(env);
  std::vector<char*> argv_p = pointers(argv);
  std::vector<char*> env_p = pointers(envs);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    die_with(parent);
    if (out_fd >= 0) dup2(out_fd, STDOUT_FILENO);
    if (err_fd >= 0) dup2(err_fd, STDERR_FILENO);
    execve(argv_p[0], argv_p.data(), env_p.data());
    _exit(127);
  }
  return pid;
}

void reap(pid_t pid, Finished& f) {
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    f.signaled = true;
    f.signal = WTERMSIG(status);
  } else {
    f.exit_code = WEXITSTATUS(status);
  }
}

}  // namespace

void die_with(pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);  // the parent ended before the request took hold
}

Finished run(const std::vector<std::string>& argv, const Environment& env,
             std::chrono::seconds deadline) {
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe failed");
  const pid_t pid = spawn(argv, env, out_pipe[1], err_pipe[1]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  Finished f;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&f.out, &f.err};
  const auto end = std::chrono::steady_clock::now() + deadline;
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      f.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, static_cast<int>(left.count())) < 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP)) == 0) continue;
      char buf[65536];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& p : fds)
    if (p.fd >= 0) close(p.fd);
  reap(pid, f);
  return f;
}

Running::Running(const std::vector<std::string>& argv, const Environment& env, Stderr err) {
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  const int null_fd = err == Stderr::discard ? open("/dev/null", O_WRONLY | O_CLOEXEC) : -1;
  pid_ = spawn(argv, env, out_pipe[1], null_fd);
  if (null_fd >= 0) close(null_fd);
  close(out_pipe[1]);
  out_fd_ = out_pipe[0];
}

Running::~Running() {
  if (!reaped_) {
    kill(pid_, SIGKILL);
    Finished ignored;
    reap(pid_, ignored);
  }
  if (out_fd_ >= 0) close(out_fd_);
}

std::string Running::read_line(std::chrono::seconds deadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  for (;;) {
    if (const auto newline = pending_.find('\n'); newline != std::string::npos) {
      std::string line = pending_.substr(0, newline);
      pending_.erase(0, newline + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    pollfd fd{out_fd_, POLLIN, 0};
    if (left.count() <= 0 || poll(&fd, 1, static_cast<int>(left.count())) <= 0) return {};
    char buf[4096];
    const ssize_t n = read(out_fd_, buf, sizeof buf);
    if (n <= 0) return {};
    pending_.append(buf, static_cast<std::size_t>(n));
  }
}

void Running::signal(int sig) {
  kill(pid_, sig);
}

Finished Running::wait() {
  Finished f;
  f.out = pending_;
  char buf[4096];
  for (ssize_t n; (n = read(out_fd_, buf, sizeof buf)) > 0;)
    f.out.append(buf, static_cast<std::size_t>(n));
  reap(pid_, f);
  reaped_ = true;
  return f;
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "memwatch-test-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

namespace {

std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells(1);
  for (char c : line) {
    if (c == ',')
      cells.emplace_back();
    else
      cells.back() += c;
  }
  return cells;
}

}  // namespace

std::vector<CsvRow> read_csv(const std::string& path) {
  std::vector<CsvRow> rows;
  std::ifstream probe(path);
  if (!probe) return rows;
  const auto lines = lines_of(read_file(path));
  if (lines.empty()) return rows;
  const auto header = cells_of(lines[0]);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const auto cells = cells_of(lines[i]);
    if (cells.size() != header.size())
      throw std::runtime_error(path + ": row '" + lines[i] + "' has " +
                               std::to_string(cells.size()) + " cells, the header " +
                               std::to_string(header.size()));
    CsvRow row;
    for (std::size_t c = 0; c < header.size(); ++c) row[header[c]] = cells[c];
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace memwatch::test
