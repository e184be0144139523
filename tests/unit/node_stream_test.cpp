// Node streams: the frame parser, and the node agent's stream program run for real through
// /bin/sh and read by StreamSet (the launcher's poll path), against real detached processes.
#include "cvs/exec/node_stream.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "cvs/exec/local_log_stream.hpp"
#include "cvs/exec/node_agent.hpp"
#include "cvs/exec/process.hpp"
#include "test_helpers.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

std::string frame(long long size, const std::string& state, const std::string& data) {
  return "CVS-FRAME " + std::to_string(size) + " " + std::to_string(data.size()) + " " + state + "\n" + data;
}

}  // namespace

TEST(FrameParser, FramesSplitAtEveryByteComeOutWhole) {
  const std::string payload = std::string("line CVS-FRAME 9 9 running\n\0binary", 35);
  const std::string wire =
      frame(10, "running", payload) + frame(10, "running", "") + frame(12, "exited 3", "ab");
  for (std::size_t cut = 0; cut <= wire.size(); ++cut) {
    cvs::FrameParser p;
    auto a = p.feed(std::string_view(wire).substr(0, cut));
    auto b = p.feed(std::string_view(wire).substr(cut));
    a.insert(a.end(), b.begin(), b.end());
    ASSERT_EQ(a.size(), 3u) << "cut at " << cut;
    EXPECT_EQ(a[0].data, payload) << "a header-like text inside the data is data";
    EXPECT_EQ(cvs::to_string(a[0].state), "running");
    EXPECT_EQ(a[1].data, "");
    EXPECT_EQ(cvs::to_string(a[2].state), "exited");
    EXPECT_EQ(a[2].exit_code, 3);
    EXPECT_EQ(a[2].size, 12);
    EXPECT_EQ(p.error(), "");
  }
}

// A frame's state word is a node state's own word; the agent sends four of them.
TEST(FrameParser, AFrameStateIsOneOfFourNodeStateWords) {
  for (auto st :
       {cvs::NodeState::Running, cvs::NodeState::Exited, cvs::NodeState::Gone, cvs::NodeState::Stopped})
    EXPECT_EQ(cvs::frame_state(cvs::to_string(st)), st) << cvs::to_string(st);
  for (const char* word : {"not started", "unreachable", "Running", "done", ""})
    EXPECT_FALSE(cvs::frame_state(word)) << word;
}

TEST(FrameParser, BrokenFramingIsAnErrorNotData) {
  for (const std::string& bad : std::vector<std::string>{"hello\n", "CVS-FRAME 1 x running\n",
                                                         "CVS-FRAME 1 0 dancing\n", "CVS-FRAME 1 0 exited\n",
                                                         "CVS-FRAME 1 -4 running\n", std::string(600, 'x')}) {
    cvs::FrameParser p;
    EXPECT_TRUE(p.feed(bad).empty());
    EXPECT_NE(p.error(), "") << bad;
    EXPECT_TRUE(p.feed(frame(1, "running", "a")).empty()) << "nothing after a framing error";
  }
}

// Every behaviour holds for both kinds of stream: the node agent's sh program (ssh, docker,
// local nodes) and LocalLogStream, its in-process twin (Slurm, whose logs are on this host).
class NodeStream : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (auto& c : name)
      if (c == '/') c = '_';
    dir = fs::temp_directory_path() / ("cvs_stream_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    log = (dir / "node-0/training.log").string();
    rc = (dir / "node-0/exit_code").string();
    pid = (dir / "node-0/pid").string();
  }
  void TearDown() override {
    cvs::run_one({cvs::agent::stop(pid, 1), 20s, "cleanup"});
    fs::remove_all(dir);
  }
  void start(const std::vector<std::string>& argv) {
    auto r = cvs::run_one({cvs::agent::start_detached(log, rc, pid, argv), 20s, "start"});
    ASSERT_TRUE(r.ok()) << r.describe();
  }
  // Adds this test's kind of stream over (log, rc, pid).
  std::size_t add_stream(cvs::StreamSet& set, unsigned long long offset = 0, double interval_s = 0.1,
                         unsigned long long max_bytes = 1 << 20) {
    return add_stream_for(set, log, rc, pid, offset, interval_s, max_bytes);
  }
  std::size_t add_stream_for(cvs::StreamSet& set, const std::string& l, const std::string& r,
                             const std::string& p, unsigned long long offset, double interval_s,
                             unsigned long long max_bytes) {
    if (GetParam() == "sh")
      return set.add({cvs::agent::stream(l, r, p, offset, interval_s, max_bytes, 2), 60s, "node"});
    return set.add_local({l, r, p, offset, std::chrono::milliseconds(static_cast<long>(interval_s * 1000)),
                          max_bytes, 2, "", 0});
  }
  // Collects stream 0 until it ends (or 30 s): every frame in order, and the last update.
  std::vector<cvs::StreamFrame> drain(cvs::StreamSet& set, cvs::StreamUpdate* last = nullptr) {
    std::vector<cvs::StreamFrame> all;
    const auto until = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < until) {
      auto u = set.collect(200ms).at(0);
      all.insert(all.end(), u.frames.begin(), u.frames.end());
      if (last) *last = u;
      if (u.ended) break;
    }
    return all;
  }
  static std::string data_of(const std::vector<cvs::StreamFrame>& fs) {
    std::string s;
    for (const auto& f : fs) s += f.data;
    return s;
  }
  // The run's own output: the agent's first and last lines (its marks: logs/run_timeline.hpp)
  // taken off, each checked.
  static std::string unmarked(const std::string& s) {
    const auto first = s.find('\n');
    if (first == std::string::npos || s.substr(0, first).find("cvs-run: started") == std::string::npos) {
      ADD_FAILURE() << "no started mark first: " << s;
      return s;
    }
    const std::string rest = s.substr(first + 1);
    const auto mark = rest.rfind("cvs-run: exited");
    if (mark == std::string::npos || rest.back() != '\n') {
      ADD_FAILURE() << "no exit mark last: " << s;
      return rest;
    }
    const auto line = rest.rfind('\n', mark);
    return rest.substr(0, line == std::string::npos ? 0 : line + 1);
  }
  std::string log_text() const { return cvs::test::read_file(log); }
  std::string session_left() {
    return cvs::test::run_command("ps -o stat= -s " + session_id() + " | grep -v '^Z' || true").out;
  }
  std::string session_id() {
    std::string sid;
    std::ifstream(pid) >> sid;
    return sid;
  }
  // KILL to the run's whole session from outside, as an OOM killer or an operator would.
  void kill_session() {
    const auto sid = session_id();
    ASSERT_GT(std::stoi(sid), 1);
    cvs::test::run_command("kill -KILL -" + sid);  // dash: no "--"
  }
  fs::path dir;
  std::string log, rc, pid;
};

TEST_P(NodeStream, DeliversTheWholeLogAndTheExitCodeThenEnds) {
  start({"sh", "-c", "echo one; sleep 0.3; echo two; sleep 0.3; printf 'three'; exit 3"});
  cvs::StreamSet set;
  add_stream(set);
  cvs::StreamUpdate last;
  auto frames = drain(set, &last);
  ASSERT_TRUE(last.ended) << last.err_tail;
  EXPECT_EQ(last.exit_code, 0) << "the stream program ends by itself after its final frame";
  ASSERT_GE(frames.size(), 3u) << "frames keep coming while the run goes on";
  // The agent ends the run's unfinished last line before its exit mark.
  EXPECT_EQ(unmarked(data_of(frames)), "one\ntwo\nthree\n");
  EXPECT_EQ(cvs::to_string(frames.back().state), "exited");
  EXPECT_EQ(frames.back().exit_code, 3);
  EXPECT_EQ(frames.back().size, static_cast<long long>(log_text().size()));
  for (std::size_t i = 0; i + 1 < frames.size(); ++i) EXPECT_EQ(cvs::to_string(frames[i].state), "running");
}

TEST_P(NodeStream, TheFinalFrameFollowsTheExitNotTheNextInterval) {
  start({"sh", "-c", "sleep 0.5; echo done"});
  cvs::StreamSet set;
  add_stream(set, 0, 5.0);
  const auto t0 = std::chrono::steady_clock::now();
  const auto frames = drain(set);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s) << "the interval is 5 s: the exit ends the wait";
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(cvs::to_string(frames.back().state), "exited");
  EXPECT_EQ(unmarked(data_of(frames)), "done\n");
}

TEST_P(NodeStream, ResumesFromAByteOffset) {
  start({"sh", "-c", "echo one; echo two"});
  for (int i = 0; i < 50 && !fs::exists(rc); ++i) std::this_thread::sleep_for(100ms);
  const auto after_one = log_text().find("one\n") + 4;
  cvs::StreamSet set;
  add_stream(set, after_one);
  const auto got = data_of(drain(set));
  EXPECT_EQ(got.substr(0, 4), "two\n");
  EXPECT_EQ(got.find('\n', 4), got.size() - 1) << "then only the exit mark: " << got;
  EXPECT_NE(got.find("cvs-run: exited 0"), std::string::npos) << got;
}

TEST_P(NodeStream, BigLogsComeInBoundedFramesBackToBackUnderBackpressure) {
  start({"sh", "-c",
         "i=0; while [ $i -lt 2000 ]; do echo \"line $i of a long log that goes on\"; i=$((i+1)); done"});
  std::this_thread::sleep_for(300ms);
  cvs::StreamSet set(8192);  // a tiny pending limit: the pipe is left unread until collected
  // A long interval: only the "no sleep after a full frame" rule can deliver this in time.
  add_stream(set, 0, 30.0, 3000);
  const auto t0 = std::chrono::steady_clock::now();
  auto frames = drain(set);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s);
  std::ifstream in(log);
  const std::string want((std::istreambuf_iterator<char>(in)), {});
  EXPECT_GT(want.size(), 60000u);
  EXPECT_EQ(data_of(frames), want);
  for (const auto& f : frames) EXPECT_LE(f.data.size(), 3000u);
  EXPECT_EQ(cvs::to_string(frames.back().state), "exited");
}

TEST_P(NodeStream, StopLineStopsTheWholeSessionAndTheStreamSaysStopped) {
  start({"sh", "-c", "echo started; sleep 300 & sleep 300"});
  cvs::StreamSet set;
  add_stream(set, 0, 30.0);  // a long interval: the stop must wake the stream
  cvs::StreamUpdate first;
  for (int i = 0; i < 50 && first.frames.empty(); ++i) first = set.collect(100ms).at(0);
  ASSERT_FALSE(first.frames.empty());
  EXPECT_EQ(cvs::to_string(first.frames.front().state), "running");
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(set.send(0, "stop"));
  auto frames = drain(set);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s)
      << "the final frame follows the stop, not the next interval";
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(cvs::to_string(frames.back().state), "stopped");
  EXPECT_TRUE(fs::exists(pid + ".stopped"));
  EXPECT_EQ(session_left(), "") << "no live process of the session survives";
}

TEST_P(NodeStream, EndOfInputEndsTheStreamButNeverTheRun) {
  start({"sh", "-c", "sleep 300"});
  cvs::StreamSet set;
  add_stream(set, 0, 0.2);
  set.collect(500ms);
  set.close_input(0);
  cvs::StreamUpdate last;
  drain(set, &last);
  EXPECT_TRUE(last.ended) << "a controller that went away leaves no stream behind";
  EXPECT_NE(session_left(), "") << "a lost controller must not stop a training run";
}

TEST_P(NodeStream, AKilledRunIsGone) {
  start({"sh", "-c", "sleep 300"});
  cvs::StreamSet set;
  add_stream(set, 0, 0.2);
  set.collect(500ms);
  ASSERT_NO_FATAL_FAILURE(kill_session());
  auto frames = drain(set);
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(cvs::to_string(frames.back().state), "gone") << "no exit code was written: killed";
}

TEST_P(NodeStream, AStopThatFindsTheRunAlreadyDeadKeepsItGoneNotStopped) {
  // The launcher stops every node when a peer reports errors; a node that died first must still
  // say "gone" so that the verdict names it as the cause.
  start({"sh", "-c", "sleep 300"});
  cvs::StreamSet set;
  add_stream(set, 0, 30.0);  // the stream would not look again for 30 s by itself
  set.collect(500ms);
  ASSERT_NO_FATAL_FAILURE(kill_session());
  std::this_thread::sleep_for(200ms);
  ASSERT_TRUE(set.send(0, "stop"));
  const auto t0 = std::chrono::steady_clock::now();
  auto frames = drain(set);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(cvs::to_string(frames.back().state), "gone");
  EXPECT_FALSE(fs::exists(pid + ".stopped"));
}

TEST_P(NodeStream, ATruncatedLogShowsAsASizeBelowWhatWasDelivered) {
  start({"sh", "-c", "echo a-long-first-line; sleep 300"});
  cvs::StreamSet set;
  add_stream(set, 0, 0.2);
  std::string got;
  for (int i = 0; i < 20 && got.find("line\n") == std::string::npos; ++i)
    got += data_of(set.collect(200ms).at(0).frames);
  ASSERT_NE(got.find("cvs-run: started\na-long-first-line\n"), std::string::npos) << got;
  std::ofstream(log, std::ios::trunc) << "x\n";
  long long seen = -1;
  for (int i = 0; i < 20 && seen != 2; ++i) {
    const auto u = set.collect(200ms);
    for (const auto& f : u.at(0).frames) seen = f.size;
  }
  EXPECT_EQ(seen, 2) << "the launcher compares this with its offset and fails the run";
}

TEST(StreamSet, StreamsRunInTheirOwnProcessGroupSoATerminalCtrlCSparesThem) {
  cvs::StreamSet set;
  set.add({{"sh", "-c", "echo \"pid $$ pgid $(ps -o pgid= -p $$ | tr -d ' ')\" >&2"}, 10s, "n0"});
  auto u = set.collect(5s).at(0);
  ASSERT_TRUE(u.ended);
  unsigned long pid = 0, pgid = 0;
  ASSERT_EQ(std::sscanf(u.err_tail.c_str(), "pid %lu pgid %lu", &pid, &pgid), 2) << u.err_tail;
  EXPECT_EQ(pid, pgid) << "the stream leads its own group";
  EXPECT_NE(static_cast<pid_t>(pgid), ::getpgrp());
}

TEST_P(NodeStream, AStreamWhoseLoopIsSignalledEndsWholeAndLeavesTheRunAlone) {
  if (GetParam() != "sh") GTEST_SKIP() << "only the sh program has a loop process to signal";
  start({"sh", "-c", "sleep 300"});
  cvs::StreamSet set;
  add_stream(set, 0, 30.0);
  for (int i = 0; i < 50 && set.collect(100ms).at(0).frames.empty(); ++i) {
  }
  // TERM to the stream's loop only (as an OOM killer or an operator might): its stop reader
  // must not survive holding the pipes, or the suite would wait on a silent stream.
  const auto t0 = std::chrono::steady_clock::now();
  cvs::test::run_command("pkill -TERM -o -f 'cvs-stream " + log + "'");
  cvs::StreamUpdate last;
  drain(set, &last);
  EXPECT_TRUE(last.ended);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s) << "not held open by the reader or a 30 s sleep";
  EXPECT_NE(session_left(), "") << "the run itself is untouched";
}

TEST(StreamSet, AStreamThatCannotStartOrDiesIsReportedNotHung) {
  cvs::StreamSet set;
  set.add({{"cvs-no-such-program"}, 10s, "n0"});
  set.add(
      {{"sh", "-c", "echo 'ssh: connect to host n1 port 22: No route to host' >&2; exit 255"}, 10s, "n1"});
  auto u = set.collect(5s);
  EXPECT_TRUE(u[0].ended);
  EXPECT_NE(u[0].spawn_error.find("not found"), std::string::npos);
  EXPECT_TRUE(u[1].ended);
  EXPECT_EQ(u[1].exit_code, 255);
  EXPECT_NE(u[1].err_tail.find("No route to host"), std::string::npos);
  EXPECT_TRUE(u[1].frames.empty());
  EXPECT_FALSE(set.send(1, "stop")) << "nothing to write to";
}

TEST_P(NodeStream, ManyStreamsOnOneLoop) {
  // 64 runs and 64 streams read on one thread; every run's bytes arrive in full.
  const int n = 64;
  std::vector<std::string> logs, rcs, pids;
  std::vector<cvs::ProcRequest> starts;
  for (int r = 0; r < n; ++r) {
    const auto d = dir / ("node-" + std::to_string(r));
    logs.push_back((d / "training.log").string());
    rcs.push_back((d / "rc").string());
    pids.push_back((d / "pid").string());
    starts.push_back(
        {cvs::agent::start_detached(logs[r], rcs[r], pids[r],
                                    {"sh", "-c", "echo rank $0; sleep 1; echo done $0", std::to_string(r)}),
         30s, "s"});
  }
  for (const auto& res : cvs::run_all(starts)) ASSERT_TRUE(res.ok()) << res.describe();
  cvs::StreamSet set;
  for (int r = 0; r < n; ++r) add_stream_for(set, logs[r], rcs[r], pids[r], 0, 0.2, 1 << 20);
  std::vector<std::string> data(n);
  std::vector<std::string> state(n);
  for (int i = 0; i < 150; ++i) {
    auto ups = set.collect(200ms);
    bool all = true;
    for (int r = 0; r < n; ++r) {
      for (const auto& f : ups[r].frames) {
        data[r] += f.data;
        state[r] = cvs::to_string(f.state);
      }
      all = all && ups[r].ended;
    }
    if (all) break;
  }
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(unmarked(data[r]), "rank " + std::to_string(r) + "\ndone " + std::to_string(r) + "\n");
    EXPECT_EQ(state[r], "exited");
  }
}

// A run that exits while the in-process stream reads its state is exited, never gone. The run
// here is a child of this test that a second thread ends as a run ends (its exit code written,
// then the process gone: SIGKILL leaves a zombie, which is not alive) while the stream polls as
// fast as it goes; each trial's end falls somewhere in the stream's reads. With the exit code
// read before the liveness, an end between the two reads was "gone" (one of 64 streams on a
// loaded CI machine; here 2 to 16 in 4000 trials).
TEST(LocalLogStream, ARunEndingWhileItsStateIsReadIsExitedNeverGone) {
  const auto dir = fs::temp_directory_path() / ("cvs_stream_race_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string log = (dir / "log").string(), rc = (dir / "rc").string(), pid = (dir / "pid").string(),
                    rc_ready = rc + ".ready";
  std::ofstream(log).close();
  int gone = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    fs::remove(rc);
    std::ofstream(rc_ready) << "0\n";
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::pause();
      ::_exit(0);
    }
    std::ofstream(pid) << child << "\n";
    std::atomic<bool> go{false};
    std::thread end_run([&] {
      while (!go) {
      }
      [[maybe_unused]] volatile int sink = 0;  // a spin of a varying length: where in the reads the run ends
      for (int spin = 0; spin < (trial % 97) * 100; ++spin) sink = spin;
      ::rename(rc_ready.c_str(), rc.c_str());  // the code written in one step, then the run gone
      ::kill(child, SIGKILL);
    });
    cvs::LocalLogStream s({log, rc, pid, 0, 0ms, 1 << 20, 2, "", 0});
    std::optional<cvs::StreamFrame> last;
    go = true;
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (!s.ended() && std::chrono::steady_clock::now() < until)
      for (auto& f : s.poll()) last = std::move(f);
    end_run.join();
    ::waitpid(child, nullptr, 0);
    ASSERT_TRUE(last) << trial;
    if (last->state != cvs::NodeState::Exited) ++gone;
  }
  EXPECT_EQ(gone, 0) << "runs that exited, seen as gone";
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Kinds, NodeStream, ::testing::Values("sh", "in_process"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });
