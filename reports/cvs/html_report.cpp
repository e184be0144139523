#include "cvs/html_report.hpp"
#include "cvs/catalog/stage_names.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "cvs/base/format.hpp"
#include "cvs/results/telemetry_diagnosis.hpp"

using nlohmann::ordered_json;

namespace cvs::report {

namespace {

std::string fmt(double v, const char* f = "%.4g") {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string val(const ordered_json& v) {
  if (v.is_null()) return "&mdash;";
  if (v.is_number()) return short_number(v.get<double>());
  if (v.is_string()) return html_escape(v.get<std::string>());
  return html_escape(v.dump());
}

// A figure; NaN (null in results.json) is a dash.
std::string num(double v) {
  return std::isnan(v) ? "&mdash;" : short_number(v);
}

std::string badge(Outcome o) {
  const char* cls = o == Outcome::Pass           ? "pass"
                    : o == Outcome::Fail         ? "fail"
                    : o == Outcome::Inconclusive ? "inconclusive"
                    : o == Outcome::Error        ? "error"
                    : o == Outcome::Record       ? "record"
                                                 : "na";
  return std::string("<span class=\"badge ") + cls + "\">" + html_escape(to_string(o)) + "</span>";
}

// Inline SVG line plot of a loss curve, with the sampled points the slope is fitted on.
std::string loss_svg(const std::vector<std::pair<long long, double>>& curve,
                     const std::vector<std::pair<long long, double>>& sampled) {
  std::vector<std::pair<double, double>> pts;
  for (const auto& [step, loss] : curve)
    if (!std::isnan(loss)) pts.emplace_back(static_cast<double>(step), loss);
  if (pts.size() < 2) return "<p class=\"muted\">not enough steps to plot</p>";
  const double W = 560, H = 200, L = 56, B = 28, T = 10, R = 12;
  double x0 = pts.front().first, x1 = pts.back().first, y0 = pts[0].second, y1 = pts[0].second;
  for (auto& [x, y] : pts) {
    y0 = std::min(y0, y);
    y1 = std::max(y1, y);
  }
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + 1e-6;
  auto X = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  auto Y = [&](double y) { return T + (y1 - y) / (y1 - y0) * (H - T - B); };
  std::ostringstream s;
  s << "<svg class=\"plot\" viewBox=\"0 0 " << W << " " << H << "\" role=\"img\" aria-label=\"loss curve\">";
  s << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << H - B
    << "\" class=\"axis\"/>";
  s << "<line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\"" << H - B
    << "\" class=\"axis\"/>";
  s << "<text x=\"" << L - 4 << "\" y=\"" << T + 8 << "\" class=\"tick\" text-anchor=\"end\">" << fmt(y1)
    << "</text>";
  s << "<text x=\"" << L - 4 << "\" y=\"" << H - B << "\" class=\"tick\" text-anchor=\"end\">" << fmt(y0)
    << "</text>";
  s << "<text x=\"" << L << "\" y=\"" << H - 8 << "\" class=\"tick\">step " << fmt(x0, "%.0f") << "</text>";
  s << "<text x=\"" << W - R << "\" y=\"" << H - 8 << "\" class=\"tick\" text-anchor=\"end\">step "
    << fmt(x1, "%.0f") << "</text>";
  s << "<polyline class=\"loss\" points=\"";
  for (auto& [x, y] : pts) s << fmt(X(x), "%.1f") << "," << fmt(Y(y), "%.1f") << " ";
  s << "\"/>";
  for (const auto& [step, loss] : sampled)
    s << "<circle class=\"sample\" cx=\"" << fmt(X(static_cast<double>(step)), "%.1f") << "\" cy=\""
      << fmt(Y(loss), "%.1f") << "\" r=\"3\"><title>step " << step << ": " << fmt(loss)
      << "</title></circle>";
  s << "</svg>";
  return s.str();
}

// A small inline SVG of a gate: the interval as a bar with its estimate, the threshold as a red
// line (and the band for `within`), so the margin is seen at a glance.
std::string interval_svg(const EvaluationRecord& e) {
  if (!e.interval || !e.gate) return "";
  const auto [lo, hi] = *e.interval;
  const double est = e.value;
  const double thr = e.gate->threshold;
  if (!std::isfinite(lo) || !std::isfinite(hi)) return "";
  double band_lo = thr, band_hi = thr;
  if (e.gate->tolerance_pct) {
    const double tol = std::fabs(thr) * *e.gate->tolerance_pct / 100.0;
    band_lo = thr - tol;
    band_hi = thr + tol;
  }
  double x0 = std::min({lo, band_lo, std::isfinite(est) ? est : lo});
  double x1 = std::max({hi, band_hi, std::isfinite(est) ? est : hi});
  const double pad = (x1 - x0) * 0.15 + 1e-9;
  x0 -= pad;
  x1 += pad;
  const double W = 160, H = 18;
  auto X = [&](double x) { return fmt((x - x0) / (x1 - x0) * W, "%.1f"); };
  std::ostringstream s;
  s << "<svg class=\"ivl\" viewBox=\"0 0 " << W << " " << H << "\" role=\"img\" aria-label=\"interval "
    << fmt(lo) << " to " << fmt(hi) << ", threshold " << fmt(thr) << "\">";
  if (band_hi > band_lo)
    s << "<rect class=\"band\" x=\"" << X(band_lo) << "\" y=\"2\" width=\""
      << fmt((band_hi - band_lo) / (x1 - x0) * W, "%.1f") << "\" height=\"14\"/>";
  s << "<line class=\"ci\" x1=\"" << X(lo) << "\" y1=\"9\" x2=\"" << X(hi) << "\" y2=\"9\"/>";
  if (std::isfinite(est)) s << "<circle class=\"est\" cx=\"" << X(est) << "\" cy=\"9\" r=\"3\"/>";
  s << "<line class=\"thr\" x1=\"" << X(thr) << "\" y1=\"1\" x2=\"" << X(thr) << "\" y2=\"17\"/></svg>";
  return s.str();
}

// Inline SVG histogram of steady-state step times.
std::string step_time_svg(const std::vector<double>& v) {
  if (v.empty()) return "<p class=\"muted\">no steady-state steps</p>";
  const double lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
  const int bins = std::min<int>(12, std::max<int>(1, static_cast<int>(v.size())));
  std::vector<int> h(bins, 0);
  for (double x : v) {
    int b = hi > lo ? static_cast<int>((x - lo) / (hi - lo) * bins) : 0;
    h[std::clamp(b, 0, bins - 1)]++;
  }
  const int top = *std::max_element(h.begin(), h.end());
  const double W = 560, H = 160, L = 40, B = 28, T = 8, R = 12;
  const double bw = (W - L - R) / bins;
  std::ostringstream s;
  s << "<svg class=\"plot\" viewBox=\"0 0 " << W << " " << H
    << "\" role=\"img\" aria-label=\"step time distribution\">";
  for (int i = 0; i < bins; ++i) {
    const double bh = top ? (H - T - B) * h[i] / top : 0;
    s << "<rect class=\"bar\" x=\"" << fmt(L + i * bw + 1, "%.1f") << "\" y=\"" << fmt(H - B - bh, "%.1f")
      << "\" width=\"" << fmt(bw - 2, "%.1f") << "\" height=\"" << fmt(bh, "%.1f") << "\"><title>" << h[i]
      << " step(s)</title></rect>";
  }
  s << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << H - B
    << "\" class=\"axis\"/>";
  s << "<text x=\"" << L << "\" y=\"" << H - 8 << "\" class=\"tick\">" << fmt(lo) << " ms</text>";
  s << "<text x=\"" << W - R << "\" y=\"" << H - 8 << "\" class=\"tick\" text-anchor=\"end\">" << fmt(hi)
    << " ms</text>";
  s << "<text x=\"" << L - 4 << "\" y=\"" << T + 8 << "\" class=\"tick\" text-anchor=\"end\">" << top
    << "</text>";
  s << "</svg>";
  return s.str();
}

// A figure of the evaluation's metric, as the catalog prints it.
std::string fig(const EvaluationRecord& e, double v) {
  return html_escape(format_figure(e.metric, v));
}

std::string interval_cell(const EvaluationRecord& e) {
  if (!e.interval) return "&mdash;";
  return "[" + fig(e, e.interval->first) + ", " + fig(e, e.interval->second) + "]" + interval_svg(e);
}

// One strip of a telemetry chart: each series a polyline over the run's time, scaled to the
// strip's own range, its label and range at the left.
void strip(std::ostringstream& s, double y, const std::string& label, const std::vector<double>& t,
           const std::vector<std::vector<double>>& series) {
  const double W = 560, H = 30, L = 150, R = 8;
  double lo = INFINITY, hi = -INFINITY, t1 = t.empty() ? 1 : t.back();
  for (const auto& v : series)
    for (double x : v)
      if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
  if (!std::isfinite(lo)) return;
  if (hi <= lo) hi = lo + 1;
  s << "<text x=\"4\" y=\"" << fmt(y + 12, "%.1f") << "\" class=\"tick\">" << html_escape(label) << "</text>";
  s << "<text x=\"4\" y=\"" << fmt(y + 25, "%.1f") << "\" class=\"tick\">" << fmt(lo) << " - " << fmt(hi)
    << "</text>";
  for (const auto& v : series) {
    s << "<polyline class=\"tel\" points=\"";
    for (std::size_t i = 0; i < v.size() && i < t.size(); ++i)
      if (std::isfinite(v[i]))
        s << fmt(L + t[i] / std::max(t1, 1e-9) * (W - L - R), "%.1f") << ","
          << fmt(y + H - 3 - (v[i] - lo) / (hi - lo) * (H - 6), "%.1f") << " ";
    s << "\"/>";
  }
}

// "1980" / "-" for a figure of a GPU's spread.
std::string median_of(const GpuTelemetry& g, const char* key, const char* fmt_spec = "%.0f") {
  const auto it = g.figures.find(key);
  return it == g.figures.end() ? "&ndash;" : fmt(it->second.median, fmt_spec);
}

std::string opt_num(const std::optional<double>& v) {
  return v ? fmt(*v, "%.0f") : "?";
}

// A GPU's memory repairs and its link's errors over the run, in words ("none", "&ndash;" for none).
std::string repairs_cell(const GpuTelemetry& g) {
  std::string repairs;
  if (g.remap_failure && *g.remap_failure > 0) repairs += "remap failed ";
  if (g.remap_pending && *g.remap_pending > 0) repairs += "remaps pending ";
  if (g.pages_pending) repairs += "pages pending ";
  if (g.pages_retired_delta && *g.pages_retired_delta > 0)
    repairs += opt_num(g.pages_retired_delta) + " retired in the run ";
  if (g.pages_unreservable && *g.pages_unreservable > 0)
    repairs += opt_num(g.pages_unreservable) + " unreservable";
  return repairs.empty() ? "none" : html_escape(repairs);
}

std::string link_errors_cell(const GpuTelemetry& g) {
  std::string out;
  for (const auto& [v, what] :
       {std::pair{g.pcie_replays_delta, "replays"}, std::pair{g.pcie_recoveries_delta, "recoveries"},
        std::pair{g.pcie_naks_delta, "NAKs"}})
    if (v) out += (out.empty() ? "" : ", ") + opt_num(v) + " " + what;
  return out.empty() ? "&ndash;" : out;
}

// Each GPU of a node as a row: its address, busy clock, power and its limit, the PCIe link under
// load and its errors, temperature, ECC and memory repairs, other jobs' processes; a GPU the words
// name is marked.
void gpu_table_html(std::ostringstream& h, const NodeTelemetry& t, const std::string& words) {
  if (t.gpus.empty()) return;
  h << "<table><tr><th>GPU</th><th>Address</th><th>Clock MHz busy</th><th>Power W (limit / default or "
       "max)</th><th>PCIe under load (capable)</th><th>PCIe errors</th><th>Temp C max</th><th>ECC (corr / "
       "uncorr)</th><th>Memory repairs</th><th>Other processes</th></tr>";
  for (const auto& g : t.gpus) {
    const bool named = words.find("GPU " + std::to_string(g.index) + " ") != std::string::npos ||
                       words.find("GPU " + std::to_string(g.index) + ":") != std::string::npos;
    std::string procs;
    for (const auto& x : t.shared_gpu)
      if (x.process.gpu == g.index) procs += (procs.empty() ? "" : "; ") + x.words();
    const auto temp = g.figures.count("temp_hotspot_c") ? g.figures.at("temp_hotspot_c").max
                      : g.figures.count("temp_c")       ? g.figures.at("temp_c").max
                                                        : NAN;
    h << "<tr" << (named ? " class=\"named\"" : "") << "><td>" << g.index << "</td><td>"
      << (g.bus_id.empty() ? "&ndash;" : html_escape(g.bus_id)) << "</td><td class=\"num\">"
      << median_of(g, g.figures.count("sm_clock_busy_mhz") ? "sm_clock_busy_mhz" : "sm_clock_mhz")
      << "</td><td class=\"num\">" << median_of(g, "power_w") << " (" << opt_num(g.power_limit_w) << " / "
      << opt_num(g.power_default_limit_w ? g.power_default_limit_w : g.power_max_limit_w) << ")</td><td>x"
      << opt_num(g.pcie_width_min) << " gen " << opt_num(g.pcie_gen_min) << " (x" << opt_num(g.pcie_width_max)
      << " gen " << opt_num(g.pcie_gen_max) << ")</td><td>" << link_errors_cell(g)
      << "</td><td class=\"num\">" << (std::isnan(temp) ? "&ndash;" : fmt(temp, "%.0f"))
      << "</td><td class=\"num\">" << opt_num(g.ecc_corrected_delta) << " / "
      << opt_num(g.ecc_uncorrected_delta) << "</td><td>" << repairs_cell(g) << "</td><td>"
      << (procs.empty() ? "none" : html_escape(procs)) << "</td></tr>";
  }
  h << "</table>";
}

// A node's telemetry over the run (CPUs used and PSI; each GPU's clock, power and temperature),
// with what it explains.
std::string telemetry_html(const NodeRunRecord& n) {
  if (!n.telemetry || n.telemetry->samples < 2) return "";
  const auto& t = *n.telemetry;
  std::vector<std::pair<std::string, std::vector<std::vector<double>>>> rows;
  if (!t.cpu_share_series.empty()) rows.push_back({"CPUs used", {t.cpu_share_series}});
  if (!t.psi_cpu_series.empty()) {
    std::vector<double> pct;
    for (double x : t.psi_cpu_series) pct.push_back(100 * x);
    rows.push_back({"PSI cpu some %", {pct}});
  }
  // GPU series are per sample; the host's per interval: GPUs drop their first sample to line up.
  auto gpu_row = [&](const char* label, auto member) {
    std::vector<std::vector<double>> v;
    for (const auto& g : t.gpus) {
      const auto& x = g.*member;
      if (x.size() >= 2) v.emplace_back(x.begin() + 1, x.end());
    }
    if (!v.empty()) rows.push_back({label, v});
  };
  gpu_row("GPU clock MHz", &GpuTelemetry::sm_clock_mhz);
  gpu_row("GPU power W", &GpuTelemetry::power_w);
  gpu_row("GPU temp C", &GpuTelemetry::temp_c);
  std::ostringstream h;
  h << "<div><h3>Telemetry: " << html_escape(n.node) << " (" << t.samples << " samples, "
    << html_escape(t.tool) << ")</h3>";
  const auto why = explain_telemetry(t);
  if (!why.empty()) h << "<p>" << html_escape(why) << "</p>";
  gpu_table_html(h, t, why);
  for (const auto& note : t.notes) h << "<p class=\"muted\">" << html_escape(note) << "</p>";
  const double H = 32.0 * static_cast<double>(rows.size()) + 4;
  h << "<svg class=\"plot\" viewBox=\"0 0 560 " << fmt(H, "%.0f")
    << "\" role=\"img\" aria-label=\"telemetry of " << html_escape(n.node) << "\">";
  for (std::size_t i = 0; i < rows.size(); ++i)
    strip(h, 32.0 * static_cast<double>(i), rows[i].first, t.t, rows[i].second);
  h << "</svg></div>";
  return h.str();
}

// MaxText logs an empty quantization for BF16.
std::string quantization_label(const SweepRecord& s) {
  for (const auto& [k, v] : s.effective_config)
    if (k == "quantization") return v.empty() ? "bf16" : v;
  return "not logged";
}

// The threshold and margin cells of a gate (the sweep tables and the summary's failing gates).
std::string threshold_cell(const EvaluationRecord& e) {
  if (!e.gate) return "&mdash;";
  std::string thr = e.gate->kind + " " + fig(e, e.gate->threshold);
  if (e.gate->tolerance_pct) thr += " &plusmn;" + num(*e.gate->tolerance_pct) + "%";
  return thr;
}

std::string margin_cell(const EvaluationRecord& e) {
  return e.margin_pct ? fmt(*e.margin_pct, "%+.1f") + " %" : "&mdash;";
}

// Every gate that did not pass, first on the page: sweep, metric, value, threshold, margin.
std::string gates_not_passed(const Results& r) {
  std::ostringstream h;
  int rows = 0;
  for (const auto& [key, s] : r.sweeps)
    for (const auto& e : s.evaluations) {
      if (e.outcome != Outcome::Fail && e.outcome != Outcome::Inconclusive) continue;
      if (rows++ == 0)
        h << "<h3>Gates that did not pass</h3><table><tr><th>Sweep</th><th>Metric</th><th>Value</th><th>"
             "Interval</th><th>Threshold</th><th>Margin</th><th>Outcome</th></tr>";
      h << "<tr><td><code>" << html_escape(key) << "</code></td><td><code>" << html_escape(e.metric)
        << "</code></td><td class=\"num\">" << fig(e, e.value) << "</td><td>" << interval_cell(e)
        << "</td><td>" << threshold_cell(e) << "</td><td class=\"num\">" << margin_cell(e) << "</td><td>"
        << badge(e.outcome) << "</td></tr>";
    }
  if (rows) h << "</table>";
  return h.str();
}

// Where the gates came from and, for a calibration, its provenance beside this run's.
std::string thresholds_section(const Results& r) {
  std::ostringstream h;
  h << "<section><h2>Thresholds and provenance</h2><p>Thresholds from <strong>"
    << html_escape(r.config.thresholds_source) << "</strong>: <code>" << html_escape(r.config.threshold_file)
    << "</code></p>";
  const auto now = r.provenance_fields.value_or(ordered_json::object());
  if (r.calibration) {
    const auto& c = *r.calibration;
    std::set<std::string> differ;
    for (const auto& d : c.provenance_differences) differ.insert(d.field);
    h << "<p>Calibrated " << html_escape(c.date) << ". "
      << (differ.empty() ? "This run's provenance matches the calibration's."
                         : "<strong>This run's provenance differs from the calibration's in " +
                               std::to_string(differ.size()) + " field(s)</strong>: its gates may not apply.")
      << "</p><table><tr><th>Field</th><th>Calibration</th><th>This run</th></tr>";
    for (auto it = c.provenance.begin(); it != c.provenance.end(); ++it)
      h << "<tr" << (differ.count(it.key()) ? " class=\"differs\"" : "") << "><th>" << html_escape(it.key())
        << "</th><td>" << val(it.value()) << "</td><td>" << val(now.value(it.key(), ordered_json()))
        << "</td></tr>";
    h << "</table>";
  } else {
    h << "<table><tr><th>Field</th><th>This run</th></tr>";
    for (auto it = now.begin(); it != now.end(); ++it)
      h << "<tr><th>" << html_escape(it.key()) << "</th><td>" << val(it.value()) << "</td></tr>";
    h << "</table>";
  }
  h << "</section>";
  return h.str();
}

constexpr const char* kCss = R"CSS(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2430;background:#f5f6f8}
header{padding:18px 28px;color:#fff}header.PASS{background:#1f7a3f}header.FAIL{background:#b3261e}header.ERROR{background:#6b2fa3}
header h1{margin:0;font-size:22px}header p{margin:4px 0 0;opacity:.9}
main{padding:18px 28px;max-width:1200px}section{background:#fff;border:1px solid #dde1e6;border-radius:6px;padding:14px 18px;margin:0 0 16px}
h2{font-size:17px;margin:0 0 10px}h3{font-size:15px;margin:14px 0 6px}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #eceef1;vertical-align:top}
th{background:#f0f2f5;font-weight:600}td.num{font-variant-numeric:tabular-nums}
.badge{display:inline-block;min-width:58px;text-align:center;border-radius:3px;padding:1px 6px;font-weight:600;font-size:12px;color:#fff}
.pass{background:#1f7a3f}.fail{background:#b3261e}.inconclusive{background:#b26a00}.error{background:#6b2fa3}.record{background:#5b6b7f}.na{background:#a7b0bb}
td{overflow-wrap:anywhere}td code{word-break:break-all}.ivl{width:160px;height:18px;display:block}
tr.differs td,tr.differs th{background:#fdf1dc}.ci{stroke:#1b62c4;stroke-width:4}.est{fill:#0b2e5c}.thr{stroke:#b3261e;stroke-width:2}.band{fill:#f3d9d7}
.counts span{margin-right:14px}.muted{color:#6b7683}tr.named td{background:#fdecea}.err{background:#fdecea;border-left:4px solid #b3261e;padding:8px 10px;font-family:monospace;white-space:pre-wrap;word-break:break-all}
.plots{display:flex;gap:18px;flex-wrap:wrap}.tel{fill:none;stroke:#1f6feb;stroke-width:1.2}.plot{width:560px;max-width:100%;background:#fbfcfd;border:1px solid #eceef1}
.axis{stroke:#9aa4af;stroke-width:1}.tick{font-size:10px;fill:#5b6b7f}.loss{fill:none;stroke:#1b62c4;stroke-width:2}
.sample{fill:#e8710a}.bar{fill:#7a9cc6}code{font-size:12px}
)CSS";

}  // namespace

namespace {

void summary_html(std::ostringstream& h, const Results& r) {
  h << "<section><h2>Summary</h2><p class=\"counts\">";
  const auto counts = r.counts();
  for (Outcome o : {Outcome::Pass, Outcome::Fail, Outcome::Error, Outcome::Inconclusive, Outcome::Record,
                    Outcome::NA, Outcome::Skipped})
    for (const auto& [c, n] : counts)
      if (c == o) h << "<span>" << badge(o) << " " << n << "</span>";
  h << "</p>";
  h << gates_not_passed(r);
  if (r.calibration && !r.calibration->provenance_differences.empty())
    h << "<p><strong>Provenance differs from the calibration's</strong> (see Thresholds and provenance).</p>";
  if (!r.config.enforce_thresholds)
    h << "<p><strong>enforce_thresholds is false:</strong> threshold metrics are recorded, not gated.</p>";
  h << "<table><tr><th>Stage</th><th>Status</th><th>Seconds</th><th>Message</th></tr>";
  for (const auto& st : r.stages) {
    if (st.stage == stage_names::kMetric) continue;  // per-sweep tables below
    h << "<tr><td><code>" << html_escape(st.test) << "</code></td><td>" << badge(st.outcome)
      << "</td><td class=\"num\">" << fmt(st.seconds, "%.1f") << "</td><td>" << html_escape(st.message)
      << "</td></tr>";
  }
  h << "</table></section>";
}

// The run of one sweep: its failure, first error line, logs and early stop.
void sweep_run_html(std::ostringstream& h, const SweepRecord& s) {
  if (s.status == SweepStatus::NotRun) return;
  const auto& run = s.run;
  if (!run.failure.empty()) h << "<div class=\"err\">" << html_escape(run.failure) << "</div>";
  if (run.first_error)
    h << "<p>First matched error line (" << html_escape(run.first_error->pattern) << ", node "
      << html_escape(run.first_error->node) << ", line " << run.first_error->line_no
      << "):</p><div class=\"err\">" << html_escape(run.first_error->line) << "</div>";
  h << "<p class=\"muted\">run <code>" << html_escape(s.run_name) << "</code>, "
    << fmt(run.wall_seconds, "%.1f") << " s, effective quantization <code>"
    << html_escape(quantization_label(s)) << "</code>. Node logs: ";
  for (const auto& n : run.nodes)
    h << "<a href=\"" << html_escape(n.log) << "\">" << html_escape(n.node) << "</a> ";
  if (run.maxtext_yaml) h << "&middot; <a href=\"" << html_escape(*run.maxtext_yaml) << "\">MaxText YAML</a>";
  h << "</p>";
  for (const auto& n : run.nodes)  // the head's log: where the run's time went
    if (n.phases) {
      h << "<p class=\"muted\">Where the time went (" << html_escape(n.node)
        << "'s log): " << html_escape(n.phases->words()) << ".</p>";
      break;
    }
  if (s.early_stop) {
    const auto& x = *s.early_stop;
    h << "<p>" << (x.stopped_early ? "Stopped early" : "Ran to the cap") << " after " << x.steps_run
      << " steps (configured " << x.configured_steps << ", cap " << x.cap << "): " << x.steps_saved
      << " steps and " << fmt(x.seconds_saved, "%.1f") << " s saved against the configured steps. "
      << html_escape(x.reason) << "</p>";
  }
}

void sweep_html(std::ostringstream& h, const std::string& key, const SweepRecord& s) {
  h << "<section><h2>Sweep <code>" << html_escape(key) << "</code> &mdash; "
    << html_escape(to_string(s.status)) << "</h2>";
  sweep_run_html(h, s);
  if (!s.mesh.empty())
    h << "<p>Mesh: " << html_escape(s.mesh) << " (" << s.num_nodes << " node(s) &times; " << s.gpus_per_node
      << " device(s))</p>";
  h << "<table><tr><th>Metric</th><th>Value</th><th>Threshold</th><th>Interval</th><th>Margin</th><th>"
       "Outcome</th><th>Detail</th></tr>";
  std::set<std::string> shown;
  for (const auto& e : s.evaluations) {
    shown.insert(e.metric);
    h << "<tr><td><code>" << html_escape(e.metric) << "</code></td><td class=\"num\">" << fig(e, e.value)
      << "</td><td>" << threshold_cell(e) << "</td><td>" << interval_cell(e) << "</td><td class=\"num\">"
      << margin_cell(e) << "</td><td>" << badge(e.outcome) << "</td><td>" << html_escape(e.message)
      << "</td></tr>";
  }
  for (const auto& [name, v] : s.metrics)
    if (!shown.count("training." + name))
      h << "<tr><td><code>training." << html_escape(name) << "</code></td><td class=\"num\">"
        << html_escape(format_figure(name, v)) << "</td><td>&mdash;</td><td>&mdash;</td><td>&mdash;</td><td>"
        << badge(Outcome::Record) << "</td><td>not evaluated in this session</td></tr>";
  h << "</table>";
  h << "<div class=\"plots\"><div><h3>Loss curve</h3>" << loss_svg(s.loss_curve, s.sampled_curve)
    << "</div><div><h3>Step-time distribution (steady state)</h3>" << step_time_svg(s.step_times_ms)
    << "</div></div>";
  std::string tel;
  for (const auto& n : s.run.nodes) tel += telemetry_html(n);
  if (!tel.empty()) h << "<div class=\"plots\">" << tel << "</div>";
  for (const auto& n : s.notes) h << "<p class=\"muted\">" << html_escape(n) << "</p>";
  h << "</section>";
}

template <class T>
std::string opt_cell(const std::optional<T>& v) {
  return v ? num(static_cast<double>(*v)) : "&mdash;";
}

void checkpoint_html(std::ostringstream& h, const Results& r) {
  if (!r.checkpoint) return;
  const auto& c = *r.checkpoint;
  h << "<section><h2>Checkpoint save/resume &mdash; " << badge(c.passed ? Outcome::Pass : Outcome::Fail)
    << "</h2><p>" << html_escape(c.message) << "</p><table>";
  const std::pair<const char*, std::string> rows[] = {
      {"saved_step", opt_cell(c.saved_step)},
      {"restored_step", opt_cell(c.restored_step)},
      {"resumed_first_step", opt_cell(c.resumed_first_step)},
      {"boundary_loss_phase1", opt_cell(c.boundary_loss_phase1)},
      {"boundary_loss_phase2", opt_cell(c.boundary_loss_phase2)},
      {"checkpoint_save_seconds", opt_cell(c.save_seconds)},
      {"checkpoint_load_seconds", opt_cell(c.load_seconds)},
      {"max_save_seconds", num(c.max_save_seconds)},
      {"max_load_seconds", num(c.max_load_seconds)}};
  for (const auto& [k, v] : rows) h << "<tr><th>" << k << "</th><td class=\"num\">" << v << "</td></tr>";
  h << "</table></section>";
}

void baseline_html(std::ostringstream& h, const Results& r) {
  if (!r.baseline) return;
  const auto& b = *r.baseline;
  h << "<section><h2>Compared with the baseline</h2>";
  if (!b.error.empty()) {
    h << "<div class=\"err\">" << html_escape(b.baseline) << ": " << html_escape(b.error) << "</div>";
  } else {
    const bool regression = b.comparison.any_regression();
    h << "<p>" << html_escape(b.baseline) << " (" << html_escape(b.baseline_started_at) << "), tolerance "
      << num(b.tolerance_pct) << "%: " << badge(regression ? Outcome::Fail : Outcome::Pass)
      << (regression ? " regression" : " no regression")
      << "</p><table><tr><th>Sweep</th><th>Metric</th><th>Old</th><th>New</th><th>Delta "
         "%</th><th>Intervals</th><th></th></tr>";
    for (const auto& d : b.comparison.deltas) {
      const auto f = [&](double v) { return html_escape(format_figure(d.metric, v)); };
      std::string ivs = "&mdash;";
      if (d.old_interval)
        ivs = "[" + f(d.old_interval->first) + ", " + f(d.old_interval->second) + "] &rarr; [" +
              f(d.new_interval->first) + ", " + f(d.new_interval->second) + "]" +
              (d.within_noise ? " within noise" : "");
      h << "<tr><td><code>" << html_escape(d.sweep) << "</code></td><td><code>training."
        << html_escape(d.metric) << "</code></td><td class=\"num\">" << f(d.old_value)
        << "</td><td class=\"num\">" << f(d.new_value) << "</td><td class=\"num\">"
        << fmt(d.delta_pct, "%+.2f") << "</td><td>" << ivs << "</td><td>"
        << (d.regression ? badge(Outcome::Fail) : std::string()) << "</td></tr>";
    }
    h << "</table>";
    for (const auto& n : b.comparison.notes) h << "<p class=\"muted\">" << html_escape(n) << "</p>";
  }
  h << "</section>";
}

void config_html(std::ostringstream& h, const Results& r) {
  const auto& c = r.config;
  h << "<section><h2>Config and cluster</h2><table>";
  const std::pair<const char*, std::string> rows[] = {
      {"file", html_escape(c.file)},
      {"sha256", html_escape(c.sha256)},
      {"gpu_name", html_escape(c.gpu_name)},
      {"gpus_per_node", num(c.gpus_per_node)},
      {"mode", html_escape(c.mode)},
      {"model", html_escape(c.model)},
      {"enforce_thresholds", c.enforce_thresholds ? "true" : "false"},
      {"threshold_file", html_escape(c.threshold_file)},
      {"thresholds_source", html_escape(c.thresholds_source)},
      {"runtime", html_escape(c.runtime)},
      {"image", html_escape(c.image)},
      {"runs", html_escape(ordered_json(c.runs).dump())}};
  for (const auto& [k, v] : rows) h << "<tr><th>" << k << "</th><td>" << v << "</td></tr>";
  h << "<tr><th>nodes</th><td>";
  for (const auto& n : r.cluster.nodes)
    h << html_escape(n.name) << " (" << html_escape(n.host) << ", " << html_escape(n.transport) << ") ";
  h << "</td></tr><tr><th>provenance</th><td><code>" << html_escape(r.provenance.dump())
    << "</code></td></tr></table></section>";
}

}  // namespace

std::string render_html(const Results& r) {
  std::ostringstream h;
  const std::string status = to_string(r.status());
  const auto& cfg = r.config;
  h << "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>" << html_escape(r.suite) << " "
    << status << "</title><style>" << kCss << "</style></head><body>";
  h << "<header class=\"" << status << "\"><h1>" << html_escape(r.suite) << ": " << status << "</h1><p>"
    << html_escape(cfg.model) << " on " << html_escape(cfg.gpu_name) << " &middot; " << html_escape(cfg.mode)
    << " &middot; " << r.cluster.nodes.size() << " node(s) &times; " << cfg.gpus_per_node << " &middot; "
    << html_escape(r.started_at) << "</p></header><main>";
  summary_html(h, r);
  for (const auto& [key, s] : r.sweeps) sweep_html(h, key, s);
  checkpoint_html(h, r);
  baseline_html(h, r);
  h << thresholds_section(r);
  config_html(h, r);
  h << "</main></body></html>\n";
  return h.str();
}

}  // namespace cvs::report
