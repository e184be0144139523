// Fleet mode: the single-node workload run on every node of a cluster, each node an independent
// run, and each node scored against the fleet to name the outliers (jaxmaxtext_fleet).
//
// Scoring, per figure (a sweep's metric) with its direction from the metric catalog: the fleet's
// median and MAD over the nodes whose run passed, and each node's modified z-score
// z = 0.6745 (x - median) / MAD (Iglewicz & Hoaglin 1993, "How to Detect and Handle Outliers";
// |z| > 3.5 marks an outlier). A rate or a time (throughput, step time, free HBM) is scored on its
// logarithm, z = 0.6745 log(x / median) / MAD(log(x / median)): a node at a sixth of the median's
// throughput is as far out as one at six times its step time. (On the linear scale a throughput
// cannot fall below 0, so its z is bounded by 0.6745 median / MAD: on a fleet whose healthy nodes
// differ by 20 % no throughput, however low, was an outlier.) A node is a suspect when a figure is on the bad
// side of the median beyond both bounds (|z| > max_z and a relative distance of min_deviation or more: a
// fleet whose nodes agree to 0.1 % has a tiny MAD, and 1 % from it is not a fault), when its run failed or
// errored (the suite's own gates: absolute floors from the threshold file included), or when it
// left no results. A node with a steady-state interval for the figure is an outlier only when the
// whole interval is: the end nearest the median must cross both bounds too (a node whose own
// interval reaches the fleet's band may be as fast as the rest, and a false suspect costs a node
// its place in the cluster). Fewer than min_fleet scored nodes: the fleet is too small to score, and only
// the runs' own verdicts count; a figure fewer than min_fleet of them measured is not scored either
// (a loss only the nodes that ran their configured steps have: certify's nodes tier stops runs early).
//
// Also, whatever the fleet's size:
//  - a calibrated baseline (cvs calibrate's file, --baseline): each node's steady-state estimate of
//    a calibrated metric against the calibration's median and MAD (its mad_sigma / 1.4826), by
//    the same two bounds;
//  - the probe: what each run's setup found (GPU count, free HBM, JAX devices as figures; GPU
//    models, device kind, driver/CUDA/ROCm platform, JAX, MaxText, CPU count and image as facts):
//    a node whose fact differs from what more than half of the nodes have is a suspect (a
//    heterogeneous node), and so is one whose run passed but whose probe did not report a fact
//    the majority reports (missing data fails closed).
#pragma once

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cvs/catalog/outcome.hpp"
#include "cvs/logs/run_timeline.hpp"

namespace cvs {

// What a fleet figure is: a sweep's metric ({"BS=2,PRECISION=BF16,SL=128", "tokens_per_sec_per_gpu"}),
// a probe's measure or fact ({"probe", "gpu_count"}), or, for evidence that is no figure, its kind
// alone ({"", "run"}, {"", "telemetry"}). Figures are keyed by it, never by a string built from its
// parts; text() ("<sweep> <metric>") is the form fleet.json, the pages and the reasons print.
struct FigureKey {
  std::string sweep;   // a sweep key, "probe", or "" for evidence that is no figure
  std::string metric;  // a metric of the catalog, the probe's measure or fact, or the evidence kind
  static FigureKey probe(std::string what) { return {"probe", std::move(what)}; }
  static FigureKey kind(std::string what) { return {"", std::move(what)}; }
  bool is_probe() const { return sweep == "probe"; }
  std::string text() const { return sweep.empty() ? metric : sweep + " " + metric; }
  auto operator<=>(const FigureKey&) const = default;
};

// fleet.json and pairs.json carry these; their readers (the history) refuse a newer one. A file
// without the key is the version before it was written (0), read as 1.
inline constexpr int kFleetFileSchemaVersion = 1;
inline constexpr int kPairsFileSchemaVersion = 1;

struct FigureStats {
  double median = 0, mad = 0;
  std::size_t nodes = 0;    // the nodes (or calibration repeats) it is over
  bool calibrated = false;  // from a calibration file, not the fleet
  // A rate or a time (every figure with a bad side but final_loss and the counts): the MAD of
  // log(x / median), what its z is taken on; 0 when not computed (a value not above 0), a linear z.
  double log_mad = 0;
};

struct FleetPolicy {
  double max_z = 3.5;
  double min_deviation = 0.10;  // relative to the median
  std::size_t min_fleet = 3;
  std::map<FigureKey, FigureStats> baseline;  // the calibration's, per sweep and metric
  // A node whose sweep lost more than max_time_lost_pct of its steps' time to stalls, and at least
  // min_stall_seconds, is a suspect on that evidence (statistics/metrics.hpp Stall): the stalls are
  // left out of its speed figures, so they would not make it slow.
  double max_time_lost_pct = 2.0;
  double min_stall_seconds = 1.0;
  // Whether a figure this many passing nodes measured is scored (and its detection power stated).
  bool scores_figure(std::size_t nodes) const { return nodes >= std::max<std::size_t>(min_fleet, 1); }
};

// One node's run, as its results.json says it.
struct FleetNode {
  std::string name;
  std::optional<Outcome> status;  // the run's outcome; none when it left no results
  std::string failure;            // why, when status is not PASS: the first failing stage and its message
  std::map<FigureKey, double> figures;       // a sweep's metric or a probe's measure -> value
  std::map<FigureKey, double> steady;        // a sweep's metric -> its steady-state estimate
  std::map<std::string, std::string> facts;  // the probe's: gpus, device_kind, jax_version, ...
  std::string telemetry;                     // what its telemetry shows, in words (explain_telemetry)
  std::map<FigureKey, std::pair<double, double>> intervals;  // a sweep's metric -> its steady-state [lo, hi]
  double seconds = 0;                                        // the run's wall time (the runner's)
  long long steps = 0;                                       // the training steps its sweeps ran
  // Where its runs' time went (the head node's logs: smoke, sweeps, checkpoint phases); other_s is
  // set by whoever times the whole (suite_runs: seconds less the phases).
  PhaseTotals phases = {};
  // A sweep's stalls: the share of its steps' time they cost, their seconds, and in words.
  struct Stalls {
    double time_lost_pct = 0, seconds = 0;
    std::string words;
  };
  std::map<std::string, Stalls> stalls = {};  // sweep key -> its stalls (sweeps with one)
};

struct FleetEvidence {
  FigureKey figure;                                    // the figure, or the kind: run, telemetry
  double value = 0, median = 0, z = 0, deviation = 0;  // deviation: (value - median) / median
  std::string text;                                    // in words
};

struct NodeScore {
  std::string name;
  bool suspect = false;
  double worst_z = 0;  // the most negative "badness" first: |z| on the bad side, 0 when none
  std::vector<FleetEvidence> evidence;
};

struct FleetScore {
  bool too_small = false;  // fewer than min_fleet scored nodes: no outlier scoring
  std::size_t scored = 0;  // nodes whose run passed (the fleet the medians are over)
  std::map<FigureKey, FigureStats> figures;
  std::vector<NodeScore> nodes;  // worst first: suspects (by worst_z), then healthy by name
  std::vector<std::string> suspects() const;
  std::vector<std::string> healthy() const;
};

// The figures scored: tokens_per_sec_per_gpu and step_time_p50_ms (their direction from the
// metric catalog) and final_loss (a node that computes a different loss on the same synthetic
// data is a fault either way).
bool is_fleet_metric(const std::string& metric);

FleetScore score_fleet(const std::vector<FleetNode>& nodes, const FleetPolicy& policy);

// What a scoring could have seen: the smallest slowdown of one node, relative to the fleet's
// median, that score_fleet's rule (modified z beyond max_z, at least min_deviation from the median,
// the node's whole interval beyond both) flags with probability `power`, from what was measured:
// the fleet's own figures with that node slowed among them (the median and MAD it moves), and the
// node's estimate as noisy as the fleet's median interval says (standard error = half-width / the
// interval's z at `interval_confidence`). `slowdown` 0.031: "would have caught a node >= 3.1 %
// slow". nullopt when fewer than policy.min_fleet nodes have the figure, or none is ever flagged.
struct DetectionPower {
  FigureKey figure;
  double slowdown = 0;    // a fraction of the median
  double median = 0;      // the fleet's median of the figure
  double half_width = 0;  // the median interval half-width used
  std::size_t nodes = 0;
};
std::optional<DetectionPower> detection_power(const std::vector<FleetNode>& nodes, const FigureKey& figure,
                                              const FleetPolicy& policy, double interval_confidence = 0.95,
                                              double power = 0.95);

// How narrow each node's interval must be for detection_power to come out at `slowdown` when the
// fleet itself agrees (no spread between healthy nodes): the rule needs a node min_deviation away
// with its interval's near end and its unlucky noise (z at `power` of a standard error = half-width
// / z at `interval_confidence`) beyond that too, so slowdown = min_deviation + h (1 + z_power /
// z_interval). The half-width h as a fraction of the estimate; 0 when slowdown is not above
// min_deviation (nothing the rule could flag).
double interval_half_width_for(double slowdown, const FleetPolicy& policy, double interval_confidence = 0.95,
                               double power = 0.95);

// A node's run from its report folder's results.json (missing or unreadable: status "").
FleetNode read_fleet_node(const std::string& name, const std::filesystem::path& results_json);

// The baseline of a calibrated threshold file (its _calibration statistics: per sweep and
// metric, the repeats' median and mad_sigma). Throws ConfigError (file, pointer, fix) when the
// file does not parse or holds no calibration.
std::map<FigureKey, FigureStats> read_fleet_baseline(const std::filesystem::path& calibration_file);

// The outputs that act, into `dir`: suspect_nodes.txt (name, tab, reasons), healthy_nodes.txt,
// slurm_exclude.txt (--exclude=host1,host2 by `host_of` each node's name; empty without suspects)
// and fleet.json (every node's figures, z-scores and evidence). healthy_cluster.json is the
// cluster's (config/cluster.hpp: write_cluster_file_of); the JUnit file and the HTML page are the
// reports' (reports/cvs/fleet_report.hpp).
void write_fleet_outputs(const std::filesystem::path& dir, const FleetScore& score,
                         const std::map<std::string, std::string>& host_of, const FleetPolicy& policy);

// What write_fleet_outputs wrote into fleet.json, read back (its one reader: the history): the
// policy and the score, every node's evidence with its words. A file newer than this cvs reads,
// or a key of the wrong type, is a ConfigError with its pointer.
struct FleetFile {
  int schema_version = kFleetFileSchemaVersion;
  FleetPolicy policy;
  FleetScore score;
};
FleetFile read_fleet_file(const std::filesystem::path& file);

// One line of reasons for a suspect ("" for a healthy node).
std::string fleet_reasons(const NodeScore& node);

}  // namespace cvs
