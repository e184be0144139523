// What the suite checks about a container, on inspect documents recorded from the real engines
// on this project's CI machines (tests/data/containers: podman 4.3 and dockerd 20.10, each running
// a container started with the labels, host network and IPC, --privileged, --ulimit nofile and
// memlock (docker), volumes /usr:ro and /tmp/ctest, env FOO=bar).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cvs/exec/container_check.hpp"

namespace {

nlohmann::json recorded(const std::string& name) {
  std::ifstream in(std::string(CVS_TEST_DATA) + "/containers/" + name);
  return nlohmann::json::parse(in);
}

cvs::Container configured() {
  cvs::Container c;
  c.name = "cvs-inspect";
  c.args.network = "host";
  c.args.ipc = "host";
  c.args.privileged = true;
  c.args.volumes = {"/usr:/usr:ro", "/tmp/ctest:/tmp/ctest"};
  c.env = {{"FOO", "bar"}};
  return c;
}

cvs::ContainerLabels labels() {
  cvs::ContainerLabels l;
  l.suite = "jaxmaxtext_single";
  l.session = "abc";
  return l;
}

bool mentions(const std::vector<std::string>& v, const std::string& what) {
  for (const auto& s : v)
    if (s.find(what) != std::string::npos) return true;
  return false;
}

TEST(ContainerInspect, WhatWasConfiguredIsFoundOnBothEngines) {
  auto c = configured();
  EXPECT_EQ(cvs::check_inspect(recorded("inspect-podman-4.3.json"), c, cvs::Engine::Podman, labels()),
            std::vector<std::string>{});
  c.args.ulimit = {"nofile=65535:65535", "memlock=-1:-1"};
  c.args.shm_size = "1g";  // with host IPC: not compared (the node's /dev/shm)
  EXPECT_EQ(cvs::check_inspect(recorded("inspect-docker-20.10.json"), c, cvs::Engine::Docker, labels()),
            std::vector<std::string>{});
}

TEST(ContainerInspect, EachMissingArgIsNamed) {
  auto c = configured();
  c.args.volumes.push_back("/data:/data:ro");
  c.args.volumes[1] = "/tmp/ctest:/tmp/ctest:ro";  // mounted read-write
  c.env.emplace_back("NCCL_DEBUG", "INFO");
  c.args.group_add = {"video"};
  c.args.ulimit = {"nofile=1024:1024"};
  auto l = labels();
  l.session = "other";
  const auto p = cvs::check_inspect(recorded("inspect-docker-20.10.json"), c, cvs::Engine::Docker, l);
  EXPECT_TRUE(mentions(p, "volume /data:/data:ro is not mounted at /data"));
  EXPECT_TRUE(mentions(p, "volume /tmp/ctest:/tmp/ctest:ro is mounted read-write"));
  EXPECT_TRUE(mentions(p, "env NCCL_DEBUG=INFO did not reach the container"));
  EXPECT_TRUE(mentions(p, "group-add video did not reach the container"));
  EXPECT_TRUE(mentions(p, "ulimit nofile=1024:1024 is not in the container's limits"));
  EXPECT_TRUE(mentions(p, "label org.cvs-maxtext.session=other"));
  EXPECT_EQ(p.size(), 6u);
  auto doc = recorded("inspect-docker-20.10.json");
  doc[0]["HostConfig"]["Privileged"] = false;
  EXPECT_TRUE(mentions(cvs::check_inspect(doc, configured(), cvs::Engine::Docker, labels()),
                       "privileged did not reach the container"));
}

TEST(ContainerInspect, PodmanUlimitsAreReadFromTheBundle) {
  // podman 4.3 reports the ulimits of the OCI bundle; on these machines the test-only runtime
  // wrapper removes process.rlimits, so a configured ulimit is truly absent from the container.
  auto c = configured();
  c.args.ulimit = {"nofile=65535:65535"};
  EXPECT_TRUE(
      mentions(cvs::check_inspect(recorded("inspect-podman-4.3.json"), c, cvs::Engine::Podman, labels()),
               "ulimit nofile=65535:65535"));
  // Both spellings of the names, and unlimited as -1 or uint64 max.
  nlohmann::json doc = {
      {"HostConfig",
       {{"Ulimits",
         {{{"Name", "RLIMIT_NOFILE"}, {"Soft", 65535}, {"Hard", 65535}},
          {{"Name", "RLIMIT_MEMLOCK"}, {"Soft", 18446744073709551615ULL}, {"Hard", -1}}}}}}};
  c.args.ulimit = {"nofile=65535:65535", "memlock=-1:-1"};
  c.args.volumes.clear();
  c.args.privileged = false;
  c.env.clear();
  EXPECT_EQ(cvs::check_inspect(doc, c, cvs::Engine::Podman, {}),
            std::vector<std::string>{"label org.cvs-maxtext.suite=cvs-maxtext is not on the container"});
}

TEST(ContainerInspect, ShmSizeNetworkAndIpcOtherThanHost) {
  auto c = configured();
  c.args.ipc = "private";
  c.args.shm_size = "2g";
  c.args.network = "bridge";
  const auto p = cvs::check_inspect(recorded("inspect-docker-20.10.json"), c, cvs::Engine::Docker, labels());
  EXPECT_TRUE(mentions(p, "shm-size 2g did not reach the container (inspect: 1073741824)"));
  EXPECT_TRUE(mentions(p, "network bridge did not reach the container (inspect: host)"));
  EXPECT_TRUE(mentions(p, "ipc private did not reach the container (inspect: host)"));
  c.args.shm_size = "1G";
  c.args.network = "host";
  c.args.ipc = "host";
  EXPECT_TRUE(
      cvs::check_inspect(recorded("inspect-docker-20.10.json"), c, cvs::Engine::Docker, labels()).empty());
  EXPECT_EQ(cvs::parse_size_bytes("256G"), 256LL << 30);
  EXPECT_EQ(cvs::parse_size_bytes("64m"), 64LL << 20);
  EXPECT_EQ(cvs::parse_size_bytes("1024"), 1024);
  EXPECT_EQ(cvs::parse_size_bytes("1gb"), 1LL << 30);
  EXPECT_FALSE(cvs::parse_size_bytes("lots"));
}

TEST(ContainerInspect, HostNamespacesAndDevicesAreComparedForReal) {
  auto c = configured();
  c.args.devices = {"/dev/null", "/dev/kfd:/dev/kfd:rwm"};
  const auto argv = cvs::namespace_probe_argv(c);
  EXPECT_EQ(std::vector<std::string>(argv.end() - 2, argv.end()),
            (std::vector<std::string>{"/dev/null", "/dev/kfd"}));
  const std::string node = "net:[1]\nipc:[2]\n";
  EXPECT_TRUE(cvs::check_namespaces(c, node, "net:[1]\nipc:[2]\n").empty());
  const auto p = cvs::check_namespaces(c, node, "net:[7]\nipc:[8]\nCVS-MISSING /dev/kfd\n");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0],
            "network host did not reach the container: its network namespace is net:[7], the node's net:[1]");
  EXPECT_EQ(p[2], "device /dev/kfd is not in the container");
}

TEST(ExistingContainer, FreeOursForeignOrUnknown) {
  using S = cvs::ExistingContainer::State;
  EXPECT_EQ(cvs::classify_existing(false, "", "Error: inspecting object: no such container x\n").state,
            S::Free);
  EXPECT_EQ(cvs::classify_existing(false, "", "Error response from daemon: No such container: x\n").state,
            S::Free);
  auto unknown = cvs::classify_existing(false, "", "Cannot connect to the Docker daemon\n");
  EXPECT_EQ(unknown.state, S::Unknown);
  EXPECT_EQ(unknown.detail, "Cannot connect to the Docker daemon");
  EXPECT_EQ(cvs::classify_existing(true, "null\n", "").state, S::Foreign);
  EXPECT_EQ(cvs::classify_existing(true, "{}\n", "").state, S::Foreign);
  auto ours = cvs::classify_existing(
      true,
      R"({"org.cvs-maxtext.suite":"jaxmaxtext_single","org.cvs-maxtext.session":"s1","org.cvs-maxtext.controller":"h:1"})",
      "");
  EXPECT_EQ(ours.state, S::Ours);
  EXPECT_EQ(ours.session, "s1");
  EXPECT_EQ(ours.controller, "h:1");
}

TEST(ExistingContainer, ARunningControllerOnThisHostIsNotStale) {
  // Not alive: another host, a pid that does not exist, this very process (a leftover of its own
  // session), a label without a start time.
  EXPECT_FALSE(cvs::controller_alive(cvs::controller_id("otherhost", 1), "thishost"));
  EXPECT_FALSE(cvs::controller_alive("thishost:99999999:1", "thishost"));
  EXPECT_FALSE(cvs::controller_alive(cvs::controller_id("thishost", ::getpid()), "thishost"));
  EXPECT_FALSE(cvs::controller_alive("thishost:1", "thishost"));
  // A live process named by its pid and start time: in use.
  const pid_t child = ::fork();
  if (child == 0) {
    ::execl("/bin/sleep", "jaxmaxtext_single", "30", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(child, 0);
  ::usleep(100000);
  const auto id = cvs::controller_id("thishost", child);
  EXPECT_TRUE(cvs::controller_alive(id, "thishost")) << id;
  // The same pid with another start time is a later process reusing the pid: not the controller.
  EXPECT_FALSE(cvs::controller_alive("thishost:" + std::to_string(child) + ":1", "thishost"));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_FALSE(cvs::controller_alive(id, "thishost"));
}

}  // namespace
