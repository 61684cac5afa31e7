// Every `memwatch` command as a user asks it for help: `memwatch help COMMAND`, `memwatch
// COMMAND --help` (or -h) anywhere before `--`, and what a usage error says.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "process.hpp"

namespace {

using memwatch::test::Finished;

Finished memwatch_with(std::vector<std::string> words) {
  words.insert(words.begin(), MEMWATCH_BIN);
  // No daemon: a command that asks one fails at once instead of waiting on a default socket.
  return memwatch::test::run(words, {{"MEMWATCH_QUERY", "ipc:///nonexistent/memwatch-query"}});
}

// The commands `memwatch help` lists, each on a line "  NAME  summary".
std::vector<std::string> listed_commands() {
  const Finished f = memwatch_with({"help"});
  EXPECT_EQ(f.exit_code, 0) << f.err;
  std::vector<std::string> names;
  std::istringstream lines(f.out);
  for (std::string line; std::getline(lines, line);)
    if (line.starts_with("  ") && line.size() > 2 && line[2] != ' ')
      names.push_back(line.substr(2, line.find(' ', 2) - 2));
  return names;
}

TEST(Help, EveryCommandAnswersWithItsOwnUsageHoweverAsked) {
  const std::vector<std::string> names = listed_commands();
  ASSERT_GE(names.size(), 16u);
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const Finished asked = memwatch_with({"help", name});
    EXPECT_EQ(asked.exit_code, 0) << asked.err;
    EXPECT_TRUE(asked.out.starts_with("usage: memwatch " + name)) << asked.out;
    EXPECT_EQ(asked.err, "");
    for (const char* flag : {"--help", "-h"}) {
      const Finished flagged = memwatch_with({name, flag});
      EXPECT_EQ(flagged.exit_code, 0) << flagged.err;
      EXPECT_EQ(flagged.out, asked.out);
    }
    // Among other words too, which are not checked first.
    const Finished among = memwatch_with({name, "--no-such-option", "x=1", "--help"});
    EXPECT_EQ(among.exit_code, 0) << among.err;
    EXPECT_EQ(among.out, asked.out);
  }
}

TEST(Help, NamesEveryOptionTheCommandTakes) {
  // Options that the command's old hand-written usage left out.
  const std::string run = memwatch_with({"run", "--help"}).out;
  for (const char* option : {"--workload W", "--param NAME=VALUE", "--report PATH",
                             "--capacity LIST", "--endpoint EP", "--shim PATH"})
    EXPECT_NE(run.find(option), std::string::npos) << option << " in\n" << run;
  const std::string plot = memwatch_with({"plot", "--help"}).out;
  for (const char* option : {"--target T", "--capacity BYTES", "--query EP", "--curve-keys DIR"})
    EXPECT_NE(plot.find(option), std::string::npos) << option << " in\n" << plot;
  // Every line of help fits a terminal, but the synopsis.
  for (const char* name : {"fit", "sweep", "advise", "run"}) {
    std::istringstream lines(memwatch_with({name, "--help"}).out);
    for (std::string line; std::getline(lines, line);) {
      if (!line.starts_with("usage:") && !line.starts_with("       memwatch")) {
        EXPECT_LE(line.size(), 80u) << name << ": " << line;
      }
    }
  }
}

TEST(Help, IsAskedOnlyWhereAnOptionMayStand) {
  // After `--`, the words belong to the command run: memwatch goes on to look for the shim to
  // run it with (none here, so that the sanitizer trees, which build none, ask the same).
  const Finished after =
      memwatch_with({"run", "--shim", "/nonexistent/libmemwatch.so", "--", "/bin/echo", "--help"});
  EXPECT_EQ(after.exit_code, 1) << after.out;
  EXPECT_EQ(after.out, "");
  EXPECT_NE(after.err.find("/nonexistent/libmemwatch.so"), std::string::npos) << after.err;
  // As an option's value, it is that value: here a workload the daemon (none) is asked about.
  const Finished value = memwatch_with({"runs", "--workload", "-h"});
  EXPECT_EQ(value.exit_code, 1) << value.out;
  EXPECT_EQ(value.out, "");
  EXPECT_NE(value.err.find("no memwatchd answered"), std::string::npos) << value.err;
}

TEST(Help, AUsageErrorNamesTheProblemAndWhereTheOptionsAre) {
  const Finished unknown = memwatch_with({"fit", "--inptu", "runs.csv"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("memwatch fit: unknown option --inptu"), std::string::npos)
      << unknown.err;
  EXPECT_NE(unknown.err.find("`memwatch fit --help`"), std::string::npos) << unknown.err;
  // The runs' file given as a word: the message says where it goes.
  const Finished bare_file = memwatch_with({"fit", "runs.csv"});
  EXPECT_EQ(bare_file.exit_code, 2);
  EXPECT_NE(
      bare_file.err.find("unexpected argument 'runs.csv' (the runs' file goes after --input)"),
      std::string::npos)
      << bare_file.err;
  const Finished valued_flag = memwatch_with({"fit", "--input", "runs.csv", "--json=yes"});
  EXPECT_EQ(valued_flag.exit_code, 2);
  EXPECT_NE(valued_flag.err.find("--json takes no value"), std::string::npos) << valued_flag.err;
  // The file form of predict does not take the daemon's options, and says so by name.
  const Finished daemon_only = memwatch_with({"predict", "--model", "m.json", "--target", "t"});
  EXPECT_EQ(daemon_only.exit_code, 2);
  EXPECT_NE(daemon_only.err.find("--target"), std::string::npos) << daemon_only.err;
  const Finished nothing = memwatch_with({});
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_NE(nothing.out.find("commands:"), std::string::npos) << nothing.out;
  const Finished no_such = memwatch_with({"help", "fitt"});
  EXPECT_EQ(no_such.exit_code, 2);
  EXPECT_NE(no_such.err.find("unknown command 'fitt'"), std::string::npos) << no_such.err;
}

}  // namespace
