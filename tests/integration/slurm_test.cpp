// The slurm launcher against a real one-host Slurm (slurmctld + slurmd + munge, set up by
// tests/integration/slurm_cluster.sh, which ctest runs around this binary): allocation, nodes
// from SLURM_JOB_NODELIST, commands and training as srun steps, stop on failure, and no
// allocation left behind. (The cluster-file rules of scheduler slurm are unit tests.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cvs/config/cluster.hpp"
#include "cvs/config/maxtext_yaml.hpp"
#include "cvs/exec/launch.hpp"
#include "e2e/cpu_policy.hpp"
#include "support/test_dir.hpp"

namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

std::string squeue(const std::string& args) {
  auto r = cvs::run_one({{"sh", "-c", "squeue --noheader " + args}, std::chrono::seconds(30), "squeue"});
  return r.out;
}

class Slurm : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* d = std::getenv("CVS_SLURM_DIR");
    ASSERT_NE(d, nullptr)
        << "run through tests/integration/slurm_cluster.sh run DIR -- (ctest -L integration does)";
    cluster = cvs::load_cluster(fs::path(d) / "cluster.json");
    root = cvs::test::fresh_test_dir("cvs_slurm");
    std::ifstream in(std::string(CVS_SOURCE_ROOT) + "/configs/cpu_jaxmaxtext_tiny_single.json");
    auto j = ordered_json::parse(in);
    j["paths"]["shared_fs"] = root.string();
    j["paths"]["temp_dir"] = (root / "tmp").string();
    cfg = cvs::load_config_text(j.dump(), std::string(CVS_SOURCE_ROOT) + "/configs/slurm.json",
                                {.user = "", .require_threshold_file = false});
  }
  void TearDown() override { fs::remove_all(root); }
  cvs::RunRequest request(const std::string& name, long long steps) {
    return cvs::test::cpu_run_request(cfg, name, steps, root / "report");
  }
  fs::path root;
  cvs::Cluster cluster;
  cvs::SuiteConfig cfg;
};

TEST_F(Slurm, AllocationNamesTheNodesRunsStepsAndIsReleasedOnTeardown) {
  ASSERT_TRUE(cluster.is_slurm());
  ASSERT_EQ(cluster.nodes.size(), 1u);
  {
    cvs::Launcher l(cfg, cluster, cvs::test::cpu_poll_policy());
    auto problems = l.setup();
    ASSERT_TRUE(problems.empty()) << problems.front();
    const std::string id = cluster.slurm.job_id;
    ASSERT_FALSE(id.empty());
    char host[256] = {};
    ::gethostname(host, sizeof host);
    EXPECT_EQ(cluster.nodes[0].host, host) << "the node comes from SLURM_JOB_NODELIST";
    EXPECT_EQ(cluster.coordinator_address, host);
    EXPECT_NE(squeue("--jobs=" + id + " --format=%T").find("RUNNING"), std::string::npos);
    // Commands reach the node as steps of the allocation.
    auto rs = l.exec_all({"sh", "-c", "echo $SLURM_JOB_ID $SLURM_NNODES"}, std::chrono::seconds(60));
    EXPECT_EQ(rs[0].out, id + " 1\n") << rs[0].describe();
    auto o = l.run(request("slurm-ok", 6));
    ASSERT_TRUE(o.ok) << o.failure;
    EXPECT_EQ(o.nodes[0].scan.steps.size(), 6u);
    EXPECT_TRUE(l.teardown().empty());
    EXPECT_EQ(squeue("--jobs=" + id), "") << "teardown cancels the allocation";
  }
}

TEST_F(Slurm, AHungRunIsStoppedAndTheAllocationCancelledEvenWithoutTeardownCall) {
  std::string id;
  {
    auto p = cvs::test::cpu_poll_policy();
    p.startup_s = 5;
    p.per_step_s = 0;
    cvs::Launcher l(cfg, cluster, p);
    ASSERT_TRUE(l.setup().empty());
    id = cluster.slurm.job_id;
    auto o = l.run(request("slurm-hang", 1000));
    EXPECT_FALSE(o.ok);
    EXPECT_TRUE(o.timed_out) << o.failure;
    // The srun step of the stopped run is gone from the allocation.
    std::string steps;
    for (int i = 0; i < 40; ++i) {
      steps = squeue("--steps --jobs=" + id + " --format=%i");
      if (steps.find(id + ".") == std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    EXPECT_EQ(steps.find(id + "."), std::string::npos) << steps;
  }  // the Launcher's destructor tears down
  EXPECT_EQ(squeue("--jobs=" + id), "");
}

}  // namespace
