#include "cvs/fleet_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "cvs/base/format.hpp"
#include "cvs/html_report.hpp"

namespace cvs::report {

namespace {

// One figure across the nodes: a dot per node on a horizontal scale, suspects in red, the median
// as a line.
std::string strip_chart(const FigureKey& figure, const FigureStats& st, const std::vector<FleetNode>& nodes,
                        const FleetScore& score) {
  std::vector<std::pair<std::string, double>> pts;
  for (const auto& n : nodes)
    if (auto it = n.figures.find(figure); it != n.figures.end() && std::isfinite(it->second))
      pts.emplace_back(n.name, it->second);
  if (pts.empty()) return "";
  double lo = st.median, hi = st.median;
  for (const auto& [name, v] : pts) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  const double span = hi > lo ? hi - lo : std::max(std::fabs(hi), 1.0);
  auto x = [&](double v) { return 20 + 560 * (v - lo) / span; };
  std::string svg = fmt::format("<svg width=\"600\" height=\"46\" role=\"img\" aria-label=\"{}\">",
                                html_escape(figure.text()));
  svg += fmt::format("<line x1=\"20\" x2=\"580\" y1=\"24\" y2=\"24\" stroke=\"#bbb\"/>");
  svg += fmt::format(
      "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"8\" y2=\"40\" stroke=\"#333\" stroke-dasharray=\"3,2\"/>",
      x(st.median));
  const auto suspects = score.suspects();
  for (const auto& [name, v] : pts) {
    const bool bad = std::find(suspects.begin(), suspects.end(), name) != suspects.end();
    svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"24\" r=\"6\" fill=\"{}\"><title>{}: {}</title></circle>",
                       x(v), bad ? "#c62828" : "#2e7d32", html_escape(name), short_number(v));
  }
  svg += fmt::format(
      "<text x=\"20\" y=\"44\" font-size=\"10\">{}</text><text x=\"580\" y=\"44\" font-size=\"10\" "
      "text-anchor=\"end\">{}</text></svg>",
      short_number(lo), short_number(hi));
  return svg;
}

}  // namespace

namespace {

// The two-node runs (--pairs): each run, its step time against the pairs' reference, slow in red.
std::string pairs_section(const PairsResult& pairs) {
  std::string h = fmt::format(
      "<h2>Pairs: two-node runs</h2><p>Reference: {} ms a step (the median of the faster half of the first "
      "round's pairs); a pair is slow when its run failed or its median step time is more than {} % above "
      "it (a slow run runs once more and keeps the faster time). "
      "Slow pairs' nodes ran again with known-good nodes; a node whose every pair was slow is a suspect.</p>"
      "<table><tr><th>round</th><th>nodes</th><th>run</th><th>step p50 (ms)</th><th>vs reference</th></tr>",
      short_number(pairs.reference_ms), short_number(pairs.min_deviation * 100));
  for (const auto& r : pairs.runs)
    h += fmt::format(
        "<tr><td>{}</td><td>{} + {}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td></tr>", r.round,
        html_escape(r.a), html_escape(r.b), html_escape(cvs::to_string(r.status, "no results")),
        short_number(r.step_ms), r.slow ? "bad" : "ok",
        r.ran()
            ? fmt::format(
                  "{:+.0f} %{}{}", (r.step_ms / pairs.reference_ms - 1) * 100, r.slow ? ", slow" : "",
                  r.tries > 1 ? ", the faster of 2 tries (first " + short_number(r.first_ms) + " ms)" : "")
            : std::string("failed"));
  h += "</table>";
  for (const auto& [a, b] : pairs.slow_links)
    h += "<p class=\"bad\">Slow link between " + html_escape(a) + " and " + html_escape(b) +
         ": slow together, each fast with a known-good node.</p>";
  return h;
}

}  // namespace

std::string render_fleet_html(const FleetScore& score, const std::vector<FleetNode>& nodes,
                              const FleetPolicy& policy, const std::string& title, const PairsResult* pairs) {
  std::map<std::string, const FleetNode*> by_name;
  for (const auto& n : nodes) by_name[n.name] = &n;
  std::string h = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>" + html_escape(title) +
                  "</title><style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
                  "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}"
                  ".bad{color:#c62828;font-weight:bold}.ok{color:#2e7d32}</style></head><body>";
  const auto suspects = score.suspects();
  h += "<h1>" + html_escape(title) + "</h1>";
  h += fmt::format(
      "<p>{} node(s), {} scored, <span class=\"{}\">{} suspect(s)</span>. A node is a suspect when a "
      "figure is on the bad side of the fleet's median by a modified z-score beyond {} and by {} % or "
      "more, or when its run failed.{}</p>",
      score.nodes.size(), score.scored, suspects.empty() ? "ok" : "bad", suspects.size(),
      short_number(policy.max_z), short_number(policy.min_deviation * 100),
      score.too_small
          ? " <b>The fleet is too small to score</b> (fewer than " + std::to_string(policy.min_fleet) +
                " passing runs): only the runs' own verdicts count."
          : "");
  h += "<h2>Nodes, worst first</h2><table><tr><th>node</th><th>verdict</th><th>evidence</th></tr>";
  for (const auto& n : score.nodes)
    h += fmt::format("<tr><td>{}</td><td class=\"{}\">{}</td><td>{}</td></tr>", html_escape(n.name),
                     n.suspect ? "bad" : "ok", n.suspect ? "SUSPECT" : "healthy",
                     html_escape(fleet_reasons(n)));
  h += "</table><h2>Each figure across the nodes</h2><p>Dots: nodes (red: suspects); dashed line: the "
       "median.</p>"
       "<table><tr><th>figure</th><th>median</th><th>MAD</th><th>nodes</th></tr>";
  for (const auto& [figure, st] : score.figures)
    h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", html_escape(figure.text()),
                     short_number(st.median), short_number(st.mad), strip_chart(figure, st, nodes, score));
  h += "</table>";
  if (pairs) h += pairs_section(*pairs);
  h += "</body></html>\n";
  return h;
}

}  // namespace cvs::report
