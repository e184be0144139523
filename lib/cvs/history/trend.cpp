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

namespace {

const char* const kTrendStyle =
    "body{font:14px system-ui,sans-serif;margin:24px;color:#1d2127}"
    "svg{background:#fbfcfd;border:1px solid #eceef1}"
    ".pt{fill:#1f6feb}.ci{stroke:#1f6feb;stroke-width:1.5}"
    ".prov{stroke:#9aa3ad;stroke-dasharray:4 3}"
    ".cp{stroke:#cf222e;stroke-width:2}.lvl{stroke:#cf222e;stroke-width:1;stroke-dasharray:6 3}"
    "text{font-size:11px;fill:#57606a}table{border-collapse:collapse;margin-top:16px}"
    "td,th{border-bottom:1px solid #eceef1;padding:3px 8px;text-align:left}"
    ".cpw{color:#cf222e;font-weight:600}";

// The estimates with their intervals, provenance changes dashed, change points and levels red.
std::string trend_svg(const std::string& metric, const std::vector<TrendPoint>& points,
                      const std::vector<ChangePoint>& changes) {
  std::ostringstream h;
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& p : points) {
    lo = std::min({lo, p.estimate, p.lo.value_or(p.estimate)});
    hi = std::max({hi, p.estimate, p.hi.value_or(p.estimate)});
  }
  const double pad = (hi - lo) * 0.1 + 1e-9;
  lo -= pad;
  hi += pad;
  const double W = 900, H = 320, L = 70, R = 20, T = 20, B = 40;
  const auto X = [&](std::size_t i) {
    return L + (points.size() == 1 ? 0.5 : static_cast<double>(i) / static_cast<double>(points.size() - 1)) *
                   (W - L - R);
  };
  const auto Y = [&](double v) { return T + (hi - v) / (hi - lo) * (H - T - B); };
  h << "<svg viewBox=\"0 0 " << W << " " << H << "\" width=\"" << W
    << "\" role=\"img\" aria-label=\"trend of " << html_escape(metric) << "\">";
  h << fmt::format("<text x=\"4\" y=\"{:.0f}\">{:.6g}</text><text x=\"4\" y=\"{:.0f}\">{:.6g}</text>",
                   Y(hi) + 10, hi, Y(lo), lo);
  for (const auto& [i, c] : provenance_changes(points)) {
    const double x = (X(i - 1) + X(i)) / 2;
    std::string label;
    for (const auto& [f, a, b] : c) label += (label.empty() ? "" : ", ") + f;
    h << fmt::format("<line class=\"prov\" x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\"/>", x, T, x, H - B)
      << fmt::format("<text x=\"{:.1f}\" y=\"{}\">{}</text>", x + 3, T + 10, html_escape(label));
  }
  for (const auto& c : changes) {
    const double x = (X(c.index - 1) + X(c.index)) / 2;
    h << fmt::format("<line class=\"cp\" x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\"/>", x, T, x, H - B)
      << fmt::format("<line class=\"lvl\" x1=\"{}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>", L,
                     Y(c.before), x, Y(c.before))
      << fmt::format("<line class=\"lvl\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\"/>", x,
                     Y(c.after), W - R, Y(c.after));
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    if (p.lo && p.hi)
      h << fmt::format("<line class=\"ci\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>",
                       X(i), Y(*p.lo), Y(*p.hi));
    h << fmt::format(
        "<circle class=\"pt\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\"><title>{} {:.6g}</title></circle>", X(i),
        Y(p.estimate), html_escape(p.started_at), p.estimate);
  }
  h << fmt::format("<text x=\"{}\" y=\"{}\">{}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                   L, H - 12, html_escape(day(points.front().started_at)), W - R, H - 12,
                   html_escape(day(points.back().started_at)));
  h << "</svg>";
  return h.str();
}

// One row per session: its estimate, interval, and what changed in its provenance.
std::string trend_table(const std::vector<TrendPoint>& points) {
  std::ostringstream h;
  h << "<table><tr><th>#</th><th>Started</th><th>Sweep</th><th>Estimate</th><th>Interval</th><th>What "
       "changed</th></tr>";
  const auto pc = provenance_changes(points);
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    std::string what;
    for (const auto& [j, c] : pc)
      if (j == i)
        for (const auto& [f, a, b] : c)
          what += (what.empty() ? "" : "; ") + html_escape(f) + ": " + html_escape(a) + " &rarr; " +
                  html_escape(b);
    h << "<tr><td>" << i + 1 << "</td><td>" << html_escape(p.started_at) << "</td><td><code>"
      << html_escape(p.sweep) << "</code></td><td>" << fmt::format("{:.6g}", p.estimate) << "</td><td>"
      << (p.lo && p.hi ? fmt::format("[{:.6g}, {:.6g}]", *p.lo, *p.hi) : std::string("&mdash;"))
      << "</td><td>" << what << "</td></tr>";
  }
  h << "</table>";
  return h.str();
}

}  // namespace

std::string render_trend_html(const std::string& config, const std::string& metric,
                              const std::vector<TrendPoint>& points,
                              const std::vector<ChangePoint>& changes) {
  std::ostringstream h;
  h << "<!doctype html><html><head><meta charset=\"utf-8\"><title>" << html_escape(metric)
    << " trend: " << html_escape(config) << "</title><style>" << kTrendStyle << "</style></head><body>";
  h << "<h1>" << html_escape(metric) << "</h1><p>config <code>" << html_escape(config) << "</code>, "
    << points.size() << " session(s)</p>";
  for (const auto& c : changes) h << "<p class=\"cpw\">Change point: " << html_escape(c.words) << "</p>";
  if (changes.empty()) h << "<p>No change point.</p>";
  if (!points.empty()) h << trend_svg(metric, points, changes);
  h << trend_table(points) << "</body></html>\n";
  return h.str();
}

}  // namespace cvs::history
