// The warm trainer (exec/agent/warm_trainer.py) and the warm start that stands for each training
// (warm_start.py), run for real: Debian's python3, started by the node agent's own programs as the
// launcher starts them, on a stand-in train script whose one import counts how often it ran.
// MaxText itself forked from the trainer is the launcher e2e's (label e2e).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "cvs/base/text.hpp"
#include "cvs/exec/node_agent.hpp"
#include "cvs/exec/process.hpp"
#include "support/test_dir.hpp"
#include "test_helpers.hpp"

namespace fs = std::filesystem;
using Argv = std::vector<std::string>;

namespace {

// The stand-in: `heavy` counts its imports (MaxText's import is what the trainer saves); the modes
// exit with a code, sleep (TERM: prints and exits 7), sleep with TERM's default, burn CPU, raise,
// print a variable, or end with an exit function and a thread still running.
constexpr const char* kScript = R"(import atexit, os, signal, sys, threading, time
import heavy
def main():
    mode = sys.argv[1]
    print("argv", sys.argv[1:], "cwd", os.getcwd(), flush=True)
    if mode == "exit":
        sys.exit(int(sys.argv[2]))
    if mode == "sleep":
        signal.signal(signal.SIGTERM, lambda *a: (print("term", flush=True), sys.exit(7)))
        time.sleep(300)
    if mode == "sleep-default":
        time.sleep(300)
    if mode == "nap":
        time.sleep(float(sys.argv[2]))
        sys.exit(int(sys.argv[3]))
    if mode == "burn":
        while time.process_time() < 1.0:
            pass
    if mode == "raise":
        raise RuntimeError("boom")
    if mode == "env":
        print(f"{sys.argv[2]}={os.environ.get(sys.argv[2])}", flush=True)
    if mode == "ending":
        atexit.register(lambda: print("exit function ran", flush=True))
        threading.Thread(target=lambda: (time.sleep(0.3), print("thread ended", flush=True))).start()
        sys.exit(5)
if __name__ == "__main__":
    main()
)";

class WarmTrainer : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = cvs::test::fresh_test_dir("cvs_warm");
    fs::create_directories(dir / "script");
    std::ofstream(dir / "script/train.py") << kScript;
    std::ofstream(dir / "script/heavy.py")
        << "import os\nopen(os.path.join(os.path.dirname(__file__), 'imports'), 'a').write('x\\n')\n";
    name = "cvs-warm-test-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  void TearDown() override {
    run(cvs::agent::stop(trainer_pid(), 2));
    fs::remove_all(dir);
  }
  cvs::ProcResult run(const Argv& a) { return cvs::run_one({a, std::chrono::seconds(30), "t"}); }
  std::string trainer_pid() const { return (dir / "trainer/pid").string(); }
  std::string script() const { return (dir / "script/train.py").string(); }
  int imports() const {
    std::ifstream in(dir / "script/imports");
    return static_cast<int>(std::count(std::istreambuf_iterator<char>(in), {}, '\n'));
  }
  void start_trainer(double idle_s = 120) {
    ASSERT_TRUE(run(cvs::agent::start_detached((dir / "trainer/trainer.log").string(),
                                               (dir / "trainer/exit_code").string(), trainer_pid(),
                                               cvs::agent::warm_trainer("python3", name, script(), idle_s)))
                    .ok());
  }
  // As the launcher starts a certification's trainer: unless one runs, with per-training
  // variables; its log named by the starting session (`session`).
  cvs::ProcResult start_scope_trainer(const std::string& session, const Argv& per_training,
                                      const Argv& prefix) {
    Argv argv = cvs::agent::warm_trainer("python3", name, script(), 120, per_training);
    argv.insert(argv.begin(), prefix.begin(), prefix.end());
    return run(cvs::agent::unless_running(
        trainer_pid(),
        cvs::agent::start_detached((dir / ("trainer/trainer-" + session + ".log")).string(),
                                   (dir / "trainer/exit_code").string(), trainer_pid(), argv)));
  }
  // A training started as the launcher starts one (detached, its own session), through a warm
  // start; `prefix` goes in front of the warm start (env X=1 ...).
  void start(const std::string& r, const Argv& args, const Argv& prefix = {}) {
    Argv argv = {"python3", script()};
    argv.insert(argv.end(), args.begin(), args.end());
    argv = cvs::agent::warm_start("python3", name, trainer_pid(), (dir / r / "pid.warm").string(), argv);
    argv.insert(argv.begin(), prefix.begin(), prefix.end());
    ASSERT_TRUE(
        run(cvs::agent::start_detached((dir / r / "training.log").string(), (dir / r / "exit_code").string(),
                                       (dir / r / "pid").string(), argv))
            .ok());
  }
  bool wait_for(const fs::path& p, double seconds = 30) {
    for (int i = 0; i < seconds * 20 && !fs::exists(p); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return fs::exists(p);
  }
  std::string exit_code(const std::string& run) {
    return wait_for(dir / run / "exit_code")
               ? cvs::without_line_ends(cvs::test::read_file(dir / run / "exit_code"))
               : "none";
  }
  std::string log(const std::string& run) { return cvs::test::read_file(dir / run / "training.log"); }
  long warm_pid(const std::string& run) {
    if (!wait_for(dir / run / "pid.warm")) return 0;
    return std::stol(cvs::test::read_file(dir / run / "pid.warm"));
  }
  static bool gone(long pid, double seconds = 10) {
    for (int i = 0; i < seconds * 20; ++i) {
      std::ifstream st("/proc/" + std::to_string(pid) + "/stat");
      std::string l;
      if (!std::getline(st, l) || l.find(") Z") != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  fs::path dir;
  std::string name;
};

TEST_F(WarmTrainer, TrainingsAreForkedFromOneImportWithTheirArgvDirectoryAndExitCode) {
  start_trainer();
  start("a", {"exit", "3"});
  EXPECT_EQ(exit_code("a"), "3");
  start("b", {"exit", "0"});
  EXPECT_EQ(exit_code("b"), "0");
  EXPECT_EQ(imports(), 1) << "two trainings, one import: the trainer's";
  for (const char* r : {"a", "b"}) {
    const auto text = log(r);
    EXPECT_NE(text.find("cvs-warm: training in process " + std::to_string(warm_pid(r)) + ", forked"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("argv ['exit', '" + std::string(r[0] == 'a' ? "3" : "0") + "'] cwd "),
              std::string::npos)
        << text;
  }
  EXPECT_NE(warm_pid("a"), warm_pid("b"));
}

// The setup stage's JAX probe (Launcher::python_all): `python -c CODE ARGS` forked as a training
// is, the code __main__ with sys.argv ["-c", ARGS], what the trainer imported already loaded.
TEST_F(WarmTrainer, APythonDashCIsForkedAsATrainingIsWithTheImportsDone) {
  start_trainer();
  const auto r = run(cvs::agent::warm_start(
      "python3", name, trainer_pid(), "",
      {"python3", "-c", "import sys, heavy\nprint('code', __name__, sys.argv, flush=True)\nsys.exit(6)", "x",
       "y"}));
  EXPECT_EQ(r.exit_code, 6) << r.out << r.err;
  // Its line and the code's output share the pipe: either may come first.
  EXPECT_NE(r.out.find("cvs-warm: python -c in process "), std::string::npos) << r.out;
  EXPECT_TRUE(cvs::agent::warm_start_seen(r.out).forked) << r.out;
  EXPECT_FALSE(cvs::agent::warm_start_seen(r.out).cold) << r.out;
  EXPECT_NE(r.out.find("code __main__ ['-c', 'x', 'y']\n"), std::string::npos) << r.out;
  EXPECT_EQ(imports(), 1) << "heavy came from the trainer's import (a cold python here has no such module)";
  const auto bad = run(cvs::agent::warm_start("python3", name, trainer_pid(), "", {"python3", "-c"}));
  EXPECT_NE(bad.out.find("cvs-warm: cold start: -c without its code"), std::string::npos) << bad.out;
  EXPECT_FALSE(cvs::agent::warm_start_seen(bad.out).forked) << bad.out;
  EXPECT_EQ(cvs::agent::warm_start_seen(bad.out).cold, "-c without its code") << bad.out;
}

TEST_F(WarmTrainer, ATrainingEndsAsTheInterpreterWould) {
  start_trainer();
  start("raise", {"raise"});
  EXPECT_EQ(exit_code("raise"), "1");
  EXPECT_NE(log("raise").find("Traceback (most recent call last):"), std::string::npos) << log("raise");
  EXPECT_NE(log("raise").find("RuntimeError: boom"), std::string::npos) << log("raise");
  start("ending", {"ending"});
  EXPECT_EQ(exit_code("ending"), "5");
  const auto text = log("ending");
  const auto thread = text.find("thread ended"), exit_function = text.find("exit function ran");
  ASSERT_NE(thread, std::string::npos) << "its thread was joined: " << text;
  ASSERT_NE(exit_function, std::string::npos) << "its exit function ran: " << text;
  EXPECT_LT(thread, exit_function) << "threads first, then the exit functions, as Python ends";
}

TEST_F(WarmTrainer, SignalsArePassedOnAStopEndsTheTrainingAndAKilledStandInTakesItAlong) {
  start_trainer();
  auto started = [&](const std::string& r) {
    for (int i = 0; i < 400 && log(r).find("argv") == std::string::npos; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return log(r).find("argv") != std::string::npos;
  };
  // TERM to the stand-in alone reaches the training: its handler's output and exit code.
  start("term", {"sleep"});
  const long t = warm_pid("term");
  ASSERT_GT(t, 0);
  ASSERT_TRUE(started("term"));
  ASSERT_TRUE(run({"sh", "-c", "pkill -TERM -P \"$(cat \"$1\")\"", "kill", (dir / "term/pid").string()}).ok())
      << "the stand-in: the one child of the run's shell";
  EXPECT_EQ(exit_code("term"), "7");
  EXPECT_TRUE(gone(t));
  EXPECT_NE(log("term").find("term\n"), std::string::npos) << log("term");
  // The launcher's stop (TERM, then KILL, to the run's session) ends the training.
  start("stop", {"sleep-default"});
  const long p = warm_pid("stop");
  ASSERT_GT(p, 0);
  ASSERT_TRUE(started("stop"));
  ASSERT_TRUE(run(cvs::agent::stop((dir / "stop/pid").string(), 5)).ok());
  EXPECT_TRUE(gone(p)) << "the forked training outlived the stop of its run";
  // A stand-in killed outright (no signal to pass on) takes the training along.
  start("kill", {"sleep-default"});
  const long k = warm_pid("kill");
  ASSERT_GT(k, 0);
  ASSERT_TRUE(run({"sh", "-c", "kill -KILL \"-$(cat \"$1\")\"", "kill", (dir / "kill/pid").string()}).ok());
  EXPECT_TRUE(gone(k)) << "the forked training outlived its killed stand-in";
  EXPECT_FALSE(fs::exists(dir / "kill/exit_code")) << "killed: no exit code";
}

// The trainer killed while a training runs (as the OOM killer would pick it: it holds MaxText
// imported): the training runs on to its end, leaves its exit code, and its warm start exits
// kExitWarmTrainerEnded after one line that says so with that code (run_monitor makes it the
// infrastructure's ERROR); the next training starts cold.
TEST_F(WarmTrainer, ATrainerKilledMidTrainingLeavesTheTrainingsOwnCodeAndSaysSoOnce) {
  start_trainer();
  start("nap", {"nap", "1.5", "3"});
  const long t = warm_pid("nap");
  ASSERT_GT(t, 0);
  // The trainer alone: the training's parent (its session holds the training too).
  ASSERT_TRUE(run({"sh", "-c", "kill -KILL \"$(ps -o ppid= -p \"$1\")\"", "kill", std::to_string(t)}).ok());
  EXPECT_EQ(exit_code("nap"), std::to_string(cvs::agent::kExitWarmTrainerEnded)) << log("nap");
  const auto text = log("nap");
  const std::string said = std::string(cvs::agent::kWarmTrainerEndedLine) + " (process " + std::to_string(t) +
                           "); the training itself exited with code 3\n";
  EXPECT_NE(text.find(said), std::string::npos) << text;
  EXPECT_EQ(text.find("cvs-warm: the warm trainer ended", text.find(said) + 1), std::string::npos)
      << "said once: " << text;
  start("after", {"exit", "4"});
  EXPECT_EQ(exit_code("after"), "4");
  EXPECT_NE(log("after").find("cvs-warm: cold start: the warm trainer is not running"), std::string::npos)
      << log("after");
}

TEST_F(WarmTrainer, ARequestItCannotServeStartsColdAndSaysWhy) {
  start_trainer();
  start("env", {"exit", "0"}, {"env", "CVS_WARM_TEST_OTHER=1"});
  EXPECT_EQ(exit_code("env"), "0");
  EXPECT_NE(log("env").find("cvs-warm: cold start: the environment differs from the warm trainer's in "
                            "CVS_WARM_TEST_OTHER"),
            std::string::npos)
      << log("env");
  ASSERT_TRUE(run(cvs::agent::stop(trainer_pid(), 2)).ok());
  start("gone", {"exit", "4"});
  EXPECT_EQ(exit_code("gone"), "4");
  EXPECT_NE(log("gone").find("cvs-warm: cold start: the warm trainer is not running"), std::string::npos)
      << log("gone");
  EXPECT_EQ(imports(), 3) << "the trainer's import and each cold training's own";
}

// A certification's trainer: the first session starts it, the next finds it running; a training
// of another rank or node count (per-training variables) is forked with its own values, set or
// unset; a stop of the scope's folder ends it.
TEST_F(WarmTrainer, PerTrainingVariablesAreEachTrainingsOwnAndAScopesTrainerStartsOnce) {
  const Argv per_training = {"CVS_WARM_TEST_RANK", "CVS_WARM_TEST_NODES"};
  const Argv env = {"env", "CVS_WARM_TEST_RANK=0", "CVS_WARM_TEST_NODES=1"};
  auto first = start_scope_trainer("s1", per_training, env);
  ASSERT_TRUE(first.ok()) << first.describe();
  EXPECT_EQ(first.out.find("running"), std::string::npos) << first.out;
  start("r0", {"env", "CVS_WARM_TEST_RANK"}, env);
  EXPECT_EQ(exit_code("r0"), "0");
  const auto again = start_scope_trainer("s2", per_training, env);
  ASSERT_TRUE(again.ok()) << again.describe();
  EXPECT_EQ(again.out.rfind("running ", 0), 0u) << "the second session's start finds it: " << again.out;
  EXPECT_FALSE(fs::exists(dir / "trainer/trainer-s2.log")) << "no second trainer started";
  start("r3", {"env", "CVS_WARM_TEST_RANK"}, {"env", "CVS_WARM_TEST_RANK=3", "CVS_WARM_TEST_NODES=4"});
  EXPECT_EQ(exit_code("r3"), "0");
  start("unset", {"env", "CVS_WARM_TEST_NODES"},
        {"env", "-u", "CVS_WARM_TEST_NODES", "CVS_WARM_TEST_RANK=0"});
  EXPECT_EQ(exit_code("unset"), "0");
  for (const auto& [r, line] :
       std::vector<std::pair<std::string, std::string>>{{"r0", "CVS_WARM_TEST_RANK=0\n"},
                                                        {"r3", "CVS_WARM_TEST_RANK=3\n"},
                                                        {"unset", "CVS_WARM_TEST_NODES=None\n"}}) {
    EXPECT_NE(log(r).find("forked from the warm trainer"), std::string::npos) << r << ": " << log(r);
    EXPECT_NE(log(r).find(line), std::string::npos) << r << "'s own value: " << log(r);
  }
  EXPECT_EQ(imports(), 1) << "two sessions, three trainings, one import";
  start("other", {"exit", "0"}, {"env", "CVS_WARM_TEST_OTHER=1"});
  EXPECT_EQ(exit_code("other"), "0");
  EXPECT_NE(
      log("other").find("cold start: the environment differs from the warm trainer's in CVS_WARM_TEST_OTHER"),
      std::string::npos)
      << "a variable not named per-training still must match: " << log("other");
  const long trainer = std::stol(cvs::test::read_file(trainer_pid()));
  ASSERT_TRUE(run(cvs::agent::stop(dir.string(), 2)).ok()) << "every run whose pid file is <dir>/*/pid";
  EXPECT_TRUE(gone(trainer)) << "the scope's stop ends its trainer";
}

// What certify waits for after its preflight: a scope's trainers serving or ended, not one still
// importing; a trainer that never serves is named when the limit passes; a pid file whose process
// is not the trainer it names (another node's, on a shared temp_dir) is not waited for.
TEST_F(WarmTrainer, AScopesAwaitReturnsWhenEveryTrainerServesOrHasEnded) {
  std::ofstream(dir / "script/heavy.py") << "import time\ntime.sleep(1.5)\n";  // a 1.5 s import
  const std::string prefix = name + "-";
  name = prefix + "trainer";  // the trainer in <dir>/trainer: its socket @<prefix>trainer
  fs::create_directories(dir / "ended");
  std::ofstream(dir / "ended/pid") << "999999999\n";  // a trainer that has ended: not waited for
  const auto t0 = std::chrono::steady_clock::now();
  start_trainer();
  const auto awaited = run(cvs::agent::await_warm(dir.string(), prefix, 30));
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(awaited.ok()) << awaited.describe();
  EXPECT_GE(waited, 1.5) << "it returned while the trainer imported";
  EXPECT_NE(cvs::test::read_file(dir / "trainer/trainer.log").find("serving @" + name), std::string::npos)
      << cvs::test::read_file(dir / "trainer/trainer.log");
  fs::create_directories(dir / "foreign");  // a live process that is not that trainer (another
  std::ofstream(dir / "foreign/pid") << ::getpid() << "\n";  // node's number): not waited for
  EXPECT_TRUE(run(cvs::agent::await_warm(dir.string(), prefix, 1)).ok());
  // "importing" for ever: the trainer's name on its command line, no socket
  const std::string stuck = prefix + "stuck";
  const pid_t importing = ::fork();
  if (importing == 0) {
    ::setpgid(0, 0);
    ::execlp("sh", "sh", "-c", "sleep 300", stuck.c_str(), nullptr);
    ::_exit(127);
  }
  fs::create_directories(dir / "stuck");
  std::ofstream(dir / "stuck/pid") << importing << "\n";
  const auto late = run(cvs::agent::await_warm(dir.string(), prefix, 1));
  ::kill(-importing, SIGKILL);  // its group: the sleep too
  ::waitpid(importing, nullptr, 0);
  EXPECT_EQ(late.exit_code, 1) << late.describe();
  EXPECT_NE(late.err.find("still importing after 1 s: stuck"), std::string::npos) << late.err;
  EXPECT_TRUE(run(cvs::agent::await_warm(dir.string(), prefix, 1)).ok()) << "killed: ended, not waited for";
}

// A trainer (re)started while a training's warm start reads its pid file: the reader sees the old
// pid or the new one, never an empty file it would take for a trainer gone (a cold start; seen in
// CI as TheFirstTrainingWaitsForTheImportAndAnIdleTrainerEnds failing under load). Written in
// place, 200 rewrites gave a tight reader 3180 empty reads here.
TEST_F(WarmTrainer, APidFileIsNeverSeenEmptyWhileItIsRewritten) {
  fs::create_directories(dir / "trainer");
  std::ofstream(trainer_pid()) << "1\n";
  std::atomic<bool> stop{false};
  std::atomic<long> reads{0}, empty{0};
  std::thread reader([&] {
    while (!stop) {
      std::ifstream f(trainer_pid());
      std::string s;
      std::getline(f, s);
      ++reads;
      if (s.empty()) ++empty;
    }
  });
  for (int i = 0; i < 50; ++i)
    ASSERT_TRUE(run(cvs::agent::start_detached((dir / ("t" + std::to_string(i) + ".log")).string(),
                                               (dir / ("t" + std::to_string(i) + ".rc")).string(),
                                               trainer_pid(), {"true"}))
                    .ok());
  stop = true;
  reader.join();
  for (int i = 0; i < 50; ++i)  // the detached runs have ended (their exit codes written)
    EXPECT_TRUE(wait_for(dir / ("t" + std::to_string(i) + ".rc"), 10)) << i;
  EXPECT_GT(reads.load(), 50);
  EXPECT_EQ(empty.load(), 0) << "of " << reads.load() << " reads";
  EXPECT_TRUE(fs::exists(trainer_pid()));
  for (const auto& e : fs::directory_iterator(dir / "trainer"))
    EXPECT_EQ(e.path().filename(), "pid") << "nothing left beside the pid file";
}

TEST_F(WarmTrainer, TheFirstTrainingWaitsForTheImportAndAnIdleTrainerEnds) {
  // The training starts before the trainer: it waits for it rather than starting cold.
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    start_trainer(1);
  });
  const pid_t importing = ::fork();  // "importing": a live pid in the pid file, no socket yet
  if (importing == 0) {
    ::setpgid(0, 0);
    ::pause();
    ::_exit(0);
  }
  fs::create_directories(dir / "trainer");
  std::ofstream(trainer_pid()) << importing << "\n";
  start("early", {"exit", "0"});
  late.join();
  ::kill(importing, SIGKILL);
  ::waitpid(importing, nullptr, 0);
  EXPECT_EQ(exit_code("early"), "0");
  EXPECT_NE(log("early").find("forked from the warm trainer"), std::string::npos) << log("early");
  EXPECT_EQ(cvs::without_line_ends(wait_for(dir / "trainer/exit_code", 20)
                                       ? cvs::test::read_file(dir / "trainer/exit_code")
                                       : "none"),
            "0")
      << "idle 1 s after the training: the trainer ends on its own";
}

TEST_F(WarmTrainer, TheTelemetrySamplerTakesTheForkedTrainingsCpuTime) {
  start_trainer();
  Argv argv = cvs::agent::warm_start("python3", name, trainer_pid(), (dir / "burn/pid.warm").string(),
                                     {"python3", script(), "burn"});
  argv = cvs::agent::with_telemetry((dir / "burn/telemetry.log").string(), 0.2,
                                    (dir / "burn/training.log").string(), argv,
                                    (dir / "burn/pid.warm").string());
  ASSERT_TRUE(
      run(cvs::agent::start_detached((dir / "burn/training.log").string(), (dir / "burn/exit_code").string(),
                                     (dir / "burn/pid").string(), argv))
          .ok());
  EXPECT_EQ(exit_code("burn"), "0");
  const auto tele = cvs::test::read_file(dir / "burn/telemetry.log");
  long ticks = -1;
  std::istringstream lines(tele);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("S ", 0) == 0)
      if (auto p = line.find(" cpu="); p != std::string::npos && line[p + 5] != '-')
        ticks = std::stol(line.substr(p + 5));
  EXPECT_GE(ticks, 30) << "1 s of the training's CPU in clock ticks (100 a second; the last sample may come "
                          "before its end), not its stand-in's (a few):\n"
                       << tele;
}

}  // namespace
