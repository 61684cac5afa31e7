// A fit spread over threads: the same model as on one, every part run once, and a failure in one
// part reported. Runs in the TSan tree too.
#include "memwatch/model/threads.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "memwatch/model/model.hpp"
#include "memwatch/model/model_json.hpp"
#include "parallel.hpp"
#include "synthetic.hpp"

namespace memwatch::model {
namespace {

// Restores the default thread count whatever a test does.
struct FitThreads {
  explicit FitThreads(std::size_t n) { set_fit_threads(n); }
  ~FitThreads() { set_fit_threads(0); }
};

TEST(Threads, AFitIsTheSameOnOneThreadAsOnSeveral) {
  // Noise above 0.5% starts every stage that runs in parallel: the regime screen over every cut,
  // the forward steps and pairs over the dictionary, the subsets, the swaps and the refits. A
  // break at batch 1 gives the regime search a cut to keep.
  const Dataset d = testing::grid(
      {"batch", "dim", "filters", "levels"}, {{1, 2, 4, 8}, {32, 48, 64, 96}, {8, 16}, {4, 5}},
      [](const std::vector<double>& x) {
        return testing::unet_truth(x) + (x[0] == 1 ? 27 * 16 * x[1] * x[1] * x[1] : 0);
      },
      0.008, 7);
  FitOptions options;
  options.split_depth = 2;
  std::string one, several;
  {
    const FitThreads threads(1);
    const Model m = fit(d, options);
    EXPECT_GE(m.parts.size(), 2u) << "a cut at batch 1";
    one = to_json(m);
  }
  {
    const FitThreads threads(4);
    several = to_json(fit(d, options));
  }
  EXPECT_GT(one.size(), 1000u);
  EXPECT_EQ(one, several);
}

TEST(Threads, EveryIndexRunsOnceEvenWhenCallsNest) {
  const FitThreads threads(3);
  std::vector<std::atomic<int>> calls(200);
  parallel_for(20, [&](std::size_t outer) {
    parallel_for(10, [&](std::size_t inner) { calls[outer * 10 + inner].fetch_add(1); });
  });
  for (std::size_t i = 0; i < calls.size(); ++i) EXPECT_EQ(calls[i].load(), 1) << "index " << i;
}

TEST(Threads, AFailingPartIsRethrownToTheCaller) {
  const FitThreads threads(2);
  std::atomic<int> calls{0};
  EXPECT_THROW(parallel_for(64,
                            [&](std::size_t i) {
                              calls.fetch_add(1);
                              if (i == 5) throw std::runtime_error("part 5 failed");
                            }),
               std::runtime_error);
  EXPECT_GE(calls.load(), 6);
  EXPECT_LE(calls.load(), 64);
}

TEST(Threads, TheDefaultIsTheCpusThisProcessMayUse) {
  set_fit_threads(0);
  EXPECT_EQ(fit_threads(), usable_cpus());
  EXPECT_GE(usable_cpus(), 1u);
}

}  // namespace
}  // namespace memwatch::model
