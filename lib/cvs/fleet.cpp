#include "cvs/fleet.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "cvs/format.hpp"
#include "cvs/metric_catalog.hpp"

namespace cvs {
namespace {

constexpr double kMadToZ = 0.6745;  // modified z-score: 0.6745 (x - median) / MAD

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string metric_of(const std::string& figure) {
  const auto sp = figure.rfind(' ');
  return sp == std::string::npos ? figure : figure.substr(sp + 1);
}

// +1: lower is worse (throughput), -1: higher is worse (step time), 0: either way (loss).
int bad_side(const std::string& metric) {
  if (metric == "final_loss") return 0;
  const auto* m = find_metric(metric);
  return m && m->better == Better::Higher ? 1 : -1;
}

// The figure's evidence against a node, when it is an outlier on the bad side beyond both bounds.
std::optional<FleetEvidence> outlier(const std::string& figure, double x, const FigureStats& st,
                                     const FleetPolicy& policy) {
  if (!std::isfinite(x) || st.median == 0) return std::nullopt;
  const double dev = (x - st.median) / std::fabs(st.median);
  const double z =
      st.mad > 0
          ? kMadToZ * (x - st.median) / st.mad
          : (x == st.median ? 0 : std::copysign(std::numeric_limits<double>::infinity(), x - st.median));
  const int side = bad_side(metric_of(figure));
  const bool bad = side == 0 ? true : (side > 0 ? z < 0 : z > 0);
  if (!bad || std::fabs(z) <= policy.max_z || std::fabs(dev) < policy.min_deviation) return std::nullopt;
  FleetEvidence e{figure, x, st.median, z, dev, ""};
  e.text = figure + " " + short_number(x) + " is " + short_number(std::fabs(dev) * 100) + " % " +
           (x < st.median ? "below" : "above") + " the fleet's median " + short_number(st.median) +
           " (modified z " + (std::isinf(z) ? std::string(z > 0 ? "+inf" : "-inf") : short_number(z)) + ")";
  return e;
}

}  // namespace

bool is_fleet_metric(const std::string& metric) {
  // One figure per question: tokens/s (TFLOP/s and the totals are the same figure scaled), the
  // median step time (the mean follows the throughput; p95 and the last-10 averages of a short
  // run are its noisiest figures), and the loss.
  return metric == "tokens_per_sec_per_gpu" || metric == "step_time_p50_ms" || metric == "final_loss";
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

FleetScore score_fleet(const std::vector<FleetNode>& nodes, const FleetPolicy& policy) {
  FleetScore s;
  std::map<std::string, std::vector<double>> values;
  for (const auto& n : nodes) {
    if (n.status != "PASS") continue;
    ++s.scored;
    for (const auto& [figure, v] : n.figures)
      if (std::isfinite(v)) values[figure].push_back(v);
  }
  s.too_small = s.scored < policy.min_fleet;
  for (const auto& [figure, v] : values) {
    FigureStats st;
    st.median = median_of(v);
    std::vector<double> dev;
    for (double x : v) dev.push_back(std::fabs(x - st.median));
    st.mad = median_of(dev);
    st.nodes = v.size();
    s.figures[figure] = st;
  }
  for (const auto& n : nodes) {
    NodeScore ns;
    ns.name = n.name;
    if (n.status != "PASS") {
      ns.suspect = true;
      ns.worst_z = std::numeric_limits<double>::infinity();
      const std::string what = n.status.empty() ? "left no results" : "its run ended " + n.status;
      ns.evidence.push_back({"run", 0, 0, 0, 0, what + (n.failure.empty() ? "" : ": " + n.failure)});
    } else if (!s.too_small) {
      for (const auto& [figure, x] : n.figures)
        if (auto e = outlier(figure, x, s.figures[figure], policy)) {
          ns.suspect = true;
          ns.worst_z = std::max(ns.worst_z, std::fabs(e->z));
          ns.evidence.push_back(*e);
        }
    }
    s.nodes.push_back(std::move(ns));
  }
  std::stable_sort(s.nodes.begin(), s.nodes.end(), [](const NodeScore& a, const NodeScore& b) {
    if (a.suspect != b.suspect) return a.suspect;
    if (a.worst_z != b.worst_z) return a.worst_z > b.worst_z;
    return a.name < b.name;
  });
  return s;
}

FleetNode read_fleet_node(const std::string& name, const std::filesystem::path& results_json) {
  FleetNode n;
  n.name = name;
  std::ifstream in(results_json);
  if (!in) {
    n.failure = "no " + results_json.string();
    return n;
  }
  nlohmann::json r;
  try {
    r = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    n.failure = results_json.string() + " does not parse: " + e.what();
    return n;
  }
  n.status = r.value("status", std::string("ERROR"));
  const auto stages = r.value("stages", nlohmann::json::array());
  const auto sweeps = r.value("sweeps", nlohmann::json::object());
  for (const auto& st : stages) {
    const auto outcome = st.value("outcome", std::string());
    if (n.failure.empty() && (outcome == "FAIL" || outcome == "ERROR" || outcome == "INCONCLUSIVE"))
      n.failure = st.value("test", std::string()) + ": " + st.value("message", std::string());
  }
  // One line: the reasons go into a line per node (suspect_nodes.txt).
  for (std::size_t at; (at = n.failure.find('\n')) != std::string::npos;)
    n.failure.replace(at, 1, at + 1 < n.failure.size() ? " / " : "");
  for (const auto& [key, sweep] : sweeps.items()) {
    const auto metrics = sweep.value("metrics", nlohmann::json::object());
    for (const auto& [metric, v] : metrics.items())
      if (v.is_number() && is_fleet_metric(metric)) n.figures[key + " " + metric] = v.get<double>();
  }
  return n;
}

std::string fleet_reasons(const NodeScore& node) {
  std::string out;
  for (const auto& e : node.evidence) out += (out.empty() ? "" : "; ") + e.text;
  return out;
}

namespace {

// The cluster file with only the healthy nodes, the first of them the head.
nlohmann::ordered_json healthy_cluster(const Cluster& cluster, const std::vector<std::string>& healthy) {
  nlohmann::ordered_json raw = nlohmann::ordered_json::object();
  if (!cluster.file.empty()) {
    std::ifstream in(cluster.file);
    raw = nlohmann::ordered_json::parse(in);
  }
  auto nodes = nlohmann::ordered_json::array();
  for (const auto& name : healthy)
    for (const auto& node : cluster.nodes)
      if (node.name == name) nodes.push_back(node_to_json(node));
  raw["nodes"] = nodes;
  raw["head"] = healthy.front();
  return raw;
}

void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

nlohmann::ordered_json fleet_json(const FleetScore& score, const FleetPolicy& policy) {
  nlohmann::ordered_json j;
  j["policy"] = {
      {"max_z", policy.max_z}, {"min_deviation", policy.min_deviation}, {"min_fleet", policy.min_fleet}};
  j["scored_nodes"] = score.scored;
  j["too_small"] = score.too_small;
  j["suspects"] = score.suspects();
  j["healthy"] = score.healthy();
  auto figures = nlohmann::ordered_json::object();
  for (const auto& [f, st] : score.figures)
    figures[f] = {{"median", st.median}, {"mad", st.mad}, {"nodes", st.nodes}};
  j["figures"] = figures;
  auto nodes = nlohmann::ordered_json::array();
  for (const auto& n : score.nodes) {
    auto ev = nlohmann::ordered_json::array();
    for (const auto& e : n.evidence)
      ev.push_back({{"figure", e.figure},
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

void write_fleet_outputs(const std::filesystem::path& dir, const FleetScore& score, const Cluster& cluster,
                         const FleetPolicy& policy) {
  std::string suspects, healthy, exclude;
  for (const auto& n : score.nodes) {
    if (!n.suspect) {
      healthy += n.name + "\n";
      continue;
    }
    suspects += n.name + "\t" + fleet_reasons(n) + "\n";
    for (const auto& node : cluster.nodes)
      if (node.name == n.name) exclude += (exclude.empty() ? "" : ",") + node.host;
  }
  write_text(dir / "suspect_nodes.txt", suspects);
  write_text(dir / "healthy_nodes.txt", healthy);
  write_text(dir / "slurm_exclude.txt", exclude.empty() ? "" : "--exclude=" + exclude + "\n");
  const auto ok = score.healthy();
  std::error_code ec;
  std::filesystem::remove(dir / "healthy_cluster.json", ec);
  if (!ok.empty()) write_text(dir / "healthy_cluster.json", healthy_cluster(cluster, ok).dump(2) + "\n");
  write_text(dir / "fleet.json", fleet_json(score, policy).dump(2) + "\n");
}

}  // namespace cvs
