#include "cvs/results/results_file.hpp"

#include <cmath>
#include <fstream>

#include "cvs/config/config_error.hpp"
#include "cvs/config/json_fields.hpp"
#include "cvs/config/json_in.hpp"
#include "cvs/config/json_reader.hpp"

namespace cvs {

using J = nlohmann::ordered_json;

namespace {

constexpr const char* kFix = "pass a results.json that a cvs suite wrote (schema_version 1 or 2)";

J number_or_null(double v) {
  return std::isfinite(v) ? J(v) : J(nullptr);
}

// The reader of the tool's own files (config/json_in.hpp); the root carries this file's fix.
using In = JsonIn;

// ---- writing ---------------------------------------------------------------------------------

// A run's records, one field list each for the writer and the reader (every key optional: a
// record written before it reads as the defaults); a node's state and telemetry beside its list.
constexpr auto kRunFields =
    std::make_tuple(optional_field("ok", &RunRecord::ok), optional_field("failure", &RunRecord::failure),
                    optional_field("wall_seconds", &RunRecord::wall_seconds),
                    optional_field("timed_out", &RunRecord::timed_out));
constexpr auto kErrorLineFields = std::make_tuple(
    optional_field("node", &ErrorLineRecord::node), optional_field("pattern", &ErrorLineRecord::pattern),
    optional_field("line_no", &ErrorLineRecord::line_no), optional_field("line", &ErrorLineRecord::line));
constexpr auto kNodeRunFields = std::make_tuple(
    optional_field("node", &NodeRunRecord::node), optional_field("rank", &NodeRunRecord::rank),
    optional_enum_field("state", &NodeRunRecord::state, kNodeStateWords),
    optional_field("exit_code", &NodeRunRecord::exit_code),
    optional_field("remote_log", &NodeRunRecord::remote_log), optional_field("log", &NodeRunRecord::log),
    field("last_step", &NodeRunRecord::last_step), optional_field("errors", &NodeRunRecord::errors));

constexpr auto kPhaseFields = std::make_tuple(
    optional_field("startup_s", &RunPhases::startup_s), optional_field("compile_s", &RunPhases::compile_s),
    optional_field("training_s", &RunPhases::training_s), optional_field("stall_s", &RunPhases::stall_s),
    optional_field("wall_s", &RunPhases::wall_s), optional_field("checkpoint_s", &RunPhases::checkpoint_s),
    optional_field("teardown_s", &RunPhases::teardown_s),
    optional_field("compile_apart", &RunPhases::compile_apart));
constexpr auto kCompileCacheFields = std::make_tuple(
    optional_field("hits", &CompileCacheUse::hits), optional_field("misses", &CompileCacheUse::misses),
    field("train_step_hit", &CompileCacheUse::train_step_hit));

J phases_json(const RunPhases& p) {
  J j = J::object();
  write_fields(j, p, kPhaseFields);
  write_fields(j["compile_cache"] = J::object(), p.cache, kCompileCacheFields);
  return j;
}

RunPhases read_phases(const In& in) {
  RunPhases p;
  read_fields(in, p, kPhaseFields);
  if (in.has("compile_cache")) read_fields(in.object("compile_cache"), p.cache, kCompileCacheFields);
  return p;
}

J run_json(const RunRecord& o) {
  J j = J::object();
  write_fields(j, o, kRunFields);
  if (o.first_error) write_fields(j["first_error"] = J::object(), *o.first_error, kErrorLineFields);
  J nodes = J::array();
  for (const auto& n : o.nodes) {
    J& nj = nodes.emplace_back(J::object());
    write_fields(nj, n, kNodeRunFields);
    if (n.telemetry) nj["telemetry"] = to_json(*n.telemetry);
    if (n.phases) nj["phases"] = phases_json(*n.phases);
  }
  j["nodes"] = nodes;
  if (o.maxtext_yaml) j["maxtext_yaml"] = *o.maxtext_yaml;
  return j;
}

J evaluation_json(const EvaluationRecord& e) {
  J ej = {{"metric", e.metric},
          {"value", number_or_null(e.value)},
          {"outcome", to_string(e.outcome)},
          {"message", e.message}};
  if (e.interval) ej["interval"] = {number_or_null(e.interval->first), number_or_null(e.interval->second)};
  if (e.point) ej["point"] = number_or_null(*e.point);
  if (e.margin_pct) ej["margin_pct"] = number_or_null(*e.margin_pct);
  if (e.gate) {
    ej["kind"] = e.gate->kind;
    ej["threshold"] = e.gate->threshold;
    if (e.gate->tolerance_pct) ej["tolerance_pct"] = *e.gate->tolerance_pct;
    if (e.gate->reference) ej["reference"] = *e.gate->reference;
  }
  return ej;
}

// A stall: its step, its seconds and the usual step's around it (what it cost is their difference).
constexpr auto kStallFields =
    std::make_tuple(field("step", &Stall::step), field("seconds", &Stall::seconds),
                    field("usual_seconds", &Stall::usual), optional_field("line_no", &Stall::line_no));

// The early-stop record, one list for the writer and the reader (every key optional: the defaults
// of a record written before it).
constexpr auto kEarlyStopFields = std::make_tuple(
    optional_field("configured_steps", &EarlyStopRecord::configured_steps),
    optional_field("cap", &EarlyStopRecord::cap), optional_field("steps_run", &EarlyStopRecord::steps_run),
    optional_field("stopped_early", &EarlyStopRecord::stopped_early),
    optional_field("looks", &EarlyStopRecord::looks),
    optional_field("per_look_confidence", &EarlyStopRecord::per_look_confidence),
    optional_field("reason", &EarlyStopRecord::reason),
    optional_field("steps_saved", &EarlyStopRecord::steps_saved),
    optional_field("seconds_saved", &EarlyStopRecord::seconds_saved));

J early_stop_json(const EarlyStopRecord& x) {
  J j = J::object();
  write_fields(j, x, kEarlyStopFields);
  return j;
}

J sweep_json(const SweepRecord& s) {
  J sj;
  sj["test_name"] = s.test_name;
  sj["status"] = to_string(s.status);
  if (s.status == SweepStatus::NotRun) return sj;
  sj["run_name"] = s.run_name;
  sj["steps"] = s.steps;
  sj["precision"] = s.precision;
  sj["quantization"] = s.quantization;
  sj["num_nodes"] = s.num_nodes;
  sj["gpus_per_node"] = s.gpus_per_node;
  sj["parallelism"] = s.parallelism;
  if (!s.mesh.empty()) sj["mesh"] = s.mesh;
  if (!s.mesh_ici.empty() || !s.mesh_dcn.empty())
    sj["mesh_axes"] = {{"ici", s.mesh_ici}, {"dcn", s.mesh_dcn}};
  sj["run"] = run_json(s.run);
  if (s.early_stop) sj["early_stop"] = early_stop_json(*s.early_stop);
  sj["metrics_error"] = s.metrics_error;
  if (s.metrics_source) sj["metrics_source"] = *s.metrics_source;
  if (s.warmup_steps_dropped) sj["warmup_steps_dropped"] = *s.warmup_steps_dropped;
  if (!s.async_dropped_steps.empty()) sj["async_dropped_steps"] = s.async_dropped_steps;
  if (!s.stalls.empty()) {
    J stalls = J::array();
    for (const auto& x : s.stalls) write_fields(stalls.emplace_back(J::object()), x, kStallFields);
    sj["stalls"] = stalls;
  }
  if (s.steady_state) sj["steady_state"] = to_json(*s.steady_state);
  if (s.first_nonfinite_step) sj["first_nonfinite_step"] = *s.first_nonfinite_step;
  J metrics = J::object();
  for (const auto& [name, v] : s.metrics) metrics[name] = number_or_null(v);
  sj["metrics"] = metrics;
  J evals = J::array();
  for (const auto& e : s.evaluations) evals.push_back(evaluation_json(e));
  sj["evaluations"] = evals;
  J curve = J::array(), sampled = J::array();
  for (const auto& [step, loss] : s.loss_curve) curve.push_back({step, number_or_null(loss)});
  for (const auto& [step, loss] : s.sampled_curve) sampled.push_back({step, loss});
  sj["loss_curve"] = curve;
  sj["sampled_curve"] = sampled;
  sj["step_times_ms"] = s.step_times_ms;
  sj["notes"] = s.notes;
  J effective = J::object();
  for (const auto& [k, v] : s.effective_config) effective[k] = v;
  sj["effective_config"] = effective;
  if (s.peak_memory_gb) sj["peak_memory_gb"] = *s.peak_memory_gb;
  return sj;
}

J stage_json(const StageRecord& t) {
  J props = J::object();
  for (const auto& [k, v] : t.properties) props[k] = v;
  return {{"test", t.test},
          {"stage", t.stage},
          {"status", to_string(t.status)},
          {"outcome", to_string(t.outcome)},
          {"message", t.message},
          {"seconds", t.seconds},
          {"properties", props}};
}

void config_json(J& r, const Results& res) {
  const auto& c = res.config;
  r["config"] = {{"file", c.file},
                 {"sha256", c.sha256},
                 {"gpu_name", c.gpu_name},
                 {"gpus_per_node", c.gpus_per_node},
                 {"mode", c.mode},
                 {"model", c.model},
                 {"enforce_thresholds", c.enforce_thresholds},
                 {"threshold_file", c.threshold_file},
                 {"thresholds_source", c.thresholds_source},
                 {"runtime", c.runtime},
                 {"image", c.image},
                 {"runs", c.runs}};
  J nodes = J::array();
  for (const auto& n : res.cluster.nodes)
    nodes.push_back({{"name", n.name}, {"host", n.host}, {"transport", n.transport}});
  r["cluster"] = {{"file", res.cluster.file}, {"nodes", nodes}, {"coordinator", res.cluster.coordinator}};
  r["provenance"] = res.provenance;
  if (res.provenance_fields) r["provenance_fields"] = *res.provenance_fields;
  if (res.calibration) {
    J diffs = J::array();
    for (const auto& d : res.calibration->provenance_differences)
      diffs.push_back({{"field", d.field}, {"calibrated", d.calibrated}, {"now", d.now}});
    r["calibration"] = {{"file", res.calibration->file},
                        {"date", res.calibration->date},
                        {"provenance", res.calibration->provenance},
                        {"provenance_differences", diffs}};
  }
}

// The checkpoint record, one list for the writer and the reader; its two runs beside it. Its
// figures are null when there are none (a reader of an earlier file finds them absent).
constexpr auto kCheckpointFields = std::make_tuple(
    optional_field("sweep", &CheckpointRecord::sweep),
    optional_field("run_name", &CheckpointRecord::run_name),
    optional_field("passed", &CheckpointRecord::passed),
    optional_field("message", &CheckpointRecord::message), field("saved_step", &CheckpointRecord::saved_step),
    field("restored_step", &CheckpointRecord::restored_step),
    field("resumed_first_step", &CheckpointRecord::resumed_first_step),
    field("boundary_loss_phase1", &CheckpointRecord::boundary_loss_phase1),
    field("boundary_loss_phase2", &CheckpointRecord::boundary_loss_phase2),
    field("checkpoint_save_seconds", &CheckpointRecord::save_seconds),
    field("checkpoint_load_seconds", &CheckpointRecord::load_seconds),
    optional_field("max_save_seconds", &CheckpointRecord::max_save_seconds),
    optional_field("max_load_seconds", &CheckpointRecord::max_load_seconds),
    optional_field("deleted_ckpt_dir", &CheckpointRecord::deleted_ckpt_dir));

J checkpoint_json(const CheckpointRecord& ck) {
  J j = J::object();
  write_fields(j, ck, kCheckpointFields);
  j["phase1"] = run_json(ck.phase1);
  j["phase2"] = ck.phase2 ? run_json(*ck.phase2) : J(nullptr);
  return j;
}

J baseline_json(const BaselineRecord& b) {
  if (!b.error.empty()) return {{"baseline", b.baseline}, {"error", b.error}};
  J cmp = to_json(b.comparison, b.tolerance_pct);
  cmp["baseline"] = b.baseline;
  cmp["baseline_started_at"] = b.baseline_started_at;
  return cmp;
}

// ---- reading ---------------------------------------------------------------------------------

RunRecord read_run(const In& in) {
  RunRecord o;
  read_fields(in, o, kRunFields);
  if (in.has("first_error")) read_fields(in.object("first_error"), o.first_error.emplace(), kErrorLineFields);
  for (std::size_t i = 0; i < in.array("nodes").size(); ++i) {
    const In n = in.element("nodes", i);
    NodeRunRecord& r = o.nodes.emplace_back();
    read_fields(n, r, kNodeRunFields);
    if (n.has("telemetry")) r.telemetry = telemetry_from_json(n.object("telemetry"));
    if (n.has("phases")) r.phases = read_phases(n.object("phases"));
  }
  o.maxtext_yaml = in.opt_str("maxtext_yaml");
  return o;
}

SteadyStateRecord read_steady(const In& in) {
  SteadyStateRecord st;
  st.found = in.boolean("found");
  st.rule = in.str("rule", "MSER-5");
  st.confidence = in.num("confidence", 0.95);
  st.first_step = in.integer<long long>("first_step", -1);
  st.steps = in.integer<std::size_t>("steps");
  st.why = in.str("why");
  st.source = in.str("source");
  if (in.has("tokens_per_step")) {
    const auto& k = in.at("tokens_per_step");
    if (k.is_array() && k.size() == 2 && k[0].is_number() && k[1].is_number())
      st.tokens_per_step = std::pair{k[0].get<double>(), k[1].get<double>()};
  }
  st.lag1 = in.opt_num("lag1");
  st.lag1_upper = in.opt_num("lag1_upper");
  st.batches = in.integer<std::size_t>("batches");
  st.batch_size = in.integer<std::size_t>("batch_size");
  st.drift_pct = in.opt_num("drift_pct");
  if (in.has("intervals")) {
    const In ivs = in.object("intervals");
    for (const auto& [name, v] : in.at("intervals").items()) {
      const In iv = ivs.object(name.c_str());
      st.intervals.emplace_back(
          name, IntervalRecord{iv.num("estimate", NAN), iv.num("lo", NAN), iv.num("hi", NAN)});
    }
  }
  if (in.has("missing"))
    for (const auto& [name, v] : in.at("missing").items())
      if (v.is_string()) st.missing.emplace_back(name, v.get<std::string>());
  return st;
}

EvaluationRecord read_evaluation(const In& e) {
  EvaluationRecord r;
  r.metric = e.str("metric");
  r.value = e.num("value", NAN);
  const auto o = outcome_from_string(e.str("outcome", "RECORD"));
  if (!o) e.fail(e.at_ptr("outcome"), "is not an outcome");
  r.outcome = *o;
  r.message = e.str("message");
  if (const J* iv = e.find("interval")) {
    if (!iv->is_array() || iv->size() != 2) e.fail(e.at_ptr("interval"), "is not a [lo, hi] pair");
    r.interval = std::pair{e.number((*iv)[0], e.at_ptr("interval") + "/0"),
                           e.number((*iv)[1], e.at_ptr("interval") + "/1")};
  }
  r.point = e.opt_num("point");
  r.margin_pct = e.opt_num("margin_pct");
  if (e.has("kind"))
    r.gate = EvaluationRecord::Gate{e.str("kind"), e.num("threshold", NAN), e.opt_num("tolerance_pct"),
                                    e.opt_str("reference")};
  return r;
}

std::vector<std::pair<long long, double>> read_curve(const In& in, const char* key) {
  std::vector<std::pair<long long, double>> v;
  const J& a = in.array(key);
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto ptr = pointer_join(in.at_ptr(key), i);
    if (!a[i].is_array() || a[i].size() != 2 || !a[i][0].is_number_integer())
      in.fail(ptr, "is not a [step, loss] pair");
    v.emplace_back(a[i][0].get<long long>(), in.number(a[i][1], ptr + "/1"));
  }
  return v;
}

void read_sweep_run(const In& in, SweepRecord& s) {
  s.run_name = in.str("run_name");
  s.steps = in.integer<long long>("steps");
  s.precision = in.str("precision", "bf16");
  s.quantization = in.str("quantization");
  s.num_nodes = in.integer<std::size_t>("num_nodes", 1);
  s.gpus_per_node = in.integer<int>("gpus_per_node", 1);
  if (in.has("parallelism")) s.parallelism = in.at("parallelism");
  s.mesh = in.str("mesh");
  if (in.has("mesh_axes")) {
    const auto axes = in.object("mesh_axes");
    for (const auto& [level, out] : {std::pair{"ici", &s.mesh_ici}, std::pair{"dcn", &s.mesh_dcn}})
      if (axes.has(level)) {
        const auto o = axes.object(level);
        for (const auto& [k, v] : axes.at(level).items()) (*out)[k] = o.integer<long long>(k.c_str());
      }
  }
  if (in.has("run")) s.run = read_run(in.object("run"));
  if (in.has("early_stop")) {
    read_fields(in.object("early_stop"), s.early_stop.emplace(), kEarlyStopFields);
  }
  s.metrics_error = in.str("metrics_error");
  s.metrics_source = in.opt_str("metrics_source");
  if (in.has("warmup_steps_dropped")) s.warmup_steps_dropped = in.integer<long long>("warmup_steps_dropped");
  const J& async = in.array("async_dropped_steps");
  for (std::size_t i = 0; i < async.size(); ++i) {
    if (!async[i].is_number_integer())
      in.fail(pointer_join(in.at_ptr("async_dropped_steps"), i), "is not a step");
    s.async_dropped_steps.push_back(async[i].get<long long>());
  }
  for (std::size_t i = 0; i < in.array("stalls").size(); ++i)
    read_fields(in.element("stalls", i), s.stalls.emplace_back(), kStallFields);
  if (in.has("steady_state")) s.steady_state = read_steady(in.object("steady_state"));
  if (in.has("first_nonfinite_step")) s.first_nonfinite_step = in.integer<long long>("first_nonfinite_step");
}

void read_sweep_figures(const In& in, SweepRecord& s) {
  if (in.has("metrics")) {
    const In m = in.object("metrics");
    for (const auto& [name, v] : in.at("metrics").items())
      s.metrics.emplace_back(name, m.number(v, m.at_ptr(name.c_str())));
  }
  for (std::size_t i = 0; i < in.array("evaluations").size(); ++i)
    s.evaluations.push_back(read_evaluation(in.element("evaluations", i)));
  s.loss_curve = read_curve(in, "loss_curve");
  s.sampled_curve = read_curve(in, "sampled_curve");
  const J& times = in.array("step_times_ms");
  for (std::size_t i = 0; i < times.size(); ++i)
    s.step_times_ms.push_back(in.number(times[i], pointer_join(in.at_ptr("step_times_ms"), i)));
  const J& notes = in.array("notes");
  for (std::size_t i = 0; i < notes.size(); ++i) {
    if (!notes[i].is_string()) in.fail(pointer_join(in.at_ptr("notes"), i), "is not a string");
    s.notes.push_back(notes[i].get<std::string>());
  }
  if (in.has("effective_config")) {
    const In e = in.object("effective_config");
    for (const auto& [k, v] : in.at("effective_config").items())
      s.effective_config.emplace_back(k, e.str(k.c_str()));
  }
  if (in.has("peak_memory_gb")) s.peak_memory_gb = in.num("peak_memory_gb");
}

SweepRecord read_sweep(const In& in) {
  SweepRecord s;
  s.test_name = in.str("test_name");
  const auto status = in.str("status", to_string(SweepStatus::NotRun));
  const auto parsed = sweep_status_from_string(status);
  if (!parsed) in.fail(in.at_ptr("status"), "is '" + status + "', not COMPLETED, FAILED or NOT RUN");
  s.status = *parsed;
  if (s.status == SweepStatus::NotRun) return s;
  read_sweep_run(in, s);
  read_sweep_figures(in, s);
  return s;
}

StageRecord read_stage(const In& in) {
  StageRecord t;
  t.test = in.str("test");
  t.stage = in.str("stage");
  const auto status = in.str("status", to_string(TestStatus::Pass));
  const auto parsed = test_status_from_string(status);
  if (!parsed) in.fail(in.at_ptr("status"), "is '" + status + "', not PASS, FAIL or SKIPPED");
  t.status = *parsed;
  const auto o = outcome_from_string(in.str("outcome", status));
  if (!o) in.fail(in.at_ptr("outcome"), "is not an outcome");
  t.outcome = *o;
  t.message = in.str("message");
  t.seconds = in.num("seconds");
  if (in.has("properties")) {
    const In p = in.object("properties");
    for (const auto& [k, v] : in.at("properties").items()) t.properties.emplace_back(k, p.str(k.c_str()));
  }
  return t;
}

void read_config(const In& root, Results& r) {
  const In c = root.object("config");
  auto& rc = r.config;
  rc.file = c.str("file");
  rc.sha256 = c.str("sha256");
  rc.gpu_name = c.str("gpu_name");
  rc.gpus_per_node = c.integer<int>("gpus_per_node", 1);
  rc.mode = c.str("mode");
  rc.model = c.str("model");
  rc.enforce_thresholds = c.boolean("enforce_thresholds");
  rc.threshold_file = c.str("threshold_file");
  rc.thresholds_source = c.str("thresholds_source", "config");
  rc.runtime = c.str("runtime");
  rc.image = c.str("image");
  const J& runs = c.array("runs");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].is_string()) c.fail(pointer_join(c.at_ptr("runs"), i), "is not a sweep key");
    rc.runs.push_back(runs[i].get<std::string>());
  }
}

void read_cluster(const In& root, Results& r) {
  if (!root.has("cluster")) return;
  const In c = root.object("cluster");
  r.cluster.file = c.str("file");
  r.cluster.coordinator = c.str("coordinator");
  for (std::size_t i = 0; i < c.array("nodes").size(); ++i) {
    const In n = c.element("nodes", i);
    r.cluster.nodes.push_back({n.str("name"), n.str("host"), n.str("transport")});
  }
}

void read_provenance(const In& root, Results& r) {
  if (root.has("provenance")) r.provenance = root.at("provenance");
  if (root.has("provenance_fields")) r.provenance_fields = root.at("provenance_fields");
  if (!root.has("calibration")) return;
  const In c = root.object("calibration");
  CalibrationRecord cal{c.str("file"), c.str("date"), J::object(), {}};
  if (c.has("provenance")) cal.provenance = c.at("provenance");
  for (std::size_t i = 0; i < c.array("provenance_differences").size(); ++i) {
    const In d = c.element("provenance_differences", i);
    cal.provenance_differences.push_back({d.str("field"), d.str("calibrated"), d.str("now")});
  }
  r.calibration = std::move(cal);
}

CheckpointRecord read_checkpoint(const In& in) {
  CheckpointRecord ck;
  read_fields(in, ck, kCheckpointFields);
  if (in.has("phase1")) ck.phase1 = read_run(in.object("phase1"));
  if (const J* p2 = in.find("phase2"); p2 && !p2->is_null()) ck.phase2 = read_run(in.object("phase2"));
  return ck;
}

BaselineRecord read_baseline(const In& in) {
  BaselineRecord b;
  b.baseline = in.str("baseline");
  b.error = in.str("error");
  if (!b.error.empty()) return b;
  b.tolerance_pct = in.num("tolerance_pct", 5.0);
  b.baseline_started_at = in.str("baseline_started_at");
  for (std::size_t i = 0; i < in.array("deltas").size(); ++i) {
    const In d = in.element("deltas", i);
    std::string metric = d.str("metric");
    if (metric.rfind("training.", 0) == 0) metric = metric.substr(9);
    MetricDelta x{d.str("sweep"),
                  metric,
                  d.num("old", NAN),
                  d.num("new", NAN),
                  d.num("delta_pct", NAN),
                  d.boolean("regression"),
                  {},
                  {},
                  false};
    auto pair_of = [&](const char* key) -> std::optional<std::pair<double, double>> {
      const J* v = d.find(key);
      if (!v || !v->is_array() || v->size() != 2) return std::nullopt;
      return std::pair{d.number((*v)[0], d.at_ptr(key) + "/0"), d.number((*v)[1], d.at_ptr(key) + "/1")};
    };
    x.old_interval = pair_of("old_interval");
    x.new_interval = pair_of("new_interval");
    x.within_noise = d.has("within_noise") && d.boolean("within_noise");
    b.comparison.deltas.push_back(x);
  }
  const J& notes = in.array("notes");
  for (const auto& n : notes)
    if (n.is_string()) b.comparison.notes.push_back(n.get<std::string>());
  return b;
}

}  // namespace

J to_json(const Results& r) {
  J j;
  j["schema_version"] = r.schema_version;
  j["suite"] = r.suite;
  j["started_at"] = r.started_at;
  j["finished_at"] = r.finished_at;
  j["status"] = to_string(r.status());
  J counts = J::object();
  for (const auto& [o, n] : r.counts()) counts[to_string(o)] = n;
  j["counts"] = counts;
  config_json(j, r);
  J sweeps = J::object();
  for (const auto& [key, s] : r.sweeps) sweeps[key] = sweep_json(s);
  j["sweeps"] = sweeps;
  if (r.smoke) j["smoke"] = run_json(*r.smoke);
  if (r.checkpoint) j["checkpoint_resume"] = checkpoint_json(*r.checkpoint);
  J stages = J::array();
  for (const auto& t : r.stages) stages.push_back(stage_json(t));
  j["stages"] = stages;
  if (r.baseline) j["baseline_comparison"] = baseline_json(*r.baseline);
  return j;
}

Results results_from_json(const J& j, const std::string& file) {
  if (!j.is_object() || !j.contains("sweeps"))
    throw ConfigError(file, "", "is not a cvs results.json (no \"sweeps\")", kFix);
  const In root(j, "", file, kFix);
  Results r;
  r.schema_version = root.integer<int>("schema_version", 0);
  if (r.schema_version < 1 || r.schema_version > kResultsSchemaVersion)
    root.fail("/schema_version", "is " + std::to_string(r.schema_version) + ", not 1 or 2 (this cvs reads " +
                                     "up to " + std::to_string(kResultsSchemaVersion) + ")");
  r.suite = root.str("suite");
  r.started_at = root.str("started_at");
  r.finished_at = root.str("finished_at");
  if (root.has("config")) read_config(root, r);
  read_cluster(root, r);
  read_provenance(root, r);
  const In sweeps = root.object("sweeps");
  for (const auto& [key, v] : j["sweeps"].items())
    r.sweeps.emplace_back(key, read_sweep(sweeps.object(key.c_str())));
  if (root.has("smoke")) r.smoke = read_run(root.object("smoke"));
  if (const J* c = root.find("checkpoint_resume"); c && !c->is_null())
    r.checkpoint = read_checkpoint(root.object("checkpoint_resume"));
  for (std::size_t i = 0; i < root.array("stages").size(); ++i)
    r.stages.push_back(read_stage(root.element("stages", i)));
  if (root.has("baseline_comparison")) r.baseline = read_baseline(root.object("baseline_comparison"));
  return r;
}

Results read_results(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw ConfigError(file.string(), "", "cannot be read", kFix);
  J j;
  try {
    j = J::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(file.string(), "", std::string("is not valid JSON: ") + e.what(), kFix);
  }
  return results_from_json(j, file.string());
}

}  // namespace cvs
