// The daemon removes the segments of processes that are gone, once they were gone a sweep ago
// too; not those of living processes, of the runs it will still read, or names not memwatch's.
#include "orphan_segments.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "memwatch/protocol/segment.hpp"
#include "process.hpp"

namespace memwatch::daemon {
namespace {

namespace fs = std::filesystem;

// The pid of a process that has just ended and been reaped.
int ended_pid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  return child;
}

TEST(OrphanSegments, GoneProcessesLoseTheirSegmentsASweepLater) {
  test::TempDir dir;
  auto make = [&](const std::string& name) {
    const fs::path path = fs::path(dir.path()) / name;
    std::ofstream(path) << "counters";
    return path;
  };
  const int gone = ended_pid(), kept = ended_pid();
  const fs::path own = make(protocol::segment_name(gone));
  const fs::path job = make(protocol::job_segment_name(gone));
  const fs::path living = make(protocol::segment_name(getpid()));
  const fs::path still_read = make(protocol::job_segment_name(kept));
  const fs::path not_ours = make("memwatch." + std::to_string(gone) + "x");
  OrphanSweep sweep(dir.path());
  EXPECT_EQ(sweep.sweep({kept}), 0u) << "a death just seen may be a run its daemon reads yet";
  EXPECT_TRUE(fs::exists(own));
  const fs::path later = make(protocol::segment_name(ended_pid()));
  EXPECT_EQ(sweep.sweep({kept}), 2u);
  EXPECT_FALSE(fs::exists(own));
  EXPECT_FALSE(fs::exists(job));
  EXPECT_TRUE(fs::exists(later)) << "first seen gone at this sweep";
  EXPECT_TRUE(fs::exists(living));
  EXPECT_TRUE(fs::exists(still_read));
  EXPECT_TRUE(fs::exists(not_ours));
  EXPECT_EQ(sweep.sweep({kept}), 1u);
  EXPECT_FALSE(fs::exists(later));
}

}  // namespace
}  // namespace memwatch::daemon
