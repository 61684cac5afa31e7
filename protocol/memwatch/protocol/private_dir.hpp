// A private folder of this user's: where memwatch keeps what no one else may replace (the
// daemon's sockets by default). The shim, the daemon and the CLI apply the same rule, as tmux and
// ssh-agent do for theirs: a directory, not a symbolic link, owned by the effective user, with no
// access for group or others. A folder that exists is never changed, only judged.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace memwatch::protocol {

inline std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// What `st`, the lstat of `dir`, lacks to be a private folder of this user's; "" when nothing.
inline std::string private_dir_problem(const std::string& dir, const struct stat& st) {
  const uid_t me = geteuid();
  std::string what;
  if (S_ISLNK(st.st_mode))
    what = "is a symbolic link";
  else if (!S_ISDIR(st.st_mode))
    what = "is not a directory";
  else if (st.st_uid != me || (st.st_mode & 077) != 0)
    what = "is owned by uid " + std::to_string(st.st_uid) + " with mode " + mode_text(st.st_mode);
  if (what.empty()) return "";
  return dir + " " + what + "; expected a directory of uid " + std::to_string(me) +
         "'s with mode 0700 (no access for group or others): remove it, or name another place";
}

// Why `dir` is not a private folder of this user's ("" when it is), without creating it.
inline std::string private_dir_problem(const std::string& dir) {
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) return "cannot use " + dir + ": " + std::strerror(errno);
  return private_dir_problem(dir, st);
}

// Makes `dir` with mode 0700 when it is missing (its parent must exist), then judges it as
// private_dir_problem does; "" when it may be used.
inline std::string ensure_private_dir(const std::string& dir) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return "cannot create " + dir + ": " + std::strerror(errno);
  return private_dir_problem(dir);
}

}  // namespace memwatch::protocol
