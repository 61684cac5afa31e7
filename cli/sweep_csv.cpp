#include "sweep_csv.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

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

}  // namespace memwatch::cli
