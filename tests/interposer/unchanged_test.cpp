// The shim's first promise: a program ends exactly as it does without it. Each cell runs a real
// program without the shim and with it, in each of the shim's allocator modes (and with ASan's
// allocator ahead of it), and compares how it ended and everything it printed:
// - a C program dlopen()ing the C++ libraries trainers load (their constructors, atexit handlers
//   and destructors), ending by exit, dlclose, _exit, a fault, a sent SIGSEGV and SIGTERM;
// - python3 importing torch, numpy, scipy, skimage, h5py and cv2, one at a time and together;
// - the Python trainer for two steps.
// C programs are the case that broke: libstdc++ is not theirs, so whatever the shim brings into
// the global scope decides which operator new every C++ library gets.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "process.hpp"

using nlohmann::json;
using namespace memwatch::test;

namespace {

const std::string kShim = MEMWATCH_SHIM_PATH;
const std::string kDlopenExit = MEMWATCH_DLOPEN_EXIT_PATH;
const std::string kAsanRuntime = MEMWATCH_ASAN_RUNTIME;
const std::string kSource = MEMWATCH_SOURCE_DIR;
const std::string kPython = "/usr/bin/python3";

// How the program is run beside the shim: its heap on glibc (the default), on the shim's
// jemalloc, or with ASan's runtime preloaded first (its allocator then serves the heap, and the
// shim's own start, threads and report run under its checks).
enum class Mode { system, jemalloc, asan };

struct Cell {
  std::string name;
  std::vector<std::string> argv;
  std::string printed;         // what the run without the shim prints: the cell ran as meant
  bool ends_by_fault = false;  // ASan takes such signals over itself: no such cell under ASan
};

struct Case {
  Cell cell;
  Mode mode;
};

// gtest names each case by its cell, not by its bytes.
[[maybe_unused]] void PrintTo(const Case& c, std::ostream* os) {
  *os << c.cell.name;
}

bool exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// Timings are the one thing a run may change: the trainer's per-step seconds and its summary's.
std::string without_timings(const std::string& text) {
  static const std::regex step_seconds(R"( [0-9.]+ s\n)");
  static const std::regex summary_seconds(R"re("(step_s|elapsed_s)":[-0-9.e]+)re");
  return std::regex_replace(std::regex_replace(text, step_seconds, " T s\n"), summary_seconds,
                            "\"$1\":T");
}

Environment base_environment(Mode mode) {
  Environment env;
  if (mode == Mode::asan) {
    env["LD_PRELOAD"] = kAsanRuntime;
    // Python and the libraries keep what they allocate until exit, as they may.
    env["ASAN_OPTIONS"] = "detect_leaks=0";
  } else {
    env["LD_PRELOAD"] = "\x01unset";
  }
  return env;
}

class Unchanged : public testing::TestWithParam<Case> {};

TEST_P(Unchanged, TheProgramEndsAndPrintsAsWithoutTheShim) {
  const auto& [cell, mode] = GetParam();
  if (mode == Mode::asan && !exists(kAsanRuntime))
    GTEST_SKIP() << "no ASan runtime at " << kAsanRuntime;
  for (const std::string& argument : cell.argv)
    if (argument.find('/') != std::string::npos && !exists(argument))
      GTEST_SKIP() << argument << " is not installed (scripts/install-deps installs it)";

  const Finished without = run(cell.argv, base_environment(mode));
  ASSERT_FALSE(without.timed_out);
  ASSERT_NE(without.out.find(cell.printed), std::string::npos)
      << "without the shim: " << without.out << without.err;

  TempDir dir;
  Environment env = base_environment(mode);
  env["LD_PRELOAD"] = mode == Mode::asan ? kAsanRuntime + " " + kShim : kShim;
  env["MEMWATCH_ALLOCATOR"] = mode == Mode::jemalloc ? "jemalloc" : "system";
  env["MEMWATCH_REPORT"] = dir.file("report.%p.json");
  const Finished with = run(cell.argv, env);

  ASSERT_FALSE(with.timed_out);
  EXPECT_EQ(with.signaled, without.signaled);
  EXPECT_EQ(with.signal, without.signal);
  EXPECT_EQ(with.exit_code, without.exit_code) << with.err;
  EXPECT_EQ(without_timings(with.out), without_timings(without.out));
  EXPECT_EQ(with.err, without.err);

  // The shim was there: the program's report, with the heap it measured.
  int reports = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    const json report = json::parse(read_file(entry.path().string()));
    EXPECT_EQ(report["schema"], "memwatch.report/1");
    EXPECT_GT(report["host"]["peak_bytes"].get<std::int64_t>(), 0);
    ++reports;
  }
  EXPECT_EQ(reports, 1);
}

std::vector<Cell> dlopen_cells() {
  // The libraries that aborted under the shim, the C++ runtime itself loaded by dlopen, and two
  // C libraries that never did.
  const std::vector<std::string> libraries = {
      "libboost_filesystem.so.1.74.0", "libproj.so.25",  "libgdal.so.32", "libopencv_core.so.406",
      "libtorch_cpu.so.1.13",          "libstdc++.so.6", "libxml2.so.2",  "libsqlite3.so.0"};
  std::vector<Cell> cells;
  auto name_of = [](std::string library) {
    library = library.substr(3, library.find(".so") - 3);
    std::erase_if(library, [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); });
    return library;
  };
  for (const std::string& library : libraries)
    cells.push_back(
        {"dlopen_" + name_of(library), {kDlopenExit, "exit", library}, "loaded " + library});
  for (const std::string end : {"exit", "close", "_exit", "segv", "raise-segv", "term"}) {
    Cell all{"dlopen_all_then_" + end, {kDlopenExit, end}, "loaded " + libraries.back()};
    all.argv.insert(all.argv.end(), libraries.begin(), libraries.end());
    all.ends_by_fault = end == "segv" || end == "raise-segv";
    std::erase(all.name, '-');
    cells.push_back(all);
  }
  return cells;
}

std::vector<Cell> python_cells() {
  const std::string script = kSource + "/tests/interposer/programs/import_modules.py";
  const std::vector<std::string> modules = {"torch", "numpy", "scipy", "skimage", "h5py", "cv2"};
  std::vector<Cell> cells;
  for (const std::string& module : modules)
    cells.push_back({"python_import_" + module, {kPython, script, module}, module + " "});
  Cell all{"python_import_all", {kPython, script}, modules.back() + " "};
  all.argv.insert(all.argv.end(), modules.begin(), modules.end());
  cells.push_back(all);
  cells.push_back({"python_trainer_two_steps",
                   {kPython, kSource + "/workloads/unet3d/train.py", "--batch-size", "2", "--dim",
                    "16", "--levels", "3", "--filters", "4", "--steps", "2"},
                   "\"final_loss\""});
  return cells;
}

std::vector<Case> cases() {
  std::vector<Cell> cells = dlopen_cells();
  const std::vector<Cell> python = python_cells();
  cells.insert(cells.end(), python.begin(), python.end());
  std::vector<Case> all;
  for (const Cell& cell : cells)
    for (Mode mode : {Mode::system, Mode::jemalloc, Mode::asan})
      if (!(mode == Mode::asan && cell.ends_by_fault)) all.push_back({cell, mode});
  return all;
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  static const char* const kModeNames[] = {"system", "jemalloc", "asan"};
  return info.param.cell.name + "_" + kModeNames[static_cast<int>(info.param.mode)];
}

INSTANTIATE_TEST_SUITE_P(RealPrograms, Unchanged, testing::ValuesIn(cases()), case_name);

}  // namespace
