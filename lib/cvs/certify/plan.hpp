// cvs certify --plan: what a certification would run and cost before anything starts. Each tier's
// runs in words, its wall minutes and node-minutes, and the whole's GPU-hours (node-hours times
// gpus_per_node): from the newest earlier certification of the same config and host count in the
// history (each tier's time as it was: history::Store::certification_times), else from the
// configs' steps with a stated guess of each run's start-up and each step's seconds.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cvs/certify/inputs.hpp"
#include "cvs/history/store.hpp"

namespace cvs::certify {

struct PlanGuess {
  double startup_s = 120;  // a run's start-up, compile and teardown
  double step_s = 1.0;     // a training step
};

struct TierPlan {
  TierKind kind = TierKind::Preflight;
  std::string runs;  // what it runs, in words
  double minutes = 0, node_minutes = 0;
  bool from_history = false;
};

struct Plan {
  std::string basis;  // where the figures come from, in words
  std::vector<TierPlan> tiers;
  double minutes = 0, node_minutes = 0, gpu_hours = 0;
  std::string budget;  // what --budget-minutes would hold back ("" nothing)
};

Plan make_plan(const Options& o, const Inputs& in,
               const std::optional<history::Store::CertificationTimes>& earlier, const PlanGuess& guess);

// The plan as cvs certify --plan prints it.
std::string to_text(const Plan& p);

}  // namespace cvs::certify
