// cvs certify's tiers (lib/cvs/certify/certificate.hpp says what each decides), each a Tier: what it
// runs through the SuiteRunner on the nodes the tiers before left healthy, what it needs of the
// budget, and when it cannot start. run() takes them in order and rewrites certificate.json whole
// after each.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "cvs/certify/inputs.hpp"
#include "cvs/certify/runner.hpp"

namespace cvs::certify {

// One certification in progress: its options and inputs, the runner, the clock.
struct Certification {
  const Options& o;
  Inputs& in;
  SuiteRunner& runner;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  Certificate& cert() { return in.certificate; }
  void save() const;
  double elapsed_min() const;
  std::vector<Node> healthy_nodes() const;
  // A new folder for a tier's runs (a tier cut short earlier keeps its folder).
  std::filesystem::path tier_dir(TierKind k) const;
  // The user's suite arguments, their --gtest_filter replaced by `filter` when given.
  std::vector<std::string> args(const std::string& filter) const;
  certify::NodeRuns spec(const char* suite, const std::filesystem::path& config,
                         const std::filesystem::path& root, const std::string& filter,
                         const char* prefix) const;
};

class Tier {
 public:
  virtual ~Tier() = default;
  virtual TierKind kind() const = 0;
  // How many run-times it needs on `healthy` nodes (the budget's estimate): the rounds of its
  // certain runs (certify/tier_runs.hpp); 0 for the tiers that run first, before a run was timed.
  double runs_needed(const Options& o, const Inputs& in, std::size_t healthy) const;
  // It runs before any run was timed (preflight, nodes): the budget has nothing to hold it against.
  bool runs_first() const { return kind() == TierKind::Preflight || kind() == TierKind::Nodes; }
  // "" when it can start on `healthy` nodes, else why not.
  virtual std::string cannot_start(std::size_t healthy) const {
    return healthy == 0 ? "no healthy node left" : "";
  }
  // Its runs on c's healthy nodes and its outcome, summary, exclusions and accounting, into t.
  virtual void run(Certification& c, TierRecord& t) const = 0;
};

// The tier of each kind (a static instance each).
const Tier& tier_of(TierKind k);

// The tiers not yet decided, in order; returns the exit code (certificate.cpp: exit_code).
// certificate.json is current whenever this returns.
int run(const Options& o, Inputs& in, SuiteRunner& runner);

}  // namespace cvs::certify
