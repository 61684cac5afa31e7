// Programs under the shim reporting over tcp to a daemon with --curve-keys: the run of a node
// holding a listed key is stored; a node without keys, with a key never listed, or with a key
// folder it cannot read is stored nowhere; and every program runs exactly as without memwatch.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "daemon_process.hpp"
#include "process.hpp"

using nlohmann::json;
using namespace memwatch;
namespace fs = std::filesystem;

namespace {

const std::string kShim = MEMWATCH_SHIM_PATH;
const std::string kPatterns = MEMWATCH_PATTERNS_PATH;
const std::string kCli = MEMWATCH_CLI_PATH;

class CurveShim : public ::testing::Test {
 protected:
  CurveShim()
      : keys_(test::keygen(kCli, dir_.file("keys"))),
        daemon_(dir_.path(), setup()),
        plain_(test::run({kPatterns, "checksum"})) {}

  test::DaemonSetup setup() const {
    const auto tcp = test::free_tcp_endpoints(3);
    return {tcp[0], tcp[1], tcp[2], "", {"--curve-keys", keys_}, keys_};
  }

  // The checksum program under the shim as a node with `keys` ("" for none) reports it.
  test::Finished run_node(const std::string& workload, const std::string& keys) {
    test::Environment env = {{"LD_PRELOAD", kShim},
                             {"MEMWATCH_ENDPOINT", daemon_.ingest()},
                             {"MEMWATCH_WORKLOAD", workload}};
    env["MEMWATCH_CURVE_KEYS"] = keys.empty() ? "\x01unset" : keys;
    return test::run({kPatterns, "checksum"}, env);
  }

  void expect_as_without_memwatch(const test::Finished& r) {
    EXPECT_EQ(r.exit_code, plain_.exit_code) << r.err;
    EXPECT_EQ(r.out, plain_.out);
  }

  // Keys that know the daemon (its server.pub) but hold a client key it never listed.
  std::string stranger_keys() {
    const std::string other = test::keygen(kCli, dir_.file("other"));
    const std::string dir = dir_.file("stranger");
    fs::create_directories(dir);
    fs::copy_file(keys_ + "/server.pub", dir + "/server.pub");
    fs::copy_file(other + "/client.pub", dir + "/client.pub");
    fs::copy_file(other + "/client.key", dir + "/client.key");
    return dir;
  }

  test::TempDir dir_;
  std::string keys_;
  test::Daemon daemon_;
  test::Finished plain_;
};

TEST_F(CurveShim, ANodeWithAListedKeyHasItsRunStored) {
  ASSERT_EQ(plain_.exit_code, 0);
  const auto r = run_node("keyed", keys_);
  expect_as_without_memwatch(r);
  EXPECT_EQ(r.err, "");
  const json runs =
      daemon_.wait_runs("keyed", [](const json& all) { return test::all_finished(all, 1); });
  ASSERT_TRUE(test::all_finished(runs, 1)) << runs.dump() << daemon_.log();
  EXPECT_GT(runs[0]["host_peak_bytes"].get<std::int64_t>(), 0);
}

TEST_F(CurveShim, NodesWithoutAListedKeyAreStoredNowhereAndCounted) {
  expect_as_without_memwatch(run_node("keyless", ""));
  expect_as_without_memwatch(run_node("stranger", stranger_keys()));
  const json status = daemon_.ask_until(
      {{"op", "status"}}, [](const json& s) { return s["refused_clients"].get<int>() >= 2; });
  EXPECT_GE(status["refused_clients"].get<int>(), 2) << status.dump();
  EXPECT_EQ(status["runs"], 0) << status.dump();
  EXPECT_EQ(daemon_.ask({{"op", "workloads"}})["workloads"].size(), 0u);
}

TEST_F(CurveShim, AKeyFolderItCannotReadIsNamedOnceAndTheProgramRunsOn) {
  const std::string missing = dir_.file("missing");
  const auto r = run_node("unkeyed", missing);
  expect_as_without_memwatch(r);
  EXPECT_NE(r.err.find("memwatch: MEMWATCH_CURVE_KEYS: cannot read " + missing + "/server.pub"),
            std::string::npos)
      << r.err;
  // Once for a whole process tree: a forked child inherits the decision silently.
  test::Environment env = {{"LD_PRELOAD", kShim},
                           {"MEMWATCH_ENDPOINT", daemon_.ingest()},
                           {"MEMWATCH_CURVE_KEYS", missing}};
  const auto forked = test::run({kPatterns, "fork"}, env);
  EXPECT_EQ(forked.exit_code, 0) << forked.err;
  std::size_t said = 0;
  for (auto at = forked.err.find("MEMWATCH_CURVE_KEYS"); at != std::string::npos;
       at = forked.err.find("MEMWATCH_CURVE_KEYS", at + 1))
    ++said;
  EXPECT_EQ(said, 1u) << forked.err;
  EXPECT_EQ(daemon_.ask({{"op", "status"}})["runs"], 0);
}

}  // namespace
