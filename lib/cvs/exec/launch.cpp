#include "cvs/exec/launch.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <fstream>
#include <sstream>
#include <thread>

#include "cvs/config/maxtext_yaml.hpp"
#include "cvs/config/text_file.hpp"
#include "cvs/exec/container_check.hpp"
#include "cvs/exec/local_log_stream.hpp"
#include "cvs/exec/node_agent.hpp"
#include "cvs/exec/node_stream.hpp"
#include "cvs/exec/placement.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace cvs {

std::atomic<bool> g_interrupted{false};

namespace {
extern "C" void on_interrupt(int) {
  g_interrupted.store(true);
}

bool has_env(const EnvList& env, const std::string& key) {
  for (const auto& [k, v] : env)
    if (k == key) return true;
  return false;
}

std::string read_text(const fs::path& p) {
  std::string s = read_text_file(p).value_or("");
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string last_lines(const std::string& text, std::size_t n) {
  std::size_t pos = text.size();
  while (pos > 0 && (text[pos - 1] == '\n')) --pos;
  std::size_t start = pos;
  for (std::size_t k = 0; k < n && start > 0; ++k) {
    start = text.rfind('\n', start - 1);
    if (start == std::string::npos) {
      start = 0;
      break;
    }
  }
  std::string s = text.substr(start, pos - start);
  if (!s.empty() && s.front() == '\n') s.erase(0, 1);
  return s;
}

}  // namespace

void install_interrupt_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

Launcher::Launcher(const SuiteConfig& cfg, Cluster& cluster, PollPolicy policy)
    : cfg_(cfg),
      cluster_(cluster),
      policy_(policy),
      runtime_(make_runtime(cfg)),
      transport_(cluster),
      placement_(Placement::for_cluster(cluster_, *runtime_, transport_)) {
  raise_fd_limit();
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  labels_.config_sha256 = cfg.sha256;
  host_ = host;
  labels_.controller = controller_id(host_, ::getpid());
}

Launcher::~Launcher() {
  teardown();
}

std::string Launcher::run_dir(const std::string& run_name) const {
  return cfg_.paths.log_dir + "/" + run_name;
}

std::vector<ProcResult> Launcher::exec_all(const std::vector<std::string>& cmd,
                                           std::chrono::milliseconds timeout, const EnvList& env) const {
  std::vector<std::vector<std::string>> per_node(cluster_.nodes.size(), runtime_->exec_argv(cmd, env));
  return fan_out(transport_, per_node, timeout);
}

EnvList Launcher::node_env(std::size_t rank) const {
  const auto n = std::to_string(cluster_.nodes.size());
  const auto& cenv = cfg_.container.env;
  EnvList e = {{"JAX_COORDINATOR_IP", cluster_.coordinator_address}};
  if (!has_env(cenv, "JAX_COORDINATOR_PORT")) e.emplace_back("JAX_COORDINATOR_PORT", kDefaultCoordinatorPort);
  e.emplace_back("NNODES", n);
  e.emplace_back("NODE_RANK", std::to_string(rank));
  e.emplace_back("JAX_PROCESS_INDEX", std::to_string(rank));
  if (auto x = xla_flags_value(cfg_.train_params)) e.emplace_back("XLA_FLAGS", *x);
  // MaxText's CPU multi-process path (max_utils.initialize_jax_for_cpu) reads these instead.
  const auto& mc = cfg_.train_params.maxtext_config;
  if (mc.contains("hardware") && mc["hardware"] == "cpu") {
    e.emplace_back("JAX_COORDINATOR_ADDRESS", cluster_.coordinator_address);
    e.emplace_back("JOB_INDEX", "0");
    e.emplace_back("JOB_COMPLETION_INDEX", std::to_string(rank));
    e.emplace_back("PROCESSES_IN_JOB", n);
    e.emplace_back("JAX_PROCESS_COUNT", n);
    if (!has_env(cenv, "JAX_CPU_COLLECTIVES_IMPLEMENTATION"))
      e.emplace_back("JAX_CPU_COLLECTIVES_IMPLEMENTATION", "gloo");
  }
  for (auto& kv : hf_env()) e.push_back(std::move(kv));
  return e;
}

EnvList Launcher::hf_env() const {
  // The token travels as the path of its file on the shared filesystem (Hugging Face reads
  // HF_TOKEN_PATH), never as a value: no argv, `ps` or log on any node shows it.
  if (cfg_.paths.hf_token_file.empty()) return {};
  return {{"HF_TOKEN_PATH", cfg_.paths.hf_token_file}, {"HF_HOME", cfg_.paths.models_dir + "/huggingface"}};
}

std::vector<std::string> Launcher::agent_argv(std::size_t rank, const std::vector<std::string>& program,
                                              const EnvList& env) const {
  return placement_->agent_argv(rank, program, env);
}

std::vector<ProcResult> Launcher::agent_fan_out(const std::vector<std::vector<std::string>>& per_node,
                                                std::chrono::milliseconds timeout,
                                                const std::vector<EnvList>& env) const {
  std::vector<ProcRequest> reqs;
  for (std::size_t r = 0; r < per_node.size(); ++r)
    reqs.push_back(
        {agent_argv(r, per_node[r], r < env.size() ? env[r] : EnvList{}), timeout, cluster_.nodes[r].name});
  return run_all(reqs);
}

std::vector<std::string> Launcher::per_node_problems(const std::vector<ProcResult>& rs,
                                                     const std::string& what) const {
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < rs.size(); ++i)
    if (!rs[i].ok())
      problems.push_back(cluster_.nodes[i].name + ": " + what + ": " +
                         (is_unreachable(cluster_.nodes[i], rs[i]) ? "node unreachable: " : "") +
                         rs[i].describe());
  return problems;
}

std::vector<std::string> Launcher::clear_container_name() {
  std::vector<std::string> problems;
  const auto timeout = std::chrono::minutes(2);
  auto rs = fan_out(transport_, std::vector(cluster_.nodes.size(), runtime_->labels_argv()), timeout);
  const std::string& name = cfg_.container.name;
  const std::string cli = runtime_->name();
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const auto& node = cluster_.nodes[i].name;
    const auto e = classify_existing(rs[i].ok(), rs[i].out, rs[i].err);
    using S = ExistingContainer::State;
    if (e.state == S::Free) continue;
    if (e.state == S::Unknown) {
      problems.push_back(
          node + ": " + cli + " could not tell whether a container named " + name +
          " exists: " + (is_unreachable(cluster_.nodes[i], rs[i]) ? "node unreachable: " : "") +
          (e.detail.empty() ? rs[i].describe() : e.detail));
    } else if (e.state == S::Foreign) {
      problems.push_back(
          node + ": a container named " + name + " exists that cvs-maxtext did not start (no " + kSuiteLabel +
          " label): remove it (`" + cli + " rm --force " + name +
          "`) or set container.name (/container/name) to another name in " + cfg_.file.string());
    } else if (controller_alive(e.controller, host_)) {
      problems.push_back(node + ": container " + name + " belongs to a running session (" + e.session +
                         ", process " + e.controller +
                         "): wait for it, or set container.name (/container/name)"
                         " to another name in " +
                         cfg_.file.string());
    } else {
      spdlog::warn("{}: removing container {} left by an earlier session ({}{})", node, name,
                   e.session.empty() ? "session unknown" : e.session,
                   e.controller.empty() ? "" : ", started by process " + e.controller);
      auto rm =
          run_one({transport_.wrap(cluster_.nodes[i], runtime_->teardown_argv()), timeout, cli + " rm"});
      if (!rm.ok())
        problems.push_back(node + ": removing the stale container " + name + ": " + rm.describe());
    }
  }
  return problems;
}

std::vector<std::string> Launcher::launch_containers() {
  const auto timeout = std::chrono::minutes(10);
  auto problems = clear_container_name();
  if (!problems.empty()) return problems;
  spdlog::info("launching container {} ({}) on {} node(s) with {}", cfg_.container.name, cfg_.container.image,
               cluster_.nodes.size(), runtime_->name());
  for (const auto& a : runtime_->adjustments()) spdlog::info("{}", a);
  launched_ = true;  // teardown must run even if only some nodes started it
  auto launch = runtime_->launch_argv(labels_);
  problems = per_node_problems(fan_out(transport_, std::vector(cluster_.nodes.size(), launch), timeout),
                               runtime_->name() + " run");
  if (!problems.empty()) return problems;
  problems = check_containers();
  if (!problems.empty()) return problems;
  // Provenance: the image's content id as the head's engine resolved it.
  auto id = run_one({transport_.wrap(cluster_.nodes[0], runtime_->image_id_argv()), timeout, "image id"});
  if (id.ok()) image_id_ = id.out.substr(0, id.out.find('\n'));
  return problems;
}

std::vector<std::string> Launcher::check_containers() const {
  const auto timeout = std::chrono::minutes(2);
  const auto n = cluster_.nodes.size();
  const auto probe = namespace_probe_argv(cfg_.container);
  auto inspect = fan_out(transport_, std::vector(n, runtime_->inspect_argv()), timeout);
  auto outside = fan_out(transport_, std::vector(n, probe), timeout);
  auto inside = exec_all(probe, timeout);
  const auto engine = *runtime_->engine();  // called for a container runtime only
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& node = cluster_.nodes[i].name;
    std::vector<std::string> found;
    try {
      if (!inspect[i].ok()) throw std::runtime_error(inspect[i].describe());
      found = check_inspect(nlohmann::json::parse(inspect[i].out), cfg_.container, engine, labels_);
    } catch (const std::exception& e) {
      found.push_back(std::string("inspect failed: ") + e.what());
    }
    if (!outside[i].ok() || !inside[i].ok())
      found.push_back("namespace probe failed: " + (outside[i].ok() ? inside[i] : outside[i]).describe());
    else
      for (auto& p : check_namespaces(cfg_.container, outside[i].out, inside[i].out)) found.push_back(p);
    for (const auto& f : found)
      problems.push_back(node + ": container " + cfg_.container.name + ": " + f + " (" + cfg_.file.string() +
                         " /container/runtime/args)");
  }
  return problems;
}

std::vector<std::string> Launcher::setup() {
  std::vector<std::string> problems;
  const auto timeout = std::chrono::minutes(10);
  problems = placement_->acquire(std::chrono::milliseconds(static_cast<long long>(policy_.startup_s * 1000)));
  if (!problems.empty()) return problems;
  auto check = [&](const std::vector<ProcResult>& rs, const std::string& what) {
    for (auto& p : per_node_problems(rs, what)) problems.push_back(std::move(p));
  };
  if (runtime_->engine()) {
    problems = launch_containers();
    if (!problems.empty()) return problems;
  }
  const auto& tp = cfg_.train_params;
  if (!tp.maxtext_branch.empty()) {
    check(exec_all({"sh", "-c",
                    "cd \"$1\" && git reset --hard -q && git checkout -q \"$2\" && "
                    "test \"$(git rev-parse --abbrev-ref HEAD)\" = \"$2\" || "
                    "{ echo \"checkout of $2 in $1 did not take\" >&2; exit 1; }",
                    "cvs-branch", tp.maxtext_root, tp.maxtext_branch},
                   timeout),
          "maxtext_branch checkout");
    if (!problems.empty()) return problems;
  }
  if (!tp.maxtext_install_cmd.empty()) {
    check(exec_all({"sh", "-c", "cd \"$1\" && sh -c \"$2\"", "cvs-install", tp.maxtext_root,
                    tp.maxtext_install_cmd},
                   timeout),
          "maxtext_install_cmd");
    if (!problems.empty()) return problems;
  }
  auto found = exec_all(agent::first_existing(tp.train_script_paths), std::chrono::seconds(60));
  std::string first;
  for (std::size_t i = 0; i < found.size(); ++i) {
    std::string path = found[i].out;
    while (!path.empty() && (path.back() == '\n' || path.back() == '\r')) path.pop_back();
    if (found[i].timed_out || !found[i].spawn_error.empty()) {  // the files were never checked
      problems.push_back(cluster_.nodes[i].name + ": did not answer the train script check (" +
                         found[i].describe() + "): the node or its runtime is not responding");
      continue;
    }
    if (!found[i].ok() || path.empty()) {
      std::string list;
      for (const auto& p : tp.train_script_paths) list += (list.empty() ? "" : ", ") + p;
      problems.push_back(cluster_.nodes[i].name + ": none of train_script_paths exists (" + list + ")" +
                         (found[i].ok() ? "" : ": " + found[i].describe()));
      continue;
    }
    if (first.empty()) first = path;
    if (path != first)
      problems.push_back(cluster_.nodes[i].name + ": train script " + path + " differs from " +
                         cluster_.nodes[0].name + "'s " + first + " (mixed MaxText versions)");
  }
  train_script_ = first;
  return problems;
}

namespace {

// One node of a run: where its files are, what its stream has delivered, and what is wrong with it.
struct NodeTracker {
  std::string log, rc, pid, yaml;  // on the node (yaml: the MaxText YAML of this rank)
  std::unique_ptr<std::ofstream> copy;
  std::unique_ptr<LogScanner> scanner;
  unsigned long long offset = 0;  // log bytes received
  bool final_frame = false;       // the stream sent its last frame (state not running), or is lost
  int restarts = 0;               // streams restarted after a dropped connection
  double next_restart_s = 0;
  std::string lost;  // why the node counts as unreachable
  std::size_t nan_checked = 0;
  std::string nan_seen;  // a non-finite loss or rate, once seen
  // The node's telemetry (telemetry.log beside the log; "" when off), what its stream delivered,
  // and the first kernel line that fails the run.
  std::string telemetry_file;
  unsigned long long telemetry_offset = 0;
  TelemetryParser telemetry;
  std::string kernel_failure;
  // After a deliberate early stop: the log lines scanned when it was sent. An error line after
  // them is the stop's doing (a peer of the stopped head reports the coordination service gone:
  // "TF coordination error"), not the workload's.
  long long lines_at_stop = -1;

  // The first error pattern that counts (one before an early stop's lines, when there was one).
  const ErrorMatch* counted_error() const {
    const auto* e = scanner->result().first_error();
    return e && (lines_at_stop < 0 || e->line_no <= lines_at_stop) ? e : nullptr;
  }
  // A step's non-finite loss or rate, each step looked at once.
  const std::string& check_finite(const std::string& node);
  // The node's own end, when it is one: gone, stopped from outside, a non-zero exit.
  std::string death(const NodeOutcome& no, bool stop_sent) const;
  bool workload_failed(const NodeOutcome& no) const {
    const auto& sr = scanner->result();
    return counted_error() || sr.abort || !nan_seen.empty() || !kernel_failure.empty() ||
           (no.state == NodeState::Exited && no.exit_code != 0);
  }
};

const std::string& NodeTracker::check_finite(const std::string& node) {
  const auto& steps = scanner->result().steps;
  for (; nan_checked < steps.size() && nan_seen.empty(); ++nan_checked) {
    const auto& st = steps[nan_checked];
    if (const auto bad = first_nonfinite(st))
      nan_seen = node + ": non-finite " + bad->field + " (" + std::to_string(bad->value) + ") at step " +
                 std::to_string(st.step) +
                 (st.line_no ? " (" + log + " line " + std::to_string(st.line_no) + ")" : "");
  }
  return nan_seen;
}

std::string NodeTracker::death(const NodeOutcome& no, bool stop_sent) const {
  // Killed (SIGKILL: exit 137, or gone) with an OOM kill in the node's kernel log during the run:
  // the OOM killer, said as such (a run this suite stopped ends "stopped", never here).
  const bool killed = no.state == NodeState::Gone || (no.state == NodeState::Exited && no.exit_code == 137);
  if (killed)
    for (const auto& k : telemetry.kernel())
      if (k.pattern && k.pattern->kind == KernelPattern::Kind::OomKill)
        return no.node + ": the training was killed by the kernel's OOM killer (out of memory): '" + k.text +
               "'; last step " + (no.last_step ? std::to_string(*no.last_step) : std::string("none")) +
               ", log " + log;
  if (no.state == NodeState::Gone)
    return no.node + ": the training process is gone without an exit code (killed?); last step " +
           (no.last_step ? std::to_string(*no.last_step) : std::string("none")) + ", log " + log;
  if (no.state == NodeState::Stopped && !stop_sent)
    return no.node + ": the run was stopped from outside this suite (" + pid + ".stopped exists)";
  if (no.state == NodeState::Exited && no.exit_code != 0) {
    copy->flush();
    return no.node + ": training exited with code " + std::to_string(no.exit_code) + "; last lines of " +
           log + ":\n" + last_lines(read_text(no.local_log), 5);
  }
  return "";
}

}  // namespace

// One run from its files to its verdict: the node files and report copies, the YAML and the start
// on every node, one log stream per node, and the watch (frames applied to each node's tracker,
// lost streams restarted, the verdict after every read, progress, stop).
class Launcher::RunMonitor {
 public:
  RunMonitor(Launcher& l, const RunRequest& req, const ProgressSink& progress)
      : l_(l), req_(req), progress_(progress), n_(l.cluster_.nodes.size()), nodes_(n_) {}

  std::string prepare();  // node files, report copies; "" or why not
  std::string write_yamls();
  std::string start();
  void open_streams();
  RunOutcome watch();
  RunOutcome fail(std::string msg) {
    out_.ok = false;
    out_.failure = std::move(msg);
    out_.wall_seconds = elapsed();
    return out_;
  }
  RunOutcome infrastructure_failure(std::string msg) {
    out_.infrastructure = true;
    return fail(std::move(msg));
  }

 private:
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }
  double telemetry_interval_s() const {
    const double poll = std::chrono::duration<double>(l_.policy_.interval).count();
    return l_.cfg_.telemetry.interval_s > 0 ? l_.cfg_.telemetry.interval_s : poll;
  }
  ProcRequest stream_request(std::size_t r) const;
  void apply(std::size_t r, StreamFrame& f);
  void check_stream(std::size_t r, StreamUpdate& u);
  std::string verdict();
  void report_progress(const std::string& failure);
  void stop_all();
  void finish_scans();
  std::optional<RunOutcome> decide(const std::string& failure);
  RunOutcome end_failed();
  RunOutcome end_early();
  std::optional<RunOutcome> end_if_all_exited();

  Launcher& l_;
  const RunRequest& req_;
  const ProgressSink& progress_;
  const std::size_t n_;
  const Clock::time_point t0_ = Clock::now();
  std::string rdir_, yaml_;
  RunOutcome out_;
  std::vector<NodeTracker> nodes_;
  StreamSet streams_;
  bool stop_sent_ = false;
  std::string shrank_;
  double last_progress_ = -1e9;
  const char* phase_ = nullptr;  // what the head's log showed at the last progress line, and since when
  double phase_since_ = 0;
};

std::string Launcher::RunMonitor::prepare() {
  const std::string attempt = req_.attempt.empty() ? "" : "/" + req_.attempt;
  rdir_ = l_.run_dir(req_.run_name) + attempt;
  const std::string tdir = l_.cfg_.paths.temp_dir + "/" + req_.run_name + attempt;
  yaml_ = to_maxtext_yaml(req_.maxtext_config);
  std::error_code ec;
  fs::create_directories(req_.copy_dir, ec);
  out_.maxtext_yaml_local = req_.copy_dir / "maxtext.yml";
  std::ofstream(out_.maxtext_yaml_local, std::ios::binary) << yaml_;
  out_.nodes.resize(n_);
  for (std::size_t r = 0; r < n_; ++r) {
    const std::string nd = rdir_ + "/node-" + std::to_string(r);
    auto& t = nodes_[r];
    t.log = nd + "/training.log";
    t.rc = nd + "/exit_code";
    t.pid = nd + "/pid";
    t.yaml = tdir + "/node-" + std::to_string(r) + "/maxtext.yml";
    if (l_.cfg_.telemetry.enabled) t.telemetry_file = nd + "/telemetry.log";
    auto& no = out_.nodes[r];
    no.node = l_.cluster_.nodes[r].name;
    no.rank = static_cast<int>(r);
    no.remote_log = t.log;
    no.state = NodeState::NotStarted;
    no.local_log = req_.copy_dir / ("node-" + std::to_string(r)) / "training.log";
    fs::create_directories(no.local_log.parent_path(), ec);
    if (fs::exists(no.local_log))
      return "refusing to overwrite the existing report copy " + no.local_log.string();
    t.copy = std::make_unique<std::ofstream>(no.local_log, std::ios::binary);
    t.scanner = std::make_unique<LogScanner>(l_.cfg_.error_patterns);
  }
  return "";
}

// The MaxText YAML on every node (one file per rank: nodes may share a filesystem). Under Slurm it
// is written by a step on the node; elsewhere by the start program.
std::string Launcher::RunMonitor::write_yamls() {
  if (!l_.placement_->writes_yaml_in_a_step()) return "";
  std::vector<std::vector<std::string>> writes(n_);
  for (std::size_t r = 0; r < n_; ++r)
    writes[r] = l_.runtime_->exec_argv(agent::write_file(nodes_[r].yaml, yaml_, false), {});
  auto rs = fan_out(l_.transport_, writes, std::chrono::seconds(60));
  for (std::size_t r = 0; r < n_; ++r)
    if (!rs[r].ok())
      return l_.cluster_.nodes[r].name + ": writing " + nodes_[r].yaml + ": " + rs[r].describe();
  return "";
}

// Training started detached on every node at once; on a failed start every node is stopped.
std::string Launcher::RunMonitor::start() {
  const bool yaml_written = l_.placement_->writes_yaml_in_a_step();
  std::vector<std::vector<std::string>> per_node(n_);
  std::vector<EnvList> envs(n_);
  for (std::size_t r = 0; r < n_; ++r) {
    const auto& t = nodes_[r];
    std::vector<std::string> argv = {l_.cfg_.train_params.python, l_.train_script_, t.yaml};
    if (!t.telemetry_file.empty())
      argv = agent::with_telemetry(t.telemetry_file, telemetry_interval_s(), t.log, argv);
    auto [train, env] = l_.placement_->training(r, argv, l_.node_env(r));
    envs[r] = std::move(env);
    per_node[r] = agent::start_detached(
        t.log, t.rc, t.pid, train,
        yaml_written ? std::nullopt : std::optional<agent::FileToWrite>({t.yaml, yaml_}));
  }
  spdlog::info("[{}] starting {} on {} node(s): {}", req_.label, req_.run_name, n_, rdir_);
  auto rs = l_.agent_fan_out(per_node, std::chrono::seconds(120), envs);
  std::string problems;
  for (std::size_t r = 0; r < n_; ++r) {
    if (rs[r].ok()) {
      out_.nodes[r].state = NodeState::Running;
      l_.pid_files_live_.push_back(nodes_[r].pid);
    } else {
      problems +=
          (problems.empty() ? "" : "; ") + l_.cluster_.nodes[r].name + ": start failed: " + rs[r].describe();
    }
  }
  if (problems.empty()) return "";
  std::vector<std::vector<std::string>> stops(n_);
  for (std::size_t r = 0; r < n_; ++r) stops[r] = agent::stop(nodes_[r].pid, l_.policy_.stop_grace_s);
  l_.agent_fan_out(stops, std::chrono::seconds(60));
  return problems;
}

ProcRequest Launcher::RunMonitor::stream_request(std::size_t r) const {
  const auto& t = nodes_[r];
  const double interval_s = std::chrono::duration<double>(l_.policy_.interval).count();
  auto program = agent::stream(t.log, t.rc, t.pid, t.offset, interval_s, l_.policy_.max_bytes_per_frame,
                               l_.policy_.stop_grace_s, t.telemetry_file, t.telemetry_offset);
  return ProcRequest{l_.agent_argv(r, program), {}, l_.cluster_.nodes[r].name};
}

// Every node's log as a stream: one long-lived stream per node pushes its run state and the log
// bytes written since its last frame, every interval; all are read here on one thread, so a poll
// costs no process and no round trip per node. Under Slurm the logs are here (each srun step
// streams its output to this host): they are followed in-process.
void Launcher::RunMonitor::open_streams() {
  const auto& p = l_.policy_;
  for (std::size_t r = 0; r < n_; ++r) {
    const auto& t = nodes_[r];
    if (l_.placement_->logs_here())
      streams_.add_local({t.log, t.rc, t.pid, t.offset, p.interval, p.max_bytes_per_frame, p.stop_grace_s,
                          t.telemetry_file, t.telemetry_offset});
    else
      streams_.add(stream_request(r));
  }
  out_.start_seconds = elapsed();
}

void Launcher::RunMonitor::apply(std::size_t r, StreamFrame& f) {
  auto& t = nodes_[r];
  auto& no = out_.nodes[r];
  if (f.telemetry) {
    t.telemetry_offset += f.data.size();
    t.telemetry.feed(f.data);
    // A GPU fault, a machine check or a NIC going down on the node during the run fails it, as
    // an error line does (config telemetry.kernel_log).
    for (const auto& k : t.telemetry.take_new_kernel_lines())
      if (k.pattern->fails && l_.cfg_.telemetry.kernel_log && t.kernel_failure.empty())
        t.kernel_failure = no.node + ": kernel log: " + k.meaning() + ": '" + k.text + "'";
    return;
  }
  if (f.size >= 0 && static_cast<unsigned long long>(f.size) < t.offset && shrank_.empty())
    shrank_ = no.node + ": " + t.log + " shrank during the run (truncated or replaced)";
  if (!f.data.empty()) {
    t.copy->write(f.data.data(), static_cast<std::streamsize>(f.data.size()));
    t.scanner->feed(f.data);
    t.offset += f.data.size();
  }
  no.state = f.state;
  no.exit_code = f.exit_code;
  if (f.state != NodeState::Running) t.final_frame = true;
  const auto& sr = t.scanner->result();
  if (!sr.steps.empty()) {
    no.last_step = sr.steps.back().step;
    no.last_step_seconds = sr.steps.back().seconds.value_or(0.0);
  }
}

// A stream that broke, ended without its final frame or went silent: a dropped connection gets
// three more streams, one interval apart, before the node counts as unreachable.
void Launcher::RunMonitor::check_stream(std::size_t r, StreamUpdate& u) {
  auto& t = nodes_[r];
  auto& no = out_.nodes[r];
  std::string why;
  if (!u.framing_error.empty()) {
    why = "its log stream broke: " + u.framing_error;
  } else if (u.ended) {
    why = "its log stream ended without a final frame (" +
          (u.spawn_error.empty() ? "exit " + std::to_string(u.exit_code)
                                 : "could not start: " + u.spawn_error) +
          (u.err_tail.empty() ? "" : ": " + last_lines(u.err_tail, 2)) + ")";
    if (t.restarts < 3 && u.spawn_error.empty()) {
      if (elapsed() < t.next_restart_s) return;
      ++t.restarts;
      t.next_restart_s = elapsed() + std::chrono::duration<double>(l_.policy_.interval).count();
      spdlog::warn("{}: {}; restarting it from byte {} ({}/3)", no.node, why, t.offset, t.restarts);
      streams_.restart(r, stream_request(r));
      return;
    }
  } else if (u.silent_s > std::chrono::duration<double>(l_.policy_.silence_timeout).count()) {
    why = "no frame from its log stream for " + std::to_string(static_cast<long long>(u.silent_s)) + " s";
  }
  if (why.empty()) return;
  no.state = NodeState::Unreachable;
  t.final_frame = true;  // nothing more comes from it
  t.lost = no.node + ": node unreachable while streaming " + t.log + ": " + why;
}

// Every node's problem, most causal first: a node that is unreachable, gone or exited non-zero
// usually explains the collective errors its peers print right after. Evaluated again after a
// stop, when every stream has sent its last frame: a node that died just before its peers
// reported errors is named first even if its own frame came later.
std::string Launcher::RunMonitor::verdict() {
  std::vector<std::string> dead, errors;
  if (!shrank_.empty()) dead.push_back(shrank_);
  for (std::size_t r = 0; r < n_; ++r) {
    auto& t = nodes_[r];
    const auto& no = out_.nodes[r];
    if (!t.lost.empty()) dead.push_back(t.lost);
    if (auto d = t.death(no, stop_sent_); !d.empty()) dead.push_back(std::move(d));
    const auto& sr = t.scanner->result();
    if (const auto* e = t.counted_error()) {
      if (!out_.first_error) {
        out_.first_error = *e;
        out_.first_error_node = no.node;
      }
      // The node whose error was seen first leads the message (verdicts run several times a
      // poll: a later one may find the other nodes' errors too).
      auto msg = no.node + ": error pattern '" + e->pattern_name + "' at " + t.log + ":" +
                 std::to_string(e->line_no) + ": " + e->line;
      errors.insert(no.node == out_.first_error_node ? errors.begin() : errors.end(), std::move(msg));
    } else if (sr.abort) {
      errors.push_back(no.node + ": MaxText aborted training on a " + *sr.abort + " loss");
    } else if (const auto& nan = t.check_finite(no.node); !nan.empty()) {
      errors.push_back(nan);
    }
    if (!t.kernel_failure.empty()) errors.push_back(t.kernel_failure);
  }
  std::string failure;
  for (const auto* list : {&dead, &errors})
    for (const auto& m : *list) failure += (failure.empty() ? "" : "; ") + m;
  return failure;
}

void Launcher::RunMonitor::report_progress(const std::string& failure) {
  const double interval_s = std::chrono::duration<double>(l_.policy_.interval).count();
  if (!progress_ || (elapsed() - last_progress_ < 0.9 * interval_s && failure.empty())) return;
  last_progress_ = elapsed();
  Progress p;
  p.label = req_.label;
  p.total = req_.steps;
  const auto& head = nodes_[0].scanner->result();
  if (!head.steps.empty()) {
    p.step = head.steps.back().step;
    if (head.steps.back().loss_logged) p.loss = head.steps.back().loss;
    p.tokens_per_sec = head.steps.back().tokens_per_device;
  } else {
    const char* phase = head.peak_memory_gb              ? "compiling"
                        : !head.effective_config.empty() ? "initialising"
                                                         : "starting";
    if (phase != phase_) {
      phase_ = phase;
      phase_since_ = elapsed();
    }
    p.phase = phase_;
    p.phase_s = elapsed() - phase_since_;
  }
  double slowest = -1;
  for (const auto& no : out_.nodes)
    if (no.last_step_seconds > slowest && no.last_step) {
      slowest = no.last_step_seconds;
      p.slowest_node = no.node;
    }
  p.elapsed_s = elapsed();
  if (p.step >= 1 && !head.steps.empty()) {
    const double per = p.elapsed_s / static_cast<double>(head.steps.size());
    p.eta_s = per * static_cast<double>(req_.steps - 1 - p.step);
  }
  progress_(p);
}

// Stop: one "stop" line per live stream; the node stops its run and its stream ends with a
// final frame (the log read to its end). A node whose stream is gone or does not confirm in
// time gets the stop program, as do nodes whose run already ended (a crashed rank's leftovers).
void Launcher::RunMonitor::stop_all() {
  stop_sent_ = true;
  const auto stop_t0 = Clock::now();
  const auto& p = l_.policy_;
  std::vector<bool> asked(n_, false);
  for (std::size_t r = 0; r < n_; ++r) asked[r] = !nodes_[r].final_frame && streams_.send(r, "stop");
  const auto deadline = Clock::now() + std::chrono::seconds(p.stop_grace_s + 5) + 2 * p.interval;
  auto waiting = [&] {
    for (std::size_t r = 0; r < n_; ++r)
      if (asked[r] && !nodes_[r].final_frame && !streams_.ended(r)) return true;
    return false;
  };
  while (waiting() && Clock::now() < deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    auto ups = streams_.collect(std::min<std::chrono::milliseconds>(std::chrono::milliseconds(100), left));
    for (std::size_t r = 0; r < n_; ++r)
      for (auto& f : ups[r].frames) apply(r, f);
  }
  std::vector<std::size_t> rest;
  for (std::size_t r = 0; r < n_; ++r)
    if (!asked[r] || !nodes_[r].final_frame || out_.nodes[r].state != NodeState::Stopped) rest.push_back(r);
  spdlog::info(
      "[{}] stop: {} node(s) confirmed through their streams in {:.2f} s; {} left to the stop program",
      req_.label, n_ - rest.size(), std::chrono::duration<double>(Clock::now() - stop_t0).count(),
      rest.size());
  if (!rest.empty()) {
    std::vector<ProcRequest> reqs;
    for (auto r : rest)
      reqs.push_back({l_.agent_argv(r, agent::stop(nodes_[r].pid, p.stop_grace_s)), std::chrono::seconds(60),
                      l_.cluster_.nodes[r].name});
    auto rs = run_all(reqs);
    for (std::size_t k = 0; k < rest.size(); ++k)
      if (!rs[k].ok()) spdlog::warn("{}: stop: {}", l_.cluster_.nodes[rest[k]].name, rs[k].describe());
  }
  l_.placement_->after_stop();
}

void Launcher::RunMonitor::finish_scans() {
  std::vector<std::string> mine;
  for (std::size_t r = 0; r < n_; ++r) {
    nodes_[r].scanner->finish();
    out_.nodes[r].scan = nodes_[r].scanner->result();
    if (!nodes_[r].telemetry_file.empty())
      out_.nodes[r].telemetry = summarize_telemetry(out_.nodes[r].node, nodes_[r].telemetry);
    nodes_[r].copy->flush();
    mine.push_back(nodes_[r].pid);
  }
  std::vector<std::string> still;
  for (const auto& p : l_.pid_files_live_)
    if (std::find(mine.begin(), mine.end(), p) == mine.end()) still.push_back(p);
  l_.pid_files_live_ = still;
}

// A node lost while streaming is the infrastructure's failure, unless the workload itself failed
// too (an error line, a NaN, an exit code): that is the verdict then.
RunOutcome Launcher::RunMonitor::end_failed() {
  stop_all();
  finish_scans();
  bool workload = false, lost_any = false;
  for (std::size_t r = 0; r < n_; ++r) {
    workload |= nodes_[r].workload_failed(out_.nodes[r]);
    lost_any |= !nodes_[r].lost.empty();
  }
  out_.infrastructure = lost_any && !workload;
  return fail(verdict());
}

RunOutcome Launcher::RunMonitor::end_early() {
  spdlog::info("[{}] every gate is decisive at step {}: stopping the run early", req_.label,
               out_.nodes[0].last_step.value_or(-1));
  for (auto& t : nodes_) t.lines_at_stop = t.scanner->result().lines;
  stop_all();
  finish_scans();
  if (const auto late = verdict(); !late.empty()) return fail(late);  // an error in the last bytes
  out_.ok = true;
  // The stop may come after the head's last step (fast steps): then the run completed.
  const auto& head = out_.nodes[0].scan;
  out_.completed = !head.steps.empty() && head.steps.back().step == req_.steps - 1;
  out_.stopped_early = !out_.completed;
  out_.wall_seconds = elapsed();
  return out_;
}

std::optional<RunOutcome> Launcher::RunMonitor::end_if_all_exited() {
  for (std::size_t r = 0; r < n_; ++r)
    if (!nodes_[r].final_frame || out_.nodes[r].state != NodeState::Exited) return std::nullopt;
  // Every exit code is 0 here (a non-zero one failed the verdict).
  finish_scans();
  const long long final_step = req_.steps - 1;
  const auto& head = out_.nodes[0].scan;
  if (head.steps.empty() || head.steps.back().step != final_step)
    return fail(out_.nodes[0].node + ": exited 0 but the final step " + std::to_string(final_step) +
                " was never logged (last step " +
                (head.steps.empty() ? std::string("none") : std::to_string(head.steps.back().step)) + ")");
  out_.ok = true;
  out_.completed = true;
  out_.wall_seconds = elapsed();
  spdlog::info("[{}] completed {} steps in {:.1f} s", req_.label, req_.steps, out_.wall_seconds);
  return out_;
}

// After a read: a failure, an early stop, every node done, Ctrl-C or the budget spent end the run.
std::optional<RunOutcome> Launcher::RunMonitor::decide(const std::string& failure) {
  if (!failure.empty()) return end_failed();
  if (req_.stop_when && req_.stop_when(nodes_[0].scanner->result().steps)) return end_early();
  if (auto done = end_if_all_exited()) return done;
  if (g_interrupted.load()) {
    stop_all();
    finish_scans();
    out_.interrupted = true;
    return fail("interrupted (Ctrl-C): every node was stopped");
  }
  const double budget = l_.policy_.budget_for(req_.steps);
  if (elapsed() <= budget) return std::nullopt;
  stop_all();
  finish_scans();
  out_.timed_out = true;
  const auto& head = out_.nodes[0];
  return fail("poll budget exceeded: " + std::to_string(static_cast<long long>(budget)) + " s (" +
              std::to_string(static_cast<long long>(l_.policy_.startup_s)) + " s startup + " +
              std::to_string(req_.steps) + " steps x " +
              std::to_string(static_cast<long long>(l_.policy_.per_step_s)) + " s); last step on " +
              head.node + ": " + (head.last_step ? std::to_string(*head.last_step) : std::string("none")));
}

// The streams push every interval; reading them four times as often bounds the time from a node's
// frame to its verdict. Progress is reported once per interval.
RunOutcome Launcher::RunMonitor::watch() {
  const auto tick =
      std::max<std::chrono::milliseconds>(l_.policy_.interval / 4, std::chrono::milliseconds(10));
  while (true) {
    auto ups = streams_.collect(tick);
    for (std::size_t r = 0; r < n_; ++r) {
      for (auto& f : ups[r].frames) apply(r, f);
      if (!nodes_[r].final_frame) check_stream(r, ups[r]);
    }
    const std::string failure = verdict();
    report_progress(failure);
    if (auto end = decide(failure)) return *end;
  }
}

RunOutcome Launcher::run(const RunRequest& req, const ProgressSink& progress) {
  RunMonitor run(*this, req, progress);
  if (auto why = run.prepare(); !why.empty()) return run.infrastructure_failure(why);
  if (auto why = run.write_yamls(); !why.empty()) return run.infrastructure_failure(why);
  if (auto why = run.start(); !why.empty()) return run.infrastructure_failure(why);
  run.open_streams();
  return run.watch();
}

std::vector<std::string> Launcher::teardown() {
  std::vector<std::string> problems;
  if (!pid_files_live_.empty()) {
    for (const auto& p : pid_files_live_)
      agent_fan_out(
          std::vector<std::vector<std::string>>(cluster_.nodes.size(), agent::stop(p, policy_.stop_grace_s)),
          std::chrono::seconds(60));
    pid_files_live_.clear();
  }
  if (launched_) {
    launched_ = false;
    auto td = runtime_->teardown_argv();
    if (!td.empty()) {
      std::vector<std::vector<std::string>> per_node(cluster_.nodes.size(), td);
      auto rs = fan_out(transport_, per_node, std::chrono::minutes(2));
      for (std::size_t i = 0; i < rs.size(); ++i)
        if (!rs[i].ok()) problems.push_back(cluster_.nodes[i].name + ": teardown: " + rs[i].describe());
    }
  }
  for (auto& why : placement_->release()) problems.push_back(std::move(why));
  return problems;
}

}  // namespace cvs
