// The Launcher: the nodes' environment, the container name check, launch, post-launch checks, setup
// and teardown. A run watched to its end is run_monitor.cpp.
#include "cvs/exec/launch.hpp"

#include <spdlog/spdlog.h>

#include <csignal>
#include <tuple>

#include "cvs/base/text.hpp"
#include "cvs/config/maxtext_yaml.hpp"
#include "cvs/exec/container_check.hpp"
#include "cvs/exec/node_agent.hpp"
#include "cvs/exec/placement.hpp"

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
      placement_(Placement::for_cluster(cluster_, *runtime_, transport_)),
      warm_(cfg, cluster, *this, policy.stop_grace_s) {
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

std::vector<ProcResult> Launcher::python_all(const std::string& code,
                                             std::chrono::milliseconds timeout) const {
  const auto& python = cfg_.train_params.python;
  const auto& warm = warm_.serving();
  if (warm.empty()) return exec_all({python, "-c", code}, timeout, jax_env());
  std::vector<std::vector<std::string>> per_node(warm.size());
  std::vector<EnvList> envs(warm.size());
  for (std::size_t r = 0; r < warm.size(); ++r)
    std::tie(per_node[r], envs[r]) =
        as_training(r, agent::warm_start(python, warm[r].name, warm[r].pid_file, "", {python, "-c", code}));
  return agent_fan_out(per_node, timeout, envs);
}

namespace {

bool cpu_hardware(const SuiteConfig& cfg) {
  const auto& mc = cfg.train_params.maxtext_config;
  return mc.contains("hardware") && mc["hardware"] == "cpu";
}

}  // namespace

EnvList Launcher::per_training_env(std::size_t rank) const {
  const auto n = std::to_string(cluster_.nodes.size());
  EnvList e = {{"JAX_COORDINATOR_IP", cluster_.coordinator_address}};
  if (!has_env(cfg_.container.env, "JAX_COORDINATOR_PORT"))
    e.emplace_back("JAX_COORDINATOR_PORT", kDefaultCoordinatorPort);
  e.emplace_back("NNODES", n);
  e.emplace_back("NODE_RANK", std::to_string(rank));
  e.emplace_back("JAX_PROCESS_INDEX", std::to_string(rank));
  // MaxText's CPU multi-process path (max_utils.initialize_jax_for_cpu) reads these instead.
  if (cpu_hardware(cfg_)) {
    e.emplace_back("JAX_COORDINATOR_ADDRESS", cluster_.coordinator_address);
    e.emplace_back("JOB_INDEX", "0");
    e.emplace_back("JOB_COMPLETION_INDEX", std::to_string(rank));
    e.emplace_back("PROCESSES_IN_JOB", n);
    e.emplace_back("JAX_PROCESS_COUNT", n);
  }
  return e;
}

std::vector<std::string> Launcher::per_training_env_keys() const {
  std::vector<std::string> keys;
  for (const auto& kv : per_training_env(0)) keys.push_back(kv.first);
  return keys;
}

EnvList Launcher::node_env(std::size_t rank) const {
  const auto& cenv = cfg_.container.env;
  EnvList e = per_training_env(rank);
  for (auto& kv : jax_env()) e.push_back(std::move(kv));
  if (cpu_hardware(cfg_) && !has_env(cenv, "JAX_CPU_COLLECTIVES_IMPLEMENTATION"))
    e.emplace_back("JAX_CPU_COLLECTIVES_IMPLEMENTATION", "gloo");
  for (auto& kv : hf_env()) e.push_back(std::move(kv));
  // JAX's compiler says each compile's seconds and each persistent-cache hit or miss (about 80
  // lines a run): the run's compile phase and whether it came from the cache (logs/run_timeline).
  if (!has_env(cenv, "JAX_DEBUG_LOG_MODULES")) e.emplace_back("JAX_DEBUG_LOG_MODULES", "jax._src.compiler");
  // Every compile goes to the persistent cache, not only those over a second (JAX's default): a
  // run's twenty-odd small jits (initialisation, RNG, casts) took 1.3 s of each run's compile here.
  if (!has_env(cenv, "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"))
    e.emplace_back("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0");
  return e;
}

EnvList Launcher::jax_env() const {
  if (auto x = xla_flags_value(cfg_.train_params)) return {{"XLA_FLAGS", *x}};
  return {};
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

std::pair<std::vector<std::string>, EnvList> Launcher::as_training(
    std::size_t r, const std::vector<std::string>& program) const {
  return placement_->training(r, program, node_env(r));
}

std::vector<std::string> Launcher::per_node_problems(const std::vector<ProcResult>& rs,
                                                     const std::string& what) const {
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < rs.size(); ++i) {
    if (rs[i].ok()) continue;
    const auto gone = unreachable_words(cluster_.nodes[i], rs[i], what);
    problems.push_back(cluster_.nodes[i].name + ": " +
                       (gone.empty() ? what + ": " + rs[i].describe() : gone));
  }
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
      const auto gone = unreachable_words(cluster_.nodes[i], rs[i], "check for a container named " + name);
      problems.push_back(node + ": " +
                         (!gone.empty()
                              ? gone
                              : cli + " could not tell whether a container named " + name +
                                    " exists: " + (e.detail.empty() ? rs[i].describe() : e.detail)));
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
  if (const auto dirs = runtime_->host_dirs(); !dirs.empty()) {
    std::vector<std::string> mkdir = {"mkdir", "-p", "--"};
    mkdir.insert(mkdir.end(), dirs.begin(), dirs.end());
    problems = per_node_problems(fan_out(transport_, std::vector(cluster_.nodes.size(), mkdir), timeout),
                                 "creating " + dirs.front() + " for the container");
    if (!problems.empty()) return problems;
  }
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

// The first of train_script_paths that exists, the same on every node (train_script_), else each
// node's problem.
std::vector<std::string> Launcher::find_train_script() {
  std::vector<std::string> problems;
  const auto& tp = cfg_.train_params;
  auto found = exec_all(agent::first_existing(tp.train_script_paths), std::chrono::seconds(60));
  std::string first;
  for (std::size_t i = 0; i < found.size(); ++i) {
    const std::string path = without_line_ends(found[i].out);
    if (const auto gone = unreachable_words(cluster_.nodes[i], found[i], "train script check");
        !gone.empty()) {
      problems.push_back(cluster_.nodes[i].name + ": " + gone);  // the files were never checked
      continue;
    }
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
  for (auto& p : find_train_script()) problems.push_back(std::move(p));
  if (problems.empty()) warm_.start(train_script_, labels_.controller, placement_->writes_yaml_in_a_step());
  return problems;
}

std::vector<std::string> Launcher::teardown() {
  std::vector<std::string> problems;
  warm_.stop_session();  // this session's warm trainers first, then its trainings (as they started)
  if (!pid_files_live_.empty()) {
    for (const auto& p : pid_files_live_)
      agent_on_every_node(agent::stop(p, policy_.stop_grace_s), std::chrono::seconds(60));
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
