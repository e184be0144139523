#include "cvs/trend_page.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "cvs/base/text.hpp"

namespace cvs::report {

using history::ChangePoint;
using history::TrendPoint;

namespace {

std::string day(const std::string& iso) {
  return iso.substr(0, 10);
}

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
  for (const auto& [i, c] : history::provenance_changes(points)) {
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
  const auto pc = history::provenance_changes(points);
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

}  // namespace cvs::report
