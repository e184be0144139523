// The launcher: per-node env injection, the MaxText YAML under temp_dir, detached training with
// output to <log_dir>/<run_name>[/<attempt>]/node-<rank>/training.log, and polling every node's log through
// the log scanner until completion, the first error, a dead node or the poll budget.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cvs/config/cluster.hpp"
#include "cvs/config/config.hpp"
#include "cvs/exec/node_stream.hpp"
#include "cvs/exec/runtime.hpp"
#include "cvs/exec/transport.hpp"
#include "cvs/exec/warm_trainers.hpp"
#include "cvs/logs/logscan.hpp"
#include "cvs/results/telemetry_record.hpp"

namespace cvs {

// Set by the SIGINT/SIGTERM handler of the front ends: the poll loop stops every node and the
// session tears down.
extern std::atomic<bool> g_interrupted;
void install_interrupt_handler();

// Poll budget for a run of `steps` steps: startup_s + steps * per_step_s (seconds).
// startup covers container exec, imports, compilation and the first step; per_step is a
// generous upper bound for one step of the model. A run still going past it fails as hung.
struct PollPolicy {
  std::chrono::milliseconds interval{std::chrono::seconds(5)};
  double startup_s = 1800;
  double per_step_s = 120;
  // A node's stream that sends no frame for this long (it sends one every interval) marks the
  // node unreachable.
  std::chrono::milliseconds silence_timeout{std::chrono::seconds(60)};
  unsigned long long max_bytes_per_frame = 16u << 20;
  int stop_grace_s = 10;  // TERM, then KILL after this many seconds
  double budget_for(long long steps) const { return startup_s + static_cast<double>(steps) * per_step_s; }
};

struct RunRequest {
  std::string run_name;        // unique per run (never reuses an old log directory)
  std::string label;           // sweep key, "smoke", "ckpt-phase1"...
  OrderedJson maxtext_config;  // complete: run_name and base_output_directory injected
  long long steps = 0;         // MaxText steps; the final step line is steps - 1
  std::string attempt;  // sub-directory of the run dir, e.g. "phase2" when a run_name is reused to resume
  std::filesystem::path copy_dir;  // node logs are copied to copy_dir/node-<rank>/training.log
  // Called on the head's step records while the run trains; true stops every node and the run
  // ends ok, stopped early (an early-stop rule: every gate decisive).
  std::function<bool(const std::vector<StepRecord>&)> stop_when;
};

struct NodeOutcome {
  std::string node;
  int rank = 0;
  std::string remote_log;
  std::filesystem::path local_log;
  NodeState state = NodeState::NotStarted;
  int exit_code = -1;
  ScanResult scan;
  std::optional<long long> last_step;
  double last_step_seconds = 0;            // seconds of its last step line (for "slowest node")
  std::optional<NodeTelemetry> telemetry;  // what its sampler saw (config telemetry.enabled)
};

struct RunOutcome {
  bool ok = false;
  bool completed = false;  // the final step line was seen and every node exited 0
  bool timed_out = false;
  bool interrupted = false;
  bool stopped_early = false;  // stop_when said so: ok, but before the final step
  // The failure is the infrastructure's (a node unreachable, a start that failed, a log copy it
  // refused to overwrite), not the workload's: an ERROR, not a FAIL.
  bool infrastructure = false;
  std::string failure;  // one message with node and line, empty when ok
  std::optional<ErrorMatch> first_error;
  std::string first_error_node;
  std::vector<NodeOutcome> nodes;  // rank order; nodes[0] is the head (metrics source)
  double wall_seconds = 0;
  double start_seconds = 0;                  // until training and its log stream were started on every node
  std::filesystem::path maxtext_yaml_local;  // copy of the YAML that ran
};

struct Progress {
  std::string label;
  long long step = -1;
  long long total = 0;
  std::optional<double> loss;
  std::optional<double> tokens_per_sec;
  std::string slowest_node;
  double elapsed_s = 0;
  std::optional<double> eta_s;
  // Before the first step: what the head's log shows the run doing ("starting": no MaxText line
  // yet, importing JAX; "initialising": MaxText printed its config; "compiling": the parameters are
  // on the devices, XLA compiles the step) and since when (seconds).
  std::string phase;
  double phase_s = 0;
};
using ProgressSink = std::function<void(const Progress&)>;

// JAX_COORDINATOR_PORT when container.env does not set it (the spec's configs set 12346 too).
inline constexpr const char* kDefaultCoordinatorPort = "12346";

class Placement;  // placement.hpp

// Runs the node-agent programs of its warm trainers (WarmTrainers::Nodes, privately: only they
// ask it that way).
class Launcher : private WarmTrainers::Nodes {
 public:
  // With a slurm cluster, setup() allocates (the placement) and fills cluster.nodes with the hosts.
  Launcher(const SuiteConfig& cfg, Cluster& cluster, PollPolicy policy);
  ~Launcher() override;

  // Launches the container on every node (a no-op for the local runtime) and resolves the train
  // script (first of train_script_paths that exists on every node). Returns problems, one per node.
  std::vector<std::string> setup();
  // Runs a command inside the runtime on every node (e.g. probes). Results in node order.
  std::vector<ProcResult> exec_all(const std::vector<std::string>& cmd, std::chrono::milliseconds timeout,
                                   const EnvList& env = {}) const;
  // `python -c code` (train_params.python) on every node as a training runs there: in the runtime,
  // with a training's environment (node_env), forked from the node's warm trainer where one serves
  // (JAX and MaxText already imported: the setup stage's probe), else a python of its own. Its
  // output says which ("cvs-warm: python -c in process N, forked" or "cvs-warm: cold start: why").
  std::vector<ProcResult> python_all(const std::string& code, std::chrono::milliseconds timeout) const;
  RunOutcome run(const RunRequest& req, const ProgressSink& progress = {});
  // Always safe to call, also after a failed setup or twice.
  std::vector<std::string> teardown();
  // How many trainings the session will start (before setup()): the warm trainers start only for
  // two or more (one training gains nothing from them; a session that trains nothing, as certify's
  // preflight, would pay their import for none). Unknown (not called): they start.
  void expect_trainings(int n) { warm_.expect_trainings(n); }
  // A certification's scope (before setup(); [A-Za-z0-9-], at most 32): the warm trainers are its,
  // not this session's. Each node's trainer for this config's python, script and environment is
  // started by the first session of the scope that needs it (one already running is used), stays
  // after the session's teardown for the scope's next sessions on the node (any tier, any rank:
  // the variables that differ between them are each training's, per_training_env_keys), and ends
  // with stop_warm_scope() or idle. The local runtime only: a container ends with its session.
  void set_warm_scope(std::string scope) { warm_.set_scope(std::move(scope)); }
  // Stops the warm trainers of set_warm_scope's scope on every node (safe when none runs).
  void stop_warm_scope() { warm_.stop_scope(); }
  // Waits until every warm trainer of the scope on every node serves or has ended (none still
  // importing beside a training that measures speed); at most `limit`. What still imports then,
  // per node ("" where none).
  std::vector<std::string> await_warm_scope(std::chrono::seconds limit) const {
    return warm_.await_scope(limit);
  }
  // After setup(): "a warm trainer on each of N node(s)", or "off (why)" (the setup's warm_start).
  const std::string& warm_start_words() const { return warm_.words(); }

  // The env injected into the training process on node `rank` (exposed for tests and reports):
  // per_training_env's, then what every training of the config shares.
  EnvList node_env(std::size_t rank) const override;
  // The variables of node_env that differ between trainings on one node (its rank, the node count,
  // the coordinator): MaxText and JAX read them when a training initialises, not at import.
  EnvList per_training_env(std::size_t rank) const;
  std::vector<std::string> per_training_env_keys() const override;
  // Hugging Face's env for training and the tokenizer download: HF_TOKEN_PATH (the token file's
  // path, never its value) and HF_HOME; empty when paths.hf_token_file is empty.
  EnvList hf_env() const;
  // What JAX reads beyond the container's env that the training gets too (XLA_FLAGS: on the CPU
  // backend --xla_force_host_platform_device_count makes one process N devices): every check that
  // asks JAX runs with it, so the probe sees the devices the training will.
  EnvList jax_env() const;
  const std::string& train_script() const { return train_script_; }
  // The id of the image the head node's container runs ("" for the local runtime).
  const std::string& image_id() const { return image_id_; }
  const Runtime& runtime() const { return *runtime_; }
  // The labels of the containers this launcher starts: suite and session name them (the
  // controller host:pid and the config's sha256 are set at construction).
  void set_container_identity(const std::string& suite, const std::string& session) {
    labels_.suite = suite;
    labels_.session = session;
  }
  const ContainerLabels& container_labels() const { return labels_; }
  const Transport& transport() const { return transport_; }
  std::string run_dir(const std::string& run_name) const;

 private:
  class RunMonitor;  // one run: its nodes' trackers, streams and verdict (run_monitor.cpp)

  // Container runtimes: remove a container of the configured name that an earlier session left
  // (or refuse: not ours, or in use), launch on every node, then check what reached it.
  std::vector<std::string> launch_containers();
  std::vector<std::string> find_train_script();
  std::vector<std::string> clear_container_name();
  std::vector<std::string> check_containers() const;
  std::vector<std::string> per_node_problems(const std::vector<ProcResult>& rs,
                                             const std::string& what) const;
  // Runs one node-agent program per node where the agent lives (the placement's: on the node, or
  // on this host inside a Slurm allocation).
  std::vector<ProcResult> agent_fan_out(const std::vector<std::vector<std::string>>& per_node,
                                        std::chrono::milliseconds timeout,
                                        const std::vector<EnvList>& env = {}) const override;
  std::pair<std::vector<std::string>, EnvList> as_training(
      std::size_t r, const std::vector<std::string>& program) const override;
  std::size_t node_count() const override { return cluster_.nodes.size(); }
  // The local argv that runs a node-agent program for node `rank` where the agent lives.
  std::vector<std::string> agent_argv(std::size_t rank, const std::vector<std::string>& program,
                                      const EnvList& env = {}) const;

  const SuiteConfig& cfg_;
  Cluster& cluster_;
  PollPolicy policy_;
  std::unique_ptr<Runtime> runtime_;
  Transport transport_;
  std::unique_ptr<Placement> placement_;  // direct nodes or a Slurm allocation (placement.hpp)
  ContainerLabels labels_;
  std::string host_;  // this host's name (the controller of the containers it starts)
  std::string train_script_;
  std::string image_id_;
  bool launched_ = false;
  std::vector<std::string> pid_files_live_;
  WarmTrainers warm_;  // each node's warm trainer (warm_trainers.hpp)
};

}  // namespace cvs
