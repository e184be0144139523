#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "cvs/logs/background_sink.hpp"
#include "cvs/logs/logscan.hpp"
#include "test_helpers.hpp"

namespace fs = std::filesystem;
using cvs::default_error_patterns;

TEST(LogScan, RealCpuRunHasTwelveStepsAndNoErrorWithDefaultPatterns) {
  auto r = cvs::scan_log_file(cvs::test::data("logs/cpu_tiny_12steps.log"), default_error_patterns());
  EXPECT_EQ(r.steps.size(), 12u);
  EXPECT_EQ(r.steps.front().step, 0);
  EXPECT_EQ(r.steps.back().step, 11);
  EXPECT_TRUE(r.errors.empty()) << r.errors.front().pattern_name << ": " << r.errors.front().line;
  EXPECT_FALSE(r.abort);
}

TEST(LogScan, NoDefaultPatternFiresOnAnyHealthyRealRun) {
  for (const char* log : {"logs/cpu_tiny_12steps.log", "logs/cpu_ckpt_phase1.log", "logs/cpu_ckpt_phase2.log",
                          "logs/cpu_2proc_rank0.log", "logs/cpu_2proc_rank1.log"}) {
    auto r = cvs::scan_log_file(cvs::test::data(log), default_error_patterns());
    for (const auto& e : r.errors)
      ADD_FAILURE() << log << ":" << e.line_no << " " << e.pattern_name << ": " << e.line;
    EXPECT_GE(r.steps.size(), 6u) << log;
  }
}

TEST(LogScan, CoordinationErrorLinesStillMatch) {
  cvs::LogScanner s(default_error_patterns());
  s.feed(
      "I1202 12:43:12.833948    5044 service.cc:66] Coordination service is enabled.\n"
      "E1202 12:50:01.000001    5044 coordination_service.cc:900] Task 1 heartbeat timeout. Task has been "
      "set to ERROR\n");
  ASSERT_EQ(s.result().errors.size(), 1u);
  EXPECT_EQ(s.result().errors[0].line_no, 2);
  EXPECT_EQ(s.result().errors[0].pattern_name, "TF coordination error");
}

TEST(LogScan, ChunkedFeedingEqualsWholeFile) {
  const std::string text = cvs::test::read_file(cvs::test::data("logs/cpu_ckpt_phase2.log"));
  auto whole = cvs::scan_log_file(cvs::test::data("logs/cpu_ckpt_phase2.log"), default_error_patterns());
  std::mt19937 rng(7);
  for (int trial = 0; trial < 5; ++trial) {
    cvs::LogScanner s(default_error_patterns());
    std::size_t pos = 0;
    while (pos < text.size()) {
      std::size_t n = std::uniform_int_distribution<std::size_t>(1, 700)(rng);
      s.feed(std::string_view(text).substr(pos, n));
      pos += n;
    }
    s.finish();
    ASSERT_EQ(s.result().steps.size(), whole.steps.size());
    for (std::size_t i = 0; i < whole.steps.size(); ++i)
      EXPECT_EQ(s.result().steps[i].step, whole.steps[i].step);
    EXPECT_EQ(s.result().checkpoints.size(), whole.checkpoints.size());
    EXPECT_EQ(s.result().lines, whole.lines);
  }
}

TEST(LogScan, PartialLastLineWaitsForItsNewline) {
  cvs::LogScanner s(default_error_patterns());
  s.feed("completed step: 3, seconds: 0.1, total_weights: 1, loss: 5.");
  EXPECT_TRUE(s.result().steps.empty()) << "a half-written line must not be parsed (loss 5. vs 5.25)";
  s.feed("25\n");
  ASSERT_EQ(s.result().steps.size(), 1u);
  EXPECT_DOUBLE_EQ(s.result().steps[0].loss, 5.25);
}

TEST(LogScan, ALastLineCutMidWriteIsSearchedForErrorsButNeverParsedAsAValue) {
  cvs::LogScanner s(default_error_patterns());
  s.feed(
      "completed step: 2, seconds: 0.1, total_weights: 1, loss: 5.950\n"
      "completed step: 3, seconds: 0.1, total_weights: 1, loss: 5.9");  // the writer died here
  s.finish();
  ASSERT_EQ(s.result().steps.size(), 1u) << "step 3's loss 5.9 may be 5.905: not a value";
  EXPECT_EQ(s.result().steps.back().step, 2);
  cvs::LogScanner e(default_error_patterns());
  e.feed(
      "completed step: 2, seconds: 0.1, total_weights: 1, loss: 5.950\nFatal Python error: Segmentation fa");
  e.finish();
  ASSERT_EQ(e.result().errors.size(), 1u) << "an error on the cut line still counts";
  EXPECT_EQ(e.result().errors[0].line_no, 2);
}

TEST(LogScan, ErrorPatternsMatchCaseInsensitivelyAsCvsDoes) {
  cvs::LogScanner s(std::vector<cvs::ErrorPattern>{{"NCCL error", "NCCL Error"}});
  s.feed(
      "rank 3: nccl error: unhandled system error\nrank 4: NCCL ERROR in ncclAllReduce\n"
      "completed step: 1, seconds: 0.1, total_weights: 1, loss: 5.0\n");
  ASSERT_EQ(s.result().errors.size(), 2u);
  EXPECT_EQ(s.result().errors[0].line_no, 1);
  EXPECT_EQ(s.result().errors[1].line_no, 2);
  EXPECT_EQ(s.result().steps.size(), 1u);
  // MaxText's own lines stay exact: an upper-cased step line is not a step.
  cvs::LogScanner t(default_error_patterns());
  t.feed("COMPLETED STEP: 1, SECONDS: 0.1, TOTAL_WEIGHTS: 1, LOSS: 5.0\n");
  EXPECT_TRUE(t.result().steps.empty());
}

TEST(LogScan, ErrorPatternReportsNameLineAndNumber) {
  cvs::LogScanner s({{"NCCL ERROR", "NCCL ERROR|NCCL timeout"}, {"OOM", "RESOURCE_EXHAUSTED"}});
  s.feed("line one\nline two\nnode3: NCCL ERROR in ncclAllReduce\nRESOURCE_EXHAUSTED: out of HBM\n");
  ASSERT_EQ(s.result().errors.size(), 2u);
  EXPECT_EQ(s.result().errors[0].pattern_name, "NCCL ERROR");
  EXPECT_EQ(s.result().errors[0].line_no, 3);
  EXPECT_EQ(s.result().errors[0].line, "node3: NCCL ERROR in ncclAllReduce");
  EXPECT_EQ(s.result().errors[1].pattern_name, "OOM");
  EXPECT_EQ(s.result().errors[1].line_no, 4);
}

TEST(LogScan, EachDefaultPatternFiresOnItsSignature) {
  const std::vector<std::pair<std::string, std::string>> samples = {
      {"NCCL ERROR", "NCCL WARN NET/IB : Got completion with error; NCCL ERROR: unhandled system error"},
      {"GPU HW fault",
       "Memory access fault by GPU node-2 (Agent handle: 0x5) on address 0x7f. Reason: Page not present"},
      {"Assertion/JAX traceback", "Traceback (most recent call last):"},
      {"ROCm init error", "RuntimeError: Unable to initialize backend 'rocm': INTERNAL: no devices"},
      {"Python fatal error", "Fatal Python error: Segmentation fault"},
      {"TF coordination error",
       "Terminating process because the JAX distributed service detected fatal errors: missing heartbeats"},
      {"RESOURCE_EXHAUSTED/OOM",
       "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate"},
      {"Segfault", "/bin/bash: line 1: 1234 Segmentation fault (core dumped) python3 train.py"},
  };
  for (const auto& [name, line] : samples) {
    bool hit = false;
    for (const auto& p : default_error_patterns()) {
      if (p.name != name) continue;
      cvs::LogScanner s({p});
      s.feed(line + "\n");
      hit = !s.result().errors.empty();
    }
    EXPECT_TRUE(hit) << name << " did not match: " << line;
  }
}

TEST(LogScan, NanAbortIsRecorded) {
  auto r = cvs::scan_log_file(cvs::test::data("logs/cpu_nan_abort.log"), default_error_patterns());
  ASSERT_TRUE(r.abort);
  EXPECT_EQ(*r.abort, "NaN");
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_TRUE(std::isnan(r.steps[1].loss));
}

TEST(LogScan, FollowerReadsOnlyWhatWasAppendedAndRejectsTruncation) {
  auto dir = fs::temp_directory_path() / ("cvs_follow_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto path = dir / "training.log";
  cvs::LogFollower f(path, default_error_patterns());
  EXPECT_EQ(f.poll(), 0u) << "a log that does not exist yet is not an error";
  {
    std::ofstream o(path);
    o << "completed step: 0, seconds: 1.0, total_weights: 1, loss: 9.0\ncompleted st";
  }
  f.poll();
  EXPECT_EQ(f.result().steps.size(), 1u);
  {
    std::ofstream o(path, std::ios::app);
    o << "ep: 1, seconds: 1.0, total_weights: 1, loss: 8.0\n";
  }
  f.poll();
  ASSERT_EQ(f.result().steps.size(), 2u);
  EXPECT_EQ(f.result().steps[1].step, 1);
  { std::ofstream o(path, std::ios::trunc); }
  EXPECT_THROW(f.poll(), std::runtime_error);
  fs::remove_all(dir);
}

// Vectorscan finds the candidates; each candidate line is confirmed by RE2 with the configured
// pattern, so a pattern that could match across a newline (\s, [^x]) never joins two lines.
TEST(LogScan, AMatchSpanningTwoLinesIsNoMatch) {
  cvs::LogScanner s(std::vector<cvs::ErrorPattern>{{"split", R"(error\s+code \d+)"}});
  s.feed("an error\ncode 7 on the next line\nerror  code 9 here\n");
  s.finish();
  ASSERT_EQ(s.result().errors.size(), 1u);
  EXPECT_EQ(s.result().errors[0].line_no, 3);
  EXPECT_EQ(s.result().errors[0].line, "error  code 9 here");
  EXPECT_EQ(s.result().lines, 3);
}

// A pattern RE2 reads but Vectorscan refuses (here RE2's (?U) ungreedy flag) is matched by RE2 on
// the chunk, with a warning: same results, only slower.
TEST(LogScan, APatternVectorscanRefusesIsMatchedByRe2) {
  const std::vector<cvs::ErrorPattern> patterns = {{"ungreedy", R"((?U)fault.+x)"}, {"plain", "NCCL ERROR"}};
  cvs::LogScanner s(patterns);
  s.feed("ok\nI saw a FAULT at 0x1\nNCCL ERROR here\nfault without the letter\n");
  s.finish();
  ASSERT_EQ(s.result().errors.size(), 2u);
  EXPECT_EQ(s.result().errors[0].pattern_name, "ungreedy");
  EXPECT_EQ(s.result().errors[0].line_no, 2);
  EXPECT_EQ(s.result().errors[1].pattern_name, "plain");
  EXPECT_EQ(s.result().errors[1].line_no, 3);
}

// Several patterns and an event on one line: the line is reported once, under the first pattern
// of the configured order that matches it, and its step is still parsed.
TEST(LogScan, OneLineManyHitsIsOneErrorAndOneEvent) {
  cvs::LogScanner s(std::vector<cvs::ErrorPattern>{{"first", "Xid \\d+"}, {"second", "NCCL ERROR"}});
  s.feed(
      "NCCL ERROR Xid 79 completed step: 4, seconds: 0.100, TFLOP/s/device: 1.000, Tokens/s/device: 10.000, "
      "total_weights: 8, loss: 2.500\n");
  s.finish();
  ASSERT_EQ(s.result().errors.size(), 1u);
  EXPECT_EQ(s.result().errors[0].pattern_name, "first");
  ASSERT_EQ(s.result().steps.size(), 1u);
  EXPECT_EQ(s.result().steps[0].step, 4);
  EXPECT_DOUBLE_EQ(s.result().steps[0].loss, 2.5);
}

namespace {

// What a sink was handed, in order: 's' + step, 'e' + step after, 'm' + step.
struct Recording : cvs::RecordSink {
  std::vector<std::pair<char, long long>> got;
  long long throw_at = -1;  // throw when handed the step with this number
  void step(const cvs::StepRecord& r) override {
    if (r.step == throw_at) throw std::runtime_error("sink gave up at step " + std::to_string(r.step));
    got.push_back({'s', r.step});
  }
  void eval(const cvs::EvalRecord& e) override { got.push_back({'e', e.after_step}); }
  void marker(const cvs::StepMarker& m) override { got.push_back({'m', m.step}); }
};

}  // namespace

TEST(BackgroundSink, HandsOnEveryRecordInItsOrderAcrossBatches) {
  Recording to;
  std::vector<std::pair<char, long long>> sent;
  {
    cvs::BackgroundSink bg(to);
    for (long long i = 0; i < 10000; ++i) {  // several batches and a part one
      cvs::StepRecord r;
      r.step = i;
      bg.step(r);
      sent.push_back({'s', i});
      if (i % 97 == 0) {
        bg.eval({i, 1.0});
        sent.push_back({'e', i});
      }
      if (i % 1000 == 999) {
        bg.marker({cvs::MarkerKind::CheckpointSave, i, 0});
        sent.push_back({'m', i});
      }
    }
    bg.close();
    EXPECT_EQ(to.got, sent);
  }
}

TEST(BackgroundSink, ASinkThatThrowsStopsTheScanWithinTwoBatchesAndNeverStallsIt) {
  Recording to;
  to.throw_at = 1500;  // in the second batch of 1024
  cvs::BackgroundSink bg(to);
  long long handed = 0;
  std::string what;
  try {
    for (; handed < 20000; ++handed) {  // far past the throw
      cvs::StepRecord r;
      r.step = handed;
      bg.step(r);
    }
    bg.close();
    ADD_FAILURE() << "neither step() nor close() rethrew";
  } catch (const std::runtime_error& e) {
    what = e.what();
  }
  EXPECT_EQ(what, "sink gave up at step 1500");
  // The throw comes back from the hand-over of a later batch: before the 5th batch of 1024 is
  // filled (the thread may hold the 3rd when the 2nd throws), not at the end of the 20000.
  EXPECT_LT(handed, 4 * 1024) << "the scan went on past the sink's throw";
  EXPECT_THROW(bg.close(), std::runtime_error) << "close() after the throw says it again";
  ASSERT_EQ(to.got.size(), 1500u);
  EXPECT_EQ(to.got.back(), (std::pair<char, long long>{'s', 1499}));
}

TEST(BackgroundSink, AFileScannedIntoASinkGivesTheStepsItKeepsWithout) {
  for (const char* log :
       {"logs/cpu_tiny_12steps.log", "logs/cpu_ckpt_phase2.log", "logs/cpu_2proc_rank0.log"}) {
    const auto kept = cvs::scan_log_file(cvs::test::data(log), default_error_patterns());
    Recording to;
    const auto streamed = cvs::scan_log_file(cvs::test::data(log), default_error_patterns(), &to);
    std::vector<long long> kept_steps, streamed_steps;
    for (const auto& r : kept.steps) kept_steps.push_back(r.step);
    for (const auto& [kind, step] : to.got)
      if (kind == 's') streamed_steps.push_back(step);
    EXPECT_FALSE(kept_steps.empty()) << log;
    EXPECT_EQ(streamed_steps, kept_steps) << log;
    EXPECT_TRUE(streamed.steps.empty()) << log << ": with a sink the scanner keeps no steps";
  }
}
