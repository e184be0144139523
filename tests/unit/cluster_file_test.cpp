// The cluster file's rules: its nodes, head, users, ssh and Slurm blocks, overrides, and the errors
// with their JSON pointers (moved from execution_test.cpp, names unchanged).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cvs/config/cluster.hpp"
#include "cvs/exec/launch.hpp"
#include "cvs/exec/transport.hpp"
#include "test_helpers.hpp"

namespace fs = std::filesystem;
using Argv = std::vector<std::string>;

TEST(Cluster, DefaultIsOneLocalNode) {
  auto c = cvs::default_cluster();
  ASSERT_EQ(c.nodes.size(), 1u);
  EXPECT_EQ(c.nodes[0].host, "localhost");
  EXPECT_EQ(c.nodes[0].transport, "local");
}

TEST(Cluster, ParsesNodesHeadAndSsh) {
  auto c = cvs::parse_cluster(
      R"({"nodes": ["gpu-01", {"name": "n2", "host": "10.0.0.2", "user": "ops", "ssh_key": "/k", "port": 2222}],
                                  "head": "n2", "ssh": {"connect_timeout_s": 3}})",
      "c.json");
  ASSERT_EQ(c.nodes.size(), 2u);
  EXPECT_EQ(c.nodes[0].name, "n2") << "the head is rank 0";
  EXPECT_EQ(c.nodes[1].name, "gpu-01");
  EXPECT_EQ(c.nodes[1].transport, "ssh");
  EXPECT_EQ(c.head, 0u);
  EXPECT_EQ(c.coordinator_address, "10.0.0.2");
  EXPECT_EQ(c.ssh.connect_timeout_s, 3);
}

namespace {
std::vector<cvs::ConfigIssue> cluster_issues(const std::string& text) {
  return cvs::test::issues_raised([&] { cvs::parse_cluster(text, "c.json"); });
}
}  // namespace

TEST(Cluster, ErrorsCarryPointers) {
  const auto issues_of = cluster_issues;
  EXPECT_TRUE(cvs::test::has_issue(issues_of(R"({"nodes": []})"), "/nodes", "non-empty"));
  EXPECT_TRUE(cvs::test::has_issue(issues_of(R"({"nodes": ["a", "a"]})"), "/nodes/1/name", "twice"));
  EXPECT_TRUE(cvs::test::has_issue(issues_of(R"({"nodes": ["a"], "head": "b"})"), "/head", "not the name"));
  EXPECT_TRUE(
      cvs::test::has_issue(issues_of(R"({"nodes": [{"host": "a", "port": 0}]})"), "/nodes/0/port", "port"));
  EXPECT_TRUE(cvs::test::has_issue(issues_of(R"({"nodes": [{"host": "10.1.1.1", "transport": "local"}]})"),
                                   "/nodes/0/transport", "not this machine"));
  EXPECT_TRUE(cvs::test::has_issue(
      issues_of(R"({"nodes": ["gpu-01", "gpu-02"], "coordinator_address": "127.0.0.1"})"),
      "/coordinator_address", "never rendezvous"));
  EXPECT_TRUE(cvs::test::has_issue(issues_of(R"({"nodes": ["a"], "nodez": 1})"), "/nodez", "unknown key"));
  // A mistyped ssh block says what is wrong with the value, never "unknown key" or nothing.
  EXPECT_TRUE(cvs::test::has_issue(issues_of(R"({"nodes": ["a"], "ssh": {"options": "ProxyJump=b"}})"),
                                   "/ssh/options", "must be a list"));
  EXPECT_TRUE(cvs::test::has_issue(issues_of(R"({"nodes": ["a"], "ssh": {"options": ["A=b", 3]}})"),
                                   "/ssh/options/1", "must be a string"));
  EXPECT_TRUE(cvs::test::has_issue(issues_of(R"({"nodes": ["a"], "ssh": {"control_dir": 5}})"),
                                   "/ssh/control_dir", "must be a string"));
  // One reader for the user's files (json_reader.hpp): a mistyped key of any block gets its
  // "did you mean", like the config file's.
  auto fix_at = [&](const std::string& text, const std::string& pointer) {
    for (const auto& i : issues_of(text))
      if (i.pointer == pointer) return i.fix;
    return std::string("(no issue at ") + pointer + ")";
  };
  EXPECT_EQ(fix_at(R"({"nodes": ["a"], "ssh": {"conect_timeout_s": 5}})", "/ssh/conect_timeout_s"),
            "did you mean 'connect_timeout_s'? (prefix with '_' to keep it as a comment)");
  EXPECT_EQ(fix_at(R"({"nodes": [{"host": "a", "usr": "me"}]})", "/nodes/0/usr"),
            "did you mean 'user'? (prefix with '_' to keep it as a comment)");
  EXPECT_EQ(fix_at(R"({"scheduler": "slurm", "slurm": {"nodes": 1, "partion": "gpu"}})", "/slurm/partion"),
            "did you mean 'partition'? (prefix with '_' to keep it as a comment)");
  EXPECT_EQ(fix_at(R"({"nodes": ["a"], "head_node": "a"})", "/head_node"),
            "remove it, or prefix it with '_' to keep it as a comment");
}

TEST(Cluster, SlurmSchedulerRulesAndSrunArgv) {
  using cvs::test::has_issue;
  EXPECT_TRUE(has_issue(cluster_issues(R"({"scheduler": "slurm"})"), "/slurm"));
  EXPECT_TRUE(has_issue(cluster_issues(R"({"scheduler": "slurm", "slurm": {}})"), "/slurm/nodes"));
  EXPECT_TRUE(has_issue(cluster_issues(R"({"scheduler": "slurm", "slurm": {"nodes": 0}})"), "/slurm/nodes"));
  EXPECT_TRUE(has_issue(cluster_issues(R"({"scheduler": "slurm", "slurm": {"nodes": 2, "partitoin": "x"}})"),
                        "/slurm/partitoin"));
  EXPECT_TRUE(has_issue(cluster_issues(R"({"scheduler": "slurm", "slurm": {"nodes": 2}, "nodes": ["a"]})"),
                        "/nodes"));
  EXPECT_TRUE(has_issue(cluster_issues(R"({"scheduler": "pbs", "nodes": ["a"]})"), "/scheduler"));
  EXPECT_TRUE(has_issue(cluster_issues(R"({"scheduler": "slurm", "slurm": {"nodes": 1}, "overrides": []})"),
                        "/overrides"));
  auto c = cvs::parse_cluster(
      R"({"scheduler": "slurm", "slurm": {"nodes": 4, "partition": "gpu", "container_image": "rocm/jax:x"}, "overrides": {"gpus_per_node": 4}})",
      "c");
  EXPECT_EQ(c.nodes.size(), 4u);
  EXPECT_EQ(c.nodes[3].transport, "slurm");
  EXPECT_EQ(c.overrides["gpus_per_node"], 4);
  c.slurm.job_id = "42";
  c.nodes[1].host = "gpu-07";
  cvs::Transport t(c);
  EXPECT_EQ(t.wrap(c.nodes[1], {"hostname"}),
            (Argv{"srun", "--jobid=42", "--nodes=1", "--ntasks=1", "--nodelist=gpu-07", "--overlap",
                  "--quiet", "--kill-on-bad-exit=1", "--container-image=rocm/jax:x", "--", "hostname"}));
}

TEST(Cluster, AnExistingSlurmJobNamesItsHostsAndTheFleetWritesFilesForIt) {
  using cvs::test::has_issue;
  EXPECT_TRUE(has_issue(cluster_issues(R"({"scheduler": "slurm", "slurm": {"job_id": "77"}})"),
                        "/slurm/nodelist", "needs the hosts"));
  EXPECT_TRUE(has_issue(cluster_issues(R"({"scheduler": "slurm", "slurm": {"nodes": 1, "nodelist": ["a"]}})"),
                        "/slurm/nodelist", "existing job"));
  EXPECT_TRUE(
      has_issue(cluster_issues(R"({"scheduler": "slurm", "slurm": {"job_id": 77, "nodelist": ["a"]}})"),
                "/slurm/job_id", "as a string"));
  EXPECT_TRUE(
      has_issue(cluster_issues(R"({"scheduler": "slurm", "slurm": {"job_id": "77", "nodelist": []}})"),
                "/slurm/nodelist", "non-empty"));
  EXPECT_TRUE(has_issue(
      cluster_issues(
          R"({"scheduler": "slurm", "slurm": {"job_id": "77", "nodelist": ["a", "b"], "nodes": 3}})"),
      "/slurm/nodes", "lists 2"));
  const auto dir = fs::temp_directory_path() / ("cvs_slurm_job_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "c.json") << R"({"scheduler": "slurm",
    "slurm": {"nodes": 3, "partition": "gpu", "extra_args": ["--exclusive", "--nodelist=old"]}})";
  auto c = cvs::load_cluster(dir / "c.json");
  EXPECT_FALSE(c.slurm.existing_job);
  c.slurm.job_id = "77";  // the fleet's allocation
  for (int i = 0; i < 3; ++i) c.nodes[i].name = c.nodes[i].host = "gpu0" + std::to_string(i + 1);
  // A node's run in the job: its host only; it neither allocates nor releases.
  std::ofstream(dir / "node.json") << cvs::cluster_file_with(c, {c.nodes[1]}).dump();
  const auto node = cvs::load_cluster(dir / "node.json");
  EXPECT_TRUE(node.slurm.existing_job);
  EXPECT_EQ(node.slurm.job_id, "77");
  ASSERT_EQ(node.nodes.size(), 1u);
  EXPECT_EQ(node.nodes[0].host, "gpu02");
  EXPECT_EQ(node.slurm.partition, "gpu") << "the rest of the file is kept";
  // The healthy hosts once the job is released: a new allocation of exactly them.
  c.slurm.job_id.clear();
  std::ofstream(dir / "healthy.json") << cvs::cluster_file_with(c, {c.nodes[0], c.nodes[2]}).dump();
  const auto healthy = cvs::load_cluster(dir / "healthy.json");
  EXPECT_FALSE(healthy.slurm.existing_job);
  EXPECT_EQ(healthy.slurm.nodes, 2);
  EXPECT_EQ(healthy.slurm.extra_args, (std::vector<std::string>{"--exclusive", "--nodelist=gpu01,gpu03"}));
  fs::remove_all(dir);
}

TEST(Cluster, OverridesMergeOntoTheConfig) {
  auto dir = fs::temp_directory_path() / ("cvs_ovr_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(cvs::test::data("configs/mi325x_jaxmaxtext_llama-3.3-70b_distributed_threshold.json"),
                dir / "mi325x_jaxmaxtext_llama-3.3-70b_distributed_threshold.json");
  std::ofstream(dir / "c.json") << cvs::test::spec_example_untagged().dump();
  auto cl = cvs::parse_cluster(
      R"({"nodes": ["a"], "overrides": {"gpus_per_node": 4, "container": {"env": {"NCCL_IB_HCA": "mlx5_0"}}}})",
      "cl.json");
  auto c = cvs::load_config_for_cluster(dir / "c.json", cl, {.user = "bob"});
  EXPECT_EQ(c.gpus_per_node, 4);
  bool found = false;
  for (const auto& [k, v] : c.container.env) found |= k == "NCCL_IB_HCA" && v == "mlx5_0";
  EXPECT_TRUE(found);
  fs::remove_all(dir);
}

TEST(Cluster, TheHeadIsRankZeroCoordinatorAndMetricsSourceWhereverItIsListed) {
  auto c = cvs::parse_cluster(R"({"nodes": [{"name": "a", "host": "127.0.0.1", "transport": "local"},
                                             {"name": "b", "host": "localhost", "transport": "local"},
                                             {"name": "c", "host": "127.0.0.2", "transport": "local"}],
                                  "head": "b"})",
                              "c.json");
  ASSERT_EQ(c.nodes.size(), 3u);
  EXPECT_EQ(c.nodes[0].name, "b");
  EXPECT_EQ(c.nodes[1].name, "a");
  EXPECT_EQ(c.nodes[2].name, "c");
  EXPECT_EQ(c.coordinator_address, "localhost");
  const auto cfg =
      cvs::load_config(std::string(CVS_SOURCE_ROOT) + "/configs/cpu_jaxmaxtext_tiny_distributed.json");
  cvs::Launcher launcher(cfg, c, {});
  auto value = [](const cvs::EnvList& env, const std::string& k) {
    for (const auto& [n, v] : env)
      if (n == k) return v;
    return std::string("(unset)");
  };
  const auto head = launcher.node_env(0);
  EXPECT_EQ(value(head, "JAX_PROCESS_INDEX"), "0");
  EXPECT_EQ(value(head, "NODE_RANK"), "0");
  EXPECT_EQ(value(head, "JAX_COORDINATOR_IP"), "localhost") << "the coordinator is the node of rank 0";
  EXPECT_EQ(value(launcher.node_env(1), "JAX_PROCESS_INDEX"), "1");
}

TEST(Cluster, UserIdIsTheNodesUserWhenTheClusterFileGivesOne) {
  const std::string cfg = std::string(CVS_SOURCE_ROOT) + "/configs/cpu_jaxmaxtext_tiny_distributed.json";
  auto c = cvs::parse_cluster(R"({"nodes": [{"name": "a", "host": "10.0.0.1", "user": "ops"},
                                             {"name": "b", "host": "10.0.0.2", "user": "ops"}]})",
                              "c.json");
  EXPECT_EQ(cvs::load_config_for_cluster(cfg, c).paths.log_dir, "/tmp/ops/cvs-maxtext/LOGS/jaxmaxtext");
  // Without a user in the cluster file: this process's user.
  auto local = cvs::parse_cluster(R"({"nodes": ["10.0.0.1", "10.0.0.2"]})", "c.json");
  EXPECT_EQ(cvs::load_config_for_cluster(cfg, local).paths.log_dir,
            "/tmp/" + cvs::os_user() + "/cvs-maxtext/LOGS/jaxmaxtext");
  // Different users and {user-id} in the paths: an error at the cluster file's nodes.
  auto mixed = cvs::parse_cluster(R"({"nodes": [{"name": "a", "host": "10.0.0.1", "user": "ops"},
                                                 {"name": "b", "host": "10.0.0.2", "user": "root"}]})",
                                  "mixed.json");
  try {
    cvs::load_config_for_cluster(cfg, mixed);
    FAIL() << "no error";
  } catch (const cvs::ConfigError& e) {
    EXPECT_TRUE(cvs::test::has_issue(e.issues(), "/nodes", "different users ('ops', 'root')"));
  }
}
