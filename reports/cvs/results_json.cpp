#include "cvs/results_json.hpp"

#include <cmath>
#include <ctime>
#include <filesystem>

#include <fstream>
#include "cvs/compare.hpp"
#include "cvs/sweep.hpp"
#include "cvs/utc_time.hpp"

namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace cvs::report {
namespace {

ordered_json number_or_null(double v) {
  return std::isfinite(v) ? ordered_json(v) : ordered_json(nullptr);
}

std::string rel(const fs::path& p, const fs::path& base) {
  std::error_code ec;
  auto r = fs::relative(p, base, ec);
  return ec ? p.string() : r.string();
}

ordered_json run_json(const RunOutcome& o, const fs::path& base) {
  ordered_json j;
  j["ok"] = o.ok;
  j["failure"] = o.failure;
  j["wall_seconds"] = o.wall_seconds;
  j["timed_out"] = o.timed_out;
  if (o.first_error)
    j["first_error"] = {{"node", o.first_error_node},
                        {"pattern", o.first_error->pattern_name},
                        {"line_no", o.first_error->line_no},
                        {"line", o.first_error->line}};
  ordered_json nodes = ordered_json::array();
  for (const auto& n : o.nodes)
    nodes.push_back({{"node", n.node},
                     {"rank", n.rank},
                     {"state", std::string(to_string(n.state))},
                     {"exit_code", n.exit_code},
                     {"remote_log", n.remote_log},
                     {"log", rel(n.local_log, base)},
                     {"last_step", n.last_step ? ordered_json(*n.last_step) : ordered_json(nullptr)},
                     {"errors", n.scan.errors.size()}});
  j["nodes"] = nodes;
  if (!o.maxtext_yaml_local.empty()) j["maxtext_yaml"] = rel(o.maxtext_yaml_local, base);
  return j;
}

// The steady state the speed gates were decided on (step_stats.hpp).
ordered_json steady_json(const SteadyState& st, double confidence) {
  ordered_json steady = {{"found", st.found}, {"rule", "MSER-5"}, {"confidence", confidence}};
  if (st.found) {
    steady["first_step"] = st.first_step;
    steady["steps"] = st.n;
  } else {
    steady["why"] = st.why;
  }
  if (st.drift) steady["drift_pct"] = number_or_null(100 * st.drift->relative);
  ordered_json ivs = ordered_json::object();
  for (const auto& [name, iv] : st.intervals)
    ivs[name] = {{"estimate", number_or_null(iv.estimate)},
                 {"lo", number_or_null(iv.lo)},
                 {"hi", number_or_null(iv.hi)}};
  steady["intervals"] = ivs;
  return steady;
}

// Every evaluated metric of a sweep: value, outcome, message, interval, margin and its gate.
ordered_json evaluations_json(const fixtures::SweepResult& sr) {
  ordered_json evals = ordered_json::array();
  for (const auto& name : tracked_metric_names()) {
    auto e = sr.evaluations.find(name);
    if (e == sr.evaluations.end()) continue;
    ordered_json ej = {
        {"metric", "training." + name},
        {"value", e->second.actual ? number_or_null(*e->second.actual) : ordered_json(nullptr)},
        {"outcome", to_string(e->second.outcome)},
        {"message", e->second.message}};
    if (e->second.interval)
      ej["interval"] = {number_or_null(e->second.interval->lo), number_or_null(e->second.interval->hi)};
    if (e->second.margin_pct) ej["margin_pct"] = number_or_null(*e->second.margin_pct);
    if (e->second.spec) {
      ej["kind"] = to_string(e->second.spec->kind);
      ej["threshold"] = e->second.spec->value;
      if (e->second.spec->tolerance_pct) ej["tolerance_pct"] = *e->second.spec->tolerance_pct;
      if (!e->second.spec->reference.empty()) ej["reference"] = "training." + e->second.spec->reference;
    }
    evals.push_back(ej);
  }
  return evals;
}

// One sweep of results.json: its run, metrics, steady state, evaluations and effective config.
ordered_json sweep_json(const fixtures::Session& s, const fixtures::SweepResult& sr, const fs::path& base) {
  const auto& c = s.cfg;
  const auto& key = sr.key;
  ordered_json sj;
  sj["test_name"] = sweep_test_name(key);
  sj["status"] = sr.outcome.ok ? "COMPLETED" : "FAILED";
  sj["run_name"] = sr.run_name;
  sj["steps"] = c.steps_for(key);
  sj["precision"] = sr.key.find("PRECISION=FP8") != std::string::npos ? "fp8" : "bf16";
  sj["quantization"] = sr.expected_quantization;
  sj["num_nodes"] = s.cluster.nodes.size();
  sj["gpus_per_node"] = c.gpus_per_node;
  sj["parallelism"] = ordered_json::object();
  for (auto m = sr.maxtext_config.begin(); m != sr.maxtext_config.end(); ++m)
    if ((m.key().rfind("ici_", 0) == 0 || m.key().rfind("dcn_", 0) == 0) &&
        m.key().find("parallelism") != std::string::npos)
      sj["parallelism"][m.key()] = m.value();
  sj["run"] = run_json(sr.outcome, base);
  if (sr.early_stop) {
    const auto& x = *sr.early_stop;
    sj["early_stop"] = {{"configured_steps", x.configured_steps},
                        {"cap", x.cap},
                        {"steps_run", x.steps_run},
                        {"stopped_early", sr.outcome.stopped_early},
                        {"looks", x.looks},
                        {"per_look_confidence", x.per_look_confidence},
                        {"reason", x.reason},
                        {"steps_saved", x.configured_steps - x.steps_run},
                        {"seconds_saved", x.seconds_saved}};
  }
  sj["metrics_error"] = sr.metrics_error;
  sj["metrics_source"] = sr.metrics_source;
  ordered_json metrics = ordered_json::object();
  ordered_json curve = ordered_json::array(), sampled = ordered_json::array(), times = ordered_json::array();
  ordered_json notes = ordered_json::array();
  if (sr.metrics) {
    for (const auto& name : tracked_metric_names())
      if (auto v = sr.metrics->get(name)) metrics[name] = number_or_null(*v);
    for (const auto& p : sr.metrics->loss_curve) curve.push_back({p.step, number_or_null(p.loss)});
    for (const auto& p : sr.metrics->sampled_curve) sampled.push_back({p.step, p.loss});
    for (double t : sr.metrics->step_times_s) times.push_back(t * 1000.0);
    notes = sr.metrics->notes;
    sj["warmup_steps_dropped"] = sr.metrics->warmup_dropped;
    sj["steady_state"] = steady_json(sr.metrics->steady, c.statistics.confidence);
    if (sr.metrics->first_nonfinite_step) sj["first_nonfinite_step"] = *sr.metrics->first_nonfinite_step;
  }
  sj["metrics"] = metrics;
  sj["evaluations"] = evaluations_json(sr);
  sj["loss_curve"] = curve;
  sj["sampled_curve"] = sampled;
  sj["step_times_ms"] = times;
  sj["notes"] = notes;
  const auto& eff = sr.outcome.nodes.empty() ? std::map<std::string, std::string>{}
                                             : sr.outcome.nodes[0].scan.effective_config;
  ordered_json effective = ordered_json::object();
  for (const char* k : {"quantization", "per_device_batch_size", "max_target_length", "steps", "dtype",
                        "weight_dtype", "attention", "model_name", "dataset_type", "hardware"})
    if (auto f = eff.find(k); f != eff.end())
      effective[k] = std::string(k) == "quantization" ? normalize_quantization(f->second) : f->second;
  sj["effective_config"] = effective;
  if (!sr.outcome.nodes.empty() && sr.outcome.nodes[0].scan.peak_memory_gb)
    sj["peak_memory_gb"] = *sr.outcome.nodes[0].scan.peak_memory_gb;
  return sj;
}

}  // namespace

namespace {

// The stages as gtest ran them, each with its outcome; the counts and the session's status.
void stages_json(ordered_json& r, const std::vector<TestRecord>& tests) {
  std::map<std::string, int> counts = {{"PASS", 0},   {"FAIL", 0}, {"ERROR", 0},  {"INCONCLUSIVE", 0},
                                       {"RECORD", 0}, {"N/A", 0},  {"SKIPPED", 0}};
  bool any_fail = false, any_error = false;
  ordered_json stages = ordered_json::array();
  for (const auto& t : tests) {
    std::string outcome = t.property("outcome");
    if (outcome.empty()) outcome = t.status;
    if (t.status == "FAIL" && outcome != "INCONCLUSIVE" && outcome != "ERROR") outcome = "FAIL";
    if (t.status == "SKIPPED" && outcome != "N/A") outcome = "SKIPPED";
    counts[outcome]++;
    any_fail |= t.status == "FAIL" && outcome != "ERROR";
    any_error |= outcome == "ERROR";
    ordered_json props = ordered_json::object();
    for (const auto& [k, v] : t.properties) props[k] = v;
    stages.push_back({{"test", t.full_name},
                      {"stage", t.stage},
                      {"status", t.status},
                      {"outcome", outcome},
                      {"message", t.message},
                      {"seconds", t.seconds},
                      {"properties", props}});
  }
  // A missed gate is the verdict; without one, an infrastructure error means there is no verdict.
  r["stages"] = stages;
  r["status"] = any_fail ? "FAIL" : (any_error ? "ERROR" : "PASS");
  r["counts"] = counts;
}

void config_json(ordered_json& r, const fixtures::Session& s) {
  const auto& c = s.cfg;
  r["config"] = {{"file", fs::absolute(c.file).string()},
                 {"sha256", c.sha256},
                 {"gpu_name", c.gpu_name},
                 {"gpus_per_node", c.gpus_per_node},
                 {"mode", to_string(c.mode)},
                 {"model", c.model_label()},
                 {"enforce_thresholds", c.enforce_thresholds},
                 {"threshold_file", s.thresholds ? s.thresholds->file.string() : std::string()},
                 {"thresholds_source", s.thresholds_source},
                 {"runtime", c.container.runtime},
                 {"image", c.container.image},
                 {"runs", c.runs}};
  ordered_json nodes = ordered_json::array();
  for (const auto& n : s.cluster.nodes)
    nodes.push_back({{"name", n.name}, {"host", n.host}, {"transport", n.transport}});
  r["cluster"] = {
      {"file", s.cluster.file.string()}, {"nodes", nodes}, {"coordinator", s.cluster.coordinator_address}};
  r["provenance"] = s.provenance;
  r["provenance_fields"] = s.provenance_fields();
  if (s.thresholds && s.thresholds->calibration) {
    ordered_json diffs = ordered_json::array();
    for (const auto& d : s.provenance_differences())
      diffs.push_back({{"field", d.field}, {"calibrated", d.calibrated}, {"now", d.now}});
    r["calibration"] = {
        {"file", s.thresholds->file.string()},
        {"date", s.thresholds->calibration->value("date", std::string())},
        {"provenance", s.thresholds->calibration->value("provenance", ordered_json::object())},
        {"provenance_differences", diffs}};
  }
}

void checkpoint_json(ordered_json& r, const fixtures::Session& s, const fs::path& base) {
  const auto& c = s.cfg;
  if (s.checkpoint) {
    const auto& ck = *s.checkpoint;
    auto opt = [](const auto& o) { return o ? ordered_json(*o) : ordered_json(nullptr); };
    r["checkpoint_resume"] = {
        {"sweep", ck.sweep},
        {"run_name", ck.run_name},
        {"passed", ck.passed},
        {"message", ck.message},
        {"saved_step", opt(ck.saved_step)},
        {"restored_step", opt(ck.restored_step)},
        {"resumed_first_step", opt(ck.resumed_first_step)},
        {"boundary_loss_phase1", opt(ck.boundary_loss_phase1)},
        {"boundary_loss_phase2", opt(ck.boundary_loss_phase2)},
        {"checkpoint_save_seconds", opt(ck.save_seconds)},
        {"checkpoint_load_seconds", opt(ck.load_seconds)},
        {"max_save_seconds", c.checkpoint_resume.max_save_seconds},
        {"max_load_seconds", c.checkpoint_resume.max_load_seconds},
        {"deleted_ckpt_dir", ck.deleted_ckpt_dir},
        {"phase1", run_json(ck.phase1, base)},
        {"phase2", ck.phase2.nodes.empty() ? ordered_json(nullptr) : run_json(ck.phase2, base)}};
  }
}

void baseline_json(ordered_json& r, const fixtures::Session& s) {
  if (!s.opts.baseline.empty()) {
    try {
      std::ifstream in(s.opts.baseline);
      const auto old = ordered_json::parse(in);
      auto cmp =
          to_json(compare_results(old, r, s.opts.baseline_tolerance_pct), s.opts.baseline_tolerance_pct);
      cmp["baseline"] = fs::absolute(s.opts.baseline).string();
      cmp["baseline_started_at"] = old.value("started_at", std::string());
      r["baseline_comparison"] = cmp;
    } catch (const std::exception& e) {
      r["baseline_comparison"] = {{"baseline", s.opts.baseline.string()}, {"error", e.what()}};
    }
  }
}

}  // namespace

ordered_json build_results(const fixtures::Session& s, const std::vector<TestRecord>& tests) {
  const fs::path base = s.opts.output;
  ordered_json r;
  r["schema_version"] = kResultsSchemaVersion;
  r["suite"] = s.opts.suite_name;
  r["started_at"] = s.started_at;
  r["finished_at"] = utc_now("%Y-%m-%dT%H:%M:%SZ");
  stages_json(r, tests);
  config_json(r, s);
  ordered_json sweeps = ordered_json::object();
  for (const auto& key : s.cfg.runs) {
    auto it = s.sweeps.find(key);
    if (it == s.sweeps.end()) {
      sweeps[key] = {{"test_name", sweep_test_name(key)}, {"status", "NOT RUN"}};
      continue;
    }
    sweeps[key] = sweep_json(s, it->second, base);
  }
  r["sweeps"] = sweeps;
  if (s.smoke) r["smoke"] = run_json(*s.smoke, base);
  checkpoint_json(r, s, base);
  // The key order of results.json: stages after the runs (readers go by key; people by order).
  auto stages = std::move(r["stages"]);
  r.erase("stages");
  r["stages"] = std::move(stages);
  baseline_json(r, s);
  return r;
}

}  // namespace cvs::report
