// results.json, typed: the versioned record of a session. The suites' listener writes it
// (to_json); the HTML report, `cvs report`, `cvs compare`, `cvs card`, `cvs calibrate` and fleet
// mode read it (results_from_json), never by key. A number that is not finite is written as null
// and read back as NaN; a key an older file lacks reads as absent (std::optional) or empty.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cvs/catalog/node_state.hpp"
#include "cvs/catalog/outcome.hpp"
#include "cvs/logs/run_timeline.hpp"
#include "cvs/results/compare.hpp"
#include "cvs/results/telemetry_record.hpp"
#include "cvs/statistics/metrics.hpp"

namespace cvs {

// 2: a run's nodes carry their telemetry; steady_state says its source, correlation and batches;
// evaluations carry the point figure apart. Files of schema 1 read as ever.
inline constexpr int kResultsSchemaVersion = 2;

// gtest's word for a test: PASS, FAIL, SKIPPED.
enum class TestStatus { Pass, Fail, Skipped };
std::string to_string(TestStatus s);
std::optional<TestStatus> test_status_from_string(std::string_view word);

// A sweep's training run: COMPLETED, FAILED, or NOT RUN (a filter left it out).
enum class SweepStatus { Completed, Failed, NotRun };
std::string to_string(SweepStatus s);
std::optional<SweepStatus> sweep_status_from_string(std::string_view word);

struct ErrorLineRecord {
  std::string node, pattern;
  long long line_no = 0;
  std::string line;
};

struct NodeRunRecord {
  std::string node;
  int rank = 0;
  NodeState state = NodeState::NotStarted;
  int exit_code = -1;
  std::string remote_log;
  std::string log;  // relative to the report folder
  std::optional<long long> last_step;
  std::size_t errors = 0;
  std::optional<NodeTelemetry> telemetry;  // what its sampler saw during the run
  std::optional<RunPhases> phases;         // where its time went, from its log (logs/run_timeline.hpp)
};

// One training run (a sweep's, the smoke's, a checkpoint phase's).
struct RunRecord {
  bool ok = false;
  std::string failure;
  double wall_seconds = 0;
  bool timed_out = false;
  std::optional<ErrorLineRecord> first_error;
  std::vector<NodeRunRecord> nodes;
  std::optional<std::string> maxtext_yaml;  // relative to the report folder
};

struct IntervalRecord {
  double estimate = 0, lo = 0, hi = 0;
};

// The steady state the speed gates were decided on (step_stats.hpp).
struct SteadyStateRecord {
  bool found = false;
  std::string rule;           // the procedure, in words
  double confidence = 0.95;   // the level its intervals were built at (extend: the per-look level)
  long long first_step = -1;  // when found
  std::size_t steps = 0;      // when found: the steps the intervals cover
  std::string why;            // why there are no intervals (empty when there are)
  std::string source;         // tokens_rate | printed_seconds | full_precision (older files: empty)
  std::optional<std::pair<double, double>> tokens_per_step;  // tokens_rate: the work per step's range
  std::optional<double> lag1, lag1_upper;
  std::size_t batches = 0, batch_size = 0;
  std::optional<double> drift_pct;
  std::vector<std::pair<std::string, IntervalRecord>> intervals;  // metric -> interval, in order
  std::vector<std::pair<std::string, std::string>> missing;       // metric -> why it has none

  const IntervalRecord* interval(const std::string& metric) const;  // nullptr when not estimated
};
struct SteadyState;  // step_stats.hpp
// The record of a run's steady state, at the confidence its intervals were built at.
SteadyStateRecord steady_state_record(const SteadyState& st);
nlohmann::ordered_json to_json(const SteadyStateRecord& st);

// One evaluated metric: value, outcome, the interval and margin, and its gate when it had one.
struct EvaluationRecord {
  std::string metric;           // with "training."
  double value = 0;             // the figure the verdict used (the interval's estimate); NaN: not produced
  std::optional<double> point;  // the point figure (the sweep's `metrics`), when the verdict used an interval
  Outcome outcome = Outcome::Record;
  std::string message;
  std::optional<std::pair<double, double>> interval;
  std::optional<double> margin_pct;
  struct Gate {
    std::string kind;
    double threshold = 0;
    std::optional<double> tolerance_pct;
    std::optional<std::string> reference;  // with "training."
  };
  std::optional<Gate> gate;
};

struct EarlyStopRecord {
  long long configured_steps = 0, cap = 0, steps_run = 0;
  bool stopped_early = false;
  int looks = 0;
  double per_look_confidence = 0.95;
  std::string reason;
  long long steps_saved = 0;
  double seconds_saved = 0;
};

struct SweepRecord {
  std::string test_name;
  SweepStatus status = SweepStatus::NotRun;
  // Everything below is written for a sweep that ran (status != NOT RUN).
  std::string run_name;
  long long steps = 0;
  std::string precision;  // bf16 | fp8
  std::string quantization;
  std::size_t num_nodes = 0;
  int gpus_per_node = 0;
  nlohmann::ordered_json parallelism = nlohmann::ordered_json::object();  // MaxText's ici_/dcn_ keys
  std::string mesh;  // the mesh they resolve to on the run's devices (config/mesh: MeshPlan::describe)
  // That mesh's axes other than 1 by MaxText's key (ici_fsdp_parallelism), a -1 filled as MaxText
  // fills it (config/mesh: MeshPlan): what a card states the parallelism from. Empty in an older
  // record.
  std::map<std::string, long long> mesh_ici, mesh_dcn;
  RunRecord run;
  std::optional<EarlyStopRecord> early_stop;
  std::string metrics_error;
  std::optional<std::string> metrics_source;
  std::optional<long long> warmup_steps_dropped;
  std::vector<long long> async_dropped_steps;  // left out of the point figures (MaxText's asynchronous step)
  std::vector<Stall> stalls;  // steps far over the steps around them, unexplained (statistics/metrics.hpp)
  std::optional<SteadyStateRecord> steady_state;
  std::optional<long long> first_nonfinite_step;
  std::vector<std::pair<std::string, double>> metrics;  // name without "training.", in catalog order
  std::vector<EvaluationRecord> evaluations;
  std::vector<std::pair<long long, double>> loss_curve, sampled_curve;
  std::vector<double> step_times_ms;
  std::vector<std::string> notes;
  std::vector<std::pair<std::string, std::string>> effective_config;  // what MaxText logged
  std::optional<double> peak_memory_gb;

  const double* metric(const std::string& name) const;
  std::string effective(const std::string& key) const;  // "" when not logged
};

// One gtest test as it ended: gtest's status, the stage's own outcome and its properties.
struct StageRecord {
  std::string test;   // e.g. test_training_run.run/BS_2__PRECISION_BF16__SL_128
  std::string stage;  // test_setup, test_smoke, test_training_run, test_metric, checkpoint_resume...
  TestStatus status = TestStatus::Pass;
  Outcome outcome = Outcome::Pass;
  std::string message;
  double seconds = 0;
  std::vector<std::pair<std::string, std::string>> properties;
  std::string property(const std::string& key) const;  // "" when absent
  // The sweep a stage belongs to (its kSweepKeyProperty; "" for a stage of the whole session).
  std::string sweep_key() const { return property(kSweepKeyProperty); }
  // The property a sweep's stages record their sweep key under (the suite's RecordProperty).
  static constexpr const char* kSweepKeyProperty = "sweep_key";
  // Seconds a stage spent before its test began (the setup runs in the gtest Environment): the
  // record's `seconds` are the test's own plus these.
  static constexpr const char* kSecondsBeforeProperty = "seconds_before_test";
};
// The outcome a stage reports: its "outcome" property where it set one (ERROR, INCONCLUSIVE,
// N/A, RECORD...), held to gtest's status (a failed test is FAIL unless it said INCONCLUSIVE or
// ERROR; a skipped one SKIPPED unless N/A).
Outcome stage_outcome(TestStatus status, const std::string& outcome_property);

struct ConfigRecord {
  std::string file, sha256, gpu_name;
  int gpus_per_node = 0;
  std::string mode, model;
  bool enforce_thresholds = false;
  std::string threshold_file;
  std::string thresholds_source = "config";
  std::string runtime, image;
  std::vector<std::string> runs;
};

struct ClusterRecord {
  std::string file;
  struct Node {
    std::string name, host, transport;
  };
  std::vector<Node> nodes;
  std::string coordinator;
};

struct CalibrationRecord {
  std::string file, date;
  nlohmann::ordered_json provenance = nlohmann::ordered_json::object();
  struct Difference {
    std::string field, calibrated, now;
  };
  std::vector<Difference> provenance_differences;
};

struct CheckpointRecord {
  std::string sweep, run_name;
  bool passed = false;
  std::string message;
  std::optional<long long> saved_step, restored_step, resumed_first_step;
  std::optional<double> boundary_loss_phase1, boundary_loss_phase2;
  std::optional<double> save_seconds, load_seconds;
  double max_save_seconds = 0, max_load_seconds = 0;
  bool deleted_ckpt_dir = false;
  RunRecord phase1;
  std::optional<RunRecord> phase2;
};

// --baseline: the comparison against an earlier session, or why there is none.
struct BaselineRecord {
  std::string baseline;  // the earlier results.json
  std::string error;     // non-empty: it could not be read or compared
  double tolerance_pct = 5.0;
  Comparison comparison;
  std::string baseline_started_at;
};

struct Results {
  int schema_version = kResultsSchemaVersion;
  std::string suite, started_at, finished_at;
  ConfigRecord config;
  ClusterRecord cluster;
  nlohmann::ordered_json provenance = nlohmann::ordered_json::object();
  std::optional<nlohmann::ordered_json> provenance_fields;
  std::optional<CalibrationRecord> calibration;
  std::vector<std::pair<std::string, SweepRecord>> sweeps;  // in the config's runs order
  std::optional<RunRecord> smoke;
  std::optional<CheckpointRecord> checkpoint;
  std::vector<StageRecord> stages;
  std::optional<BaselineRecord> baseline;

  // A missed gate is the verdict; without one, an infrastructure error means there is no
  // verdict: FAIL, else ERROR, else PASS. Derived from the stages, never stored apart.
  Outcome status() const;
  // How many stages ended in each outcome (every outcome listed, 0 included).
  std::vector<std::pair<Outcome, int>> counts() const;
  const SweepRecord* sweep(const std::string& key) const;
};

// Where a session's runs spent their time: the head node's phases of its smoke, sweeps and
// checkpoint phases, summed (other_s 0: the session's wall time is its caller's).
PhaseTotals session_phases(const Results& r);

nlohmann::ordered_json to_json(const Results& r);
// Throws ConfigError (file, JSON pointer, fix) for a document that is not a results.json of
// schema version 1 or whose keys have the wrong types; `file` names it in the error.
Results results_from_json(const nlohmann::ordered_json& j, const std::string& file = "results.json");
// Reads and parses a file (ConfigError when it cannot be read or is not JSON).
Results read_results(const std::filesystem::path& file);

}  // namespace cvs
