// `memwatch plot --workload W --x dim [--by batch] [--target T] [--capacity SIZE] --out F`:
// the measured peaks of a workload as points, the daemon's model as curves with its upper band,
// and the capacity as a line, drawn by gnuplot (PNG or SVG from the file's extension).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "args.hpp"
#include "query_client.hpp"

namespace memwatch::cli {

using nlohmann::json;

namespace {

constexpr int kCurvePoints = 60;

std::string terminal_for(const std::string& out) {
  // noenhanced: names like host_peak_bytes are text, not subscripts.
  if (out.ends_with(".png")) return "pngcairo size 1000,650 noenhanced font 'sans,11'";
  if (out.ends_with(".svg")) return "svg size 1000,650 dynamic noenhanced font 'sans,11'";
  throw UsageError("--out must end in .png or .svg, got '" + out + "'");
}

// The value most runs have for `name`: the other parameters are held there.
double usual_value(const json& runs, const std::string& name) {
  std::map<double, int> seen;
  for (const auto& r : runs)
    if (r["params"].contains(name)) ++seen[r["params"][name].get<double>()];
  return std::max_element(seen.begin(), seen.end(),
                          [](auto& a, auto& b) { return a.second < b.second; })
      ->first;
}

std::string label(const std::string& name, double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%s=%g", name.c_str(), v);
  return text;
}

// Writes the gnuplot program to gnuplot's standard input and waits for it.
void run_gnuplot(const std::string& program) {
  int in[2];
  if (pipe(in) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], STDIN_FILENO);
    close(in[1]);
    execlp("gnuplot", "gnuplot", nullptr);
    std::perror("memwatch plot: gnuplot (install gnuplot-nox)");
    _exit(127);
  }
  close(in[0]);
  std::size_t done = 0;
  while (done < program.size()) {
    const ssize_t w = write(in[1], program.data() + done, program.size() - done);
    if (w <= 0) break;
    done += static_cast<std::size_t>(w);
  }
  close(in[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("gnuplot failed to draw the plot");
}

}  // namespace

int cmd_plot(std::span<char* const> argv) {
  const Args args(argv, {"workload", "x", "by", "target", "capacity", "out", "query", "curve-keys"},
                  {});
  const std::string workload = args.required("workload");
  const std::string x = args.required("x");
  const std::string out = args.required("out");
  const std::string by = args.value("by").value_or("");
  const std::string target = args.value("target").value_or("host_peak_bytes");
  const std::string terminal = terminal_for(out);
  double capacity = 0;
  if (auto c = args.value("capacity")) {
    capacity = parse_number(*c, "--capacity (bytes)");
  }
  const DaemonQuery daemon = daemon_query(args);

  const json runs_all = ask_daemon(daemon, {{"op", "runs"}, {"workload", workload}})["runs"];
  json runs = json::array();
  for (const auto& r : runs_all)
    if (r["status"] == "finished" && r["params"].contains(x)) runs.push_back(r);
  if (runs.empty()) throw std::runtime_error("no finished run of '" + workload + "' has " + x);

  // Held parameters: every one but x and by, at its usual value.
  std::map<std::string, double> held;
  for (const auto& [name, v] : runs[0]["params"].items())
    if (name != x && name != by) held[name] = usual_value(runs, name);
  std::set<double> groups;
  double x_min = INFINITY, x_max = 0;
  for (const auto& r : runs) {
    bool matches = true;
    for (const auto& [name, v] : held)
      if (!r["params"].contains(name) || r["params"][name].get<double>() != v) matches = false;
    if (!matches) continue;
    groups.insert(by.empty() ? 0 : r["params"].value(by, 0.0));
    x_min = std::min(x_min, r["params"][x].get<double>());
    x_max = std::max(x_max, r["params"][x].get<double>());
  }

  std::string data, plots;
  int block = 0;
  const double x_hi = x_max * 1.25;  // a little past the data: where the bound widens
  for (double g : groups) {
    const std::string name = by.empty() ? "measured" : label(by, g);
    data += "$points" + std::to_string(block) + " << EOD\n";
    for (const auto& r : runs) {
      bool matches = !by.empty() ? r["params"].value(by, 0.0) == g : true;
      for (const auto& [n, v] : held) matches = matches && r["params"][n].get<double>() == v;
      if (matches)
        data += std::to_string(r["params"][x].get<double>()) + " " +
                std::to_string(r[target].get<double>() / 1048576.0) + "\n";
    }
    data += "EOD\n$curve" + std::to_string(block) + " << EOD\n";
    for (int i = 0; i <= kCurvePoints; ++i) {
      const double xv = x_min + (x_hi - x_min) * i / kCurvePoints;
      json params = held;
      params[x] = xv;
      if (!by.empty()) params[by] = g;
      const json p = ask_daemon(
          daemon,
          {{"op", "predict"}, {"workload", workload}, {"target", target}, {"params", params}});
      data += std::to_string(xv) + " " + std::to_string(p["peak_bytes"].get<double>() / 1048576.0) +
              " " + std::to_string(p["upper_bytes"].get<double>() / 1048576.0) + "\n";
    }
    data += "EOD\n";
    const std::string b = std::to_string(block);
    const std::string color = "lc " + std::to_string(block + 1);
    plots += (plots.empty() ? "" : ", ") + std::string("$curve") + b +
             " using 1:2:3 with filledcurves fs transparent solid 0.15 " + color +
             " notitle, $curve" + b + " using 1:2 with lines lw 2 " + color + " title '" + name +
             " model', $points" + b + " using 1:2 with points pt 7 ps 1.2 " + color +
             " title '" + name + " measured'";
    ++block;
  }
  if (capacity > 0)
    plots += ", " + std::to_string(capacity / 1048576.0) +
             " with lines dt 2 lw 2 lc rgb 'red' title 'capacity'";
  std::string held_text;
  for (const auto& [n, v] : held) held_text += (held_text.empty() ? "" : ", ") + label(n, v);

  std::string program = "set terminal " + terminal + "\nset output '" + out + "'\n" + data;
  program += "set title \"" + workload + ": measured " + target + " and the model's upper band" +
             (held_text.empty() ? "" : " (" + held_text + ")") + "\"\n";
  program += "set xlabel '" + x + "'\nset ylabel 'peak (MiB)'\nset key top left\nset grid\n";
  program += "plot " + plots + "\n";
  run_gnuplot(program);
  std::printf("memwatch plot: wrote %s (%zu runs, %d curve(s))\n", out.c_str(), runs.size(), block);
  return 0;
}

}  // namespace memwatch::cli
