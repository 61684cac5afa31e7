#include "memwatch/model/batch_slices.hpp"

namespace memwatch::model {

namespace {

bool batch_one(double batch) {
  return batch <= 1;
}

}  // namespace

std::vector<std::size_t> BatchSlices::peers_of(std::span<const double> x, std::size_t skip) const {
  std::vector<std::size_t> peers;
  if (empty() || param >= x.size()) return peers;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (i == skip || batch_one(points[i][param]) != batch_one(x[param])) continue;
    bool same = true;
    for (std::size_t p = 0; p < x.size() && same; ++p) same = p == param || points[i][p] == x[p];
    if (same) peers.push_back(i);
  }
  return peers;
}

Correction correction_kind(std::span<const Miss> misses) {
  if (misses.empty()) return Correction::none;
  for (const Miss& m : misses)
    if (m.batch != misses.front().batch) return Correction::line;
  return Correction::carried;
}

double correction(std::span<const Miss> misses, double batch, double predicted) {
  if (misses.empty()) return 0;
  const auto n = static_cast<double>(misses.size());
  double mean_batch = 0, mean_miss = 0, mean_relative = 0;
  for (const Miss& m : misses) {
    mean_batch += m.batch / n;
    mean_miss += m.miss / n;
    mean_relative += m.miss / m.predicted / n;
  }
  double spread = 0, covariance = 0;
  for (const Miss& m : misses) {
    spread += (m.batch - mean_batch) * (m.batch - mean_batch);
    covariance += (m.batch - mean_batch) * (m.miss - mean_miss);
  }
  if (spread <= 0) return mean_relative * predicted;
  return mean_miss + covariance / spread * (batch - mean_batch);
}

BatchSlices make_batch_slices(const Dataset& d, std::size_t batch_param) {
  BatchSlices slices;
  if (batch_param >= d.params.size()) return slices;
  slices.param = batch_param;
  for (const auto& r : d.rows) {
    slices.points.push_back(r.x);
    slices.measured.push_back(r.y);
  }
  return slices;
}

}  // namespace memwatch::model
