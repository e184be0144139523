// The warm trainers' lifecycle (warm_trainers.hpp): started at a session's setup, used by its
// trainings (run_monitor.cpp) and probes (Launcher::python_all), stopped at its teardown or, a
// scope's, by the certification at its end.
#include "cvs/exec/warm_trainers.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <filesystem>

#include "cvs/base/sha256.hpp"
#include "cvs/exec/node_agent.hpp"

namespace fs = std::filesystem;

namespace cvs {

WarmTrainers::WarmTrainers(const SuiteConfig& cfg, const Cluster& cluster, const Nodes& nodes,
                           int stop_grace_s)
    : cfg_(cfg), cluster_(cluster), nodes_(nodes), stop_grace_s_(stop_grace_s) {}

// A warm trainer on every node, started now, importing while the session sets up; the first
// training waits for its node's. Not for fewer than two trainings (expect_trainings) unless a
// scope's later sessions use them, not under Slurm (each training is a step of its own) nor with
// train_params.warm_start false. A trainer that does not start leaves every training cold.
void WarmTrainers::start(const std::string& train_script, const std::string& controller, bool steps) {
  if (!cfg_.train_params.warm_start) {
    words_ = "off (train_params.warm_start false)";
    return;
  }
  if (steps) {
    words_ = "off (Slurm: each training is a step of its own)";
    return;
  }
  if (train_script.empty()) return;
  const bool scoped = scoped_here();
  if (!scoped && expected_trainings_ >= 0 && expected_trainings_ < 2) {
    words_ = "off (" + std::to_string(expected_trainings_) + " training(s) in this session)";
    return;
  }
  static std::atomic<int> sessions{0};
  std::string tag = controller + "-" + std::to_string(sessions++);
  std::replace_if(
      tag.begin(), tag.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '-');
  const auto& python = cfg_.train_params.python;
  std::vector<Trainer> warm(cluster_.nodes.size());
  std::vector<std::vector<std::string>> per_node(warm.size());
  std::vector<EnvList> envs(warm.size());
  for (std::size_t r = 0; r < warm.size(); ++r) {
    warm[r] = trainer_of(r, train_script, tag, scoped);
    const std::string dir = fs::path(warm[r].pid_file).parent_path().string();
    auto [argv, env] = nodes_.as_training(
        r, agent::warm_trainer(python, warm[r].name, train_script, agent::kWarmTrainerIdleSeconds,
                               nodes_.per_training_env_keys()));
    auto detached =
        agent::start_detached(dir + "/trainer-" + tag + ".log", dir + "/exit_code", warm[r].pid_file, argv);
    per_node[r] =
        agent::if_warm_capable(python, scoped ? agent::unless_running(warm[r].pid_file, detached) : detached);
    envs[r] = std::move(env);
  }
  auto rs = nodes_.agent_fan_out(per_node, std::chrono::seconds(120), envs);
  bool all = true;
  for (std::size_t r = 0; r < rs.size(); ++r) {
    if (rs[r].ok()) {
      if (!scoped) session_pid_files_.push_back(warm[r].pid_file);  // a scope's stop at its end
      continue;
    }
    all = false;
    if (rs[r].exit_code == agent::kExitNotWarmCapable) {
      words_ = "off (" + cluster_.nodes[r].name + ": " + python + " is not a Python 3.9+)";
      spdlog::info("{}: {} is not a Python 3.9+: every training starts cold", cluster_.nodes[r].name, python);
      continue;
    }
    words_ = "off (" + cluster_.nodes[r].name + ": the warm trainer did not start)";
    spdlog::warn("{}: the warm trainer did not start ({}): every training starts cold",
                 cluster_.nodes[r].name, rs[r].describe());
  }
  if (!all) return;
  serving_ = std::move(warm);
  words_ = "a warm trainer on each of " + std::to_string(serving_.size()) + " node(s)" +
           (scoped ? " (the certification's: " + scope_ + ")" : "");
}

std::string WarmTrainers::scope_dir() const {
  return cfg_.paths.temp_dir + "/warm-trainer/scope-" + scope_;
}

std::string WarmTrainers::scope_socket_prefix() const {
  return "cvs-warm-" + scope_ + "-";
}

// A session's trainer is its own (the session's tag). A scope's is named by what a training must
// share with it: the python, the train script, the node and the environment but for the
// per-training variables (another config's environment, another trainer beside it).
WarmTrainers::Trainer WarmTrainers::trainer_of(std::size_t r, const std::string& train_script,
                                               const std::string& tag, bool scoped) const {
  if (!scoped) {
    const std::string dir = cfg_.paths.temp_dir + "/warm-trainer/" + tag + "/node-" + std::to_string(r);
    return {"cvs-warm-" + tag + "-" + std::to_string(r), dir + "/pid"};
  }
  const auto keys = nodes_.per_training_env_keys();
  std::string what = cfg_.train_params.python + '\n' + train_script + '\n' + cluster_.nodes[r].name + '\n' +
                     cluster_.nodes[r].host + '\n';
  auto env = cfg_.container.env;
  for (const auto& kv : nodes_.node_env(r)) env.push_back(kv);
  std::sort(env.begin(), env.end());
  for (const auto& [k, v] : env)
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) what += k + '=' + v + '\n';
  const std::string key = sha256_hex(what).substr(0, 16);
  return {scope_socket_prefix() + key, scope_dir() + "/" + key + "/pid"};
}

bool WarmTrainers::scoped_here() const {
  return !scope_.empty() && cfg_.container.runtime == "local";
}

std::vector<ProcResult> WarmTrainers::Nodes::agent_on_every_node(const std::vector<std::string>& program,
                                                                 std::chrono::milliseconds timeout) const {
  return agent_fan_out(std::vector<std::vector<std::string>>(node_count(), program), timeout, {});
}

void WarmTrainers::stop_session() {
  for (const auto& p : session_pid_files_)
    nodes_.agent_on_every_node(agent::stop(p, stop_grace_s_), std::chrono::seconds(60));
  session_pid_files_.clear();
}

void WarmTrainers::stop_scope() {
  if (!scoped_here()) return;
  nodes_.agent_on_every_node(agent::stop(scope_dir(), stop_grace_s_), std::chrono::seconds(60));
}

std::vector<std::string> WarmTrainers::await_scope(std::chrono::seconds limit) const {
  std::vector<std::string> still(cluster_.nodes.size());
  if (!scoped_here()) return still;
  const auto rs = nodes_.agent_on_every_node(
      agent::await_warm(scope_dir(), scope_socket_prefix(), static_cast<int>(limit.count())),
      limit + std::chrono::seconds(30));
  for (std::size_t r = 0; r < rs.size(); ++r)
    if (!rs[r].ok()) still[r] = cluster_.nodes[r].name + ": " + rs[r].describe();
  return still;
}

}  // namespace cvs
