#include "sweep_csv.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "args.hpp"

namespace memwatch::cli {

namespace fs = std::filesystem;

std::string csv_header(const std::vector<Axis>& axes) {
  std::string h;
  for (const auto& axis : axes) h += axis.name + ",";
  for (const std::string& c : protocol::sweep_measure_columns()) h += c + ",";
  h.pop_back();
  return h;
}

std::map<std::string, std::size_t> read_done(const fs::path& out, const std::vector<Axis>& axes) {
  std::ifstream in(out, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!text.empty() && text.back() != '\n') {
    text.erase(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
    fs::resize_file(out, text.size());
  }
  std::map<std::string, std::size_t> done;
  std::istringstream lines(text);
  std::string line;
  if (!std::getline(lines, line)) return done;
  if (line != csv_header(axes))
    throw std::runtime_error(out.string() + " has the columns '" + line + "', this sweep writes '" +
                             csv_header(axes) + "': resume needs the same parameter names");
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    auto cells = split(line, ',');
    if (cells.size() < axes.size())
      throw std::runtime_error(out.string() + ": a row with too few cells: " + line);
    std::string key;
    for (std::size_t a = 0; a < axes.size(); ++a) key += canonical_number(cells[a]) + ",";
    ++done[key];
  }
  return done;
}

std::string csv_row(const std::vector<Axis>& axes, const Point& point, const RunResult& r) {
  std::string row;
  for (std::size_t a = 0; a < axes.size(); ++a) row += axes[a].values[point[a]] + ",";
  for (const protocol::Figure& f : protocol::kFigures) {
    if (!f.run) continue;
    const std::optional<std::int64_t>& v = r.figures[protocol::figure_index(f)];
    row += v ? std::to_string(*v) : std::string();
    row += ",";
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f,%d\n", r.elapsed_s, r.exit_status);
  return row + buf;
}

std::FILE* open_rows(const fs::path& out, const std::vector<Axis>& axes, bool resume) {
  const bool exists = fs::exists(out);
  if (exists && !resume)
    throw UsageError(out.string() + " exists: pass --resume to continue it, or remove it");
  std::FILE* csv = std::fopen(out.c_str(), "a");
  if (!csv) throw std::runtime_error("cannot open " + out.string() + ": " + std::strerror(errno));
  if (!exists || fs::file_size(out) == 0) {
    std::fprintf(csv, "%s\n", csv_header(axes).c_str());
    std::fflush(csv);
  }
  return csv;
}

std::vector<WrittenRun> read_runs(const fs::path& out, const std::vector<Axis>& axes,
                                  const std::string& figure) {
  std::vector<WrittenRun> runs;
  std::ifstream in(out);
  std::string line;
  if (!std::getline(in, line)) return runs;
  const auto header = split(line, ',');
  auto column = [&](const std::string& name) {
    for (std::size_t c = 0; c < header.size(); ++c)
      if (header[c] == name) return c;
    throw std::runtime_error(out.string() + " has no column " + name);
  };
  const std::size_t at_figure = column(figure), at_elapsed = column("elapsed_s"),
                    at_status = column("exit_status");
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto cells = split(line, ',');
    if (cells.size() != header.size())
      throw std::runtime_error(out.string() + ": a row with the wrong number of cells: " + line);
    WrittenRun run;
    for (std::size_t a = 0; a < axes.size(); ++a)
      run.values.push_back(parse_number(cells[a], axes[a].name));
    if (!cells[at_figure].empty()) run.figure = parse_number(cells[at_figure], figure);
    run.elapsed_s = parse_number(cells[at_elapsed], "elapsed_s");
    run.exit_status = static_cast<int>(parse_number(cells[at_status], "exit_status"));
    runs.push_back(std::move(run));
  }
  return runs;
}

}  // namespace memwatch::cli
