// Container runtimes: docker and podman (same CLI shape) and local (no container: the training
// runs directly on the node, e.g. from a Python venv). Each builds exact argument vectors.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cvs/config.hpp"

namespace cvs {

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual std::string name() const = 0;
  // Starts the per-run container (empty for local: nothing to start).
  virtual std::vector<std::string> launch_argv() const = 0;
  // Runs cmd inside the container with extra per-node env (container.env is already exported
  // there at launch and inherited). local: container.env and extra both go through `env`.
  virtual std::vector<std::string> exec_argv(const std::vector<std::string>& cmd,
                                             const EnvList& extra_env) const = 0;
  // Removes the container; safe to run when it does not exist (empty for local).
  virtual std::vector<std::string> teardown_argv() const = 0;
  // Prints the id (content digest) of the image the container runs, on the node outside the
  // container (empty for local).
  virtual std::vector<std::string> image_id_argv() const { return {}; }
};

class ContainerRuntime : public Runtime {
 public:
  ContainerRuntime(std::string cli, const Container& c) : cli_(std::move(cli)), c_(c) {}
  std::string name() const override { return cli_; }
  std::vector<std::string> launch_argv() const override;
  std::vector<std::string> exec_argv(const std::vector<std::string>& cmd,
                                     const EnvList& extra_env) const override;
  std::vector<std::string> teardown_argv() const override;
  std::vector<std::string> image_id_argv() const override;

 private:
  std::string cli_;
  Container c_;
};

class LocalRuntime : public Runtime {
 public:
  explicit LocalRuntime(const Container& c) : c_(c) {}
  std::string name() const override { return "local"; }
  std::vector<std::string> launch_argv() const override { return {}; }
  std::vector<std::string> exec_argv(const std::vector<std::string>& cmd,
                                     const EnvList& extra_env) const override;
  std::vector<std::string> teardown_argv() const override { return {}; }

 private:
  Container c_;
};

std::unique_ptr<Runtime> make_runtime(const SuiteConfig& cfg);

}  // namespace cvs
