#include <iostream>
#include <nlohmann/json.hpp>

#include <fstream>
#include <memory>
#include <sstream>
#include "cli_parse.hpp"
#include "commands.hpp"
#include "cvs/base/format.hpp"
#include "cvs/config/config.hpp"
#include "cvs/config/text_file.hpp"
#include "cvs/logs/logscan.hpp"
#include "cvs/logs/metrics_file.hpp"
#include "cvs/results/results_file.hpp"
#include "cvs/statistics/metrics.hpp"

namespace cvs::cli {
namespace {

// The first step whose loss or rate is not finite, where it was read.
struct FirstNonFinite {
  std::optional<std::pair<StepRecord, NonFinite>> seen;
  void check(const StepRecord& r) {
    if (!seen)
      if (const auto bad = first_nonfinite(r)) seen = std::pair{r, *bad};
  }
};

// One host's view of the run: its own series (a log of one stream has one, named "").
struct HostView {
  std::string host;
  StepSeries series;
  FirstNonFinite nonfinite;
  HostView(std::string h, const MetricsContext& ctx) : host(std::move(h)), series(ctx, false) {}
};

// The first log's records, into the metrics as they are parsed, each step into its host's series
// (Ray, srun, MPI and kubectl prefixes name the host; every host is a view of the same run, so
// the warm-up is the run's first steps whichever host logged them). Evals and markers reach
// every host's series.
struct ToSeries : RecordSink {
  MetricsContext ctx;
  std::vector<std::unique_ptr<HostView>> hosts;
  std::vector<EvalRecord> evals;
  std::optional<long long> run_first_step;
  explicit ToSeries(const MetricsContext& c) : ctx(c) {}
  HostView& of(const std::string& host) {
    for (auto& h : hosts)
      if (h->host == host) return *h;
    MetricsContext c = ctx;
    c.run_first_step = run_first_step;
    hosts.push_back(std::make_unique<HostView>(host, c));
    for (const auto& e : evals) hosts.back()->series.add_eval(e);
    return *hosts.back();
  }
  void step(const StepRecord& r) override {
    if (!run_first_step) run_first_step = r.step;
    auto& h = of(r.host);
    h.nonfinite.check(r);
    h.series.add(r);
  }
  void eval(const EvalRecord& e) override {
    evals.push_back(e);
    for (auto& h : hosts) h->series.add_eval(e);
  }
  void marker(const StepMarker& m) override {
    for (auto& h : hosts) h->series.add_marker(m);
  }
};

// Another log's records: read for its error lines only.
struct Discard : RecordSink {
  void step(const StepRecord&) override {}
  void eval(const EvalRecord&) override {}
};

// What a suite config says about a log's metrics: its baseline, convergence, loss curve and error
// patterns, and the devices and confidence the command line did not set.
void apply_config(const std::string& config, bool devices, bool confidence, MetricsContext& ctx,
                  std::vector<ErrorPattern>& patterns) {
  auto cfg = load_config(config, {.user = "", .require_threshold_file = false});
  ctx.scaling_baseline = cfg.scaling_baseline;
  ctx.convergence = cfg.convergence;
  ctx.loss_curve = cfg.loss_curve;
  if (devices) ctx.gpus_per_node = cfg.gpus_per_node;
  patterns = cfg.error_patterns;
  if (confidence) ctx.confidence = cfg.statistics.confidence;
  ctx.stall_factor = cfg.statistics.stall_factor;
}

// A step whose loss or rate is not finite: said on stderr, where it was read, and in the output
// (its own record and an entry of "errors"). A NaN loss is the training's, a NaN rate a timer's.
void report_nonfinite(const FirstNonFinite& nonfinite, const std::string& source, nlohmann::ordered_json& out,
                      nlohmann::ordered_json& errors) {
  if (!nonfinite.seen) return;
  const auto& [r, bad] = *nonfinite.seen;
  const std::string where = source + ":" + std::to_string(r.line_no);
  out["nonfinite"] = {{"field", bad.field},
                      {"value", std::to_string(bad.value)},
                      {"step", r.step},
                      {"line_no", r.line_no},
                      {"source", where}};
  const bool loss = std::string(bad.field) == "loss";
  const std::string what = std::string("non-finite ") + bad.field + " (" + std::to_string(bad.value) +
                           ") at step " + std::to_string(r.step) +
                           (loss ? ": the training diverged (the loss is not a number from this step on)"
                                 : ": the step is broken (a timer or a counter went wrong)");
  errors.push_back({{"log", source},
                    {"pattern", loss ? "non-finite loss" : "non-finite rate"},
                    {"line_no", r.line_no},
                    {"line", what}});
  std::cerr << "cvs metrics: " << where << ": " << what << "; the run fails as the suite fails it\n";
}

// Speed figures of a run logged by several hosts: the mean of the hosts' figures; a note when the
// hosts' per-device rates differ by more than 5 %.
constexpr Metric kSpeedMetrics[] = {Metric::StepTimeSeconds,
                                    Metric::StepTimeMeanMs,
                                    Metric::StepTimeP50Ms,
                                    Metric::StepTimeP95Ms,
                                    Metric::TflopsPerSecPerGpu,
                                    Metric::TokensPerSecPerGpu,
                                    Metric::TokensPerSecTotal,
                                    Metric::Last10StepsStepTimeMsAvg,
                                    Metric::Last10StepsModelTflopsPerGpuAvg,
                                    Metric::Last10StepsTokensPerSecondPerGpuAvg};

void combine_hosts(const std::vector<std::pair<std::string, RunMetrics>>& per_host, RunMetrics& m) {
  for (Metric k : kSpeedMetrics) {
    double sum = 0, lo = 0, hi = 0;
    std::size_t n = 0;
    for (const auto& [host, hm] : per_host)
      if (auto v = hm.get(k)) {
        lo = n == 0 ? *v : std::min(lo, *v);
        hi = n == 0 ? *v : std::max(hi, *v);
        sum += *v;
        ++n;
      }
    if (n == 0) continue;
    m.values.set(k, sum / static_cast<double>(n));
    if ((k == Metric::TokensPerSecPerGpu || k == Metric::TflopsPerSecPerGpu) && n > 1 && lo > 0 &&
        hi / lo > 1.05)
      m.notes.push_back(std::string(to_string(k)) + ": the hosts disagree (" + short_number(lo) + " to " +
                        short_number(hi) + ", " + std::to_string(n) + " hosts): the figure is their mean");
  }
}

nlohmann::ordered_json metrics_json(const RunMetrics& m) {
  nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
  for (const auto& [metric, v] : m.values.entries())
    metrics[std::string(to_string(metric))] = v;  // NaN: null
  return metrics;
}

// MaxText's JSON-lines metrics_file carries full-precision values: preferred when given.
RunMetrics metrics_of_file(const std::string& metrics_file, const std::vector<EvalRecord>& evals,
                           const MetricsContext& ctx, FirstNonFinite& nonfinite, std::size_t& steps) {
  const auto text = read_text_file(metrics_file);
  if (!text) throw std::runtime_error("cannot read " + metrics_file);
  const auto rows = parse_metrics_file(*text, metrics_file);
  check_step_series(rows, metrics_file);
  for (const auto& r : rows) nonfinite.check(r);
  steps = rows.size();
  return compute_metrics(rows, evals, ctx);
}

// The log's run from its hosts' views: the loss figures and steady state of the host that logged
// the most steps, the speed figures of every host combined. A host whose step numbers repeat or
// go down holds more than one run: bad input.
RunMetrics metrics_of_hosts(ToSeries& to_series, const std::string& log, FirstNonFinite& nonfinite,
                            std::size_t& steps, nlohmann::ordered_json& hosts_out) {
  try {
    for (auto& h : to_series.hosts)
      h->series.check_order(log + (h->host.empty() ? "" : " (host " + h->host + ")"));
  } catch (const MetricsError& e) {
    throw BadInput(std::string(e.what()) +
                   ": the file holds more than one run; split it where the step numbers start again "
                   "(csplit FILE '/completed step: 0,/' '{*}') and read each run's part");
  }
  if (to_series.hosts.empty()) return StepSeries(to_series.ctx, false).finish();
  std::vector<std::pair<std::string, RunMetrics>> per_host;
  std::size_t primary = 0;
  for (std::size_t i = 0; i < to_series.hosts.size(); ++i) {
    auto& h = *to_series.hosts[i];
    if (h.series.steps() > to_series.hosts[primary]->series.steps()) primary = i;
    if (!nonfinite.seen && h.nonfinite.seen) nonfinite.seen = h.nonfinite.seen;
    per_host.emplace_back(h.host, h.series.finish());
  }
  RunMetrics m = per_host[primary].second;
  steps = to_series.hosts[primary]->series.steps();
  if (per_host.size() == 1) return m;
  combine_hosts(per_host, m);
  for (std::size_t i = 0; i < per_host.size(); ++i)
    hosts_out.push_back({{"host", per_host[i].first},
                         {"steps", to_series.hosts[i]->series.steps()},
                         {"metrics", metrics_json(per_host[i].second)},
                         {"notes", per_host[i].second.notes}});
  m.notes.push_back(std::to_string(per_host.size()) + " hosts' views of the run (" +
                    to_series.hosts[primary]->host + " logged the most steps: its loss figures)");
  return m;
}

nlohmann::ordered_json excluded_json(const RunMetrics& m) {
  nlohmann::ordered_json excluded = nlohmann::ordered_json::array();
  for (const auto& x : m.excluded)
    excluded.push_back({{"step", x.step}, {"seconds", x.seconds}, {"rule", to_string(x.rule)}});
  return excluded;
}

// Each stall named: its step, its seconds, the usual step around it, what it cost, its line.
nlohmann::ordered_json stalls_json(const RunMetrics& m) {
  nlohmann::ordered_json stalls = nlohmann::ordered_json::array();
  for (const auto& x : m.stalls)
    stalls.push_back({{"step", x.step},
                      {"seconds", x.seconds},
                      {"usual_seconds", x.usual},
                      {"lost_seconds", x.lost()},
                      {"line_no", x.line_no}});
  return stalls;
}

}  // namespace

int cmd_metrics(const Args& args) {
  CLI::App app{
      "cvs metrics: the metrics of MaxText training logs as JSON (exit 1 on an error pattern or NaN)",
      "cvs metrics"};
  std::vector<std::string> logs;
  MetricsContext ctx;
  std::vector<ErrorPattern> patterns = default_error_patterns();
  std::string metrics_file, config;
  app.add_option("logs", logs, "training.log files; the first is the metrics source")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--nodes", ctx.num_nodes, "nodes of the run")->check(CLI::Range(1, 1 << 20));
  auto* gpn =
      app.add_option("--gpus-per-node", ctx.gpus_per_node, "devices per node")->check(CLI::Range(1, 1 << 20));
  app.add_option("--metrics-file", metrics_file, "MaxText's JSON-lines metrics_file (full precision)");
  app.add_option(
      "--config", config,
      "a suite config: its error patterns, loss curve, convergence, baseline, statistics.confidence");
  auto* conf =
      app.add_option("--confidence", ctx.confidence, "level of the steady-state intervals (default 0.95)")
          ->check(CLI::Range(0.5, 0.9999));
  if (auto rc = parse_cli(app, args)) return *rc;
  if (!config.empty()) apply_config(config, gpn->count() == 0, conf->count() == 0, ctx, patterns);
  ctx.distributed = ctx.num_nodes > 1;
  nlohmann::ordered_json out;
  out["logs"] = logs;
  nlohmann::ordered_json errors = nlohmann::ordered_json::array();
  // The first log's steps stream into the metrics as they are parsed (a multi-GB log in bounded
  // memory); the other logs are read for their error lines only.
  ToSeries to_series(ctx);
  FirstNonFinite nonfinite;  // of the metrics_file's rows
  Discard discard;
  std::optional<ScanResult> primary;
  for (const auto& log : logs) {
    RecordSink* sink = !primary && metrics_file.empty() ? static_cast<RecordSink*>(&to_series) : &discard;
    auto r = scan_log_file(log, patterns, sink);
    for (const auto& e : r.errors)
      errors.push_back({{"log", log}, {"pattern", e.pattern_name}, {"line_no", e.line_no}, {"line", e.line}});
    if (!primary) primary = std::move(r);
  }
  RunMetrics m;
  std::size_t steps = 0;
  nlohmann::ordered_json hosts_out = nlohmann::ordered_json::array();
  if (!metrics_file.empty()) {
    out["source"] = "metrics_file";
    m = metrics_of_file(metrics_file, primary->evals, ctx, nonfinite, steps);
  } else {
    out["source"] = "log";
    m = metrics_of_hosts(to_series, logs.front(), nonfinite, steps, hosts_out);
  }
  if (primary->peak_memory_gb) m.values.set(cvs::Metric::PeakMemoryGb, *primary->peak_memory_gb);
  out["metrics"] = metrics_json(m);
  out["steps"] = steps;
  out["warmup_steps_dropped"] = m.warmup_dropped;
  out["async_dropped_steps"] = m.async_dropped_steps;
  out["excluded_steps"] = excluded_json(m);
  out["stalls"] = stalls_json(m);
  if (!hosts_out.empty()) out["hosts"] = hosts_out;
  out["steady_state"] = to_json(steady_state_record(m.steady));
  if (m.first_nonfinite_step) out["nonfinite_loss_step"] = *m.first_nonfinite_step;
  report_nonfinite(nonfinite, metrics_file.empty() ? logs.front() : metrics_file, out, errors);
  if (primary->abort) out["aborted_on"] = *primary->abort + " loss";
  if (auto cut = primary->cut_last_line_note(logs.front()); !cut.empty()) m.notes.push_back(std::move(cut));
  out["errors"] = errors;
  out["notes"] = m.notes;
  std::cout << out.dump(2) << "\n";
  const bool failed = !errors.empty() || m.nonfinite_loss || nonfinite.seen || primary->abort.has_value();
  if (failed) return kExitFail;
  if (steps == 0) {  // nothing to measure and nothing wrong in it: not a training log, or not yet one
    std::cerr << "error: " << (metrics_file.empty() ? logs.front() : metrics_file)
              << ": no training step in it (MaxText's 'completed step' lines"
              << (metrics_file.empty() ? "" : " or rows")
              << ") (fix: pass a MaxText training log, such as a session's runs/<sweep>/node-0/training.log, "
                 "once its run has stepped)\n";
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace cvs::cli
