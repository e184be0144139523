// Percentiles by selection (metrics.hpp declares them): linear interpolation between ranks.
#include <algorithm>
#include <cmath>

#include "cvs/statistics/metrics.hpp"

namespace cvs {

PercentileRank percentile_rank(std::size_t n, double pct) {
  const double rank = pct / 100.0 * static_cast<double>(n - 1);
  PercentileRank r;
  r.lo = static_cast<std::size_t>(std::floor(rank));
  r.hi = static_cast<std::size_t>(std::ceil(rank));
  r.frac = rank - static_cast<double>(r.lo);
  return r;
}

std::vector<double> percentiles_in_place(std::vector<double>& v, const std::vector<double>& pcts) {
  std::vector<double> out;
  // The same values as sorting and interpolating between ranks lo and hi, in linear time: the
  // lo-th element by selection, the hi-th as the least of those after it. Ascending percentiles
  // select only among the elements above the previous one's.
  std::size_t from = 0;
  for (double pct : pcts) {
    if (v.empty()) {
      out.push_back(std::nan(""));
      continue;
    }
    const auto r = percentile_rank(v.size(), pct);
    if (r.lo < from) from = 0;  // not ascending: select among all again
    std::nth_element(v.begin() + static_cast<long>(from), v.begin() + static_cast<long>(r.lo), v.end());
    const double a = v[r.lo];
    const double b = r.hi == r.lo ? a : *std::min_element(v.begin() + static_cast<long>(r.lo) + 1, v.end());
    out.push_back(r.at(a, b));
    from = r.lo;
  }
  return out;
}

double percentile_in_place(std::vector<double>& v, double pct) {
  return percentiles_in_place(v, {pct})[0];
}

double percentile(std::vector<double> v, double pct) {
  return percentile_in_place(v, pct);
}

}  // namespace cvs
