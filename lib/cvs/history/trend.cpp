#include "cvs/history/trend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "cvs/base/text.hpp"

namespace cvs::history {
namespace {

using Changes = std::vector<std::tuple<std::string, std::string, std::string>>;

Changes changed_between(const TrendPoint& a, const TrendPoint& b) {
  std::map<std::string, std::string> before(a.provenance.begin(), a.provenance.end());
  std::map<std::string, std::string> after(b.provenance.begin(), b.provenance.end());
  Changes out;
  for (const auto& [k, v] : after)
    if (auto it = before.find(k); it == before.end() || it->second != v)
      out.emplace_back(k, it == before.end() ? "(absent)" : it->second, v);
  for (const auto& [k, v] : before)
    if (!after.count(k)) out.emplace_back(k, v, "(absent)");
  return out;
}

struct Split {
  std::size_t at = 0;
  double t = 0, m1 = 0, m2 = 0;
};

// The best split of x[a, b) by Welch's t.
Split best_split(const std::vector<double>& x, std::size_t a, std::size_t b) {
  Split best;
  for (std::size_t k = a + kMinSegment; k + kMinSegment <= b; ++k) {
    auto stats = [&](std::size_t from, std::size_t to) {
      double m = 0, v = 0;
      for (std::size_t i = from; i < to; ++i) m += x[i];
      m /= static_cast<double>(to - from);
      for (std::size_t i = from; i < to; ++i) v += (x[i] - m) * (x[i] - m);
      return std::pair{m, v / static_cast<double>(to - from - 1)};
    };
    const auto [m1, v1] = stats(a, k);
    const auto [m2, v2] = stats(k, b);
    const double se = std::sqrt(v1 / static_cast<double>(k - a) + v2 / static_cast<double>(b - k));
    const double t = se > 0 ? std::fabs(m1 - m2) / se : (m1 != m2 ? INFINITY : 0.0);
    if (t > best.t) best = {k, t, m1, m2};
  }
  return best;
}

void segment(const std::vector<double>& x, std::size_t a, std::size_t b, double min_change_pct,
             std::vector<Split>& out) {
  if (b - a < 2 * kMinSegment) return;
  const auto s = best_split(x, a, b);
  if (s.t <= kChangeT || s.m1 == 0 || std::fabs(100 * (s.m2 - s.m1) / s.m1) < min_change_pct) return;
  segment(x, a, s.at, min_change_pct, out);
  out.push_back(s);
  segment(x, s.at, b, min_change_pct, out);
}

std::string day(const std::string& iso) {
  return iso.substr(0, 10);
}

}  // namespace

std::vector<std::pair<std::size_t, Changes>> provenance_changes(const std::vector<TrendPoint>& points) {
  std::vector<std::pair<std::size_t, Changes>> out;
  for (std::size_t i = 1; i < points.size(); ++i)
    if (auto c = changed_between(points[i - 1], points[i]); !c.empty()) out.emplace_back(i, std::move(c));
  return out;
}

std::vector<ChangePoint> change_points(const std::vector<TrendPoint>& points, const std::string& metric,
                                       double min_change_pct) {
  std::vector<double> x;
  for (const auto& p : points) x.push_back(p.estimate);
  std::vector<Split> splits;
  segment(x, 0, x.size(), min_change_pct, splits);
  std::vector<ChangePoint> out;
  for (const auto& s : splits) {
    ChangePoint c;
    c.index = s.at;
    c.before = s.m1;
    c.after = s.m2;
    c.t = s.t;
    c.change_pct = 100 * (s.m2 - s.m1) / s.m1;
    c.changed = changed_between(points[s.at - 1], points[s.at]);
    c.words = fmt::format("{} {:+.0f} % from {}", metric, c.change_pct, day(points[s.at].started_at));
    if (c.changed.empty()) {
      c.words += ", with no provenance change there";
    } else {
      std::string what;
      for (const auto& [f, a, b] : c.changed)
        what += (what.empty() ? "" : " and ") + f + " " + a + " -> " + b;
      c.words += ", when " + what + " changed";
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace cvs::history
