// The one rule for a private folder of this user's: made 0700 when missing, judged and never
// changed when it exists.
#include "memwatch/protocol/private_dir.hpp"

#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "memwatch/protocol/endpoints.hpp"
#include "process.hpp"

using namespace memwatch::protocol;

namespace {

class PrivateDir : public ::testing::Test {
 protected:
  memwatch::test::TempDir temp_;
  const std::string dir_ = temp_.path();
};

mode_t mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0);
  return st.st_mode & 07777;
}

TEST_F(PrivateDir, AMissingFolderIsMade0700) {
  const std::string d = dir_ + "/memwatch";
  EXPECT_EQ(ensure_private_dir(d), "");
  EXPECT_EQ(mode_of(d), 0700u);
  EXPECT_EQ(ensure_private_dir(d), "");  // and then used as it is
}

TEST_F(PrivateDir, AnOpenFolderIsNamedWithItsModeAndLeftAsItIs) {
  const std::string d = dir_ + "/shared";
  ASSERT_EQ(mkdir(d.c_str(), 0700), 0);
  ASSERT_EQ(chmod(d.c_str(), 01777), 0);
  const std::string problem = ensure_private_dir(d);
  EXPECT_NE(problem.find(d), std::string::npos) << problem;
  EXPECT_NE(problem.find("mode 1777"), std::string::npos) << problem;
  EXPECT_NE(problem.find("0700"), std::string::npos) << problem;
  EXPECT_EQ(mode_of(d), 01777u);
}

TEST_F(PrivateDir, ASymbolicLinkOrAFileIsNotAFolder) {
  const std::string link = dir_ + "/link";
  std::filesystem::create_symlink(dir_, link);
  EXPECT_NE(ensure_private_dir(link).find("symbolic link"), std::string::npos);
  const std::string file = dir_ + "/file";
  {
    std::FILE* f = std::fopen(file.c_str(), "w");
    std::fclose(f);
  }
  EXPECT_NE(ensure_private_dir(file).find("not a directory"), std::string::npos);
}

TEST_F(PrivateDir, AFolderOfAnotherUserIsNamedWithItsOwner) {
  if (geteuid() != 0) GTEST_SKIP() << "chown to another user needs root";
  const passwd* nobody = getpwnam("nobody");
  if (nobody == nullptr) GTEST_SKIP() << "no user nobody";
  const std::string d = dir_ + "/squatted";
  ASSERT_EQ(mkdir(d.c_str(), 0700), 0);
  ASSERT_EQ(chown(d.c_str(), nobody->pw_uid, nobody->pw_gid), 0);
  const std::string problem = ensure_private_dir(d);
  EXPECT_NE(problem.find("uid " + std::to_string(nobody->pw_uid)), std::string::npos) << problem;
  struct stat st {};
  ASSERT_EQ(stat(d.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, nobody->pw_uid);
}

TEST(IpcFolder, IsTheFolderOfTheSocket) {
  EXPECT_EQ(ipc_folder("ipc:///tmp/memwatch-0/ingest"), "/tmp/memwatch-0");
  EXPECT_EQ(ipc_folder("ipc:///sock"), "/");
  EXPECT_EQ(ipc_folder("ipc://sock"), ".");
  EXPECT_EQ(ipc_folder("tcp://127.0.0.1:5555"), "");
}

}  // namespace
