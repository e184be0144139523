#include <iostream>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include "cli_parse.hpp"
#include "commands.hpp"
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

// The first log's records, into the metrics as they are parsed.
struct ToSeries : RecordSink {
  StepSeries& s;
  FirstNonFinite& nonfinite;
  ToSeries(StepSeries& series, FirstNonFinite& nf) : s(series), nonfinite(nf) {}
  void step(const StepRecord& r) override {
    nonfinite.check(r);
    s.add(r);
  }
  void eval(const EvalRecord& e) override { s.add_eval(e); }
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
}

// A step whose loss or rate is not finite: said on stderr, where it was read, and in the output.
void report_nonfinite(const FirstNonFinite& nonfinite, const std::string& source,
                      nlohmann::ordered_json& out) {
  if (!nonfinite.seen) return;
  const auto& [r, bad] = *nonfinite.seen;
  const std::string where = source + ":" + std::to_string(r.line_no);
  out["nonfinite"] = {{"field", bad.field},
                      {"value", std::to_string(bad.value)},
                      {"step", r.step},
                      {"line_no", r.line_no},
                      {"source", where}};
  std::cerr
      << "cvs metrics: " << where << ": non-finite " << bad.field << " (" << bad.value << ") at step "
      << r.step
      << ": the step is broken (a timer or a counter went wrong); the run fails as the suite fails it\n";
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
  StepSeries series(ctx, false);
  FirstNonFinite nonfinite;
  ToSeries to_series(series, nonfinite);
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
  if (!metrics_file.empty()) {
    // MaxText's JSON-lines metrics_file carries full-precision values: preferred when given.
    const auto text = read_text_file(metrics_file);
    if (!text) throw std::runtime_error("cannot read " + metrics_file);
    const auto rows = parse_metrics_file(*text, metrics_file);
    out["source"] = "metrics_file";
    check_step_series(rows, metrics_file);
    for (const auto& r : rows) nonfinite.check(r);
    m = compute_metrics(rows, primary->evals, ctx);
    steps = rows.size();
  } else {
    out["source"] = "log";
    series.check_order(logs.front());
    m = series.finish();
    steps = series.steps();
  }
  if (primary->peak_memory_gb) m.values.set(cvs::Metric::PeakMemoryGb, *primary->peak_memory_gb);
  nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
  for (const auto& [metric, v] : m.values.entries())
    metrics[std::string(to_string(metric))] = v;  // NaN: null
  out["metrics"] = metrics;
  out["steps"] = steps;
  out["warmup_steps_dropped"] = m.warmup_dropped;
  out["async_dropped_steps"] = m.async_dropped_steps;
  out["steady_state"] = to_json(steady_state_record(m.steady));
  if (m.first_nonfinite_step) out["nonfinite_loss_step"] = *m.first_nonfinite_step;
  report_nonfinite(nonfinite, metrics_file.empty() ? logs.front() : metrics_file, out);
  if (primary->abort) out["aborted_on"] = *primary->abort + " loss";
  out["errors"] = errors;
  out["notes"] = m.notes;
  std::cout << out.dump(2) << "\n";
  const bool failed = !errors.empty() || m.nonfinite_loss || nonfinite.seen || primary->abort.has_value();
  return failed ? kExitFail : kExitOk;
}

}  // namespace cvs::cli
