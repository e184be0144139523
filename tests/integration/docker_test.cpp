// The docker runtime against a real Docker engine: launch, env at `docker run` inherited by
// `docker exec`, per-node env through exec, teardown removing the container. Runs only where
// `docker info` succeeds (no engine exists on the CI machines of this project: skipped there,
// with the reason). CVS_DOCKER_TEST_IMAGE names an image present on the host (default
// debian:bookworm-slim).
#include <gtest/gtest.h>

#include <cstdlib>

#include "cvs/cluster.hpp"
#include "cvs/launch.hpp"
#include "cvs/process.hpp"

namespace {

bool docker_works(std::string& why) {
  auto r = cvs::run_one(
      {{"docker", "info", "--format", "{{.ServerVersion}}"}, std::chrono::seconds(20), "docker"});
  if (!r.ok())
    why = "`docker info` failed here (" + r.describe() +
          "): no Docker engine to test the docker runtime against";
  return r.ok();
}

TEST(DockerRuntime, LaunchExecEnvAndTeardownAgainstARealEngine) {
  std::string why;
  if (!docker_works(why)) GTEST_SKIP() << why;
  const char* img = std::getenv("CVS_DOCKER_TEST_IMAGE");
  nlohmann::ordered_json j = {
      {"gpu_name", "cpu"},
      {"gpus_per_node", 1},
      {"threshold_json", "none_threshold.json"},
      {"container",
       {{"name", "cvs-docker-test-" + std::to_string(::getpid())},
        {"image", img ? img : "debian:bookworm-slim"},
        {"runtime", {{"name", "docker"}, {"args", {{"network", "host"}, {"shm-size", "1G"}}}}},
        {"env", {{"CVS_FROM_RUN", "a b 'c'"}}}}},
      {"train_params",
       {{"train_script_paths", {"/bin/sh"}}, {"python", "sh"}, {"maxtext_config", {{"steps", 1}}}}},
      {"sweeps", {{"BS=1", nlohmann::ordered_json::object()}}},
      {"runs", {"BS=1"}}};
  auto cfg =
      cvs::load_config_text(j.dump(), "docker_test.json", {.user = "", .require_threshold_file = false});
  auto cluster = cvs::default_cluster();
  cvs::Launcher l(cfg, cluster, {});
  auto problems = l.setup();
  ASSERT_TRUE(problems.empty()) << problems.front();
  std::vector<std::vector<std::string>> cmd = {
      l.runtime().exec_argv({"sh", "-c", "echo \"$CVS_FROM_RUN|$NODE_RANK\""}, l.node_env(0))};
  auto rs = cvs::fan_out(l.transport(), cmd, std::chrono::seconds(60));
  EXPECT_EQ(rs[0].out, "a b 'c'|0\n") << rs[0].describe();
  EXPECT_TRUE(l.teardown().empty());
  auto gone = cvs::run_one({{"docker", "inspect", cfg.container.name}, std::chrono::seconds(20), "inspect"});
  EXPECT_FALSE(gone.ok()) << "the container must be removed by teardown";
}

}  // namespace
