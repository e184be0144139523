// The execution layer's exact argument vectors and the node agent run
// for real through /bin/sh on this machine.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "cvs/config/cluster.hpp"
#include "cvs/config/maxtext_yaml.hpp"
#include "cvs/exec/launch.hpp"
#include "cvs/exec/node_agent.hpp"
#include "cvs/exec/process.hpp"
#include "cvs/exec/rdma.hpp"
#include "cvs/exec/runtime.hpp"
#include "cvs/exec/transport.hpp"
#include "cvs/logs/run_timeline.hpp"
#include "support/test_dir.hpp"
#include "test_helpers.hpp"

namespace fs = std::filesystem;
using Argv = std::vector<std::string>;

TEST(Runtime, DockerRunArgvMatchesTheSpecExample) {
  auto c = cvs::test::load_json(cvs::test::spec_example_untagged());
  auto rt = cvs::make_runtime(c);
  const Argv a = rt->launch_argv({});
  const Argv head = {"docker",
                     "run",
                     "--detach",
                     "--name",
                     "rocm-jaxmaxtext-llama3.3-70b",
                     "--label",
                     "org.cvs-maxtext.suite=cvs-maxtext",
                     "--network",
                     "host",
                     "--ipc",
                     "host",
                     "--privileged",
                     "--shm-size",
                     "256G",
                     "--ulimit",
                     "nofile=65535:65535"};
  ASSERT_GE(a.size(), head.size());
  EXPECT_EQ(Argv(a.begin(), a.begin() + static_cast<long>(head.size())), head);
  auto has_pair = [&](const std::string& f, const std::string& v) {
    for (std::size_t i = 0; i + 1 < a.size(); ++i)
      if (a[i] == f && a[i + 1] == v) return true;
    return false;
  };
  EXPECT_TRUE(has_pair("--volume", "/dev/infiniband:/dev/infiniband"));
  EXPECT_TRUE(has_pair("--volume", "/home/alice:/home/alice"));
  EXPECT_TRUE(has_pair("--env", "NCCL_IB_HCA=rdma0,rdma1"));
  EXPECT_TRUE(has_pair("--env", "XLA_PYTHON_CLIENT_MEM_FRACTION=0.97"));
  EXPECT_EQ(Argv(a.end() - 4, a.end()),
            (Argv{"--entrypoint", "sleep", "rocm/jax-training:maxtext-v26.4", "infinity"}));
  EXPECT_EQ(rt->teardown_argv(), (Argv{"docker", "rm", "--force", "rocm-jaxmaxtext-llama3.3-70b"}));
  EXPECT_EQ(rt->exec_argv({"python3", "train.py"}, {{"NODE_RANK", "1"}}),
            (Argv{"docker", "exec", "--interactive", "--env", "NODE_RANK=1", "rocm-jaxmaxtext-llama3.3-70b",
                  "python3", "train.py"}));
}

bool has_pair(const Argv& a, const std::string& f, const std::string& v) {
  for (std::size_t i = 0; i + 1 < a.size(); ++i)
    if (a[i] == f && a[i + 1] == v) return true;
  return false;
}

TEST(Runtime, PodmanHasTheSameShapeButNoShmSizeWithHostIpc) {
  auto j = cvs::test::spec_example_untagged();
  j["container"]["runtime"]["name"] = "podman";
  auto rt = cvs::make_runtime(cvs::test::load_json(j));
  const Argv a = rt->launch_argv({});
  EXPECT_EQ(a.front(), "podman");
  // podman refuses --shm-size with --ipc host ("cannot set shmsize when running in the {host }
  // IPC Namespace"): the container uses the node's /dev/shm, and the launch log says so.
  EXPECT_EQ(std::find(a.begin(), a.end(), "--shm-size"), a.end());
  EXPECT_TRUE(has_pair(a, "--ipc", "host"));
  EXPECT_TRUE(has_pair(a, "--ulimit", "nofile=65535:65535"));
  ASSERT_EQ(rt->adjustments().size(), 1u);
  EXPECT_NE(rt->adjustments()[0].find("shm-size 256G is not passed to podman"), std::string::npos);
  // sleep as PID 1 ignores SIGTERM: podman's rm must not wait its 10 s stop timeout.
  EXPECT_EQ(rt->teardown_argv(),
            (Argv{"podman", "rm", "--force", "--time", "0", "rocm-jaxmaxtext-llama3.3-70b"}));
  j["container"]["runtime"]["args"]["ipc"] = "private";
  EXPECT_TRUE(has_pair(cvs::make_runtime(cvs::test::load_json(j))->launch_argv({}), "--shm-size", "256G"));
}

// JAX's compile cache (paths.compile_cache) reaches every run: MaxText's jax_cache_dir (unless the
// config names its own), and in a container a writable mount at the same path unless a writable
// volume of the config already holds it (created on the node first: host_dirs).
TEST(Runtime, TheCompileCacheIsEveryRunsAndMountedWhereNoWritableVolumeHoldsIt) {
  auto j = cvs::test::spec_example_untagged();
  const auto with_cache = [&](const std::string& path) {
    j["paths"]["compile_cache"] = path;
    return cvs::test::load_json(j);
  };
  auto cfg = with_cache("/home/alice/cache/jax_compile");  // under the spec's /home/alice volume
  const auto key = cfg.sweeps.front().key;
  EXPECT_EQ(cvs::sweep_maxtext_config(cfg, key, "r", "/o")["jax_cache_dir"], "/home/alice/cache/jax_compile");
  auto rt = cvs::make_runtime(cfg);
  EXPECT_FALSE(has_pair(rt->launch_argv({}), "--volume",
                        "/home/alice/cache/jax_compile:/home/alice/cache/jax_compile"));
  EXPECT_TRUE(rt->host_dirs().empty());

  rt = cvs::make_runtime(with_cache("/scratch/jax"));
  EXPECT_TRUE(has_pair(rt->launch_argv({}), "--volume", "/scratch/jax:/scratch/jax"));
  EXPECT_EQ(rt->host_dirs(), Argv{"/scratch/jax"});

  for (auto& v : j["container"]["runtime"]["args"]["volumes"])
    if (v == "/home/{user-id}:/home/{user-id}") v = "/home/{user-id}:/home/{user-id}:ro";
  rt = cvs::make_runtime(with_cache("/home/alice/jc"));
  EXPECT_TRUE(has_pair(rt->launch_argv({}), "--volume", "/home/alice/jc:/home/alice/jc"))
      << "under a read-only volume";

  cfg = with_cache("");
  EXPECT_FALSE(cvs::sweep_maxtext_config(cfg, key, "r", "/o").contains("jax_cache_dir"))
      << "MaxText's own default";
  EXPECT_TRUE(cvs::make_runtime(cfg)->host_dirs().empty());
  j["train_params"]["maxtext_config"]["jax_cache_dir"] = "/mine";
  cfg = with_cache("/scratch/jax");
  EXPECT_EQ(cvs::sweep_maxtext_config(cfg, key, "r", "/o")["jax_cache_dir"], "/mine")
      << "the config's own wins";
}

TEST(Runtime, NvidiaGpusAreDockerGpusAndPodmanCdiDevices) {
  auto j = cvs::test::spec_example_untagged();
  j["container"]["runtime"]["args"]["gpus"] = "all";
  EXPECT_TRUE(has_pair(cvs::make_runtime(cvs::test::load_json(j))->launch_argv({}), "--gpus", "all"));
  j["container"]["runtime"]["name"] = "podman";
  auto a = cvs::make_runtime(cvs::test::load_json(j))->launch_argv({});
  EXPECT_TRUE(has_pair(a, "--device", "nvidia.com/gpu=all"));
  EXPECT_EQ(std::find(a.begin(), a.end(), "--gpus"), a.end());
  j["container"]["runtime"]["args"]["gpus"] = "device=0,3";
  a = cvs::make_runtime(cvs::test::load_json(j))->launch_argv({});
  EXPECT_TRUE(has_pair(a, "--device", "nvidia.com/gpu=0"));
  EXPECT_TRUE(has_pair(a, "--device", "nvidia.com/gpu=3"));
  // A count has no CDI form: a config error naming the key and the fix.
  j["container"]["runtime"]["args"]["gpus"] = "2";
  try {
    cvs::test::load_json(j);
    FAIL() << "a GPU count under podman must be refused";
  } catch (const cvs::ConfigError& e) {
    EXPECT_EQ(e.issues()[0].pointer, "/container/runtime/args/gpus");
    EXPECT_NE(e.issues()[0].fix.find("device=0,1"), std::string::npos);
  }
}

TEST(Runtime, AmdDevicesAndGroupsPassThroughOnBothEngines) {
  auto j = cvs::test::spec_example_untagged();
  j["container"]["runtime"]["args"]["devices"] = {"/dev/kfd", "/dev/dri"};
  j["container"]["runtime"]["args"]["group-add"] = {"video", "render"};
  for (const char* engine : {"docker", "podman"}) {
    j["container"]["runtime"]["name"] = engine;
    const auto a = cvs::make_runtime(cvs::test::load_json(j))->launch_argv({});
    EXPECT_TRUE(has_pair(a, "--device", "/dev/kfd")) << engine;
    EXPECT_TRUE(has_pair(a, "--device", "/dev/dri")) << engine;
    EXPECT_TRUE(has_pair(a, "--group-add", "video")) << engine;
    EXPECT_TRUE(has_pair(a, "--group-add", "render")) << engine;
  }
}

TEST(Runtime, LaunchCarriesTheSessionLabels) {
  auto rt = cvs::make_runtime(cvs::test::load_json(cvs::test::spec_example_untagged()));
  cvs::ContainerLabels l{"jaxmaxtext_single", "s1", "abc", "host:42"};
  const auto a = rt->launch_argv(l);
  EXPECT_TRUE(has_pair(a, "--label", "org.cvs-maxtext.suite=jaxmaxtext_single"));
  EXPECT_TRUE(has_pair(a, "--label", "org.cvs-maxtext.session=s1"));
  EXPECT_TRUE(has_pair(a, "--label", "org.cvs-maxtext.config-sha256=abc"));
  EXPECT_TRUE(has_pair(a, "--label", "org.cvs-maxtext.controller=host:42"));
}

TEST(Runtime, ValuesWithSpacesAndQuotesStayOneArgument) {
  auto j = cvs::test::spec_example_untagged();
  j["container"]["env"]["WEIRD"] = "a b'c\"; rm -rf /";
  auto rt = cvs::make_runtime(cvs::test::load_json(j));
  const Argv a = rt->launch_argv({});
  EXPECT_NE(std::find(a.begin(), a.end(), "WEIRD=a b'c\"; rm -rf /"), a.end());
}

TEST(Runtime, LocalRuntimeRunsThroughEnvWithContainerEnvFirst) {
  cvs::Container c;
  c.runtime = "local";
  c.env = {{"JAX_PLATFORMS", "cpu"}};
  cvs::LocalRuntime rt(c);
  EXPECT_TRUE(rt.launch_argv({}).empty());
  EXPECT_EQ(rt.exec_argv({"python3", "-V"}, {{"NODE_RANK", "0"}}),
            (Argv{"env", "JAX_PLATFORMS=cpu", "NODE_RANK=0", "python3", "-V"}));
}

TEST(Transport, SshArgvUsesBatchModeControlMasterAndOneQuotedCommand) {
  cvs::Cluster cl = cvs::parse_cluster(
      R"({"nodes": [{"host": "gpu-01", "user": "ops", "ssh_key": "/k", "port": 2222}]})", "c");
  cvs::Transport t(cl);
  auto a = t.wrap(cl.nodes[0], {"echo", "a b", "it's"});
  EXPECT_EQ(a.front(), "ssh");
  auto has = [&](const std::string& s) { return std::find(a.begin(), a.end(), s) != a.end(); };
  EXPECT_TRUE(has("BatchMode=yes"));
  EXPECT_TRUE(has("ControlMaster=auto"));
  EXPECT_TRUE(has("ConnectTimeout=10"));
  EXPECT_TRUE(has("2222"));
  EXPECT_TRUE(has("ops"));
  EXPECT_EQ(a[a.size() - 3], "gpu-01");
  EXPECT_EQ(a[a.size() - 2], "--");
  EXPECT_EQ(a.back(), "echo 'a b' 'it'\\''s'");
  // The remote shell splits the quoted command back into exactly the original words.
  auto r = cvs::run_one(
      {{"sh", "-c", "printf '[%s]' " + a.back().substr(5)}, std::chrono::seconds(5), "", 1 << 16});
  EXPECT_EQ(r.out, "[a b][it's]");
}

TEST(Process, FanOutRunsConcurrentlyAndKeepsPerCommandResults) {
  std::vector<cvs::ProcRequest> reqs;
  for (int i = 0; i < 8; ++i)
    reqs.push_back({{"sh", "-c", "sleep 0.5; echo out$0; echo err$0 >&2; exit $0", std::to_string(i)},
                    std::chrono::seconds(10),
                    "n" + std::to_string(i)});
  const auto t0 = std::chrono::steady_clock::now();
  auto rs = cvs::run_all(reqs);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(secs, 3.0) << "8 x 0.5 s must overlap";
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(rs[i].label, "n" + std::to_string(i));
    EXPECT_EQ(rs[i].exit_code, i);
    EXPECT_EQ(rs[i].out, "out" + std::to_string(i) + "\n");
    EXPECT_EQ(rs[i].err, "err" + std::to_string(i) + "\n");
  }
}

// More requests than slots: each next one starts after a previous one exits (from the SIGCHLD
// handler's completion, not inside it: starting a child there corrupted Boost.Process's waiter
// list). Each closes its output before it exits, so its exit is the last thing seen of it.
TEST(Process, MoreRequestsThanSlotsAllRunWithTheirOwnResults) {
  std::vector<cvs::ProcRequest> reqs;
  for (int i = 0; i < 120; ++i)
    reqs.push_back({{"sh", "-c", "echo $0; exec >&- 2>&-; sleep 0.02; exit $(($0 % 7))", std::to_string(i)},
                    std::chrono::seconds(30),
                    "n" + std::to_string(i)});
  const auto rs = cvs::run_all(reqs, 3);
  for (int i = 0; i < 120; ++i) {
    EXPECT_EQ(rs[i].exit_code, i % 7) << i;
    EXPECT_EQ(rs[i].out, std::to_string(i) + "\n") << i;
  }
}

TEST(Process, AnInterruptReachesEveryRunningChildsGroupAndStartsNoMore) {
  // Each child leads its own process group (a terminal's Ctrl-C spares it): the caller's flag is
  // what forwards a Ctrl-C. A child that traps INT says so; one that does not dies of it.
  std::vector<cvs::ProcRequest> reqs = {
      {{"sh", "-c", "trap 'echo got INT; kill $!; exit 3' INT; sleep 30 & wait"},
       std::chrono::seconds(60),
       "trapping"},
      {{"sleep", "30"}, std::chrono::seconds(60), "plain"},
      {{"sleep", "30"}, std::chrono::seconds(60), "queued"}};
  std::atomic<bool> interrupt{false};
  std::thread ctrl_c([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    interrupt = true;
  });
  const auto t0 = std::chrono::steady_clock::now();
  const auto rs = cvs::run_all(reqs, 2, &interrupt);
  ctrl_c.join();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  EXPECT_EQ(rs[0].exit_code, 3);
  EXPECT_EQ(rs[0].out, "got INT\n");
  EXPECT_FALSE(rs[1].ok());
  EXPECT_FALSE(rs[1].timed_out);
  EXPECT_EQ(rs[2].spawn_error, "not started: interrupted");
  // No flag, or one never set: as before.
  EXPECT_EQ(cvs::run_all({{{"true"}, std::chrono::seconds(5), "t"}}, 2, &interrupt)[0].spawn_error,
            "not started: interrupted")
      << "a flag already set starts nothing";
}

TEST(Process, TimeoutKillsAndIsReported) {
  auto r = cvs::run_one({{"sleep", "30"}, std::chrono::milliseconds(300), "slow"});
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.ok());
  EXPECT_LT(r.seconds, 5.0);
}

TEST(Process, MissingProgramIsASpawnErrorNotAThrow) {
  auto r = cvs::run_one({{"no-such-program-cvs"}, std::chrono::seconds(5), "x"});
  EXPECT_FALSE(r.spawn_error.empty());
  EXPECT_NE(r.describe().find("could not start"), std::string::npos);
}

class NodeAgent : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = cvs::test::fresh_test_dir("cvs_agent");
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  cvs::ProcResult run(const Argv& a) { return cvs::run_one({a, std::chrono::seconds(20), "t"}); }
  fs::path dir;
};

TEST_F(NodeAgent, RefusesToAppendToAnExistingLog) {
  const auto log = (dir / "training.log").string();
  std::ofstream(log) << "old run\n";
  auto r = run(cvs::agent::start_detached(log, (dir / "rc").string(), (dir / "pid").string(), {"true"}));
  EXPECT_EQ(r.exit_code, 17);
  EXPECT_NE(r.err.find("refusing"), std::string::npos);
  std::ifstream in(log);
  std::string s((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(s, "old run\n");
}

TEST_F(NodeAgent, StartRecordsTheExitCodeAndStopKillsTheWholeSession) {
  const auto log = (dir / "r/node-0/training.log").string(), rc = (dir / "r/node-0/rc").string(),
             pid = (dir / "r/node-0/pid").string();
  ASSERT_TRUE(run(cvs::agent::start_detached(log, rc, pid, {"sh", "-c", "echo one; exit 3"})).ok());
  for (int i = 0; i < 50 && !fs::exists(rc); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(cvs::test::read_file(rc), "3\n");
  // The run's output between the agent's marks, on the node's clock in glog's form.
  const auto text = cvs::test::read_file(log);
  const std::regex marked(
      R"(I\d{4} \d\d:\d\d:\d\d\.\d+ cvs-run: started\none\nI\d{4} \d\d:\d\d:\d\d\.\d+ cvs-run: exited 3\n)");
  EXPECT_TRUE(std::regex_match(text, marked)) << text;
  const auto t0 = cvs::glog_seconds(text), t1 = cvs::glog_seconds(text.substr(text.rfind("I")));
  ASSERT_TRUE(t0 && t1);
  EXPECT_LE(*t0, *t1);
  EXPECT_LT(*t1 - *t0, 20);

  const auto pid2 = (dir / "pid2").string();
  ASSERT_TRUE(run(cvs::agent::start_detached((dir / "log2").string(), (dir / "rc2").string(), pid2,
                                             {"sh", "-c", "sleep 300 & sleep 300"}))
                  .ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::ifstream pf(pid2);
  std::string sid;
  pf >> sid;
  auto live = [&] {
    return run({"sh", "-c", "ps -o stat= -s \"$1\" | grep -v '^Z' || true", "ps", sid}).out;
  };
  EXPECT_NE(live(), "");
  ASSERT_TRUE(run(cvs::agent::stop(pid2, 2)).ok());
  EXPECT_EQ(live(), "") << "no live process of the session survives";
  EXPECT_FALSE(fs::exists(dir / "rc2")) << "killed: no exit code recorded";
}

// A stopped run's sampler takes one last sample before it goes (an incident's kernel lines logged
// after the sample that failed the run are read), and the stop waits for it: the whole process
// group, not the session leader alone.
TEST_F(NodeAgent, AStopLetsTheTelemetrySamplerTakeItsLastSample) {
  const auto log = (dir / "t/node-0/training.log").string(), out = (dir / "t/node-0/telemetry.log").string(),
             pid = (dir / "t/node-0/pid").string();
  ASSERT_TRUE(run(cvs::agent::start_detached(log, (dir / "t/node-0/rc").string(), pid,
                                             cvs::agent::with_telemetry(out, 300, log, {"sleep", "300"})))
                  .ok());
  const auto samples = [&] {
    const auto text = fs::exists(out) ? cvs::test::read_file(out) : "";
    std::size_t n = text.rfind("S ", 0) == 0 ? 1 : 0;
    for (std::size_t at = 0; (at = text.find("\nS ", at)) != std::string::npos; ++at) ++n;
    return std::pair{n, text};
  };
  for (int i = 0; i < 100 && samples().first == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(samples().first, 1u) << "the first sample; the next is 300 s away";
  ASSERT_TRUE(run(cvs::agent::stop(pid, 10)).ok());
  const auto [n, text] = samples();
  EXPECT_EQ(n, 2u) << text;
  EXPECT_EQ(text.substr(text.size() - 2), "F\n") << "the sampler finished: " << text;
}

// A pid file names a process by number only: on a temp_dir nodes share, another node's pid file
// holds a number that here is some other process. A stop signals only a session whose command
// line names the pid file's folder (start_detached's does), a folder of them likewise.
TEST_F(NodeAgent, AStopSignalsNoProcessWhoseCommandLineDoesNotNameItsPidFilesFolder) {
  const pid_t other = ::fork();  // this node's process of that number, a session of its own
  if (other == 0) {
    ::setsid();
    ::execlp("sleep", "sleep", "300", nullptr);
    ::_exit(127);
  }
  fs::create_directories(dir / "node-b");
  fs::create_directories(dir / "scope/0123456789abcdef");
  std::ofstream(dir / "node-b/pid") << other << "\n";
  std::ofstream(dir / "scope/0123456789abcdef/pid") << other << "\n";
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(run(cvs::agent::stop((dir / "node-b/pid").string(), 1)).ok());
  EXPECT_TRUE(run(cvs::agent::stop((dir / "scope").string(), 1)).ok());
  EXPECT_EQ(::waitpid(other, nullptr, WNOHANG), 0) << "the process the pid files do not name lives on";
  ::kill(other, SIGKILL);
  ::waitpid(other, nullptr, 0);
}

TEST_F(NodeAgent, StartWritesTheRunConfigFirstAndNeverOverwritesOne) {
  const auto cfg = (dir / "tmp/run/node-0/maxtext.yml").string();
  const std::string content = "run_name: \"it's `x` $HOME\"\n";
  const auto log = (dir / "run/node-0/training.log").string();
  ASSERT_TRUE(run(cvs::agent::start_detached(log, (dir / "run/rc").string(), (dir / "run/pid").string(),
                                             {"cat", cfg}, cvs::agent::FileToWrite{cfg, content}))
                  .ok());
  for (int i = 0; i < 50 && !fs::exists(dir / "run/rc"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(cvs::test::read_file(cfg), content);
  EXPECT_NE(cvs::test::read_file(log).find("cvs-run: started\n" + content + "I"), std::string::npos)
      << "the run saw the file";

  const auto log2 = (dir / "run2/training.log").string();
  auto r = run(cvs::agent::start_detached(log2, (dir / "run2/rc").string(), (dir / "run2/pid").string(),
                                          {"true"}, cvs::agent::FileToWrite{cfg, "new"}));
  EXPECT_EQ(r.exit_code, 17);
  EXPECT_NE(r.err.find("refusing to overwrite"), std::string::npos) << r.err;
  EXPECT_EQ(cvs::test::read_file(cfg), content);
  EXPECT_FALSE(fs::exists(log2)) << "nothing started";
}

TEST_F(NodeAgent, WriteFileKeepsQuotesAndRefusesOverwrite) {
  const auto p = (dir / "a b/x.yml").string();
  const std::string content = "model_name: \"it's $HOME `x`\"\n";
  ASSERT_TRUE(run(cvs::agent::write_file(p, content, false)).ok());
  std::ifstream in(p);
  std::string s((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(s, content);
  EXPECT_EQ(run(cvs::agent::write_file(p, "new", false)).exit_code, 17);
}

TEST_F(NodeAgent, StopRefusesACorruptPidFileInsteadOfSignallingEverything) {
  for (const char* bad : {"1", "0", "", "12ab", "-1"}) {
    std::ofstream(dir / "pid") << bad;
    auto r = run(cvs::agent::stop((dir / "pid").string(), 1));
    EXPECT_EQ(r.exit_code, 1) << "pid file '" << bad << "': " << r.describe();
  }
}

namespace {
// Processes whose command line matches the regex (pgrep -f); write a letter in brackets so the
// shell running pgrep does not match itself.
std::string live(const std::string& regex) {
  return cvs::test::run_command("pgrep -f '" + regex + "' | tr '\\n' ' '").out;
}
}  // namespace

TEST(Process, ATimeoutKillsWhatTheChildForkedAndReturnsAtTheTimeout) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = cvs::run_one({{"sh", "-c", "sleep 8.37 & sleep 8.37"}, std::chrono::milliseconds(300), "hung"});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(took, 3.0) << "returned after " << took << " s: it waited for a grandchild's pipe";
  std::string left = live("slee[p] 8.37");
  for (int i = 0; i < 30 && !left.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    left = live("slee[p] 8.37");
  }
  EXPECT_TRUE(left.empty()) << "the forked sleep survived the timeout: " << left;
}

TEST(Process, AGrandchildThatLeftTheGroupDoesNotHoldTheResultPastTheTimeout) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r =
      cvs::run_one({{"sh", "-c", "setsid sleep 8.41 & sleep 8.41"}, std::chrono::milliseconds(300), "hung"});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  cvs::test::run_command("pkill -f 'slee[p] 8.41'");
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(took, 3.0) << "returned after " << took << " s";
}

TEST(Rdma, NcclListsHaveThreeFormsAndPortSuffixes) {
  using M = cvs::NcclList::Mode;
  auto l = cvs::parse_nccl_list("mlx5_0:1,mlx5_1:1");
  EXPECT_EQ(l.mode, M::Prefix);
  EXPECT_EQ(l.names, (std::vector<std::string>{"mlx5_0", "mlx5_1"}));
  l = cvs::parse_nccl_list("=rdma0,rdma1");
  EXPECT_EQ(l.mode, M::Exact);
  EXPECT_EQ(l.names, (std::vector<std::string>{"rdma0", "rdma1"}));
  l = cvs::parse_nccl_list("^mlx5_3");
  EXPECT_EQ(l.mode, M::Exclude);
  EXPECT_EQ(l.names, (std::vector<std::string>{"mlx5_3"}));
  EXPECT_TRUE(cvs::parse_nccl_list("").names.empty());
}

TEST(Rdma, GlooSocketIfnameIsExactlyOneInterface) {
  EXPECT_EQ(cvs::gloo_ifname_problem("ens10f0"), "");
  EXPECT_NE(cvs::gloo_ifname_problem("eth0,eth1").find("several"), std::string::npos);
  EXPECT_NE(cvs::gloo_ifname_problem("^lo").find("one interface"), std::string::npos);
  auto j = cvs::test::spec_example_untagged();
  j["container"]["env"]["GLOO_SOCKET_IFNAME"] = "ens1,ens2";
  EXPECT_TRUE(
      cvs::test::has_issue(cvs::test::issues_of(j), "/container/env/GLOO_SOCKET_IFNAME", "exactly one"));
}

namespace {
// Runs the node-side RDMA check here, with a fake ibv_devices listing mlx5_0 and mlx5_1 first on PATH.
cvs::ProcResult rdma_check(const cvs::EnvList& env) {
  const auto dir = std::filesystem::temp_directory_path() / ("cvs_rdma_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(dir / "ibv_devices");
    f << "#!/bin/sh\nprintf '    device          \\t   node GUID\\n    ------          \\t----------------\\n"
         "    mlx5_0          \\t0c42a10300a1b2c3\\n    mlx5_1          \\t0c42a10300a1b2c4\\n'\n";
  }
  std::filesystem::permissions(dir / "ibv_devices", std::filesystem::perms::owner_all);
  auto argv = cvs::rdma_check_argv(env);
  argv.insert(argv.begin(), {"env", "PATH=" + dir.string() + ":" + std::getenv("PATH")});
  return cvs::run_one({argv, std::chrono::seconds(20), "rdma"});
}
}  // namespace

TEST(Rdma, TheNodeCheckUnderstandsPrefixExactAndExclude) {
  EXPECT_TRUE(rdma_check({{"NCCL_SOCKET_IFNAME", "lo"}, {"GLOO_SOCKET_IFNAME", "lo"}}).ok());
  EXPECT_TRUE(rdma_check({{"NCCL_SOCKET_IFNAME", "l"}}).ok()) << "a prefix matches lo";
  EXPECT_TRUE(rdma_check({{"NCCL_SOCKET_IFNAME", "^nosuch"}}).ok()) << "excluded interfaces need not exist";
  auto r = rdma_check({{"NCCL_SOCKET_IFNAME", "=l"}});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.out.find("interface l missing (NCCL_SOCKET_IFNAME, exact)"), std::string::npos) << r.out;
  r = rdma_check({{"GLOO_SOCKET_IFNAME", "nosuch0"}});
  EXPECT_NE(r.out.find("interface nosuch0 missing (GLOO_SOCKET_IFNAME)"), std::string::npos) << r.out;
  // HCAs (IB in use): exact names, prefixes with ports, exclusions.
  r = rdma_check({{"NCCL_IB_HCA", "=mlx5_0,mlx5_2:1"}});
  EXPECT_NE(r.out.find("HCA mlx5_2 not listed by ibv_devices (NCCL_IB_HCA, exact)"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("HCA mlx5_0"), std::string::npos) << r.out;
  r = rdma_check({{"NCCL_IB_HCA", "mlx5:1"}});
  EXPECT_EQ(r.out.find("HCA "), std::string::npos) << "the prefix mlx5 matches: " << r.out;
  r = rdma_check({{"NCCL_IB_HCA", "^mlx5_9"}});
  EXPECT_EQ(r.out.find("HCA "), std::string::npos) << "an excluded HCA need not exist: " << r.out;
  r = rdma_check({{"NCCL_IB_HCA", "=mlx5_0"}, {"NCCL_IB_DISABLE", "1"}});
  EXPECT_TRUE(r.ok()) << "IB disabled: no IB checks: " << r.out;
}

// A certification's warm trainers are the local runtime's only (a container ends with its
// session): with a container runtime, awaiting or stopping the scope runs nothing on the nodes (a
// `docker exec` into the session's container, gone by then, would fail on each and be reported).
TEST(Launcher, AScopeOutsideTheLocalRuntimeRunsNothingOnTheNodes) {
  auto j = nlohmann::ordered_json::parse(
      cvs::test::read_file(std::string(CVS_SOURCE_ROOT) + "/configs/cpu_jaxmaxtext_tiny_single.json"));
  j["container"]["runtime"]["name"] = "docker";
  j["container"]["image"] = "cvs-no-such-image:none";
  const auto cfg = cvs::load_config_text(j.dump(), std::string(CVS_SOURCE_ROOT) + "/configs/x.json",
                                         {.user = "", .require_threshold_file = false});
  auto cl = cvs::default_cluster();
  cvs::Launcher launcher(cfg, cl, {});
  launcher.set_warm_scope("cert-unit");
  EXPECT_EQ(launcher.await_warm_scope(std::chrono::seconds(1)), std::vector<std::string>(cl.nodes.size()));
  launcher.stop_warm_scope();
}

TEST(Launcher, TheHuggingFaceTokenTravelsAsAFilePathNeverAsAValue) {
  const auto dir = std::filesystem::temp_directory_path() / ("cvs_hf_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / ".hf_token") << "hf_secret_do_not_print";
  auto j = nlohmann::ordered_json::parse(
      cvs::test::read_file(std::string(CVS_SOURCE_ROOT) + "/configs/cpu_jaxmaxtext_tiny_single.json"));
  j["paths"]["hf_token_file"] = (dir / ".hf_token").string();
  const auto cfg = cvs::load_config_text(j.dump(), std::string(CVS_SOURCE_ROOT) + "/configs/x.json",
                                         {.user = "", .require_threshold_file = false});
  auto cl = cvs::default_cluster();
  cvs::Launcher launcher(cfg, cl, {});
  for (const auto& env : {launcher.node_env(0), launcher.hf_env()}) {
    bool path = false;
    for (const auto& [k, v] : env) {
      EXPECT_EQ(v.find("hf_secret"), std::string::npos) << k << " carries the token's value";
      EXPECT_NE(k, "HF_TOKEN");
      path |= k == "HF_TOKEN_PATH" && v == (dir / ".hf_token").string();
    }
    EXPECT_TRUE(path) << "HF_TOKEN_PATH names the token file";
  }
  // The argv of a command run with that env (what `ps` on the node shows) has no secret either.
  const auto argv = launcher.runtime().exec_argv({"python3", "-c", "pass"}, launcher.hf_env());
  for (const auto& a : argv) EXPECT_EQ(a.find("hf_secret"), std::string::npos) << a;
  std::filesystem::remove_all(dir);
}
