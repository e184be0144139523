// A run's phases from its log (logs/run_timeline.hpp): real MaxText logs the suite's agent
// started on this CPU (its marks, JAX's compiler lines), cold and warm compile cache, and a
// checkpoint run; the edges on lines written here.
#include <gtest/gtest.h>

#include "cvs/logs/logscan.hpp"
#include "cvs/logs/run_timeline.hpp"
#include "test_helpers.hpp"

namespace {

using cvs::RunMarkKind;

cvs::RunPhases phases_of(const std::string& log) {
  const auto scan = cvs::scan_log_file(cvs::test::data(log), cvs::default_error_patterns());
  const auto p = scan.timeline.phases();
  if (!p) throw std::runtime_error(log + ": no phases");
  return *p;
}

// The marked span of a log: its exit mark's time less its start mark's.
double marked_span(const std::string& log) {
  const auto text = cvs::test::read_file(cvs::test::data(log));
  const auto t0 = cvs::glog_seconds(text);
  const auto t1 = cvs::glog_seconds(text.substr(text.rfind("\nI") + 1));
  return *t1 - *t0;
}

TEST(RunTimeline, GlogHeadersAndTheAgentsMarksGiveSecondsOfTheYear) {
  EXPECT_DOUBLE_EQ(*cvs::glog_seconds("I0101 00:00:01.5 x"), 1.5);
  EXPECT_NEAR(*cvs::glog_seconds("I1205 18:05:17.220888858 cvs-run: started"),
              (334 + 4) * 86400.0 + 18 * 3600 + 5 * 60 + 17.220888858, 1e-6);  // Dec 5
  EXPECT_DOUBLE_EQ(*cvs::glog_seconds("W0301 01:02:03 no fraction"), 59 * 86400.0 + 3723);
  EXPECT_TRUE(cvs::glog_seconds("(train pid=7, ip=10.0.0.1) I0102 00:00:00.000001 m").has_value())
      << "after a host prefix";
  EXPECT_FALSE(cvs::glog_seconds("completed step: 5, seconds: 0.1").has_value());
  EXPECT_FALSE(cvs::glog_seconds("XI0102 00:00:00.1 glued to a word").has_value());
  EXPECT_FALSE(cvs::glog_seconds("I1305 00:00:00.1 month 13").has_value());
  // busybox date has no %N: the mark's fraction is the letter, read as none.
  EXPECT_DOUBLE_EQ(*cvs::glog_seconds("I0101 00:00:02.N cvs-run: started"), 2.0);
}

TEST(RunTimeline, JaxsCompilerLinesAreReadWithTheirModuleAndSeconds) {
  auto m = cvs::parse_run_mark(
      "I1205 17:45:57.586717 1396 compiler.py:860] 'jit_train_step' took at least 1.00 seconds to compile "
      "(1.82s)");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->kind, RunMarkKind::Compiled);
  EXPECT_EQ(m->name, "jit_train_step");
  EXPECT_DOUBLE_EQ(m->seconds, 1.82);
  m = cvs::parse_run_mark(
      "I1205 17:45:54.1 1 compiler.py:851] Not writing persistent cache entry for 'jit_iota' because it took "
      "< "
      "1.00 seconds to compile (0.02s)");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name, "jit_iota");
  EXPECT_DOUBLE_EQ(m->seconds, 0.02);
  m = cvs::parse_run_mark(
      "I1205 17:46:03.894127 1 compiler.py:173] Persistent compilation cache hit for 'jit_train_step' with "
      "key 'k'");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->kind, RunMarkKind::CacheHit);
  EXPECT_EQ(m->name, "jit_train_step");
  m = cvs::parse_run_mark(
      "I1 compiler.py:183] PERSISTENT COMPILATION CACHE MISS for 'jit_stage' with key 'k'");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->kind, RunMarkKind::CacheMiss);
  EXPECT_EQ(m->name, "jit_stage");
  EXPECT_FALSE(cvs::parse_run_mark("x seconds to compile (soon)")) << "no seconds: not a compile line";
}

TEST(RunTimeline, ARealRunsPhasesAddUpToItsMarkedSpan) {
  for (const char* log : {"logs/cpu_phases_cold_cache.log", "logs/cpu_phases_warm_cache.log",
                          "logs/cpu_phases_ckpt_phase1.log"}) {
    SCOPED_TRACE(log);
    const auto p = phases_of(log);
    EXPECT_NEAR(p.total(), marked_span(log), 0.05);
    EXPECT_TRUE(p.compile_apart);
    EXPECT_GT(p.startup_s, 1.0) << "imports and JAX start-up take seconds on this CPU";
    EXPECT_GT(p.training_s, 0.0);
    EXPECT_GT(p.teardown_s, 0.0);
  }
}

TEST(RunTimeline, TheSecondRunOfAShapeCompilesFromTheCache) {
  const auto cold = phases_of("logs/cpu_phases_cold_cache.log");
  const auto warm = phases_of("logs/cpu_phases_warm_cache.log");
  EXPECT_EQ(cold.cache.train_step_hit, false);
  EXPECT_EQ(cold.cache.hits, 0);
  EXPECT_EQ(warm.cache.train_step_hit, true);
  EXPECT_GE(warm.cache.hits, 1);
  EXPECT_LT(warm.compile_s, cold.compile_s / 2) << cold.compile_s << " s cold";
  EXPECT_DOUBLE_EQ(cold.checkpoint_s, 0.0);
}

TEST(RunTimeline, ACheckpointRunsSaveIsItsIoNotTraining) {
  const auto p = phases_of("logs/cpu_phases_ckpt_phase1.log");
  EXPECT_GT(p.checkpoint_s, 0.0);
  const auto scan =
      cvs::scan_log_file(cvs::test::data("logs/cpu_phases_ckpt_phase1.log"), cvs::default_error_patterns());
  double orbax = 0;
  for (const auto& c : scan.checkpoints)
    if (c.kind == cvs::CheckpointEventKind::SaveDuration || c.kind == cvs::CheckpointEventKind::LoadDuration)
      orbax += c.seconds;
  EXPECT_DOUBLE_EQ(p.checkpoint_s, orbax);
}

TEST(RunTimeline, EdgesOnWrittenLines) {
  cvs::RunTimeline none;
  none.step(10, 0.1);
  EXPECT_FALSE(none.phases()) << "no start mark: a log the suite's agent did not start";

  // A run over a new year, with a save between its steps and one after its last.
  const double dec31 = 364 * 86400.0 + 86399;
  cvs::RunTimeline t;
  t.mark({RunMarkKind::Started, "", 0}, dec31 - 10);  // 23:59:49
  t.mark({RunMarkKind::Compiled, "jit_train_step", 3}, dec31 - 5);
  t.step(dec31, 1.0);          // stepping from 23:59:58
  t.checkpoint_io(0.5, 0.25);  // Jan 1, 00:00:00.5
  t.step(2, 0.1);
  t.checkpoint_io(3, 0.5);
  t.mark({RunMarkKind::Exited, "", 0}, 4);
  const auto p = t.phases();
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(p->compile_s, 3);
  EXPECT_DOUBLE_EQ(p->startup_s, 9 - 3);
  EXPECT_DOUBLE_EQ(p->training_s, 4 - 0.25);  // 23:59:58 to 00:00:02, less the save
  EXPECT_DOUBLE_EQ(p->checkpoint_s, 0.75);
  EXPECT_DOUBLE_EQ(p->teardown_s, 2 - 0.5);
  EXPECT_DOUBLE_EQ(p->total(), 15);  // start to exit

  cvs::RunTimeline killed;  // no exit mark, no step: all start-up until its last timed line
  killed.mark({RunMarkKind::Started, "", 0}, 100);
  killed.mark({RunMarkKind::CacheMiss, "jit_train_step", 0}, 104);
  const auto k = killed.phases();
  ASSERT_TRUE(k);
  EXPECT_DOUBLE_EQ(k->startup_s, 4);
  EXPECT_EQ(k->cache.train_step_hit, false);
}

}  // namespace
