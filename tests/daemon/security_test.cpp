// memwatch on a shared machine, run as root: it changes nothing it does not own (a report aimed
// at a device, a shared folder named for sockets or the store) and trusts no place another user
// controls (a squatted default folder, an open network endpoint). docs/security.md.
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "daemon_process.hpp"
#include "process.hpp"

using namespace memwatch;

namespace {

const std::string kDaemon = MEMWATCHD_PATH;
const std::string kShim = MEMWATCH_SHIM_PATH;
const std::string kPatterns = MEMWATCH_PATTERNS_PATH;
const std::string kCli = MEMWATCH_CLI_PATH;

struct stat stat_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
  return st;
}

// A folder with exactly `mode` (mkdir's is cut by the umask).
std::string make_dir(const std::string& path, mode_t mode) {
  EXPECT_EQ(mkdir(path.c_str(), 0700), 0) << path;
  EXPECT_EQ(chmod(path.c_str(), mode), 0) << path;
  return path;
}

const passwd* nobody() {
  return getpwnam("nobody");
}

#define SKIP_UNLESS_ROOT()                                                             \
  if (geteuid() != 0) GTEST_SKIP() << "needs root (device nodes, other users' files)"; \
  if (nobody() == nullptr) GTEST_SKIP() << "needs the user nobody"

// memwatchd in the foreground; it must end by itself (a refusal) within the deadline.
test::Finished refused_daemon(const std::vector<std::string>& args,
                              const test::Environment& env = {}) {
  std::vector<std::string> argv = {kDaemon, "--foreground"};
  argv.insert(argv.end(), args.begin(), args.end());
  return test::run(argv, env, std::chrono::seconds(10));
}

std::vector<std::string> ipc_args(const std::string& folder) {
  return {"--ingest", "ipc://" + folder + "/ingest", "--query", "ipc://" + folder + "/query",
          "--events", "ipc://" + folder + "/events"};
}

// --- 1. the report writer ---------------------------------------------------------------------

TEST(Security, AReportToADeviceNodeWritesThroughItAndLeavesTheDevice) {
  SKIP_UNLESS_ROOT();
  test::TempDir dir;
  const std::string null = dir.file("null");
  ASSERT_EQ(mknod(null.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  const auto plain = test::run({kPatterns, "heap_paths"});
  const auto watched =
      test::run({kPatterns, "heap_paths"}, {{"LD_PRELOAD", kShim}, {"MEMWATCH_REPORT", null}});
  EXPECT_EQ(watched.exit_code, plain.exit_code);
  EXPECT_EQ(watched.err, "");
  const struct stat st = stat_of(null);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
  EXPECT_TRUE(S_ISCHR(stat_of("/dev/null").st_mode));
}

TEST(Security, AReportAimedAtAFolderIsRefusedInOneLineAndTheProgramRunsOn) {
  test::TempDir dir;
  const auto plain = test::run({kPatterns, "heap_paths"});
  const auto watched = test::run({kPatterns, "heap_paths"},
                                 {{"LD_PRELOAD", kShim}, {"MEMWATCH_REPORT", dir.path()}});
  EXPECT_EQ(watched.exit_code, plain.exit_code);
  EXPECT_EQ(watched.out, plain.out);
  ASSERT_EQ(test::lines_of(watched.err).size(), 1u) << watched.err;
  EXPECT_NE(watched.err.find(dir.path() + ": it is a directory"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

// --- 2. folders named on the command line -----------------------------------------------------

TEST(Security, AStickySharedSocketFolderIsUsedAsItIsWithPrivateSockets) {
  test::TempDir dir;
  const std::string shared = make_dir(dir.file("shared"), 01777);
  test::Daemon daemon(dir.path(), {"ipc://" + shared + "/ingest",
                                   "ipc://" + shared + "/query",
                                   "ipc://" + shared + "/events",
                                   "",
                                   {},
                                   ""});
  EXPECT_EQ(daemon.ask({{"op", "status"}})["ok"], true) << daemon.log();
  EXPECT_EQ(stat_of(shared).st_mode & 07777, 01777u);
  EXPECT_EQ(stat_of(shared + "/ingest").st_mode & 077, 0u) << "a socket only its user may use";
}

TEST(Security, AWorldWritableSocketFolderIsRefusedAndLeftAsItIs) {
  test::TempDir dir;
  const std::string open = make_dir(dir.file("open"), 0777);
  const auto r = refused_daemon(ipc_args(open));
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(open + " is owned by uid"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("mode 0777"), std::string::npos) << r.err;
  EXPECT_EQ(stat_of(open).st_mode & 07777, 0777u);
  EXPECT_TRUE(std::filesystem::is_empty(open));
}

TEST(Security, AMissingSocketFolderIsMadePrivateWithItsParents) {
  test::TempDir dir;
  const std::string nested = dir.file("a/b");
  test::Daemon daemon(dir.path(), {"ipc://" + nested + "/ingest",
                                   "ipc://" + nested + "/query",
                                   "ipc://" + nested + "/events",
                                   "",
                                   {},
                                   ""});
  EXPECT_EQ(daemon.ask({{"op", "status"}})["ok"], true) << daemon.log();
  EXPECT_EQ(stat_of(nested).st_mode & 07777, 0700u);
}

TEST(Security, AStickySharedStoreFolderIsUsedAsItIsWithAPrivateStore) {
  test::TempDir dir;
  const std::string shared = make_dir(dir.file("state"), 01777);
  test::Daemon daemon(dir.path(), shared + "/memwatch.db");
  EXPECT_EQ(daemon.ask({{"op", "status"}})["ok"], true) << daemon.log();
  EXPECT_EQ(stat_of(shared).st_mode & 07777, 01777u);
  EXPECT_EQ(stat_of(shared + "/memwatch.db").st_mode & 0777, 0600u);
}

TEST(Security, AStoreFolderOfAnotherUserIsRefused) {
  SKIP_UNLESS_ROOT();
  test::TempDir dir;
  const std::string theirs = make_dir(dir.file("theirs"), 0755);
  ASSERT_EQ(chown(theirs.c_str(), nobody()->pw_uid, nobody()->pw_gid), 0);
  std::vector<std::string> args = ipc_args(dir.file("sock"));
  args.insert(args.end(), {"--db", theirs + "/memwatch.db"});
  const auto r = refused_daemon(args);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(theirs + " is owned by uid " + std::to_string(nobody()->pw_uid)),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(theirs + "/memwatch.db"));
}

TEST(Security, AStoreFileOfAnotherUserInASharedFolderIsRefused) {
  SKIP_UNLESS_ROOT();
  test::TempDir dir;
  const std::string shared = make_dir(dir.file("shared"), 01777);
  const std::string planted = shared + "/memwatch.db";
  {
    std::FILE* f = std::fopen(planted.c_str(), "w");
    std::fclose(f);
  }
  ASSERT_EQ(chown(planted.c_str(), nobody()->pw_uid, nobody()->pw_gid), 0);
  std::vector<std::string> args = ipc_args(dir.file("sock"));
  args.insert(args.end(), {"--db", planted});
  const auto r = refused_daemon(args);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(planted + " already exists"), std::string::npos) << r.err;
}

// --- 3. the default folder, squatted by another user ------------------------------------------

// $XDG_RUNTIME_DIR/memwatch made beforehand by nobody, mode 0777: the default folder of every
// side of memwatch for a process with XDG_RUNTIME_DIR set to the returned folder's parent.
struct Squatted {
  test::TempDir runtime;
  std::string folder = runtime.file("memwatch");
  Squatted() {
    make_dir(folder, 0777);
    EXPECT_EQ(chown(folder.c_str(), nobody()->pw_uid, nobody()->pw_gid), 0);
  }
  [[nodiscard]] test::Environment env() const { return {{"XDG_RUNTIME_DIR", runtime.path()}}; }
  void expect_untouched() const {
    const struct stat st = stat_of(folder);
    EXPECT_EQ(st.st_uid, nobody()->pw_uid);
    EXPECT_EQ(st.st_mode & 07777, 0777u);
    EXPECT_TRUE(std::filesystem::is_empty(folder));
  }
};

TEST(Security, TheDaemonRefusesASquattedDefaultFolder) {
  SKIP_UNLESS_ROOT();
  Squatted squatted;
  const auto r = refused_daemon({"--db", squatted.runtime.file("db/memwatch.db")}, squatted.env());
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(squatted.folder + " is owned by uid " + std::to_string(nobody()->pw_uid) +
                       " with mode 0777"),
            std::string::npos)
      << r.err;
  squatted.expect_untouched();
}

TEST(Security, TheShimWithASquattedDefaultFolderRunsTheProgramUnwatchedSayingOneLine) {
  SKIP_UNLESS_ROOT();
  Squatted squatted;
  test::Environment env = squatted.env();
  const auto plain = test::run({kPatterns, "heap_paths"}, env);
  env["LD_PRELOAD"] = kShim;
  env["MEMWATCH_REPORT"] = squatted.runtime.file("report.json");
  const auto watched = test::run({kPatterns, "heap_paths"}, env);
  EXPECT_EQ(watched.exit_code, plain.exit_code);
  EXPECT_EQ(watched.out, plain.out);
  const auto lines = test::lines_of(watched.err);
  ASSERT_EQ(lines.size(), 1u) << watched.err;
  EXPECT_NE(lines[0].find(squatted.folder), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("not reporting to memwatchd"), std::string::npos) << lines[0];
  EXPECT_TRUE(std::filesystem::exists(squatted.runtime.file("report.json")));
  squatted.expect_untouched();
}

TEST(Security, TheCliRefusesASquattedDefaultFolder) {
  SKIP_UNLESS_ROOT();
  Squatted squatted;
  test::Environment env = squatted.env();
  env["MEMWATCH_QUERY"] = "\x01unset";
  const auto r = test::run({kCli, "status"}, env, std::chrono::seconds(10));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(squatted.folder + " is owned by uid"), std::string::npos) << r.err;
  squatted.expect_untouched();
}

// --- 4. network endpoints ---------------------------------------------------------------------

// An ingest endpoint on every interface, and a loopback query endpoint to ask it.
test::DaemonSetup open_ingest_setup() {
  auto tcp = test::free_tcp_endpoints(3);
  tcp[0].replace(tcp[0].find("127.0.0.1"), 9, "0.0.0.0");
  return {tcp[0], tcp[1], tcp[2], "", {}, ""};
}

TEST(Security, AnOpenTcpEndpointWithoutKeysIsRefusedNamingItAndCurveKeys) {
  test::TempDir dir;
  const test::DaemonSetup s = open_ingest_setup();
  const auto r = refused_daemon(
      {"--ingest", s.ingest, "--query", s.query, "--events", s.events, "--db", dir.file("m.db")});
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(s.ingest), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--curve-keys"), std::string::npos) << r.err;
  const auto any = refused_daemon({"--query", "tcp://*:1", "--db", dir.file("m.db")});
  EXPECT_EQ(any.exit_code, 2) << any.err;
}

TEST(Security, AnOpenTcpEndpointStartsWithKeys) {
  test::TempDir dir;
  test::DaemonSetup s = open_ingest_setup();
  const std::string keys = test::keygen(kCli, dir.file("keys"));
  s.more_args = {"--curve-keys", keys};
  s.client_keys = keys;
  test::Daemon daemon(dir.path(), s);
  EXPECT_EQ(daemon.ask({{"op", "status"}})["ok"], true) << daemon.log();
}

TEST(Security, AnOpenTcpEndpointStartsWithInsecureNetwork) {
  test::TempDir dir;
  test::DaemonSetup s = open_ingest_setup();
  s.more_args = {"--insecure-network"};
  test::Daemon daemon(dir.path(), s);
  EXPECT_EQ(daemon.ask({{"op", "status"}})["ok"], true) << daemon.log();
}

TEST(Security, ALoopbackTcpEndpointNeedsNoKeys) {
  test::TempDir dir;
  const auto tcp = test::free_tcp_endpoints(3);
  test::Daemon daemon(dir.path(), {tcp[0], tcp[1], tcp[2], "", {}, ""});
  EXPECT_EQ(daemon.ask({{"op", "status"}})["ok"], true) << daemon.log();
}

}  // namespace
