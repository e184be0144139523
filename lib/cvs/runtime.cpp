#include "cvs/runtime.hpp"

namespace cvs {

std::vector<std::string> ContainerRuntime::launch_argv() const {
  std::vector<std::string> v = {cli_, "run", "--detach", "--name", c_.name};
  const auto& a = c_.args;
  if (!a.network.empty()) v.insert(v.end(), {"--network", a.network});
  if (!a.ipc.empty()) v.insert(v.end(), {"--ipc", a.ipc});
  if (a.privileged) v.push_back("--privileged");
  if (!a.shm_size.empty()) v.insert(v.end(), {"--shm-size", a.shm_size});
  for (const auto& u : a.ulimit) v.insert(v.end(), {"--ulimit", u});
  for (const auto& vol : a.volumes) v.insert(v.end(), {"--volume", vol});
  for (const auto& d : a.devices) v.insert(v.end(), {"--device", d});
  for (const auto& g : a.group_add) v.insert(v.end(), {"--group-add", g});
  for (const auto& cap : a.cap_add) v.insert(v.end(), {"--cap-add", cap});
  for (const auto& s : a.security_opt) v.insert(v.end(), {"--security-opt", s});
  if (!a.gpus.empty()) v.insert(v.end(), {"--gpus", a.gpus});
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
  return {cli_, "rm", "--force", c_.name};
}

std::vector<std::string> ContainerRuntime::image_id_argv() const {
  return {cli_, "image", "inspect", "--format", "{{.Id}}", c_.image};
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
  if (cfg.container.runtime == "local") return std::make_unique<LocalRuntime>(cfg.container);
  return std::make_unique<ContainerRuntime>(cfg.container.runtime, cfg.container);
}

}  // namespace cvs
