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
#include "cvs/statistics/run_figures.hpp"

namespace cvs::cli {
namespace {

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

nlohmann::ordered_json metrics_json(const RunMetrics& m) {
  nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
  for (const auto& [metric, v] : m.values.entries())
    metrics[std::string(to_string(metric))] = v;  // NaN: null
  return metrics;
}

// MaxText's JSON-lines metrics_file carries full-precision values: preferred when given.
RunFigures figures_of_file(const std::string& metrics_file, const std::vector<EvalRecord>& evals,
                           const MetricsContext& ctx) {
  const auto text = read_text_file(metrics_file);
  if (!text) throw std::runtime_error("cannot read " + metrics_file);
  return figures_of_rows(parse_metrics_file(*text, metrics_file), evals, ctx, metrics_file);
}

// The log's run from its hosts' views (statistics/run_figures.hpp). A host whose step numbers
// repeat or go down holds more than one run: bad input.
RunFigures figures_of_hosts(RunFiguresBuilder& builder, const std::string& log,
                            nlohmann::ordered_json& hosts_out) {
  RunFigures f;
  try {
    f = builder.finish(log);
  } catch (const MetricsError& e) {
    throw BadInput(std::string(e.what()) +
                   ": the file holds more than one run; split it where the step numbers start again "
                   "(csplit FILE '/completed step: 0,/' '{*}') and read each run's part");
  }
  for (const auto& h : f.hosts)
    hosts_out.push_back({{"host", h.host},
                         {"steps", h.steps},
                         {"metrics", metrics_json(h.metrics)},
                         {"notes", h.metrics.notes}});
  return f;
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

// The run's figures as the command prints them.
void put_figures(const RunFigures& f, const nlohmann::ordered_json& hosts_out, nlohmann::ordered_json& out) {
  const auto& m = f.metrics;
  out["metrics"] = metrics_json(m);
  out["steps"] = f.steps;
  out["warmup_steps_dropped"] = m.warmup_dropped;
  out["async_dropped_steps"] = m.async_dropped_steps;
  out["excluded_steps"] = excluded_json(m);
  out["stalls"] = stalls_json(m);
  if (!hosts_out.empty()) out["hosts"] = hosts_out;
  out["steady_state"] = to_json(steady_state_record(m.steady));
  if (m.first_nonfinite_step) out["nonfinite_loss_step"] = *m.first_nonfinite_step;
}

// Nothing to measure and nothing wrong in it: not a training log, or not yet one (exit 2).
int no_steps(const std::string& source, bool rows) {
  std::cerr << "error: " << source << ": no training step in it (MaxText's 'completed step' lines"
            << (rows ? " or rows" : "")
            << ") (fix: pass a MaxText training log, such as a session's runs/<sweep>/node-0/training.log, "
               "once its run has stepped)\n";
  return kExitUsage;
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
  RunFiguresBuilder to_figures(ctx, false);
  Discard discard;
  std::optional<ScanResult> primary;
  for (const auto& log : logs) {
    RecordSink* sink = !primary && metrics_file.empty() ? static_cast<RecordSink*>(&to_figures) : &discard;
    auto r = scan_log_file(log, patterns, sink);
    for (const auto& e : r.errors)
      errors.push_back({{"log", log}, {"pattern", e.pattern_name}, {"line_no", e.line_no}, {"line", e.line}});
    if (!primary) primary = std::move(r);
  }
  nlohmann::ordered_json hosts_out = nlohmann::ordered_json::array();
  out["source"] = metrics_file.empty() ? "log" : "metrics_file";
  auto figures = metrics_file.empty() ? figures_of_hosts(to_figures, logs.front(), hosts_out)
                                      : figures_of_file(metrics_file, primary->evals, ctx);
  auto& m = figures.metrics;
  const std::size_t steps = figures.steps;
  const auto& nonfinite = figures.nonfinite;
  add_log_figures(m, *primary);
  put_figures(figures, hosts_out, out);
  report_nonfinite(nonfinite, metrics_file.empty() ? logs.front() : metrics_file, out, errors);
  if (primary->abort) out["aborted_on"] = *primary->abort + " loss";
  if (auto cut = primary->cut_last_line_note(logs.front()); !cut.empty()) m.notes.push_back(std::move(cut));
  out["errors"] = errors;
  out["notes"] = m.notes;
  std::cout << out.dump(2) << "\n";
  const bool failed = !errors.empty() || m.nonfinite_loss || nonfinite.seen || primary->abort.has_value();
  if (failed) return kExitFail;
  if (steps == 0) return no_steps(metrics_file.empty() ? logs.front() : metrics_file, !metrics_file.empty());
  return kExitOk;
}

}  // namespace cvs::cli
