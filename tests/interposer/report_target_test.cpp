// Where MEMWATCH_REPORT points decides how the report is written: a new path or a regular file
// is replaced atomically, a symbolic link is followed, a device or a FIFO is written in place,
// anything else is refused. Nothing that is not a report is ever replaced.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "process.hpp"
#include "reporting/report.hpp"

using namespace memwatch::shim;

namespace {

constexpr std::string_view kReport = "{\"schema\":\"memwatch.report/1\"}\n";

class ReportTarget : public ::testing::Test {
 protected:
  [[nodiscard]] std::string file(const std::string& name) const { return temp_.file(name); }

  memwatch::test::TempDir temp_;
  const std::string dir_ = temp_.path();
};

std::string contents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct stat lstat_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
  return st;
}

TEST_F(ReportTarget, ARegularFileIsReplacedWhole) {
  { std::ofstream(file("r.json")) << std::string(4096, 'x'); }
  ASSERT_EQ(report_write(file("r.json").c_str(), 7, kReport), nullptr);
  EXPECT_EQ(contents(file("r.json")), kReport);
  EXPECT_FALSE(std::filesystem::exists(file("r.json.tmp.7")));
}

TEST_F(ReportTarget, ACharacterDeviceIsWrittenInPlaceAndStaysTheDevice) {
  if (geteuid() != 0) GTEST_SKIP() << "mknod of a device node needs root";
  const std::string null = file("null");
  ASSERT_EQ(mknod(null.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << "mknod: " << errno;
  ASSERT_EQ(report_write(null.c_str(), 1, kReport), nullptr);
  const struct stat st = lstat_of(null);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), {}), 1) << "no temp left";
}

TEST_F(ReportTarget, ASymbolicLinkIsFollowedAndStaysALink) {
  std::filesystem::create_directory(file("real"));
  std::filesystem::create_symlink("real/r.json", file("link"));  // relative to its folder
  ASSERT_EQ(report_write(file("link").c_str(), 1, kReport), nullptr);
  EXPECT_TRUE(S_ISLNK(lstat_of(file("link")).st_mode));
  EXPECT_EQ(contents(file("real/r.json")), kReport);
  // Written again, through the link, onto the regular file it now names.
  ASSERT_EQ(report_write(file("link").c_str(), 2, "{}\n"), nullptr);
  EXPECT_TRUE(S_ISLNK(lstat_of(file("link")).st_mode));
  EXPECT_EQ(contents(file("real/r.json")), "{}\n");
}

TEST_F(ReportTarget, AnotherUsersLinkInASharedStickyFolderIsNotFollowed) {
  if (geteuid() != 0) GTEST_SKIP() << "a link of another user's needs root to make";
  const passwd* nobody = getpwnam("nobody");
  if (nobody == nullptr) GTEST_SKIP() << "needs the user nobody";
  const std::string shared = file("tmp");
  ASSERT_EQ(mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(chmod(shared.c_str(), 01777), 0);
  { std::ofstream(file("passwd")) << "root:x:0:0"; }
  std::filesystem::create_symlink(file("passwd"), shared + "/planted");
  ASSERT_EQ(lchown((shared + "/planted").c_str(), nobody->pw_uid, nobody->pw_gid), 0);
  EXPECT_NE(report_write((shared + "/planted").c_str(), 1, kReport), nullptr);
  EXPECT_EQ(contents(file("passwd")), "root:x:0:0");
  // A link of this user's own in the same folder is followed.
  std::filesystem::create_symlink(file("mine.json"), shared + "/mine");
  EXPECT_EQ(report_write((shared + "/mine").c_str(), 1, kReport), nullptr);
  EXPECT_EQ(contents(file("mine.json")), kReport);
}

TEST_F(ReportTarget, ALinkToADeviceWritesTheDevice) {
  std::filesystem::create_symlink("/dev/null", file("quiet"));
  ASSERT_EQ(report_write(file("quiet").c_str(), 1, kReport), nullptr);
  EXPECT_TRUE(S_ISLNK(lstat_of(file("quiet")).st_mode));
  EXPECT_TRUE(S_ISCHR(lstat_of("/dev/null").st_mode));
}

TEST_F(ReportTarget, AFifoWithAReaderGetsTheReport) {
  const std::string fifo = file("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = contents(fifo); });
  // The reader is there once a non-blocking open for writing succeeds; then write for real.
  for (int i = 0; i < 500; ++i) {
    const int probe = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (probe >= 0) {
      EXPECT_EQ(report_write(fifo.c_str(), 1, kReport), nullptr);
      close(probe);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  reader.join();
  EXPECT_EQ(received, kReport);
  EXPECT_TRUE(S_ISFIFO(lstat_of(fifo).st_mode));
}

TEST_F(ReportTarget, AFifoWithoutAReaderIsRefusedAtOnce) {
  const std::string fifo = file("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  const char* why = report_write(fifo.c_str(), 1, kReport);
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::string(why).find("FIFO"), std::string::npos) << why;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  EXPECT_TRUE(S_ISFIFO(lstat_of(fifo).st_mode));
}

TEST_F(ReportTarget, ADirectoryIsRefusedAndLeftAlone) {
  std::filesystem::create_directory(file("d"));
  const char* why = report_write(file("d").c_str(), 1, kReport);
  ASSERT_NE(why, nullptr);
  EXPECT_STREQ(why, "it is a directory");
  EXPECT_TRUE(S_ISDIR(lstat_of(file("d")).st_mode));
  EXPECT_TRUE(std::filesystem::is_empty(file("d")));
}

TEST_F(ReportTarget, AMissingFolderIsRefused) {
  EXPECT_NE(report_write(file("missing/r.json").c_str(), 1, kReport), nullptr);
  EXPECT_FALSE(std::filesystem::exists(file("missing")));
}

}  // namespace
