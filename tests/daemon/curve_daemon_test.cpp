// CurveZMQ between memwatchd and its clients, without the shim (so the sanitizer trees run it
// too): keys from `memwatch keygen`, a daemon with --curve-keys on tcp, and clients holding a
// listed key, another key, or none.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <zmq.hpp>

#include "daemon_process.hpp"
#include "memwatch/protocol/curve_keys.hpp"
#include "memwatch/protocol/wire.hpp"
#include "process.hpp"

using nlohmann::json;
using namespace memwatch;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

const std::string kDaemon = MEMWATCHD_PATH;
const std::string kCli = MEMWATCH_CLI_PATH;

// Keys that know the daemon (its server.pub) but hold a client key it never listed.
std::string stranger_keys(const std::string& dir, const std::string& daemon_keys) {
  const std::string other = test::keygen(kCli, dir + "-pair");
  fs::create_directories(dir);
  fs::copy_file(daemon_keys + "/server.pub", dir + "/server.pub");
  fs::copy_file(other + "/client.pub", dir + "/client.pub");
  fs::copy_file(other + "/client.key", dir + "/client.key");
  return dir;
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & 0777;
}

test::DaemonSetup curve_setup(const std::string& keys) {
  const auto tcp = test::free_tcp_endpoints(3);
  return {tcp[0], tcp[1], tcp[2], "", {"--curve-keys", keys}, keys};
}

// A query as a client holding `keys` ("" for none): the reply, or nullopt after `wait`.
std::optional<json> ask_as(zmq::context_t& context, const std::string& endpoint,
                           const std::string& keys, std::chrono::milliseconds wait = 700ms) {
  zmq::socket_t s(context, zmq::socket_type::req);
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::rcvtimeo, static_cast<int>(wait.count()));
  if (!keys.empty()) test::make_curve_client(s, keys);
  s.connect(endpoint);
  s.send(zmq::str_buffer(R"({"op":"status"})"), zmq::send_flags::none);
  zmq::message_t reply;
  if (!s.recv(reply)) return std::nullopt;
  return json::parse(reply.to_string());
}

json wait_status(test::Daemon& daemon, const std::function<bool(const json&)>& done) {
  return daemon.ask_until({{"op", "status"}}, done);
}

// The daemon ends cleanly on SIGTERM, and a sanitizer found nothing in it.
void expect_clean_end(test::Daemon& daemon) {
  EXPECT_EQ(daemon.stop(SIGTERM), 0) << daemon.log();
  EXPECT_EQ(daemon.log().find("Sanitizer"), std::string::npos) << daemon.log();
}

TEST(Keygen, MakesAPrivateFolderOfKeysAndNeverOverwritesThemUnasked) {
  test::TempDir dir;
  const std::string keys = dir.file("keys");
  const auto made = test::run({kCli, "keygen", keys});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_NE(made.out.find("memwatchd --curve-keys " + keys), std::string::npos) << made.out;
  EXPECT_EQ(mode_of(keys), 0700u);
  EXPECT_EQ(mode_of(keys + "/server.key"), 0600u);
  EXPECT_EQ(mode_of(keys + "/client.key"), 0600u);
  for (const char* name : {"server.key", "server.pub", "client.key", "client.pub"}) {
    protocol::CurveKey key;
    std::string error;
    EXPECT_TRUE(protocol::read_curve_key(keys + "/" + name, key, error)) << error;
  }
  const std::string secret = test::read_file(keys + "/server.key");
  const auto again = test::run({kCli, "keygen", keys});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find(keys + "/server.key exists"), std::string::npos) << again.err;
  EXPECT_NE(again.err.find("--force"), std::string::npos) << again.err;
  EXPECT_EQ(test::read_file(keys + "/server.key"), secret);
  ASSERT_EQ(test::run({kCli, "keygen", keys, "--force"}).exit_code, 0);
  EXPECT_NE(test::read_file(keys + "/server.key"), secret);
  EXPECT_EQ(test::run({kCli, "keygen"}).exit_code, 2);
}

TEST(CurveDaemon, OnlyListedClientKeysAreServedAndEveryRefusalIsCounted) {
  test::TempDir dir;
  const std::string keys = test::keygen(kCli, dir.file("keys"));
  const std::string stranger = stranger_keys(dir.file("stranger"), keys);
  test::Daemon daemon(dir.path(), curve_setup(keys));
  const json first = daemon.ask({{"op", "status"}});
  ASSERT_EQ(first["ok"], true) << first.dump() << daemon.log();
  EXPECT_EQ(first["curve"], true);
  EXPECT_EQ(first["refused_clients"], 0);
  EXPECT_NE(daemon.log().find("CurveZMQ for 1 client keys"), std::string::npos) << daemon.log();

  // An unknown key (refused by the ZAP handler), then no key at all (refused by CURVE itself).
  zmq::context_t context;
  EXPECT_FALSE(ask_as(context, daemon.query(), stranger).has_value());
  const json by_key =
      wait_status(daemon, [](const json& s) { return s["refused_clients"].get<int>() >= 1; });
  const int refused_keys = by_key["refused_clients"].get<int>();
  EXPECT_GE(refused_keys, 1) << by_key.dump();
  EXPECT_FALSE(ask_as(context, daemon.query(), "").has_value());
  const json by_mechanism = wait_status(
      daemon, [&](const json& s) { return s["refused_clients"].get<int>() > refused_keys; });
  EXPECT_GT(by_mechanism["refused_clients"].get<int>(), refused_keys)
      << by_mechanism.dump() << daemon.log();
  EXPECT_EQ(by_mechanism["runs"], 0);

  // A shim's frames under CURVE: HELLO is stored and answered, and subscribers hear of it.
  zmq::socket_t events(context, zmq::socket_type::sub);
  test::make_curve_client(events, keys);
  events.set(zmq::sockopt::subscribe, "");
  events.set(zmq::sockopt::rcvtimeo, 5000);
  events.connect(daemon.events());
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.set(zmq::sockopt::rcvtimeo, 5000);
  test::make_curve_client(dealer, keys);
  dealer.connect(daemon.ingest());
  protocol::Hello hello;
  hello.workload = "keyed";
  hello.params = {{"batch", 2}};
  std::this_thread::sleep_for(300ms);  // the subscription reaches the daemon first
  dealer.send(zmq::buffer(protocol::encode(hello)), zmq::send_flags::none);
  zmq::message_t verdict, event;
  ASSERT_TRUE(dealer.recv(verdict));
  EXPECT_TRUE(protocol::decode(verdict.to_string_view()).has_value());
  ASSERT_TRUE(events.recv(event));
  EXPECT_EQ(json::parse(event.to_string())["event"], "run_started");
  EXPECT_EQ(daemon.ask({{"op", "runs"}, {"workload", "keyed"}})["runs"].size(), 1u);
  expect_clean_end(daemon);
}

TEST(CurveDaemon, ClientKeysUnderClientsAreLetInToo) {
  test::TempDir dir;
  const std::string keys = test::keygen(kCli, dir.file("keys"));
  const std::string stranger = stranger_keys(dir.file("stranger"), keys);
  fs::create_directories(keys + "/clients");
  fs::copy_file(stranger + "/client.pub", keys + "/clients/node7.pub");
  test::Daemon daemon(dir.path(), curve_setup(keys));
  zmq::context_t context;
  const auto reply = ask_as(context, daemon.query(), stranger, 5000ms);
  ASSERT_TRUE(reply.has_value()) << daemon.log();
  EXPECT_EQ((*reply)["ok"], true);
  expect_clean_end(daemon);
}

TEST(CurveDaemon, TheCliAsksWithKeysFromItsOptionOrTheEnvironment) {
  test::TempDir dir;
  const std::string keys = test::keygen(kCli, dir.file("keys"));
  const std::string stranger = stranger_keys(dir.file("stranger"), keys);
  test::Daemon daemon(dir.path(), curve_setup(keys));
  const auto by_option =
      test::run({kCli, "status", "--query", daemon.query(), "--curve-keys", keys});
  EXPECT_EQ(by_option.exit_code, 0) << by_option.err;
  EXPECT_NE(by_option.out.find("CurveZMQ on"), std::string::npos) << by_option.out;
  const auto by_env =
      test::run({kCli, "workloads", "--query", daemon.query()}, {{"MEMWATCH_CURVE_KEYS", keys}});
  EXPECT_EQ(by_env.exit_code, 0) << by_env.err;
  const auto refused =
      test::run({kCli, "status", "--query", daemon.query(), "--curve-keys", stranger});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("CURVE keys in " + stranger), std::string::npos) << refused.err;
  const auto missing =
      test::run({kCli, "status", "--query", daemon.query(), "--curve-keys", dir.file("nowhere")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find(dir.file("nowhere") + "/server.pub"), std::string::npos)
      << missing.err;
  expect_clean_end(daemon);
}

TEST(CurveDaemon, ABadKeyFolderStopsTheStartWithStatus2AndNamesTheFile) {
  test::TempDir dir;
  const std::string good = test::keygen(kCli, dir.file("good"));
  const auto tcp = test::free_tcp_endpoints(3);
  auto start = [&](const std::string& keys) {
    return test::run({kDaemon, "--foreground", "--db", dir.file("m.db"), "--ingest", tcp[0],
                      "--query", tcp[1], "--events", tcp[2], "--curve-keys", keys},
                     {}, std::chrono::seconds(20));
  };
  auto variant = [&](const std::string& name) {
    const std::string copy = dir.file(name);
    fs::copy(good, copy, fs::copy_options::recursive);
    return copy;
  };
  const std::string no_client = variant("no-client");
  fs::remove(no_client + "/client.pub");
  const std::string bad_secret = variant("bad-secret");
  std::ofstream(bad_secret + "/server.key") << "not a key\n";
  const std::string bad_more = variant("bad-more");
  fs::create_directories(bad_more + "/clients");
  std::ofstream(bad_more + "/clients/node1.pub") << std::string(40, '"') << "\n";
  const std::string mismatched = variant("mismatched");
  fs::copy_file(test::keygen(kCli, dir.file("other")) + "/server.pub", mismatched + "/server.pub",
                fs::copy_options::overwrite_existing);

  const std::pair<std::string, std::string> cases[] = {
      {dir.file("nowhere"), "cannot read " + dir.file("nowhere") + "/server.key"},
      {no_client, "cannot read " + no_client + "/client.pub"},
      {bad_secret, bad_secret + "/server.key is not a CURVE key"},
      {bad_more, bad_more + "/clients/node1.pub is not a CURVE key"},
      {mismatched, mismatched + "/server.pub is not the public key of"},
  };
  for (const auto& [keys, message] : cases) {
    const auto r = start(keys);
    EXPECT_EQ(r.exit_code, 2) << keys << ": " << r.err;
    EXPECT_TRUE(r.err.starts_with("memwatchd: ")) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
