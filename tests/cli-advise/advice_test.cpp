// The sizing policies against bounds given in advance, and `memwatch advise` on bad input.
#include "advice.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "process.hpp"

namespace memwatch::cli {
namespace {

constexpr std::int64_t kMiB = 1 << 20;
constexpr std::int64_t kGiB = kMiB * 1024;

using Decision = Advice::Decision;

JobRequest job(std::optional<std::int64_t> mem = std::nullopt) {
  JobRequest j;
  j.workload = "unet3d-train";
  j.vary = "batch";
  j.mem_bytes = mem;
  j.node_mem_bytes = 4 * kGiB;
  return j;
}

// 1.5 GiB predicted, 2 GiB bound: fits the 4 GiB node.
Bound fits() {
  return {1.5 * kGiB, 2.0 * kGiB, std::nullopt};
}
// 6 GiB bound; the largest batch within 4 GiB is 24.
Bound too_big() {
  return {5.0 * kGiB, 6.0 * kGiB, 24.0};
}

TEST(Advice, AdviseOnlyTellsTheUser) {
  const Advice a = advise_job(SizingPolicy::advise, job(), fits(), std::nullopt);
  EXPECT_EQ(a.decision, Decision::keep);
  EXPECT_NE(a.message.find("ask for --mem=2048M"), std::string::npos) << a.message;
}

TEST(Advice, FillSetsTheBoundWhenTheUserGaveNoRequest) {
  const Advice a = advise_job(SizingPolicy::fill, job(), fits(), std::nullopt);
  EXPECT_EQ(a.decision, Decision::set_mem);
  EXPECT_EQ(a.mem_mib, 2048);
  EXPECT_NE(a.message.find("--mem set to 2048M"), std::string::npos) << a.message;
}

TEST(Advice, FillKeepsARequestTheUserGaveAndRaiseRaisesOneBelowTheBound) {
  const Advice filled = advise_job(SizingPolicy::fill, job(kGiB), fits(), std::nullopt);
  EXPECT_EQ(filled.decision, Decision::keep);
  EXPECT_NE(filled.message.find("is below its bound"), std::string::npos) << filled.message;
  const Advice raised = advise_job(SizingPolicy::raise, job(kGiB), fits(), std::nullopt);
  EXPECT_EQ(raised.decision, Decision::set_mem);
  EXPECT_EQ(raised.mem_mib, 2048);
  const Advice enough = advise_job(SizingPolicy::raise, job(3 * kGiB), fits(), std::nullopt);
  EXPECT_EQ(enough.decision, Decision::keep);
  EXPECT_EQ(enough.message, "");
}

TEST(Advice, RejectRefusesAJobBeyondTheNodesNamingTheLargestValueThatFits) {
  const Advice a = advise_job(SizingPolicy::reject, job(), too_big(), std::nullopt);
  EXPECT_EQ(a.decision, Decision::reject);
  EXPECT_NE(a.message.find("exceeds the partition's nodes (4.00 GiB)"), std::string::npos)
      << a.message;
  EXPECT_NE(a.message.find("the largest batch that fits is 24"), std::string::npos) << a.message;
  // Under the milder policies it is a warning, and --mem is not set beyond the node.
  const Advice filled = advise_job(SizingPolicy::fill, job(), too_big(), std::nullopt);
  EXPECT_EQ(filled.decision, Decision::keep);
  EXPECT_NE(filled.message.find("the largest batch that fits is 24"), std::string::npos);
  // ... and a job that fits is sized as under raise.
  EXPECT_EQ(advise_job(SizingPolicy::reject, job(), fits(), std::nullopt).decision,
            Decision::set_mem);
}

TEST(Advice, GpuMemoryIsJudgedAgainstTheGpusTheJobAsksFor) {
  JobRequest two = job(8 * kGiB);
  two.gpus = 2;
  two.gpu_mem_bytes = 16 * kGiB;
  const Bound device{20.0 * kGiB, 24.0 * kGiB, std::nullopt};  // fits 2 x 16 GiB
  EXPECT_EQ(advise_job(SizingPolicy::reject, two, fits(), device).decision, Decision::keep);
  JobRequest one = two;
  one.gpus = 1;
  const Bound over_one{20.0 * kGiB, 24.0 * kGiB, 12.0};
  const Advice a = advise_job(SizingPolicy::reject, one, fits(), over_one);
  EXPECT_EQ(a.decision, Decision::reject);
  EXPECT_NE(a.message.find("exceeds its 1 GPU(s) of 16.00 GiB"), std::string::npos) << a.message;
  EXPECT_NE(a.message.find("the largest batch that fits is 12"), std::string::npos) << a.message;
  JobRequest none = two;
  none.gpus = 0;
  const Advice b = advise_job(SizingPolicy::reject, none, fits(), device);
  EXPECT_EQ(b.decision, Decision::keep);
  EXPECT_NE(b.message.find("asks for no GPU"), std::string::npos) << b.message;
}

TEST(Advice, GpusAreCountedFromSlurmsTres) {
  EXPECT_EQ(gpus_in_tres(""), 0);
  EXPECT_EQ(gpus_in_tres("gres:gpu:2"), 2);
  EXPECT_EQ(gpus_in_tres("gres/gpu:a100:4,gres/nic:1"), 4);
  EXPECT_EQ(gpus_in_tres("gres:gpu"), 1);
  EXPECT_EQ(gpus_in_tres("gres:gpu:a100"), 1);
  EXPECT_EQ(gpus_in_tres("gres:gpu:2,gres:gpu:a100:1"), 3);
  EXPECT_THROW(gpus_in_tres("gres:gpu:a100:two"), std::invalid_argument);
}

nlohmann::json advise(const std::vector<std::string>& words, int expected_status) {
  std::vector<std::string> argv = {MEMWATCH_BIN, "advise"};
  argv.insert(argv.end(), words.begin(), words.end());
  const auto r = test::run(argv, {{"MEMWATCH_QUERY", "ipc:///nonexistent/memwatch/query"}});
  EXPECT_EQ(r.exit_code, expected_status) << r.err;
  // One line of JSON, whatever the input.
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << r.out;
  return nlohmann::json::parse(r.out);
}

TEST(AdviseCommand, BadInputFromTheJobRefusesItNamingTheInput) {
  const auto bad_params = advise({"--workload", "w", "--params", "batch=8,dim=big"}, 0);
  EXPECT_EQ(bad_params["decision"], "reject");
  EXPECT_NE(bad_params["message"].get<std::string>().find("'dim=big'"), std::string::npos);
  const auto bad_name = advise({"--workload", "w;rm", "--params", "batch=8"}, 0);
  EXPECT_EQ(bad_name["decision"], "reject");
  EXPECT_NE(bad_name["message"].get<std::string>().find("'w;rm'"), std::string::npos);
  const auto bad_gres = advise({"--workload", "w", "--gres", "gres:gpu:a:b"}, 0);
  EXPECT_EQ(bad_gres["decision"], "reject");
  EXPECT_NE(bad_gres["message"].get<std::string>().find("gpu:a:b"), std::string::npos);
}

TEST(AdviseCommand, BadSiteSettingsKeepTheJobAndSaySo) {
  const auto bad_policy = advise({"--workload", "w", "--policy", "shrink"}, 2);
  EXPECT_EQ(bad_policy["decision"], "keep");
  EXPECT_NE(bad_policy["error"].get<std::string>().find("'shrink'"), std::string::npos);
  const auto bad_size = advise({"--workload", "w", "--node-mem", "lots"}, 2);
  EXPECT_EQ(bad_size["decision"], "keep");
  EXPECT_NE(bad_size["error"].get<std::string>().find("'lots'"), std::string::npos);
  const auto no_file = advise({"--workload", "w", "--settings", "/nonexistent.conf"}, 2);
  EXPECT_EQ(no_file["decision"], "keep");
}

TEST(AdviseCommand, NoDaemonKeepsTheJobAsSubmitted) {
  // Blanks and empty items are allowed, as the shim allows them in MEMWATCH_PARAMS.
  const auto r =
      advise({"--workload", "w", "--params", " batch = 8 , ,dim=2", "--policy", "reject"}, 0);
  EXPECT_EQ(r["decision"], "keep");
  EXPECT_NE(r["message"].get<std::string>().find("left as submitted"), std::string::npos);
}

}  // namespace
}  // namespace memwatch::cli
