#include "cvs/statistics/run_figures.hpp"

#include <algorithm>

#include "cvs/base/format.hpp"
#include "cvs/catalog/metric_catalog.hpp"

namespace cvs {

struct RunFiguresBuilder::Host {
  std::string name;
  StepSeries series;
  FirstNonFinite nonfinite;
  Host(std::string n, const MetricsContext& ctx, bool keep_curves)
      : name(std::move(n)), series(ctx, keep_curves) {}
};

RunMetrics compute_metrics(const std::vector<StepRecord>& steps, const std::vector<EvalRecord>& evals,
                           const MetricsContext& ctx, const std::vector<StepMarker>& markers) {
  StepSeries series(ctx, true);
  for (const auto& e : evals) series.add_eval(e);
  std::size_t k = 0;  // the markers before each step's line, in log order
  for (const auto& s : steps) {
    for (; k < markers.size() && markers[k].line_no < s.line_no; ++k) series.add_marker(markers[k]);
    series.add(s);
  }
  for (; k < markers.size(); ++k) series.add_marker(markers[k]);
  return series.finish();
}

RunFiguresBuilder::RunFiguresBuilder(const MetricsContext& ctx, bool keep_curves)
    : ctx_(ctx), keep_curves_(keep_curves) {}
RunFiguresBuilder::~RunFiguresBuilder() = default;

// Every host is a view of the same run: its warm-up is the run's first steps whichever host
// logged them.
RunFiguresBuilder::Host& RunFiguresBuilder::of(const std::string& host) {
  for (auto& h : hosts_)
    if (h->name == host) return *h;
  MetricsContext c = ctx_;
  c.run_first_step = run_first_step_;
  hosts_.push_back(std::make_unique<Host>(host, c, keep_curves_));
  for (const auto& e : evals_) hosts_.back()->series.add_eval(e);
  return *hosts_.back();
}

void RunFiguresBuilder::step(const StepRecord& r) {
  if (!run_first_step_) run_first_step_ = r.step;
  auto& h = of(r.host);
  h.nonfinite.check(r);
  h.series.add(r);
}

void RunFiguresBuilder::eval(const EvalRecord& e) {
  evals_.push_back(e);
  for (auto& h : hosts_) h->series.add_eval(e);
}

void RunFiguresBuilder::marker(const StepMarker& m) {
  for (auto& h : hosts_) h->series.add_marker(m);
}

void RunFiguresBuilder::replay(const std::vector<StepRecord>& steps, const std::vector<EvalRecord>& evals,
                               const std::vector<StepMarker>& markers) {
  for (const auto& e : evals) eval(e);
  std::size_t k = 0;
  for (const auto& s : steps) {
    for (; k < markers.size() && markers[k].line_no < s.line_no; ++k) marker(markers[k]);
    step(s);
  }
  for (; k < markers.size(); ++k) marker(markers[k]);
}

namespace {

// Speed figures of a run logged by several hosts: the mean of the hosts' figures; a note when the
// hosts' per-device rates differ by more than 5 %.
void combine_hosts(const std::vector<HostFigures>& hosts, RunMetrics& m) {
  for (const auto& spec : metric_catalog()) {
    if (!spec.speed) continue;
    double sum = 0, lo = 0, hi = 0;
    std::size_t n = 0;
    for (const auto& h : hosts)
      if (auto v = h.metrics.get(spec.id)) {
        lo = n == 0 ? *v : std::min(lo, *v);
        hi = n == 0 ? *v : std::max(hi, *v);
        sum += *v;
        ++n;
      }
    if (n == 0) continue;
    m.values.set(spec.id, sum / static_cast<double>(n));
    if ((spec.id == Metric::TokensPerSecPerGpu || spec.id == Metric::TflopsPerSecPerGpu) && n > 1 && lo > 0 &&
        hi / lo > 1.05)
      m.notes.push_back(std::string(spec.name) + ": the hosts disagree (" + short_number(lo) + " to " +
                        short_number(hi) + ", " + std::to_string(n) + " hosts): the figure is their mean");
  }
}

}  // namespace

RunFigures RunFiguresBuilder::finish(const std::string& source) {
  for (auto& h : hosts_) h->series.check_order(source + (h->name.empty() ? "" : " (host " + h->name + ")"));
  RunFigures out;
  if (hosts_.empty()) {
    out.metrics = StepSeries(ctx_, keep_curves_).finish();
    return out;
  }
  std::size_t primary = 0;
  for (std::size_t i = 0; i < hosts_.size(); ++i) {
    auto& h = *hosts_[i];
    if (h.series.steps() > hosts_[primary]->series.steps()) primary = i;
    if (!out.nonfinite.seen && h.nonfinite.seen) out.nonfinite = h.nonfinite;
    out.hosts.push_back({h.name, h.series.steps(), h.series.finish()});
  }
  out.metrics = out.hosts[primary].metrics;
  out.steps = out.hosts[primary].steps;
  if (out.hosts.size() == 1) {
    out.hosts.clear();
    return out;
  }
  combine_hosts(out.hosts, out.metrics);
  out.metrics.notes.push_back(std::to_string(out.hosts.size()) + " hosts' views of the run (" +
                              out.hosts[primary].host + " logged the most steps: its loss figures)");
  return out;
}

RunFigures figures_of_records(const std::vector<StepRecord>& steps, const std::vector<EvalRecord>& evals,
                              const std::vector<StepMarker>& markers, const MetricsContext& ctx,
                              const std::string& source) {
  RunFiguresBuilder b(ctx, true);
  b.replay(steps, evals, markers);
  return b.finish(source);
}

RunFigures figures_of_rows(const std::vector<StepRecord>& rows, const std::vector<EvalRecord>& evals,
                           const MetricsContext& ctx, const std::string& source) {
  check_step_series(rows, source);
  RunFigures out;
  for (const auto& r : rows) out.nonfinite.check(r);
  out.steps = rows.size();
  out.metrics = compute_metrics(rows, evals, ctx);
  return out;
}

void add_log_figures(RunMetrics& m, const ScanResult& log) {
  if (log.peak_memory_gb) m.values.set(Metric::PeakMemoryGb, *log.peak_memory_gb);
}

void keep_loss_of_configured_steps(RunMetrics& m, const std::vector<StepRecord>& steps,
                                   const std::vector<EvalRecord>& evals, const MetricsContext& ctx,
                                   long long configured_steps) {
  std::vector<StepRecord> first;
  for (const auto& s : steps)
    if (s.step < configured_steps) first.push_back(s);
  const auto loss = compute_metrics(first, evals, ctx);
  for (Metric k : loss_metrics()) {
    m.values.erase(k);
    if (auto v = loss.get(k)) m.values.set(k, *v);
  }
  m.loss_curve = loss.loss_curve;
  m.sampled_curve = loss.sampled_curve;
}

}  // namespace cvs
