// Container runtimes: docker and podman (one CLI shape, engine differences handled here) and local
// (no container: the training runs directly on the node, e.g. from a Python venv). Each builds
// exact argument vectors; the launcher runs them on every node through the transport.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cvs/config/config.hpp"

namespace cvs {

enum class Engine { Docker, Podman };

// The labels on every container this suite starts. A container of the configured name that
// carries kSuiteLabel was left by an earlier session (removed at launch); one without it is not
// ours (an error naming it).
inline constexpr const char* kSuiteLabel = "org.cvs-maxtext.suite";
inline constexpr const char* kSessionLabel = "org.cvs-maxtext.session";
inline constexpr const char* kConfigLabel = "org.cvs-maxtext.config-sha256";
inline constexpr const char* kControllerLabel = "org.cvs-maxtext.controller";  // host:pid:start of the suite
struct ContainerLabels {
  std::string suite = "cvs-maxtext";
  std::string session;
  std::string config_sha256;
  std::string controller;
  EnvList to_list() const;
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual std::string name() const = 0;
  // The container engine; none for local (nothing to launch, inspect or remove).
  virtual std::optional<Engine> engine() const { return std::nullopt; }
  // Starts the per-run container (empty for local: nothing to start).
  virtual std::vector<std::string> launch_argv(const ContainerLabels& labels) const = 0;
  // Runs cmd inside the container with extra per-node env (container.env is already exported
  // there at launch and inherited). local: container.env and extra both go through `env`.
  virtual std::vector<std::string> exec_argv(const std::vector<std::string>& cmd,
                                             const EnvList& extra_env) const = 0;
  // Removes the container at once; safe to run when it does not exist (empty for local).
  virtual std::vector<std::string> teardown_argv() const = 0;
  // Prints the id (content digest) of the image the container runs, on the node outside the
  // container (empty for local).
  virtual std::vector<std::string> image_id_argv() const { return {}; }
  // Prints the labels of the container of the configured name as JSON; fails with "no such
  // container" when there is none (empty for local).
  virtual std::vector<std::string> labels_argv() const { return {}; }
  // Prints the engine's inspect document of the container (empty for local).
  virtual std::vector<std::string> inspect_argv() const { return {}; }
  // What the runtime changed from the configured args, and why (logged at launch).
  virtual std::vector<std::string> adjustments() const { return {}; }
  // Host folders to create on each node before the launch (none for local).
  virtual std::vector<std::string> host_dirs() const { return {}; }
};

class ContainerRuntime : public Runtime {
 public:
  // compile_cache: JAX's compilation cache (paths.compile_cache): mounted at the same path unless a
  // volume of the config already holds it; "" none.
  ContainerRuntime(Engine engine, std::string cli, const Container& c, std::string compile_cache = "")
      : engine_(engine), cli_(std::move(cli)), c_(c), compile_cache_(std::move(compile_cache)) {}
  // The host folders the container's own mounts need (the engine refuses a missing one): the
  // compile cache when this runtime mounts it.
  std::vector<std::string> host_dirs() const override;
  std::string name() const override { return cli_; }
  std::optional<Engine> engine() const override { return engine_; }
  std::vector<std::string> launch_argv(const ContainerLabels& labels) const override;
  std::vector<std::string> exec_argv(const std::vector<std::string>& cmd,
                                     const EnvList& extra_env) const override;
  std::vector<std::string> teardown_argv() const override;
  std::vector<std::string> image_id_argv() const override;
  std::vector<std::string> labels_argv() const override;
  std::vector<std::string> inspect_argv() const override;
  std::vector<std::string> adjustments() const override;
  // podman refuses --shm-size with --ipc host (the container uses the node's /dev/shm then).
  bool passes_shm_size() const;

 private:
  std::vector<std::string> gpu_args() const;

  Engine engine_;
  std::string cli_;
  Container c_;
  std::string compile_cache_;
  bool mounts_compile_cache() const;
};

class LocalRuntime : public Runtime {
 public:
  explicit LocalRuntime(const Container& c) : c_(c) {}
  std::string name() const override { return "local"; }
  std::vector<std::string> launch_argv(const ContainerLabels&) const override { return {}; }
  std::vector<std::string> exec_argv(const std::vector<std::string>& cmd,
                                     const EnvList& extra_env) const override;
  std::vector<std::string> teardown_argv() const override { return {}; }

 private:
  Container c_;
};

std::unique_ptr<Runtime> make_runtime(const SuiteConfig& cfg);

}  // namespace cvs
