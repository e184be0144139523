#include "cvs/fleet/fleet_pairs.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "cvs/base/format.hpp"
#include "cvs/base/text.hpp"
#include "cvs/statistics/metrics.hpp"
#include "cvs/statistics/step_stats.hpp"

namespace cvs {
namespace {

// Batches of indices into `pairs` in which no node appears twice (greedy: each pair in the first
// batch it fits).
std::vector<std::vector<std::size_t>> batch_indices(const std::vector<PairRun>& pairs) {
  std::vector<std::vector<std::size_t>> batches;
  std::vector<std::set<std::string>> busy;
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const auto& p = pairs[k];
    std::size_t i = 0;
    while (i < batches.size() && (busy[i].count(p.a) || busy[i].count(p.b))) ++i;
    if (i == batches.size()) {
      batches.emplace_back();
      busy.emplace_back();
    }
    batches[i].push_back(k);
    busy[i].insert(p.a);
    busy[i].insert(p.b);
  }
  return batches;
}

std::string describe(const PairRun& r, double reference) {
  const std::string other = r.b;
  if (!r.ran())
    return "with " + other + " the run " + (!r.status ? "left no results" : "ended " + to_string(*r.status)) +
           (r.failure.empty() ? "" : " (" + r.failure + ")");
  return "with " + other + " " + short_number(r.step_ms) + " ms a step, " +
         short_number((r.step_ms / reference - 1) * 100) + " % above the pairs' reference";
}

// The run as seen from `node` (its partner in b).
PairRun seen_from(const PairRun& r, const std::string& node) {
  PairRun v = r;
  if (r.b == node) std::swap(v.a, v.b);
  return v;
}

void run_in_batches(std::vector<PairRun> pairs, const PairRunner& run, PairsResult& out) {
  for (auto& batch : disjoint_batches(pairs)) {
    run(batch);
    out.runs.insert(out.runs.end(), batch.begin(), batch.end());
  }
}

bool is_slow(const PairRun& r, double reference, double min_deviation) {
  return !r.ran() || !(reference > 0) || r.step_ms > reference * (1 + min_deviation);
}

// Marks the runs from `first` on slow or not; a slow run that ran runs once more and keeps the
// faster of its two step times (a fault persists, a burst of noise on a shared host does not).
void mark_and_confirm(std::size_t first, const PairRunner& run, PairsResult& out) {
  std::vector<std::size_t> again_at;
  std::vector<PairRun> again;
  for (std::size_t i = first; i < out.runs.size(); ++i) {
    auto& r = out.runs[i];
    r.slow = is_slow(r, out.reference_ms, out.min_deviation);
    if (r.slow && r.ran()) {
      again_at.push_back(i);
      again.push_back(r);
      again.back().tries = 2;  // a run of its own: the runner keeps it apart from the first try's
    }
  }
  for (const auto& idx : batch_indices(again)) {
    std::vector<PairRun> batch;
    for (auto k : idx) batch.push_back(again[k]);
    run(batch);
    for (std::size_t j = 0; j < idx.size(); ++j) {
      const auto& retry = batch[j];
      auto& r = out.runs[again_at[idx[j]]];
      r.first_ms = r.step_ms;
      r.tries = 2;
      r.seconds = retry.seconds;  // the retry began as a copy: both runs' time and steps
      r.steps = retry.steps;
      if (retry.ran()) r.step_ms = std::min(r.step_ms, retry.step_ms);
      r.slow = is_slow(r, out.reference_ms, out.min_deviation);
    }
  }
}

// Median step time of the faster half of the runs that ran.
double reference_of(const std::vector<PairRun>& runs) {
  std::vector<double> t;
  for (const auto& r : runs)
    if (r.ran()) t.push_back(r.step_ms);
  if (t.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(t.begin(), t.end());
  t.resize((t.size() + 1) / 2);
  return percentile(t, 50);
}

// Round 2 for the slow pairs of round 1, then the attribution.
void attribute(const std::vector<std::string>& good, const PairRunner& run, PairsResult& out) {
  std::vector<PairRun> round1 = out.runs, again;
  std::size_t next_good = 0;
  for (const auto& r : round1) {
    if (!r.slow || good.empty()) continue;
    for (const auto& node : {r.a, r.b}) {
      PairRun p;
      p.a = good[next_good++ % good.size()];
      p.b = node;
      p.round = 2;
      again.push_back(p);
    }
  }
  const std::size_t first_again = out.runs.size();
  run_in_batches(again, run, out);
  mark_and_confirm(first_again, run, out);
  std::set<std::string> seen;
  for (const auto& r : round1) {
    if (!r.slow) continue;
    bool either = false;
    for (const auto& node : {r.a, r.b}) {
      std::vector<PairRun> mine;
      for (const auto& x : out.runs)
        if (x.a == node || x.b == node) mine.push_back(seen_from(x, node));
      const bool all_slow = std::all_of(mine.begin(), mine.end(), [](const PairRun& x) { return x.slow; });
      if (!all_slow) continue;
      either = true;
      if (!seen.insert(node).second) continue;
      std::string text = good.empty() ? "pairs (no known-good node to re-pair it with): "
                                      : "pairs: every two-node run with it was slow: ";
      for (std::size_t k = 0; k < mine.size(); ++k)
        text += (k ? "; " : "") + describe(mine[k], out.reference_ms);
      out.suspects.emplace_back(node, text);
    }
    if (!either) out.slow_links.emplace_back(r.a, r.b);
  }
}

}  // namespace

std::vector<std::vector<PairRun>> disjoint_batches(const std::vector<PairRun>& pairs) {
  std::vector<std::vector<PairRun>> batches;
  for (const auto& idx : batch_indices(pairs)) {
    batches.emplace_back();
    for (auto i : idx) batches.back().push_back(pairs[i]);
  }
  return batches;
}

std::optional<LinkDetectionPower> link_detection_power(const PairsResult& pairs, double interval_confidence,
                                                       double power) {
  std::vector<double> halves;
  for (const auto& r : pairs.runs)
    if (r.round == 1 && r.ran() && std::isfinite(r.half_width_ms) && r.half_width_ms >= 0)
      halves.push_back(r.half_width_ms);
  if (halves.empty() || !(pairs.reference_ms > 0)) return std::nullopt;
  LinkDetectionPower d{0, pairs.reference_ms, percentile(halves, 50), halves.size()};
  const double sigma = d.half_width_ms / normal_quantile((1 + interval_confidence) / 2);
  // Slow on its run and on its run again, each on its own noise: each with probability sqrt(power).
  d.slowdown = pairs.min_deviation + normal_quantile(std::sqrt(power)) * sigma / pairs.reference_ms;
  return d;
}

PairsResult localise_links(const std::vector<std::string>& nodes, const PairRunner& run,
                           double min_deviation) {
  PairsResult out;
  out.min_deviation = min_deviation;
  if (nodes.size() < 2) return out;
  std::vector<PairRun> round1;
  auto pair = [&](const std::string& a, const std::string& b) {
    round1.emplace_back();
    round1.back().a = a;
    round1.back().b = b;
  };
  for (std::size_t i = 0; i + 1 < nodes.size(); i += 2) pair(nodes[i], nodes[i + 1]);
  if (nodes.size() % 2) pair(nodes.front(), nodes.back());
  run_in_batches(round1, run, out);
  out.reference_ms = reference_of(out.runs);
  mark_and_confirm(0, run, out);
  std::set<std::string> slow_nodes;
  for (const auto& r : out.runs)
    if (r.slow) slow_nodes.insert({r.a, r.b});
  std::vector<std::string> good;
  for (const auto& n : nodes)
    if (!slow_nodes.count(n)) good.push_back(n);
  attribute(good, run, out);
  return out;
}

void apply_pair_findings(FleetScore& score, const PairsResult& pairs) {
  for (const auto& [node, text] : pairs.suspects)
    for (auto& n : score.nodes)
      if (n.name == node) {
        n.suspect = true;
        n.evidence.push_back({FigureKey::kind("pairs"), 0, pairs.reference_ms, 0, 0, text});
      }
  std::stable_sort(score.nodes.begin(), score.nodes.end(), [](const NodeScore& a, const NodeScore& b) {
    return a.suspect != b.suspect ? a.suspect : false;
  });
}

nlohmann::ordered_json pairs_json(const PairsResult& pairs) {
  nlohmann::ordered_json j;
  j["schema_version"] = kPairsFileSchemaVersion;
  j["rule"] =
      "round 1: the nodes in pairs; reference = median step time of the faster half of the pairs; slow = "
      "failed "
      "or more than min_deviation above it. Round 2: each node of a slow pair with a known-good node. A node "
      "whose every pair was slow is a suspect.";
  j["reference_step_ms"] = std::isfinite(pairs.reference_ms) ? nlohmann::ordered_json(pairs.reference_ms)
                                                             : nlohmann::ordered_json(nullptr);
  j["min_deviation"] = pairs.min_deviation;
  auto runs = nlohmann::ordered_json::array();
  for (const auto& r : pairs.runs)
    runs.push_back(
        {{"round", r.round},
         {"nodes", {r.a, r.b}},
         {"status", to_string(r.status, "")},
         {"sweep", r.sweep},
         {"step_time_p50_ms",
          std::isfinite(r.step_ms) ? nlohmann::ordered_json(r.step_ms) : nlohmann::ordered_json(nullptr)},
         {"step_time_half_width_ms", std::isfinite(r.half_width_ms) ? nlohmann::ordered_json(r.half_width_ms)
                                                                    : nlohmann::ordered_json(nullptr)},
         {"tries", r.tries},
         {"first_try_ms",
          std::isfinite(r.first_ms) ? nlohmann::ordered_json(r.first_ms) : nlohmann::ordered_json(nullptr)},
         {"slow", r.slow},
         {"failure", r.failure}});
  j["runs"] = runs;
  auto sus = nlohmann::ordered_json::array();
  for (const auto& [n, t] : pairs.suspects) sus.push_back({{"node", n}, {"evidence", t}});
  j["suspects"] = sus;
  auto links = nlohmann::ordered_json::array();
  for (const auto& [a, b] : pairs.slow_links) links.push_back({a, b});
  j["slow_links"] = links;
  return j;
}

void write_pairs_outputs(const std::filesystem::path& dir, const PairsResult& pairs) {
  write_file_whole(dir / "pairs.json", pairs_json(pairs).dump(2) + "\n");
  std::string links;
  for (const auto& [a, b] : pairs.slow_links)
    links += a + "\t" + b + "\tslow together, each fast with a known-good node\n";
  write_file_whole(dir / "slow_links.txt", links);
}

}  // namespace cvs
