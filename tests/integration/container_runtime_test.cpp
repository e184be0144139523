// The docker and podman runtimes against real engines (tests/containers/engine_setup.sh: Debian's
// podman and dockerd with the test image localhost/cvs-test-host:latest): launch with the
// session's labels, env at `run` inherited by `exec`, per-node env through exec, what setup
// checks after launch, a foreign container of the configured name refused and left alone, and
// teardown removing the container. Skipped where the engines do not run (failed under CI=true).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include "cvs/config/cluster.hpp"
#include "cvs/config/config_error.hpp"
#include "cvs/exec/launch.hpp"
#include "cvs/exec/process.hpp"

namespace {

using Argv = std::vector<std::string>;

cvs::ProcResult sh(const Argv& argv) {
  return cvs::run_one({argv, std::chrono::seconds(60), argv[0]});
}

class ContainerRuntime : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto check = sh({CVS_SOURCE_ROOT "/tests/containers/engine_setup.sh", "--check"});
    if (!check.ok()) {
      const char* ci = std::getenv("CI");
      if (ci && std::string(ci) == "true") FAIL() << "the container engines do not run on this CI machine";
      GTEST_SKIP() << "podman/dockerd do not run the test image here (tests/containers/engine_setup.sh)";
    }
    name_ = "cvs-runtime-test-" + GetParam() + "-" + std::to_string(::getpid());
  }
  void TearDown() override {
    if (!name_.empty()) sh({GetParam(), "rm", "--force", name_});
  }
  cvs::SuiteConfig config() const {
    nlohmann::ordered_json j = {
        {"gpu_name", "cpu"},
        {"gpus_per_node", 1},
        {"threshold_json", "none_threshold.json"},
        {"container",
         {{"name", name_},
          {"image", "localhost/cvs-test-host:latest"},
          {"runtime",
           {{"name", GetParam()},
            {"args",
             {{"network", "host"},
              {"ipc", "host"},
              {"privileged", true},
              {"shm-size", "1G"},
              {"devices", {"/dev/null"}},
              {"volumes", {"/usr:/usr:ro"}}}}}},
          {"env", {{"CVS_FROM_RUN", "a b 'c'"}}}}},
        {"train_params",
         {{"train_script_paths", {"/bin/sh"}}, {"python", "sh"}, {"maxtext_config", {{"steps", 1}}}}},
        {"sweeps", {{"BS=1", nlohmann::ordered_json::object()}}},
        {"runs", {"BS=1"}}};
    return cvs::load_config_text(j.dump(), "container_runtime_test.json",
                                 {.user = "", .require_threshold_file = false});
  }
  // A container of the configured name started by hand (extra: e.g. --label k=v), as someone
  // else or an earlier session left it.
  bool start_by_hand(const Argv& extra) const {
    Argv argv = {GetParam(), "run", "--detach", "--name", name_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    for (const char* a :
         {"--volume", "/usr:/usr:ro", "--entrypoint", "sleep", "localhost/cvs-test-host:latest", "infinity"})
      argv.emplace_back(a);
    return sh(argv).ok();
  }
  std::string name_;
};

TEST_P(ContainerRuntime, LaunchLabelsExecEnvChecksAndTeardown) {
  auto cfg = config();
  auto cluster = cvs::default_cluster();
  cvs::Launcher l(cfg, cluster, {});
  l.set_container_identity("jaxmaxtext_single", "session-1");
  auto problems = l.setup();
  ASSERT_TRUE(problems.empty()) << problems.front();
  auto labels = sh({GetParam(), "container", "inspect", "--format",
                    "{{index .Config.Labels \"org.cvs-maxtext.session\"}}", name_});
  EXPECT_EQ(labels.out, "session-1\n") << labels.describe();
  EXPECT_FALSE(l.image_id().empty());
  std::vector<Argv> cmd = {
      l.runtime().exec_argv({"sh", "-c", "echo \"$CVS_FROM_RUN|$NODE_RANK\""}, l.node_env(0))};
  auto rs = cvs::fan_out(l.transport(), cmd, std::chrono::seconds(60));
  EXPECT_EQ(rs[0].out, "a b 'c'|0\n") << rs[0].describe();
  EXPECT_TRUE(l.teardown().empty());
  EXPECT_FALSE(sh({GetParam(), "container", "inspect", name_}).ok()) << "teardown must remove the container";
}

TEST_P(ContainerRuntime, AForeignContainerOfTheNameIsRefusedAndLeftAlone) {
  ASSERT_TRUE(start_by_hand({}));
  auto cfg = config();
  auto cluster = cvs::default_cluster();
  {
    cvs::Launcher l(cfg, cluster, {});
    auto problems = l.setup();
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_NE(problems[0].find("a container named " + name_ + " exists that cvs-maxtext did not start"),
              std::string::npos)
        << problems[0];
    EXPECT_NE(problems[0].find(GetParam() + " rm --force " + name_), std::string::npos) << problems[0];
  }  // the launcher's destructor tears down: not a container it did not start
  EXPECT_TRUE(sh({GetParam(), "container", "inspect", name_}).ok()) << "someone else's container was removed";
}

TEST_P(ContainerRuntime, AContainerThisSuiteLeftIsReplaced) {
  ASSERT_TRUE(start_by_hand(
      {"--label", "org.cvs-maxtext.suite=jaxmaxtext_single", "--label", "org.cvs-maxtext.session=old"}));
  auto cfg = config();
  auto cluster = cvs::default_cluster();
  cvs::Launcher l(cfg, cluster, {});
  l.set_container_identity("jaxmaxtext_single", "new");
  auto problems = l.setup();
  ASSERT_TRUE(problems.empty()) << problems.front();
  auto labels = sh({GetParam(), "container", "inspect", "--format",
                    "{{index .Config.Labels \"org.cvs-maxtext.session\"}}", name_});
  EXPECT_EQ(labels.out, "new\n");
  EXPECT_TRUE(l.teardown().empty());
}

INSTANTIATE_TEST_SUITE_P(engine, ContainerRuntime, ::testing::Values("podman", "docker"));

}  // namespace
