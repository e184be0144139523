#include "cvs/exec/runtime.hpp"

namespace cvs {

EnvList ContainerLabels::to_list() const {
  EnvList v = {{kSuiteLabel, suite}};
  if (!session.empty()) v.emplace_back(kSessionLabel, session);
  if (!config_sha256.empty()) v.emplace_back(kConfigLabel, config_sha256);
  if (!controller.empty()) v.emplace_back(kControllerLabel, controller);
  return v;
}

bool ContainerRuntime::passes_shm_size() const {
  return !c_.args.shm_size.empty() && !(engine_ == Engine::Podman && c_.args.ipc == "host");
}

// NVIDIA GPUs: docker's --gpus (the NVIDIA container toolkit); podman has no count, it passes
// CDI devices (nvidia.com/gpu=all, or one per index of "device=0,1"; a count is a config error).
// AMD GPUs need no translation: /dev/kfd and /dev/dri are devices, video/render groups, on both.
std::vector<std::string> ContainerRuntime::gpu_args() const {
  const auto& g = c_.args.gpus;
  if (g.empty()) return {};
  if (engine_ == Engine::Docker) return {"--gpus", g};
  if (g == "all") return {"--device", "nvidia.com/gpu=all"};
  std::vector<std::string> v;
  std::string ids = g.rfind("device=", 0) == 0 ? g.substr(7) : g;
  for (std::size_t at = 0; at <= ids.size();) {
    auto comma = ids.find(',', at);
    if (comma == std::string::npos) comma = ids.size();
    if (comma > at) v.insert(v.end(), {"--device", "nvidia.com/gpu=" + ids.substr(at, comma - at)});
    at = comma + 1;
  }
  return v;
}

std::vector<std::string> ContainerRuntime::adjustments() const {
  if (!c_.args.shm_size.empty() && !passes_shm_size())
    return {"shm-size " + c_.args.shm_size +
            " is not passed to podman: with ipc host the container uses the node's /dev/shm (podman "
            "refuses both)"};
  return {};
}

bool ContainerRuntime::mounts_compile_cache() const {
  if (compile_cache_.empty()) return false;
  // "SRC:DST[:OPTS]": a writable volume whose DST is at or above the cache holds it; under a read-only
  // one the cache gets a writable mount of its own.
  for (const auto& vol : c_.args.volumes) {
    const auto a = vol.find(':');
    if (a == std::string::npos) continue;
    const auto b = vol.find(':', a + 1);
    std::string dst = vol.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1);
    const std::string opts = b == std::string::npos ? "" : "," + vol.substr(b + 1) + ",";
    while (dst.size() > 1 && dst.back() == '/') dst.pop_back();
    const bool holds = compile_cache_ == dst || compile_cache_.rfind(dst == "/" ? dst : dst + "/", 0) == 0;
    if (holds && opts.find(",ro,") == std::string::npos) return false;
  }
  return true;
}

std::vector<std::string> ContainerRuntime::host_dirs() const {
  if (mounts_compile_cache()) return {compile_cache_};
  return {};
}

std::vector<std::string> ContainerRuntime::launch_argv(const ContainerLabels& labels) const {
  std::vector<std::string> v = {cli_, "run", "--detach", "--name", c_.name};
  for (const auto& [k, val] : labels.to_list()) v.insert(v.end(), {"--label", k + "=" + val});
  const auto& a = c_.args;
  if (!a.network.empty()) v.insert(v.end(), {"--network", a.network});
  if (!a.ipc.empty()) v.insert(v.end(), {"--ipc", a.ipc});
  if (a.privileged) v.push_back("--privileged");
  if (passes_shm_size()) v.insert(v.end(), {"--shm-size", a.shm_size});
  for (const auto& u : a.ulimit) v.insert(v.end(), {"--ulimit", u});
  for (const auto& vol : a.volumes) v.insert(v.end(), {"--volume", vol});
  if (mounts_compile_cache()) v.insert(v.end(), {"--volume", compile_cache_ + ":" + compile_cache_});
  for (const auto& d : a.devices) v.insert(v.end(), {"--device", d});
  for (const auto& g : a.group_add) v.insert(v.end(), {"--group-add", g});
  for (const auto& cap : a.cap_add) v.insert(v.end(), {"--cap-add", cap});
  for (const auto& s : a.security_opt) v.insert(v.end(), {"--security-opt", s});
  for (auto& g : gpu_args()) v.push_back(std::move(g));
  for (const auto& [k, val] : c_.env) v.insert(v.end(), {"--env", k + "=" + val});
  v.insert(v.end(), {"--entrypoint", "sleep", c_.image, "infinity"});
  return v;
}

std::vector<std::string> ContainerRuntime::exec_argv(const std::vector<std::string>& cmd,
                                                     const EnvList& extra_env) const {
  // --interactive: a node stream reads its stop line from stdin, and the end of that input tells
  // it that the suite is gone (an exec'd process outlives a killed `docker exec` client).
  std::vector<std::string> v = {cli_, "exec", "--interactive"};
  for (const auto& [k, val] : extra_env) v.insert(v.end(), {"--env", k + "=" + val});
  v.push_back(c_.name);
  v.insert(v.end(), cmd.begin(), cmd.end());
  return v;
}

std::vector<std::string> ContainerRuntime::teardown_argv() const {
  // `sleep infinity` as PID 1 ignores SIGTERM: docker's rm --force kills at once, podman's waits
  // its stop timeout (10 s) first unless told not to.
  if (engine_ == Engine::Podman) return {cli_, "rm", "--force", "--time", "0", c_.name};
  return {cli_, "rm", "--force", c_.name};
}

std::vector<std::string> ContainerRuntime::image_id_argv() const {
  return {cli_, "image", "inspect", "--format", "{{.Id}}", c_.image};
}

std::vector<std::string> ContainerRuntime::labels_argv() const {
  return {cli_, "container", "inspect", "--format", "{{json .Config.Labels}}", c_.name};
}

std::vector<std::string> ContainerRuntime::inspect_argv() const {
  return {cli_, "container", "inspect", c_.name};
}

std::vector<std::string> LocalRuntime::exec_argv(const std::vector<std::string>& cmd,
                                                 const EnvList& extra_env) const {
  std::vector<std::string> v = {"env"};
  for (const auto& [k, val] : c_.env) v.push_back(k + "=" + val);
  for (const auto& [k, val] : extra_env) v.push_back(k + "=" + val);
  v.insert(v.end(), cmd.begin(), cmd.end());
  return v;
}

std::unique_ptr<Runtime> make_runtime(const SuiteConfig& cfg) {
  const auto& rt = cfg.container.runtime;
  if (rt == "local") return std::make_unique<LocalRuntime>(cfg.container);
  return std::make_unique<ContainerRuntime>(rt == "podman" ? Engine::Podman : Engine::Docker, rt,
                                            cfg.container, cfg.paths.compile_cache);
}

}  // namespace cvs
