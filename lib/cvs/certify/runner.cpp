#include "cvs/certify/runner.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

#include <unistd.h>

#include "cvs/base/sha256.hpp"
#include "cvs/config/cluster.hpp"
#include "cvs/exec/launch.hpp"
#include "cvs/exec/node_agent.hpp"
#include "cvs/exec/process.hpp"
#include "cvs/exec/slurm.hpp"

namespace cvs::certify {

ProcessRunner::ProcessRunner(const Cluster& cluster) : cluster_(cluster) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const auto now = std::chrono::system_clock::now().time_since_epoch().count();
  scope_ =
      "cert-" + sha256_hex(std::string(host) + ' ' + std::to_string(::getpid()) + ' ' + std::to_string(now))
                    .substr(0, 16);
}

void ProcessRunner::on_scope(const std::vector<std::filesystem::path>& configs,
                             const std::function<void(Launcher&)>& fn, const std::string& failed) {
  if (cluster_.is_slurm()) return;  // none started: each training is a step of its own
  for (const auto& file : configs) {
    if (file.empty()) continue;
    try {
      const auto cfg = load_config_for_cluster(file, cluster_);
      Cluster nodes = cluster_;
      Launcher launcher(cfg, nodes, PollPolicy{});
      launcher.set_warm_scope(scope_);
      fn(launcher);
    } catch (const std::exception& e) {
      spdlog::warn("certify: the warm trainers of {}: {} ({})", file.string(), failed, e.what());
    }
  }
}

void ProcessRunner::await_warm_scope(const std::vector<std::filesystem::path>& configs) {
  on_scope(
      configs,
      [](Launcher& launcher) {
        for (const auto& still : launcher.await_warm_scope(std::chrono::seconds(300)))
          if (!still.empty()) spdlog::warn("certify: {} (its trainings wait for it)", still);
      },
      "not awaited: a tier's first trainings may run beside their import");
}

void ProcessRunner::end_warm_scope(const std::vector<std::filesystem::path>& configs) {
  on_scope(
      configs, [](Launcher& launcher) { launcher.stop_warm_scope(); },
      "not stopped: they end when idle " + std::to_string(agent::kWarmTrainerIdleSeconds / 60) + " min");
}

std::vector<FleetNode> ProcessRunner::each(const certify::NodeRuns& spec, const std::vector<Node>& nodes) {
  return certify::run_nodes(spec, cluster_, nodes);
}

FleetNode ProcessRunner::together(const certify::NodeRuns& spec, const std::vector<Node>& nodes,
                                  const std::string& tag, const std::string& label) {
  return certify::run_together(spec, cluster_, nodes, tag, label);
}

PairsResult ProcessRunner::pairs(const certify::NodeRuns& spec, const std::vector<std::string>& healthy,
                                 double min_deviation) {
  return certify::run_pairs(spec, cluster_, healthy, min_deviation);
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
