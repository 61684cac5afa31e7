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

struct PlotRequest {
  std::string workload, x, by, target, out;
  double capacity = 0;  // bytes; 0: no capacity line
};

// The runs drawn: those at the usual value of every parameter but x and by, grouped by `by`.
struct Slice {
  json runs;                           // the workload's finished runs that have x
  std::map<std::string, double> held;  // the other parameters, at their usual values
  std::set<double> groups;             // the values of `by` (one group, 0, without it)
  double x_min = INFINITY, x_max = 0;

  bool in_group(const json& run, const std::string& by, double group) const {
    if (!by.empty() && run["params"].value(by, 0.0) != group) return false;
    for (const auto& [name, v] : held)
      if (!run["params"].contains(name) || run["params"][name].get<double>() != v) return false;
    return true;
  }
};

Slice slice_of(json runs, const PlotRequest& request) {
  Slice s;
  s.runs = std::move(runs);
  for (const auto& [name, v] : s.runs[0]["params"].items())
    if (name != request.x && name != request.by) s.held[name] = usual_value(s.runs, name);
  for (const auto& r : s.runs) {
    if (!s.in_group(r, "", 0)) continue;
    s.groups.insert(request.by.empty() ? 0 : r["params"].value(request.by, 0.0));
    s.x_min = std::min(s.x_min, r["params"][request.x].get<double>());
    s.x_max = std::max(s.x_max, r["params"][request.x].get<double>());
  }
  return s;
}

// One group's data blocks (measured points; the model and its bound along x) and its plot
// clauses.
void draw_group(const DaemonQuery& daemon, const PlotRequest& request, const Slice& slice,
                double group, int block, std::string& data, std::string& plots) {
  const std::string name = request.by.empty() ? "measured" : label(request.by, group);
  const std::string b = std::to_string(block);
  data += "$points" + b + " << EOD\n";
  for (const auto& r : slice.runs)
    if (slice.in_group(r, request.by, group))
      data += std::to_string(r["params"][request.x].get<double>()) + " " +
              std::to_string(r[request.target].get<double>() / 1048576.0) + "\n";
  data += "EOD\n$curve" + b + " << EOD\n";
  const double x_hi = slice.x_max * 1.25;  // a little past the data: where the bound widens
  for (int i = 0; i <= kCurvePoints; ++i) {
    const double xv = slice.x_min + (x_hi - slice.x_min) * i / kCurvePoints;
    json params = slice.held;
    params[request.x] = xv;
    if (!request.by.empty()) params[request.by] = group;
    const json p = ask_daemon(daemon, {{"op", "predict"},
                                       {"workload", request.workload},
                                       {"target", request.target},
                                       {"params", params}});
    data += std::to_string(xv) + " " + std::to_string(p["peak_bytes"].get<double>() / 1048576.0) +
            " " + std::to_string(p["upper_bytes"].get<double>() / 1048576.0) + "\n";
  }
  data += "EOD\n";
  const std::string color = "lc " + std::to_string(block + 1);
  plots += (plots.empty() ? "" : ", ") + std::string("$curve") + b +
           " using 1:2:3 with filledcurves fs transparent solid 0.15 " + color +
           " notitle, $curve" + b + " using 1:2 with lines lw 2 " + color + " title '" + name +
           " model', $points" + b + " using 1:2 with points pt 7 ps 1.2 " + color + " title '" +
           name + " measured'";
}

std::string gnuplot_program(const PlotRequest& request, const Slice& slice, const std::string& data,
                            std::string plots) {
  if (request.capacity > 0)
    plots += ", " + std::to_string(request.capacity / 1048576.0) +
             " with lines dt 2 lw 2 lc rgb 'red' title 'capacity'";
  std::string held_text;
  for (const auto& [n, v] : slice.held) held_text += (held_text.empty() ? "" : ", ") + label(n, v);
  std::string program =
      "set terminal " + terminal_for(request.out) + "\nset output '" + request.out + "'\n" + data;
  program += "set title \"" + request.workload + ": measured " + request.target +
             " and the model's upper band" + (held_text.empty() ? "" : " (" + held_text + ")") +
             "\"\n";
  program +=
      "set xlabel '" + request.x + "'\nset ylabel 'peak (MiB)'\nset key top left\nset grid\n";
  return program + "plot " + plots + "\n";
}

constexpr Option kOptions[] = {
    kWorkloadOption,
    {"x", "P", "the parameter along the horizontal axis"},
    {"by", "P", "one curve per value of P (default: one curve)"},
    {"target", "T", "the figure drawn (default host_peak_bytes)"},
    {"capacity", "BYTES", "draw the capacity as a line there"},
    {"out", "FILE.png|FILE.svg", "the picture to write; its extension picks the format"},
    kQueryOption,
    kCurveKeysOption,
};

}  // namespace

std::string help_plot() {
  return usage_text("plot", {"--workload W --x P [--by P] [--target T] [--capacity BYTES] --out "
                             "FILE.png|FILE.svg",
                             "Draws a workload's finished runs as points, the daemon's model as "
                             "curves with its upper band, and the capacity as a line (gnuplot). "
                             "The other parameters are held at the values most runs have.",
                             kOptions});
}

int cmd_plot(std::span<char* const> argv) {
  const Args args(argv, kOptions);
  PlotRequest request{args.required("workload"), args.required("x"), args.value("by").value_or(""),
                      args.value("target").value_or("host_peak_bytes"), args.required("out")};
  terminal_for(request.out);  // a bad --out is said before asking the daemon
  if (auto c = args.value("capacity")) request.capacity = parse_number(*c, "--capacity (bytes)");
  const DaemonQuery daemon = daemon_query(args);

  const json answer = ask_daemon(daemon, {{"op", "runs"}, {"workload", request.workload}});
  json runs = json::array();
  for (const auto& r : answer["runs"])
    if (r["status"] == "finished" && r["params"].contains(request.x)) runs.push_back(r);
  if (runs.empty())
    throw std::runtime_error("no finished run of '" + request.workload + "' has " + request.x);
  const Slice slice = slice_of(std::move(runs), request);

  std::string data, plots;
  int block = 0;
  for (double group : slice.groups) draw_group(daemon, request, slice, group, block++, data, plots);
  run_gnuplot(gnuplot_program(request, slice, data, plots));
  std::printf("memwatch plot: wrote %s (%zu runs, %d curve(s))\n", request.out.c_str(),
              slice.runs.size(), block);
  return 0;
}

}  // namespace memwatch::cli
