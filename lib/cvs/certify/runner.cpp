#include "cvs/certify/runner.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

#include "cvs/exec/launch.hpp"
#include "cvs/exec/process.hpp"
#include "cvs/exec/slurm.hpp"

namespace cvs::certify {

std::vector<FleetNode> ProcessRunner::each(const fleet::NodeRuns& spec, const std::vector<Node>& nodes) {
  return fleet::run_nodes(spec, cluster_, nodes);
}

FleetNode ProcessRunner::together(const fleet::NodeRuns& spec, const std::vector<Node>& nodes,
                                  const std::string& tag, const std::string& label) {
  return fleet::run_together(spec, cluster_, nodes, tag, label);
}

PairsResult ProcessRunner::pairs(const fleet::NodeRuns& spec, const std::vector<std::string>& healthy,
                                 double min_deviation) {
  return fleet::run_pairs(spec, cluster_, healthy, min_deviation);
}

std::string ProcessRunner::drain(const Node& node, const std::string& reason) {
  const auto argv = slurm_drain_argv(node.host, reason);
  const auto res = run_one({argv, std::chrono::seconds(30), "scontrol"});
  if (!res.ok()) spdlog::error("certify: drain of {} failed: {}", node.name, res.describe());
  return shell_join(argv) + (res.ok() ? "" : "  # failed: " + res.describe());
}

bool ProcessRunner::interrupted() const {
  return g_interrupted.load();
}

}  // namespace cvs::certify
