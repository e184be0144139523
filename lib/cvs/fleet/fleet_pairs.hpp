// Fleet pairs (jaxmaxtext_fleet --pairs): two-node distributed runs over the healthy nodes to
// find a slow link, which the per-node runs (no collectives) cannot see.
//
//  Round 1: the nodes in pairs, (n0,n1), (n2,n3), ...; an odd last node with n0. The pairs'
//           reference is the median step time of the faster half of the pairs that ran (robust
//           to up to half of them slow); a pair is slow when its run failed or its median step
//           time is more than min_deviation above the reference. A slow run that ran runs once
//           more and keeps the faster of its two times: a fault persists, a burst of noise from a
//           neighbour on a shared host does not.
//  Round 2: each node of a slow pair with a known-good node (one of a fast pair), against the same
//           reference. A node whose every pair was slow is a suspect (its link); a slow pair whose
//           two nodes are fast with others is a slow link between the two, reported as such.
// At most 2 x (ceil(N/2) + 2 x slow pairs) <= 4N runs. Runs in one batch share no node (a node is in
// one run at a time); the runner runs a batch at once.
#pragma once

#include <filesystem>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cvs/fleet/fleet.hpp"

namespace cvs {

struct PairRun {
  std::string a, b;  // a is the head (the JAX coordinator)
  int round = 1;
  std::optional<Outcome> status;  // the run's outcome; none when it left no results
  std::string failure;            // why, when it did not pass
  std::string sweep;              // the sweep the figure is from
  double step_ms = std::numeric_limits<double>::quiet_NaN();  // its median step time
  bool slow = false;
  int tries = 1;  // a slow run that ran is run once more; step_ms is the faster of the two
  double first_ms = std::numeric_limits<double>::quiet_NaN();  // the first try's, when tried twice
  // Its step time's steady-state interval half-width (the first try's), when it has one.
  double half_width_ms = std::numeric_limits<double>::quiet_NaN();
  double seconds = 0;   // wall time of its runs
  long long steps = 0;  // training steps of its runs
  PhaseTotals phases;   // its runs' (the head's), node-seconds of one node
  bool ran() const { return status == Outcome::Pass && step_ms > 0; }
};

// Runs every pair of a batch at once (no node in two of them) and fills its status, failure,
// sweep and step_ms. Each run it is given is told apart by (round, a, b, tries): a confirming try
// comes with tries 2 and must not read or overwrite the first try's outputs.
using PairRunner = std::function<void(std::vector<PairRun>& batch)>;

struct PairsResult {
  std::vector<PairRun> runs;  // in the order they ran
  double reference_ms = std::numeric_limits<double>::quiet_NaN();
  double min_deviation = 0;
  std::vector<std::pair<std::string, std::string>> suspects;    // node, evidence in words
  std::vector<std::pair<std::string, std::string>> slow_links;  // two nodes slow only together
};

// Batches of pairs in which no node appears twice, in order (greedy).
std::vector<std::vector<PairRun>> disjoint_batches(const std::vector<PairRun>& pairs);

PairsResult localise_links(const std::vector<std::string>& nodes, const PairRunner& run,
                           double min_deviation);

// What the pairs could have seen: the least rise of one pair's step time above the reference, as
// a fraction of it (a slow link between its two nodes), that the rule flags with probability
// `power`: the run slow (beyond min_deviation above the reference) and its run again slow too,
// each measured as noisy as round 1's median step-time interval says (standard error = half-width
// / the interval's z at `interval_confidence`), so P(slow once)^2 >= power. 0.062: "would have
// caught a link slowing its pair's step >= 6.2 %". nullopt without a reference or any round-1 run
// with an interval.
struct LinkDetectionPower {
  double slowdown = 0;       // a fraction of the reference
  double reference_ms = 0;   // the pairs' reference step time
  double half_width_ms = 0;  // round 1's median interval half-width, the noise used
  std::size_t pairs = 0;     // round 1's runs with an interval
};
std::optional<LinkDetectionPower> link_detection_power(const PairsResult& pairs,
                                                       double interval_confidence = 0.95,
                                                       double power = 0.95);

// The pairs' suspects into the fleet's scores (each a suspect with its evidence, worst first).
void apply_pair_findings(FleetScore& score, const PairsResult& pairs);

nlohmann::ordered_json pairs_json(const PairsResult& pairs);
// The pair runs' files, each written whole (fleet mode's and certify's links tier): pairs.json
// (every run: schema_version, the reference, each pair's figures) and slow_links.txt (a, tab, b,
// tab, why: one line per slow link).
void write_pairs_outputs(const std::filesystem::path& dir, const PairsResult& pairs);

}  // namespace cvs
