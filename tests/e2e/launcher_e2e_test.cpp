// The launcher against real MaxText on this machine's CPU: every failure path a cluster run can
// take (an error line, a NaN, a killed node, a hang, a reused run name), each with real
// processes. Label e2e: needs the .venv from tools/setup.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cvs/config/cluster.hpp"
#include "cvs/config/maxtext_yaml.hpp"
#include "cvs/exec/launch.hpp"
#include "cvs/exec/process.hpp"
#include "e2e/cpu_policy.hpp"
#include "support/test_dir.hpp"

namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

class LauncherE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    root = cvs::test::fresh_test_dir("cvs_e2e");
    std::ifstream in(std::string(CVS_SOURCE_ROOT) + "/configs/cpu_jaxmaxtext_tiny_single.json");
    base = ordered_json::parse(in);
    base["paths"]["shared_fs"] = root.string();
    base["paths"]["temp_dir"] = (root / "tmp").string();
  }
  void TearDown() override { fs::remove_all(root); }

  cvs::SuiteConfig config(const ordered_json& j) {
    return cvs::load_config_text(j.dump(), std::string(CVS_SOURCE_ROOT) + "/configs/e2e.json",
                                 {.user = "", .require_threshold_file = false});
  }
  cvs::RunRequest request(const cvs::SuiteConfig& c, const std::string& name, long long steps) {
    return cvs::test::cpu_run_request(c, name, steps, root / "report");
  }
  static cvs::PollPolicy fast() { return cvs::test::cpu_poll_policy(); }
  // No live (non-zombie) process is left in the session recorded by a run's pid file, nor the
  // training forked from the warm trainer that the session stood for (its pid in <pid file>.warm),
  // within a few seconds (a SIGKILLed multi-threaded python takes a moment to finish exiting).
  static bool session_gone(const fs::path& pid_file) {
    std::string sid, warm;
    std::ifstream(pid_file) >> sid;
    std::ifstream(pid_file.string() + ".warm") >> warm;
    if (sid.empty() && warm.empty()) return true;
    for (int i = 0; i < 50; ++i) {
      auto r = cvs::run_one(
          {{"sh", "-c",
            "{ [ -z \"$1\" ] || ps -o stat= -s \"$1\"; [ -z \"$2\" ] || ps -o stat= -p \"$2\"; } "
            "| grep -v '^Z' || true",
            "ps", sid, warm},
           std::chrono::seconds(5),
           ""});
      if (r.out.empty()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  fs::path root;
  ordered_json base;
};

TEST_F(LauncherE2E, ACompletedRunHasEveryStepAndTheEffectiveConfig) {
  auto c = config(base);
  auto cl = cvs::default_cluster();
  cvs::Launcher l(c, cl, fast());
  ASSERT_TRUE(l.setup().empty());
  auto o = l.run(request(c, "ok", 8));
  ASSERT_TRUE(o.ok) << o.failure;
  ASSERT_EQ(o.nodes.size(), 1u);
  EXPECT_EQ(o.nodes[0].scan.steps.size(), 8u);
  EXPECT_EQ(o.nodes[0].scan.effective_config.at("steps"), "8");
  EXPECT_TRUE(fs::exists(o.nodes[0].local_log));
  EXPECT_EQ(fs::file_size(o.nodes[0].local_log), o.nodes[0].scan.bytes) << "the report copy is the whole log";
  EXPECT_TRUE(fs::exists(root / "LOGS/jaxmaxtext/ok/node-0/training.log"));
}

// train_params.warm_start (the default): every training of a session is a process forked from the
// node's warm trainer, which imported MaxText once; it trains exactly as a new python does.
TEST_F(LauncherE2E, AWarmStartedTrainingTrainsAsAColdOneStepForStep) {
  std::vector<std::vector<double>> losses;
  for (bool warm : {true, true, false}) {
    auto j = base;
    j["train_params"]["warm_start"] = warm;
    auto c = config(j);
    auto cl = cvs::default_cluster();
    cvs::Launcher l(c, cl, fast());
    ASSERT_TRUE(l.setup().empty());
    // The setup stage's probe: forked too, seeing the devices the training will.
    const auto probe =
        l.python_all("import jax; print('devices', len(jax.local_devices()))", std::chrono::minutes(2));
    ASSERT_EQ(probe.size(), 1u);
    EXPECT_TRUE(probe[0].ok()) << probe[0].describe();
    EXPECT_NE(probe[0].out.find("devices 1\n"), std::string::npos) << probe[0].out;
    // Its line and the probe's output share the pipe: either may come first.
    EXPECT_EQ(probe[0].out.find("cvs-warm: python -c in process ") != std::string::npos, warm)
        << probe[0].out;
    const std::string name = std::string(warm ? "warm" : "cold") + std::to_string(losses.size());
    auto o = l.run(request(c, name, 20));
    ASSERT_TRUE(o.ok) << o.failure;
    std::ifstream in(o.nodes[0].local_log);
    std::string line2;
    std::getline(in, line2);
    std::getline(in, line2);
    EXPECT_EQ(line2.find(warm ? "cvs-warm: training in process " : "cvs-warm"), warm ? 0u : std::string::npos)
        << name << "'s second line: " << line2;
    EXPECT_EQ(fs::exists(root / "LOGS/jaxmaxtext" / name / "node-0/pid.warm"), warm);
    // Every compile of the first run went to the persistent cache (the launcher's
    // JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0, not only those over a second): the later runs
    // of the same shape compile nothing.
    std::stringstream text;
    text << std::ifstream(o.nodes[0].local_log).rdbuf();
    const auto log = text.str();
    if (!losses.empty()) {
      EXPECT_NE(log.find("Persistent compilation cache hit for 'jit_train_step'"), std::string::npos) << name;
      EXPECT_EQ(log.find("PERSISTENT COMPILATION CACHE MISS"), std::string::npos)
          << name << ": " << log.substr(log.find("PERSISTENT COMPILATION CACHE MISS"), 200);
    }
    losses.emplace_back();
    for (const auto& s : o.nodes[0].scan.steps) losses.back().push_back(s.loss);
    ASSERT_EQ(losses.back().size(), 20u);
  }
  EXPECT_EQ(losses[0], losses[2]) << "warm and cold: the same loss every step";
  EXPECT_EQ(losses[1], losses[2]);
}

// A certification's scope (cvs certify passes --warm-scope): the first session on a node starts
// its warm trainer, which outlives that session; a later session that runs the second node of a
// two-node run alone (rank 0 of 1, not 1 of 2) trains forked from the same trainer with its own
// rank and node count; the scope's stop ends every trainer.
TEST_F(LauncherE2E, AScopesWarmTrainerServesItsLaterSessionsWithTheirOwnRankUntilItsStop) {
  auto c = config(base);
  const std::string scope = "e2e-" + std::to_string(::getpid());
  auto text = [](const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  auto forked = [&](const cvs::NodeOutcome& n) {
    return text(n.local_log).find("cvs-warm: training in process ") != std::string::npos;
  };
  auto trainers = [&] {
    std::vector<fs::path> v;
    const auto d = root / "tmp/warm-trainer" / ("scope-" + scope);
    if (fs::exists(d))
      for (const auto& e : fs::directory_iterator(d))
        if (fs::exists(e.path() / "pid")) v.push_back(e.path() / "pid");
    return v;
  };
  auto pair = cvs::local_cluster(2);
  {
    cvs::Launcher l(c, pair, fast());
    l.set_warm_scope(scope);
    l.expect_trainings(1);  // one training: a session's own trainers would not start
    ASSERT_TRUE(l.setup().empty());
    EXPECT_NE(l.warm_start_words().find("(the certification's: " + scope + ")"), std::string::npos)
        << l.warm_start_words();
    auto o = l.run(request(c, "pair", 10));
    ASSERT_TRUE(o.ok) << o.failure;
    for (const auto& n : o.nodes) EXPECT_TRUE(forked(n)) << n.node;
  }
  const auto started = trainers();
  ASSERT_EQ(started.size(), 2u) << "one trainer a node";
  for (const auto& p : started) EXPECT_FALSE(session_gone(p)) << p << ": ended with the session";
  cvs::Cluster alone = pair;
  alone.nodes.erase(alone.nodes.begin());
  {
    cvs::Launcher l(c, alone, fast());
    l.set_warm_scope(scope);
    l.expect_trainings(1);
    ASSERT_TRUE(l.setup().empty());
    auto o = l.run(request(c, "alone", 10));
    ASSERT_TRUE(o.ok) << o.failure << " (a training with the pair's rank or count would wait for a peer)";
    EXPECT_TRUE(forked(o.nodes[0])) << text(o.nodes[0].local_log).substr(0, 400);
  }
  EXPECT_EQ(trainers(), started) << "the later session found its node's trainer running";
  {
    cvs::Launcher l(c, pair, fast());
    l.set_warm_scope(scope);
    l.stop_warm_scope();
  }
  for (const auto& p : started) EXPECT_TRUE(session_gone(p)) << p << ": outlived the scope's stop";
}

TEST_F(LauncherE2E, AMaxTextErrorStopsEveryNodeAndNamesNodeAndLine) {
  auto j = base;
  j["train_params"]["maxtext_config"]["model_name"] = "no-such-model";
  auto c = config(j);
  auto cl = cvs::local_cluster(2);
  cvs::Launcher l(c, cl, fast());
  ASSERT_TRUE(l.setup().empty());
  auto o = l.run(request(c, "err", 50));
  EXPECT_FALSE(o.ok);
  ASSERT_TRUE(o.first_error.has_value()) << o.failure;
  EXPECT_EQ(o.first_error->pattern_name, "Assertion/JAX traceback");
  ASSERT_TRUE(o.first_error_node == "local0" || o.first_error_node == "local1") << o.first_error_node;
  EXPECT_EQ(o.failure.rfind(o.first_error_node + ": error pattern", 0), 0u) << o.failure;
  EXPECT_NE(o.failure.find("training.log:"), std::string::npos) << "names the log and line: " << o.failure;
  for (int r = 0; r < 2; ++r)
    EXPECT_TRUE(session_gone(root / ("LOGS/jaxmaxtext/err/node-" + std::to_string(r)) / "pid"));
}

TEST_F(LauncherE2E, ANanLossFailsTheRun) {
  auto j = base;
  j["train_params"]["maxtext_config"]["learning_rate"] = 1.0e12;
  j["train_params"]["maxtext_config"]["abort_on_nan_loss"] = true;
  auto c = config(j);
  auto cl = cvs::default_cluster();
  cvs::Launcher l(c, cl, fast());
  ASSERT_TRUE(l.setup().empty());
  auto o = l.run(request(c, "nan", 30));
  EXPECT_FALSE(o.ok);
  EXPECT_TRUE(o.failure.find("NaN") != std::string::npos || o.failure.find("non-finite") != std::string::npos)
      << o.failure;
}

TEST_F(LauncherE2E, AKilledNodeIsDetectedAndTheOthersStopped) {
  auto c = config(base);
  auto cl = cvs::local_cluster(2);
  cvs::Launcher l(c, cl, fast());
  ASSERT_TRUE(l.setup().empty());
  const fs::path victim = root / "LOGS/jaxmaxtext/kill/node-1/pid";
  bool killed = false;
  auto o = l.run(request(c, "kill", 400), [&](const cvs::Progress& p) {
    if (!killed && p.step >= 1) {
      std::ifstream in(victim);
      std::string sid;
      in >> sid;
      // The shell builtin: procps' /bin/kill reads "-<n>" as an option, and "-1" is everything.
      if (!sid.empty() && sid.find_first_not_of("0123456789") == std::string::npos && std::stol(sid) > 1)
        killed =
            cvs::run_one({{"sh", "-c", "kill -KILL \"-$1\"", "kill", sid}, std::chrono::seconds(5), ""}).ok();
    }
  });
  ASSERT_TRUE(killed);
  EXPECT_FALSE(o.ok);
  EXPECT_NE(o.failure.find("local1"), std::string::npos) << o.failure;
  EXPECT_TRUE(session_gone(root / "LOGS/jaxmaxtext/kill/node-0/pid")) << "the surviving node was stopped";
}

// The warm trainer SIGKILLed while a sweep trains (the OOM killer picks the process that holds
// MaxText imported): the training it forked runs on to its last step, and the run is the
// infrastructure's failure naming the trainer's end and the training's own exit code, not a
// "training exited with code 1" (issue #56).
TEST_F(LauncherE2E, AWarmTrainerKilledMidRunIsTheInfrastructuresFailureWithTheTrainingsOwnCode) {
  auto c = config(base);
  auto cl = cvs::default_cluster();
  cvs::Launcher l(c, cl, fast());
  ASSERT_TRUE(l.setup().empty());
  const fs::path warm = root / "LOGS/jaxmaxtext/orphan/node-0/pid.warm";
  bool killed = false;
  auto o = l.run(request(c, "orphan", 30), [&](const cvs::Progress& p) {
    if (killed || p.step < 2) return;
    std::string pid;
    std::ifstream(warm) >> pid;
    if (!pid.empty() && pid.find_first_not_of("0123456789") == std::string::npos)
      killed = cvs::run_one({{"sh", "-c", "kill -KILL \"$(ps -o ppid= -p \"$1\")\"", "kill", pid},
                             std::chrono::seconds(5),
                             ""})
                   .ok();
  });
  ASSERT_TRUE(killed);
  EXPECT_FALSE(o.ok);
  EXPECT_TRUE(o.infrastructure) << o.failure;
  EXPECT_NE(o.failure.find("the warm trainer ended while the training ran"), std::string::npos) << o.failure;
  EXPECT_NE(o.failure.find("the training itself exited with code 0"), std::string::npos) << o.failure;
  EXPECT_EQ(o.failure.find("training exited with code"), std::string::npos) << o.failure;
  ASSERT_FALSE(o.nodes[0].scan.steps.empty());
  EXPECT_EQ(o.nodes[0].scan.steps.back().step, 29) << "the orphaned training ran to its last step";
}

TEST_F(LauncherE2E, ADroppedLogStreamIsRestartedFromItsByteAndTheRunCompletes) {
  // As when an ssh connection drops: the node's stream dies, the training does not. The stream
  // is restarted from the byte the suite reached; the copy of the log has no gap and no repeat.
  auto c = config(base);
  auto cl = cvs::default_cluster();
  cvs::Launcher l(c, cl, fast());
  ASSERT_TRUE(l.setup().empty());
  const auto log = root / "LOGS/jaxmaxtext/drop/node-0/training.log";
  bool dropped = false;
  // Enough steps that the training outlives the first progress report by seconds (a warm-started
  // 12-step run could end before it).
  constexpr long long kSteps = 300;
  auto o = l.run(request(c, "drop", kSteps), [&](const cvs::Progress& p) {
    if (!dropped && p.step >= 1)
      dropped =
          cvs::run_one({{"pkill", "-KILL", "-f", "cvs-stream " + log.string()}, std::chrono::seconds(5), ""})
              .ok();  // pkill exits 0 when it signalled something
  });
  ASSERT_TRUE(dropped);
  ASSERT_TRUE(o.ok) << o.failure;
  EXPECT_EQ(o.nodes[0].scan.steps.size(), static_cast<std::size_t>(kSteps));
  std::ifstream a(log, std::ios::binary), b(o.nodes[0].local_log, std::ios::binary);
  const std::string node_log((std::istreambuf_iterator<char>(a)), {}),
      copy((std::istreambuf_iterator<char>(b)), {});
  EXPECT_GT(node_log.size(), 1000u);
  EXPECT_TRUE(node_log == copy) << "the copy (" << copy.size() << " bytes) differs from the node's log ("
                                << node_log.size() << " bytes)";
}

TEST_F(LauncherE2E, ThePollBudgetStopsAHungRun) {
  auto c = config(base);
  auto cl = cvs::default_cluster();
  auto p = fast();
  p.startup_s = 4;
  p.per_step_s = 0;
  cvs::Launcher l(c, cl, p);
  ASSERT_TRUE(l.setup().empty());
  auto o = l.run(request(c, "hang", 1000));
  EXPECT_FALSE(o.ok);
  EXPECT_TRUE(o.timed_out);
  EXPECT_NE(o.failure.find("poll budget exceeded: 4 s"), std::string::npos) << o.failure;
  EXPECT_TRUE(session_gone(root / "LOGS/jaxmaxtext/hang/node-0/pid"));
}

TEST_F(LauncherE2E, AReusedRunNameNeverAppendsToTheOldLog) {
  auto c = config(base);
  auto cl = cvs::default_cluster();
  cvs::Launcher l(c, cl, fast());
  ASSERT_TRUE(l.setup().empty());
  auto first = l.run(request(c, "twice", 4));
  ASSERT_TRUE(first.ok) << first.failure;
  const auto size = fs::file_size(root / "LOGS/jaxmaxtext/twice/node-0/training.log");
  auto req = request(c, "twice", 4);
  req.copy_dir = root / "report" / "twice-again";
  auto second = l.run(req);
  EXPECT_FALSE(second.ok);
  EXPECT_NE(second.failure.find("refusing"), std::string::npos) << second.failure;
  EXPECT_EQ(fs::file_size(root / "LOGS/jaxmaxtext/twice/node-0/training.log"), size);
}

TEST_F(LauncherE2E, AMissingTrainScriptFailsSetupWithTheNode) {
  auto j = base;
  j["train_params"]["train_script_paths"] = {"/nonexistent/train.py"};
  auto c = config(j);
  auto cl = cvs::default_cluster();
  cvs::Launcher l(c, cl, fast());
  auto problems = l.setup();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("localhost: none of train_script_paths exists"), std::string::npos)
      << problems[0];
}

}  // namespace

TEST_F(LauncherE2E, ANonFiniteRateFailsTheRun) {
  // A trainer (sh, not MaxText: no MaxText prints a NaN rate on demand) whose second step line
  // carries TFLOP/s/device: nan, then hangs: the run fails at once, naming node, rate and step.
  fs::create_directories(root);
  const auto script = root / "nan_rate_trainer.sh";
  std::ofstream(script) << "echo 'completed step: 0, seconds: 1.000, TFLOP/s/device: 0.500, Tokens/s/device: "
                           "100.000, total_weights: 512, loss: 5.000' >&2\n"
                           "echo 'completed step: 1, seconds: 1.000, TFLOP/s/device: nan, Tokens/s/device: "
                           "100.000, total_weights: 512, loss: 4.900' >&2\n"
                           "sleep 120\n";
  auto j = base;
  j["train_params"]["python"] = "/bin/sh";
  j["train_params"]["train_script_paths"] = {script.string()};
  auto c = config(j);
  auto cl = cvs::default_cluster();
  cvs::Launcher l(c, cl, fast());
  ASSERT_TRUE(l.setup().empty());
  const auto t0 = std::chrono::steady_clock::now();
  auto o = l.run(request(c, "nanrate", 10));
  EXPECT_FALSE(o.ok);
  EXPECT_NE(o.failure.find("localhost: non-finite TFLOP/s/device (nan) at step 1"), std::string::npos)
      << o.failure;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 60.0);
  EXPECT_TRUE(session_gone(root / "LOGS/jaxmaxtext/nanrate/node-0/pid"));
}
