// The seam between certify's tiers and the processes they start: the tiers decide, a SuiteRunner
// runs. ProcessRunner runs the suite executables (certify/suite_runs.hpp); a unit test fakes the
// interface to drive every tier's policy without a process (tests/unit/certify_tiers_test.cpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cvs/certify/suite_runs.hpp"
#include "cvs/config/cluster.hpp"
#include "cvs/fleet/fleet.hpp"
#include "cvs/fleet/fleet_pairs.hpp"

namespace cvs {
class Launcher;
}

namespace cvs::certify {

class SuiteRunner {
 public:
  virtual ~SuiteRunner() = default;
  // Each node alone, on a one-node cluster file of its own, in spec.root/<node folder>.
  virtual std::vector<FleetNode> each(const certify::NodeRuns& spec, const std::vector<Node>& nodes) = 0;
  // One run on `nodes` together, in spec.root, its run names tagged `tag`, its result named `label`.
  virtual FleetNode together(const certify::NodeRuns& spec, const std::vector<Node>& nodes,
                             const std::string& tag, const std::string& label) = 0;
  // Two-node runs over `healthy` until each slow node or link is found (fleet_pairs.hpp).
  virtual PairsResult pairs(const certify::NodeRuns& spec, const std::vector<std::string>& healthy,
                            double min_deviation) = 0;
  // Drains a Slurm node with `reason`; returns the command as run, "  # failed: <why>" appended when
  // it failed.
  virtual std::string drain(const Node& node, const std::string& reason) = 0;
  // Ctrl-C or SIGTERM arrived: a tier starts no further run, and what is in flight ends ERROR.
  virtual bool interrupted() const = 0;
  // The certification's warm-trainer scope (every run gets --warm-scope): one import of MaxText
  // a node and config for all its tiers. Empty: each session has its own.
  virtual std::string warm_scope() const { return ""; }
  // After the preflight, which started them: until the certification's warm trainers on every
  // node serve or have ended (each config's), so that no import of it runs beside a later tier's
  // training (on one node, or on the nodes that share a host's cores) and slows what it measures.
  virtual void await_warm_scope(const std::vector<std::filesystem::path>& /*configs*/) {}
  // At the certification's end: its warm trainers stopped on every node (each config's temp_dir).
  virtual void end_warm_scope(const std::vector<std::filesystem::path>& /*configs*/) {}
};

// The real one: suite executables beside this one, on `cluster` (held by reference: a Slurm
// allocation names its hosts in it), stopped by g_interrupted.
class ProcessRunner final : public SuiteRunner {
 public:
  explicit ProcessRunner(const Cluster& cluster);
  std::vector<FleetNode> each(const certify::NodeRuns& spec, const std::vector<Node>& nodes) override;
  FleetNode together(const certify::NodeRuns& spec, const std::vector<Node>& nodes, const std::string& tag,
                     const std::string& label) override;
  PairsResult pairs(const certify::NodeRuns& spec, const std::vector<std::string>& healthy,
                    double min_deviation) override;
  std::string drain(const Node& node, const std::string& reason) override;
  bool interrupted() const override;
  std::string warm_scope() const override { return scope_; }
  void await_warm_scope(const std::vector<std::filesystem::path>& configs) override;
  void end_warm_scope(const std::vector<std::filesystem::path>& configs) override;

 private:
  // fn on a launcher of each config (not empty) with this certification's scope; a config that
  // does not load is logged as a warning with `failed` (what then happens).
  void on_scope(const std::vector<std::filesystem::path>& configs, const std::function<void(Launcher&)>& fn,
                const std::string& failed);
  const Cluster& cluster_;
  std::string scope_;  // cert-<16 hex: this host, pid and time>
};

}  // namespace cvs::certify
