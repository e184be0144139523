#include "cvs/fleet/fleet.hpp"

#include "cvs/base/text.hpp"

#include "cvs/results/results_file.hpp"
#include "cvs/results/telemetry_diagnosis.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "cvs/base/format.hpp"
#include "cvs/catalog/metric_catalog.hpp"
#include "cvs/config/cluster.hpp"
#include "cvs/config/config_error.hpp"
#include "cvs/config/json_in.hpp"
#include "cvs/config/thresholds.hpp"
#include "cvs/statistics/metrics.hpp"
#include "cvs/statistics/step_stats.hpp"

namespace cvs {
namespace {

constexpr double kMadToZ = 0.6745;  // modified z-score: 0.6745 (x - median) / MAD

double median_of(std::vector<double> v) {
  return percentile(std::move(v), 50);
}

// +1: lower is worse (throughput, free HBM), -1: higher is worse (step time), 0: either way
// (loss, device counts).
int bad_side(const std::string& metric) {
  if (metric == to_string(Metric::FinalLoss) || metric == "gpu_count" || metric == "jax_devices") return 0;
  if (metric == "hbm_free_gb") return 1;
  const auto* m = find_metric(metric);
  return m && m->better == Better::Higher ? 1 : -1;
}

// A rate or a time: scored on its logarithm (fleet.hpp).
bool is_ratio_scale(const std::string& metric) {
  return bad_side(metric) != 0;
}

// Where x stands against the figure's median: its relative distance and modified z-score, and
// whether it is an outlier on the bad side beyond both bounds.
struct Standing {
  double dev = 0, z = 0;
  bool outlier = false;
};

Standing standing(const FigureKey& figure, double x, const FigureStats& st, const FleetPolicy& policy) {
  Standing r;
  r.dev = (x - st.median) / std::fabs(st.median);
  if (st.log_mad > 0 && x > 0 && st.median > 0)
    r.z = kMadToZ * std::log(x / st.median) / st.log_mad;
  else
    r.z = st.mad > 0
              ? kMadToZ * (x - st.median) / st.mad
              : (x == st.median ? 0 : std::copysign(std::numeric_limits<double>::infinity(), x - st.median));
  const int side = bad_side(figure.metric);
  const bool bad = side == 0 ? true : (side > 0 ? r.z < 0 : r.z > 0);
  r.outlier = bad && std::fabs(r.z) > policy.max_z && std::fabs(r.dev) >= policy.min_deviation;
  return r;
}

// The figure's evidence against a node, when it is an outlier on the bad side beyond both bounds,
// and so is the end of its steady-state interval `iv` nearest the median (when it has one).
// `label` names the figure in the text (default: the figure).
std::optional<FleetEvidence> outlier(const FigureKey& figure, double x, const FigureStats& st,
                                     const FleetPolicy& policy, const std::pair<double, double>* iv,
                                     const std::string& label = "") {
  const char* reference = st.calibrated ? "the calibrated baseline's median" : "the fleet's median";
  if (!std::isfinite(x) || st.median == 0) return std::nullopt;
  const Standing at = standing(figure, x, st, policy);
  if (!at.outlier) return std::nullopt;
  if (iv && !standing(figure, x < st.median ? iv->second : iv->first, st, policy).outlier)
    return std::nullopt;
  FleetEvidence e{figure, x, st.median, at.z, at.dev, ""};
  e.text = (label.empty() ? figure.text() : label) + " " + short_number(x) + " is " +
           short_number(std::fabs(at.dev) * 100) + " % " + (x < st.median ? "below" : "above") + " " +
           reference + " " + short_number(st.median) + " (modified z " +
           (std::isinf(at.z) ? std::string(at.z > 0 ? "+inf" : "-inf") : short_number(at.z)) + ")";
  if (iv)
    e.text += ", its whole interval [" + short_number(iv->first) + ", " + short_number(iv->second) + "] too";
  return e;
}

const std::pair<double, double>* interval_of(const FleetNode& n, const FigureKey& figure) {
  const auto it = n.intervals.find(figure);
  return it == n.intervals.end() ? nullptr : &it->second;
}

// The evidence counts against the node: it is a suspect, and its worst |z| orders the suspects.
void accuse(NodeScore& ns, FleetEvidence e) {
  ns.suspect = true;
  ns.worst_z = std::max(ns.worst_z, std::fabs(e.z));
  ns.evidence.push_back(std::move(e));
}

// A sweep's stalls, when it had any (their figures and each one's step and seconds).
void read_stalls(const std::string& key, const SweepRecord& sweep, FleetNode& n) {
  const double* lost = sweep.metric(std::string(to_string(Metric::TimeLostPct)));
  const double* seconds = sweep.metric(std::string(to_string(Metric::StallSeconds)));
  if (!lost || !seconds || sweep.stalls.empty()) return;
  std::string words;
  for (const auto& x : sweep.stalls)
    words += (words.empty() ? "" : ", ") + fmt::format("step {} {} s", x.step, short_number(x.seconds));
  n.stalls[key] = {*lost, *seconds, words};
}

// A passing node's stalls that cost more than the policy allows: evidence against it.
void stall_evidence(const FleetNode& n, const FleetPolicy& policy, NodeScore& ns) {
  for (const auto& [key, st] : n.stalls)
    if (st.time_lost_pct > policy.max_time_lost_pct && st.seconds >= policy.min_stall_seconds)
      accuse(ns, {FigureKey{key, std::string(to_string(Metric::TimeLostPct))}, st.time_lost_pct, 0, 0, 0,
                  fmt::format("{}: stalls cost {} s, {} % of its steps' time ({}; more than {} %)", key,
                              format_figure(Metric::StallSeconds, st.seconds),
                              format_figure(Metric::TimeLostPct, st.time_lost_pct), st.words,
                              short_number(policy.max_time_lost_pct))});
}

// The probe's facts the fleet compares (results.json provenance_fields).
constexpr const char* kFleetFacts[] = {"gpus",        "device_kind",     "platform_version",
                                       "jax_version", "maxtext_version", "cpu_model",
                                       "cpu_count",   "image_id"};
constexpr const char* kNotReported = "(not reported)";

// A node whose fact differs from what more than half of the nodes with results have.
void fact_evidence(const std::vector<FleetNode>& nodes, std::vector<NodeScore>& scores) {
  for (const char* fact : kFleetFacts) {
    std::map<std::string, std::size_t> count;
    std::size_t with = 0;
    auto value = [&](const FleetNode& n) {
      const auto it = n.facts.find(fact);
      return it == n.facts.end() ? std::string(kNotReported) : it->second;
    };
    for (const auto& n : nodes)
      if (n.status && (n.facts.count(fact) || n.status == Outcome::Pass)) ++count[value(n)], ++with;
    const auto top = std::max_element(count.begin(), count.end(),
                                      [](const auto& a, const auto& b) { return a.second < b.second; });
    // No majority, or a majority that reports nothing: nothing to say.
    if (top == count.end() || 2 * top->second <= with || top->first == kNotReported) continue;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const auto v = value(nodes[i]);
      if (!nodes[i].status || v == top->first || (v == kNotReported && nodes[i].status != Outcome::Pass))
        continue;
      scores[i].suspect = true;
      scores[i].evidence.push_back({FigureKey::probe(fact), 0, 0, 0, 0,
                                    std::string("probe: ") + fact + " is " +
                                        (v == kNotReported ? v : "'" + v + "'") + " where " +
                                        std::to_string(top->second) + " of " + std::to_string(with) +
                                        " nodes have '" + top->first + "'"});
    }
  }
}

// A passing node's steady-state estimates against the calibrated baseline.
void baseline_evidence(const FleetNode& n, const FleetPolicy& policy, NodeScore& ns) {
  for (const auto& [figure, st] : policy.baseline) {
    const auto it = n.steady.find(figure);
    if (it == n.steady.end()) continue;
    if (auto e = outlier(figure, it->second, st, policy, interval_of(n, figure),
                         figure.text() + " (steady state)"))
      accuse(ns, std::move(*e));
  }
}

}  // namespace

bool is_fleet_metric(const std::string& metric) {
  const auto* m = find_metric(metric);  // the catalog row says (fleet_scored)
  return m && m->fleet_scored;
}

std::vector<std::string> FleetScore::suspects() const {
  std::vector<std::string> v;
  for (const auto& n : nodes)
    if (n.suspect) v.push_back(n.name);
  return v;
}

std::vector<std::string> FleetScore::healthy() const {
  std::vector<std::string> v;
  for (const auto& n : nodes)
    if (!n.suspect) v.push_back(n.name);
  return v;
}

namespace {

// A figure's median and median absolute deviation over the fleet's values (and a rate's or a
// time's of log(x / median), when every value is above 0): what a node is scored against
// (score_fleet) and what the detection power replays (flags_slowed).
FigureStats stats_of(const FigureKey& figure, const std::vector<double>& v) {
  FigureStats st;
  st.median = median_of(v);
  std::vector<double> dev, log_dev;
  for (const double x : v) dev.push_back(std::fabs(x - st.median));
  st.mad = median_of(dev);
  st.nodes = v.size();
  if (is_ratio_scale(figure.metric) && st.median > 0 &&
      std::all_of(v.begin(), v.end(), [](double x) { return x > 0; })) {
    for (const double x : v) log_dev.push_back(std::fabs(std::log(x / st.median)));
    st.log_mad = median_of(log_dev);
  }
  return st;
}

}  // namespace

FleetScore score_fleet(const std::vector<FleetNode>& nodes, const FleetPolicy& policy) {
  FleetScore s;
  std::map<FigureKey, std::vector<double>> values;
  for (const auto& n : nodes) {
    if (n.status != Outcome::Pass) continue;
    ++s.scored;
    for (const auto& [figure, v] : n.figures)
      if (std::isfinite(v)) values[figure].push_back(v);
  }
  s.too_small = s.scored < policy.min_fleet;
  for (const auto& [figure, v] : values) s.figures[figure] = stats_of(figure, v);
  for (const auto& n : nodes) {
    NodeScore ns;
    ns.name = n.name;
    if (n.status != Outcome::Pass) {
      ns.suspect = true;
      ns.worst_z = std::numeric_limits<double>::infinity();
      const std::string what = !n.status ? "left no results" : "its run ended " + to_string(*n.status);
      ns.evidence.push_back(
          {FigureKey::kind("run"), 0, 0, 0, 0, what + (n.failure.empty() ? "" : ": " + n.failure)});
    } else {
      if (!s.too_small)
        for (const auto& [figure, x] : n.figures)
          if (const auto& st = s.figures[figure]; policy.scores_figure(st.nodes))
            if (auto e = outlier(figure, x, st, policy, interval_of(n, figure))) accuse(ns, std::move(*e));
      baseline_evidence(n, policy, ns);
      stall_evidence(n, policy, ns);
    }
    s.nodes.push_back(std::move(ns));
  }
  fact_evidence(nodes, s.nodes);
  // A suspect's telemetry says why, in words: the cause beside the symptom.
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (s.nodes[i].suspect && !nodes[i].telemetry.empty())
      s.nodes[i].evidence.push_back(
          {FigureKey::kind("telemetry"), 0, 0, 0, 0, "telemetry: " + nodes[i].telemetry});
  std::stable_sort(s.nodes.begin(), s.nodes.end(), [](const NodeScore& a, const NodeScore& b) {
    if (a.suspect != b.suspect) return a.suspect;
    if (a.worst_z != b.worst_z) return a.worst_z > b.worst_z;
    return a.name < b.name;
  });
  return s;
}

namespace {

// The noise on the unlucky side of a node's estimate, met with probability 1 - `power`: z(power)
// standard errors, a standard error being the half-width of its `interval_confidence` interval
// over that interval's z. One rule for the stated power and the precision a target asks.
double unlucky_noise(double half_width, double interval_confidence, double power) {
  return normal_quantile(power) * half_width / normal_quantile((1 + interval_confidence) / 2);
}

// Would the rule flag a node `slowdown` slower than the median, measured `noise` worse than its
// truth, with `fleet`'s node `replace` being it? (The fleet's median and MAD include it.)
bool flags_slowed(const FigureKey& figure, std::vector<double> fleet, std::size_t replace, double slowdown,
                  double noise, double half_width, const FleetPolicy& policy) {
  const int side = bad_side(figure.metric) >= 0 ? 1 : -1;  // +1: lower is worse
  const double m0 = median_of(fleet);
  const double measured = m0 * (1 - side * slowdown) + side * noise;  // the unlucky side of its noise
  fleet[replace] = measured;
  const FigureStats st = stats_of(figure, fleet);
  // Its interval's end nearest the median must be beyond both bounds too (outlier()).
  return standing(figure, measured, st, policy).outlier &&
         standing(figure, measured + side * half_width, st, policy).outlier;
}

}  // namespace

std::optional<DetectionPower> detection_power(const std::vector<FleetNode>& nodes, const FigureKey& figure,
                                              const FleetPolicy& policy, double interval_confidence,
                                              double power) {
  std::vector<double> values, halves;
  for (const auto& n : nodes) {
    if (n.status != Outcome::Pass) continue;
    const auto it = n.figures.find(figure);
    if (it == n.figures.end() || !std::isfinite(it->second)) continue;
    values.push_back(it->second);
    if (const auto* iv = interval_of(n, figure)) halves.push_back((iv->second - iv->first) / 2);
  }
  if (!policy.scores_figure(values.size())) return std::nullopt;
  DetectionPower d{figure, 0, median_of(values), halves.empty() ? 0.0 : median_of(halves), values.size()};
  const double noise = unlucky_noise(d.half_width, interval_confidence, power);
  // Slowing the fastest node moves the median most (one rank) and the median node least: the
  // power is the worse of the two, each the least slowdown the rule flags (bisection: flagging
  // only grows with the slowdown).
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  const int side = bad_side(figure.metric) >= 0 ? 1 : -1;
  const std::size_t best = side > 0 ? sorted.size() - 1 : 0;
  for (const std::size_t replace : {best, sorted.size() / 2}) {
    double lo = 0, hi = side > 0 ? 1.0 : 10.0;
    if (!flags_slowed(figure, sorted, replace, hi, noise, d.half_width, policy)) return std::nullopt;
    for (int k = 0; k < 40; ++k) {
      const double mid = (lo + hi) / 2;
      (flags_slowed(figure, sorted, replace, mid, noise, d.half_width, policy) ? hi : lo) = mid;
    }
    d.slowdown = std::max(d.slowdown, hi);
  }
  return d;
}

double interval_half_width_for(double slowdown, const FleetPolicy& policy, double interval_confidence,
                               double power) {
  if (!(slowdown > policy.min_deviation)) return 0;
  // slowdown = min_deviation + h (the interval's near end) + the unlucky noise of half-width h.
  return (slowdown - policy.min_deviation) / (1 + unlucky_noise(1, interval_confidence, power));
}

namespace {

// What the run's setup found (results.json provenance): the probe's facts, and as figures the GPU
// count and the least free HBM of the node's GPUs (the vendor tool's), and JAX's device count.
void read_probe(const Results& r, FleetNode& n) {
  const auto fields = r.provenance_fields.value_or(nlohmann::ordered_json::object());
  for (const char* fact : kFleetFacts)
    if (fields.contains(fact))
      n.facts[fact] = fields[fact].is_string() ? fields[fact].get<std::string>() : fields[fact].dump();
  const auto& pv = r.provenance;
  const auto jax_nodes = pv.value("nodes", nlohmann::ordered_json::array());
  if (!jax_nodes.empty() && jax_nodes[0].value("local_devices", nlohmann::ordered_json()).is_number())
    n.figures[FigureKey::probe("jax_devices")] = jax_nodes[0]["local_devices"].get<double>();
  const auto gpus = pv.value("gpus", nlohmann::ordered_json::array());
  if (gpus.empty()) return;
  double count = 0, least_free = std::numeric_limits<double>::infinity();
  for (const auto& node : gpus)
    for (const auto& d : node.value("devices", nlohmann::ordered_json::array())) {
      ++count;
      if (d.value("free_gb", nlohmann::ordered_json()).is_number())
        least_free = std::min(least_free, d["free_gb"].get<double>());
    }
  n.figures[FigureKey::probe("gpu_count")] = count;
  if (std::isfinite(least_free)) n.figures[FigureKey::probe("hbm_free_gb")] = least_free;
}

// A sweep's steps, telemetry words, fleet figures, stalls and steady-state estimates.
void read_sweep_figures(const std::string& key, const SweepRecord& sweep, FleetNode& n) {
  if (sweep.status != SweepStatus::NotRun)
    n.steps += sweep.early_stop ? sweep.early_stop->steps_run : sweep.steps;
  for (const auto& rn : sweep.run.nodes)
    if (rn.telemetry)
      if (const auto why = explain_telemetry(*rn.telemetry);
          !why.empty() && n.telemetry.find(why) == std::string::npos)
        n.telemetry += (n.telemetry.empty() ? "" : "; ") + key + ": " + why;
  for (const auto& [metric, v] : sweep.metrics)
    if (!std::isnan(v) && is_fleet_metric(metric)) n.figures[{key, metric}] = v;
  read_stalls(key, sweep, n);
  if (!sweep.steady_state) return;
  for (const auto& [metric, iv] : sweep.steady_state->intervals)
    if (!std::isnan(iv.estimate)) {
      const FigureKey figure{key, metric};
      n.steady[figure] = iv.estimate;
      if (std::isfinite(iv.lo) && std::isfinite(iv.hi)) n.intervals[figure] = {iv.lo, iv.hi};
      // The figure the node's own verdict used, not the point figure beside it.
      if (is_fleet_metric(metric)) n.figures[figure] = iv.estimate;
    }
}

}  // namespace

FleetNode read_fleet_node(const std::string& name, const std::filesystem::path& results_json) {
  FleetNode n;
  n.name = name;
  if (!std::filesystem::exists(results_json)) {
    n.failure = "no " + results_json.string();
    return n;
  }
  Results r;
  try {
    r = read_results(results_json);
  } catch (const std::exception& e) {
    n.failure = results_json.string() + " does not parse: " + e.what();
    return n;
  }
  n.status = r.status();
  for (const auto& st : r.stages)
    if (n.failure.empty() && is_unverified(st.outcome)) n.failure = st.test + ": " + st.message;
  // One line: the reasons go into a line per node (suspect_nodes.txt).
  for (std::size_t at; (at = n.failure.find('\n')) != std::string::npos;)
    n.failure.replace(at, 1, at + 1 < n.failure.size() ? " / " : "");
  n.phases = session_phases(r);
  for (const auto& [key, sweep] : r.sweeps) read_sweep_figures(key, sweep, n);
  read_probe(r, n);
  return n;
}

std::map<FigureKey, FigureStats> read_fleet_baseline(const std::filesystem::path& file) {
  const std::string name = file.string();
  // The calibration file is a threshold file: read (and its gates checked) as each node's
  // --thresholds will be, before any node runs.
  const ThresholdFile thresholds = load_thresholds(file);
  std::map<FigureKey, FigureStats> out;
  if (thresholds.calibration)
    for (const auto& [sweep, metrics] : thresholds.calibration->statistics)
      for (const auto& [metric, st] : metrics) {
        FigureStats& b = out[{sweep, metric}] = {st.median, st.mad_sigma / 1.4826, st.n, true};
        // The log's MAD, to first order the MAD relative to the median (the repeats agree closely).
        if (is_ratio_scale(metric) && b.median > 0) b.log_mad = b.mad / b.median;
      }
  if (out.empty())
    throw ConfigError(
        name, "/_calibration/statistics", "no calibrated statistics (not a calibration file?)",
        "calibrate a known-good node first: cvs calibrate --config CONFIG, then pass the file it writes");
  return out;
}

std::string fleet_reasons(const NodeScore& node) {
  std::string out;
  for (const auto& e : node.evidence) out += (out.empty() ? "" : "; ") + e.text;
  return out;
}

namespace {

nlohmann::ordered_json fleet_json(const FleetScore& score, const FleetPolicy& policy) {
  nlohmann::ordered_json j;
  j["schema_version"] = kFleetFileSchemaVersion;
  j["policy"] = {
      {"max_z", policy.max_z}, {"min_deviation", policy.min_deviation}, {"min_fleet", policy.min_fleet}};
  j["scored_nodes"] = score.scored;
  j["too_small"] = score.too_small;
  j["suspects"] = score.suspects();
  j["healthy"] = score.healthy();
  auto figures = nlohmann::ordered_json::object();
  for (const auto& [f, st] : score.figures)
    figures[f.text()] = {
        {"median", st.median}, {"mad", st.mad}, {"log_mad", st.log_mad}, {"nodes", st.nodes}};
  j["figures"] = figures;
  auto nodes = nlohmann::ordered_json::array();
  for (const auto& n : score.nodes) {
    auto ev = nlohmann::ordered_json::array();
    for (const auto& e : n.evidence)
      ev.push_back({{"figure", e.figure.text()},
                    {"value", e.value},
                    {"median", e.median},
                    {"z", e.z},
                    {"deviation", e.deviation},
                    {"text", e.text}});
    nodes.push_back({{"name", n.name}, {"suspect", n.suspect}, {"evidence", ev}});
  }
  j["nodes"] = nodes;
  return j;
}

}  // namespace

namespace {

FigureKey figure_of_text(const std::string& text) {  // FigureKey::text() read back
  const auto space = text.rfind(' ');
  return space == std::string::npos ? FigureKey::kind(text)
                                    : FigureKey{text.substr(0, space), text.substr(space + 1)};
}

}  // namespace

FleetFile read_fleet_file(const std::filesystem::path& file) {
  const std::string name = file.string();
  std::ifstream in(file);
  if (!in)
    throw ConfigError(name, "", "cannot read the fleet run's file", "pass the folder a fleet run wrote");
  const auto j = nlohmann::ordered_json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw ConfigError(name, "", "is not JSON", "pass the fleet.json a fleet run wrote");
  static const char* kFix = "pass the fleet.json a fleet run wrote";
  const JsonIn root(j, "", name, kFix);
  FleetFile f;
  f.schema_version = root.integer<int>("schema_version", 1);  // a file before the key: 1
  if (f.schema_version < 1 || f.schema_version > kFleetFileSchemaVersion)
    root.fail("/schema_version", "is " + std::to_string(f.schema_version) +
                                     "; this cvs reads fleet.json up to schema " +
                                     std::to_string(kFleetFileSchemaVersion) +
                                     " (record it with the cvs-maxtext that wrote it, or a newer one)");
  if (root.has("policy")) {
    const auto p = root.object("policy");
    f.policy.max_z = p.num("max_z", f.policy.max_z);
    f.policy.min_deviation = p.num("min_deviation", f.policy.min_deviation);
    f.policy.min_fleet = p.integer<std::size_t>("min_fleet", f.policy.min_fleet);
  }
  f.score.scored = root.integer<std::size_t>("scored_nodes", 0);
  f.score.too_small = root.boolean("too_small", false);
  if (root.has("figures"))
    for (const auto& [text, st] : root.at("figures").items()) {
      (void)st;
      const auto s = root.object("figures").object(text.c_str());
      f.score.figures[figure_of_text(text)] = {s.req_num("median"), s.req_num("mad"),
                                               s.integer<std::size_t>("nodes", 0), false, s.num("log_mad")};
    }
  (void)root.at("nodes");
  for (std::size_t i = 0; i < root.array("nodes").size(); ++i) {
    const auto n = root.element("nodes", i);
    NodeScore ns;
    ns.name = n.req_str("name");
    ns.suspect = n.req_bool("suspect");
    for (std::size_t k = 0; k < n.array("evidence").size(); ++k) {
      const auto e = n.element("evidence", k);
      ns.evidence.push_back({figure_of_text(e.req_str("figure")), e.num("value"), e.num("median"), e.num("z"),
                             e.num("deviation"), e.req_str("text")});
    }
    f.score.nodes.push_back(std::move(ns));
  }
  return f;
}

void write_fleet_outputs(const std::filesystem::path& dir, const FleetScore& score,
                         const std::map<std::string, std::string>& host_of, const FleetPolicy& policy) {
  std::string suspects, healthy;
  std::vector<std::string> excluded;
  for (const auto& n : score.nodes) {
    if (!n.suspect) {
      healthy += n.name + "\n";
      continue;
    }
    suspects += n.name + "\t" + fleet_reasons(n) + "\n";
    excluded.push_back(n.name);
  }
  write_file_whole(dir / "suspect_nodes.txt", suspects);
  write_file_whole(dir / "healthy_nodes.txt", healthy);
  write_slurm_exclude(dir / "slurm_exclude.txt", host_of, excluded);
  write_file_whole(dir / "fleet.json", fleet_json(score, policy).dump(2) + "\n");
}

}  // namespace cvs
