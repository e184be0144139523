// What each cvs certify tier runs, defined once: its suite runs on n healthy nodes, as groups of
// like runs, each certain or only called for by the runs before it (a rerun). The budget counts
// the certain ones' rounds (Tier::runs_needed), --plan costs them and bounds the rest (plan.cpp),
// and the scale tier takes its reruns' step multiples from here (tiers.cpp);
// tests/unit/certify_tiers_test.cpp checks the runs a simulated certification makes against it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "cvs/certify/inputs.hpp"

namespace cvs::certify {

struct RunGroup {
  std::string what;            // in words (empty: an earlier group's words say it too)
  std::size_t runs = 0;        // suite runs, at most max_parallel at once
  std::size_t nodes = 1;       // the nodes each run trains on together
  double startups = 1;         // each run's start-ups (one per sweep it trains; a setup alone 1/4)
  long long steps = 0;         // each run's training steps (all its sweeps')
  long long steps_at_cap = 0;  // the same when every sweep steps to its cap (0: no cap to reach)
  bool certain = true;         // false: only when the runs before call for it
};

// The scale tier runs a rung again, with these multiples of its steps, while it has no interval.
inline constexpr long long kRungRerunMultiples[] = {2, 4};

// The groups of tier k on n healthy nodes, in the order it runs them.
std::vector<RunGroup> tier_runs(TierKind k, const Options& o, const Inputs& in, std::size_t n);

// One after another, at most max_parallel at once (0: all): how many run-times a group takes.
std::size_t rounds_of(const RunGroup& g, std::size_t max_parallel);

}  // namespace cvs::certify
