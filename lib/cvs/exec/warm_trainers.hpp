#pragma once
// The warm trainers (agent::warm_trainer: JAX and MaxText imported once a node, each training
// forked from it) of one session or of a certification's scope: which trainer a node's training
// is forked from, starting them, awaiting and stopping a scope's, stopping a session's own. Their
// numbers (the idle timeout, the exit codes, the lines they print) are node_agent.hpp's. The
// Launcher owns one and runs the node-agent programs it gives (WarmTrainers::Nodes).
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "cvs/config/cluster.hpp"
#include "cvs/config/config.hpp"
#include "cvs/exec/process.hpp"

namespace cvs {

class WarmTrainers {
 public:
  struct Trainer {
    std::string name;      // its abstract socket
    std::string pid_file;  // its pid file on the node
  };
  // What the trainers need of the session that launches on the nodes.
  class Nodes {
   public:
    virtual ~Nodes() = default;
    // One node-agent program per node where the agent lives, each with its environment.
    virtual std::vector<ProcResult> agent_fan_out(const std::vector<std::vector<std::string>>& per_node,
                                                  std::chrono::milliseconds timeout,
                                                  const std::vector<EnvList>& env) const = 0;
    // A program run on node r as a training runs there (in the runtime, the placement's way).
    virtual std::pair<std::vector<std::string>, EnvList> as_training(
        std::size_t r, const std::vector<std::string>& program) const = 0;
    virtual EnvList node_env(std::size_t r) const = 0;  // a training's environment on node r
    virtual std::vector<std::string> per_training_env_keys() const = 0;
    virtual std::size_t node_count() const = 0;
    // One node-agent program on every node (agent_fan_out), no environment of its own.
    std::vector<ProcResult> agent_on_every_node(const std::vector<std::string>& program,
                                                std::chrono::milliseconds timeout) const;
  };

  WarmTrainers(const SuiteConfig& cfg, const Cluster& cluster, const Nodes& nodes, int stop_grace_s);

  void set_scope(std::string scope) { scope_ = std::move(scope); }  // Launcher::set_warm_scope
  void expect_trainings(int n) { expected_trainings_ = n; }         // Launcher::expect_trainings
  // Starts a trainer on every node, unless this session should not have one (`words` says why).
  // `controller` names this session's trainers; `steps` is true where each training is a Slurm
  // step of its own.
  void start(const std::string& train_script, const std::string& controller, bool steps);
  // Rank order; empty: every training starts cold.
  const std::vector<Trainer>& serving() const { return serving_; }
  const std::string& words() const { return words_; }
  // Stops this session's own trainers (a scope's stay for its next sessions).
  void stop_session();
  void stop_scope();
  std::vector<std::string> await_scope(std::chrono::seconds limit) const;

 private:
  // Node r's trainer: this session's (tag), or the scope's for this config on the node.
  Trainer trainer_of(std::size_t r, const std::string& train_script, const std::string& tag,
                     bool scoped) const;
  std::string scope_dir() const;
  std::string scope_socket_prefix() const;  // a scope's trainer's socket: this, then its key
  // A scope's trainers are the local runtime's only (a container ends with its session).
  bool scoped_here() const;

  const SuiteConfig& cfg_;
  const Cluster& cluster_;
  const Nodes& nodes_;
  int stop_grace_s_;
  std::string scope_;
  int expected_trainings_ = -1;
  std::vector<Trainer> serving_;
  std::vector<std::string> session_pid_files_;  // this session's own, stopped by stop_session
  std::string words_ = "off";
};

}  // namespace cvs
