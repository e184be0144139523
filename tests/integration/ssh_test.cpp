// The ssh transport against two real sshd test hosts in network namespaces (set up by
// tests/integration/netns_cluster.sh, which ctest runs around this binary).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cvs/config/cluster.hpp"
#include "cvs/config/maxtext_yaml.hpp"
#include "cvs/exec/launch.hpp"
#include "cvs/exec/transport.hpp"
#include "e2e/cpu_policy.hpp"
#include "support/test_dir.hpp"

namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

class SshNetns : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* d = std::getenv("CVS_NETNS_DIR");
    ASSERT_NE(d, nullptr)
        << "run through tests/integration/netns_cluster.sh run DIR -- (ctest -L integration does)";
    dir = d;
    cluster = cvs::load_cluster(dir / "cluster.json");
    root = cvs::test::fresh_test_dir("cvs_ssh");
    std::ifstream in(std::string(CVS_SOURCE_ROOT) + "/configs/cpu_jaxmaxtext_tiny_distributed.json");
    auto j = ordered_json::parse(in);
    j["paths"]["shared_fs"] = root.string();
    j["paths"]["temp_dir"] = (root / "tmp").string();
    j.merge_patch(cluster.overrides);
    cfg = cvs::load_config_text(j.dump(), std::string(CVS_SOURCE_ROOT) + "/configs/ssh.json",
                                {.user = "", .require_threshold_file = false});
  }
  void TearDown() override { fs::remove_all(root); }
  static cvs::PollPolicy fast() { return cvs::test::cpu_poll_policy(); }
  fs::path dir, root;
  cvs::Cluster cluster;
  cvs::SuiteConfig cfg;
};

TEST_F(SshNetns, FanOutReachesEachHostAtItsOwnAddress) {
  cvs::Transport t(cluster);
  std::vector<std::vector<std::string>> cmd(2, {"sh", "-c", "echo $SSH_CONNECTION"});
  auto rs = cvs::fan_out(t, cmd, std::chrono::seconds(30));
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_TRUE(rs[0].ok()) << rs[0].describe();
  EXPECT_TRUE(rs[1].ok()) << rs[1].describe();
  EXPECT_NE(rs[0].out.find(" 10.231.0.1 22"), std::string::npos) << rs[0].out;
  EXPECT_NE(rs[1].out.find(" 10.231.0.2 22"), std::string::npos) << rs[1].out;
  EXPECT_EQ(rs[0].label, "ns-a");
}

TEST_F(SshNetns, EachRankGetsItsOwnLauncherEnv) {
  cvs::Launcher l(cfg, cluster, fast());
  std::vector<std::vector<std::string>> per_node;
  for (std::size_t r = 0; r < 2; ++r)
    per_node.push_back(
        l.runtime().exec_argv({"sh", "-c",
                               "echo \"$NODE_RANK $NNODES $JAX_COORDINATOR_IP $JAX_PROCESS_INDEX "
                               "$JOB_COMPLETION_INDEX $GLOO_SOCKET_IFNAME\""},
                              l.node_env(r)));
  auto rs = cvs::fan_out(l.transport(), per_node, std::chrono::seconds(30));
  EXPECT_EQ(rs[0].out, "0 2 10.231.0.1 0 0 cvs0\n") << rs[0].describe();
  EXPECT_EQ(rs[1].out, "1 2 10.231.0.1 1 1 cvs0\n") << rs[1].describe();
}

TEST_F(SshNetns, AnUnreachableThirdNodeFailsFastWithItsName) {
  auto c3 = cvs::load_cluster(dir / "cluster3.json");
  cvs::Launcher l(cfg, c3, fast());
  const auto t0 = std::chrono::steady_clock::now();
  auto problems = l.setup();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(problems.size(), 1u) << (problems.empty() ? "" : problems[0]);
  // Said to be unreachable, with ssh's own reason, never as a missing file (#43).
  EXPECT_EQ(problems[0].rfind("ns-gone: unreachable: ssh: ", 0), 0u) << problems[0];
  EXPECT_NE(problems[0].find("(the train script check could not run)"), std::string::npos) << problems[0];
  EXPECT_EQ(problems[0].find("none of train_script_paths"), std::string::npos) << problems[0];
  EXPECT_LT(secs, 20.0) << "the 3 s connect timeout bounds it; never hangs";
}

TEST_F(SshNetns, AKilledNodeIsDetectedAndTheOtherStopped) {
  cvs::Launcher l(cfg, cluster, fast());
  ASSERT_TRUE(l.setup().empty());
  auto req = cvs::test::cpu_run_request(cfg, "sshkill", 400, root / "report");
  const std::string victim_pid = cfg.paths.log_dir + "/sshkill/node-1/pid";
  bool killed = false;
  auto o = l.run(req, [&](const cvs::Progress& p) {
    if (killed || p.step < 1) return;
    // Kill node ns-b's whole training session from its own shell, over ssh.
    auto rs = cvs::run_one(
        {l.transport().wrap(
             cluster.nodes[1],
             {"sh", "-c", "p=$(cat \"$1\") && [ \"$p\" -gt 1 ] && kill -KILL \"-$p\"", "k", victim_pid}),
         std::chrono::seconds(20), "kill"});
    killed = rs.ok();
  });
  ASSERT_TRUE(killed);
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.failure.rfind("ns-b: ", 0), 0u) << o.failure;
  EXPECT_EQ(cvs::to_string(o.nodes[1].state), "gone");
}

TEST_F(SshNetns, ANodeLostMidRunIsUnreachableOnceItsStreamCannotBeRestarted) {
  cvs::Launcher l(cfg, cluster, fast());
  ASSERT_TRUE(l.setup().empty());
  auto req = cvs::test::cpu_run_request(cfg, "sshlost", 400, root / "report");
  bool cut = false;
  const auto t0 = std::chrono::steady_clock::now();
  auto o = l.run(req, [&](const cvs::Progress& p) {
    if (cut || p.step < 1) return;
    // cvs-b's sshd and every ssh session into it go: the node drops off the network for the
    // suite, while its training (its own session) runs on.
    const std::string pidfile = (dir / "sshd_cvs-b.pid").string();
    cvs::run_one({{"sh", "-c",
                   "kill \"$(cat \"$1\")\"; for p in $(ip netns pids cvs-b); do "
                   "[ \"$(cat /proc/$p/comm 2>/dev/null)\" = sshd ] && kill -KILL \"$p\"; done; true",
                   "cut", pidfile},
                  std::chrono::seconds(20),
                  "cut"});
    cut = true;
  });
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Leave the namespace as the next test expects it: no training left in cvs-b, sshd back.
  cvs::run_one({{"sh", "-c",
                 "for p in $(ip netns pids cvs-b); do kill -KILL \"$p\"; done; "
                 "ip netns exec cvs-b /usr/sbin/sshd -f \"$1/sshd_cvs-b.conf\" -E \"$1/sshd_cvs-b.log\"",
                 "restore", dir.string()},
                std::chrono::seconds(20),
                "restore"});
  ASSERT_TRUE(cut);
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(cvs::to_string(o.nodes[1].state), "unreachable");
  EXPECT_NE(o.failure.find("ns-b: node unreachable while streaming"), std::string::npos) << o.failure;
  EXPECT_NE(cvs::to_string(o.nodes[0].state), "running") << "the reachable node was stopped";
  EXPECT_LT(secs, 300.0) << "three failed restarts, one per poll tick, not a hang";
}

}  // namespace
