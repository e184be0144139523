// Line formats as MaxText 0.2.5 printed them on this machine (tests/data/logs), plus the older
// variants transcribed from MaxText's format strings.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>

#include "cvs/logs/maxtext_log.hpp"
#include "test_helpers.hpp"

using cvs::parse_maxtext_line;

TEST(MaxtextLog, StepLineOfV025) {
  auto ev = parse_maxtext_line(
      "I1202 12:31:44.806634 140709024938880 metric_logger.py:265] completed step: 2, seconds: 0.004, "
      "TFLOP/s/device: "
      "0.149, Tokens/s/device: 63147.509, total_weights: 256, loss: 6.015, lm_loss: 6.015, perplexity: "
      "409.336");
  ASSERT_TRUE(ev && ev->step);
  EXPECT_EQ(ev->step->step, 2);
  EXPECT_DOUBLE_EQ(*ev->step->seconds, 0.004);
  EXPECT_DOUBLE_EQ(*ev->step->tflops_per_device, 0.149);
  EXPECT_DOUBLE_EQ(*ev->step->tokens_per_device, 63147.509);
  EXPECT_DOUBLE_EQ(*ev->step->total_weights, 256);
  EXPECT_DOUBLE_EQ(ev->step->loss, 6.015) << "loss, not lm_loss";
}

TEST(MaxtextLog, OlderStepLineWithoutTotalWeights) {
  auto ev = parse_maxtext_line(
      "completed step: 10, seconds: 1.234, TFLOP/s/device: 250.5, Tokens/s/device: 1300.2, loss: 7.5");
  ASSERT_TRUE(ev && ev->step);
  EXPECT_EQ(ev->step->step, 10);
  EXPECT_FALSE(ev->step->total_weights);
  EXPECT_DOUBLE_EQ(ev->step->loss, 7.5);
}

// A research fork's step line (#57): fields separated by spaces alone, a rate instead of a time,
// fields the reader does not know (accuracy, lr in e-notation).
TEST(MaxtextLog, AForksSpaceSeparatedLineWithStepsPerSecond) {
  auto ev = parse_maxtext_line(
      "completed step: 3000, steps/s: 0.641 TFLOP/s/device: 116.163 total_weights: 523957 loss: 2.721263 "
      "accuracy: 48.162 lr: 27.053e-5");
  ASSERT_TRUE(ev && ev->step);
  EXPECT_EQ(ev->step->step, 3000);
  EXPECT_DOUBLE_EQ(*ev->step->seconds, 1 / 0.641);
  EXPECT_DOUBLE_EQ(*ev->step->tflops_per_device, 116.163);
  EXPECT_DOUBLE_EQ(*ev->step->total_weights, 523957);
  EXPECT_DOUBLE_EQ(ev->step->loss, 2.721263);
  EXPECT_TRUE(ev->step->loss_logged);
  // A name inside another ("lm_loss: ") is still not the loss.
  auto lm = parse_maxtext_line("completed step: 4, seconds: 1.0 lm_loss: 3.5");
  ASSERT_TRUE(lm && lm->step);
  EXPECT_DOUBLE_EQ(lm->step->loss, 3.5) << "lm_loss as the loss when no loss: field";
}

TEST(MaxtextLog, NanLossParsesAsNan) {
  auto ev = parse_maxtext_line(
      "I1202 12:32:43.025712 140599178353536 metric_logger.py:265] completed step: 1, seconds: 0.109, "
      "TFLOP/s/device: "
      "0.006, Tokens/s/device: 2349.896, total_weights: 256, loss: nan, lm_loss: nan, perplexity: nan");
  ASSERT_TRUE(ev && ev->step);
  EXPECT_TRUE(std::isnan(ev->step->loss));
}

TEST(MaxtextLog, RampupAndProfilerLines) {
  auto r = parse_maxtext_line(
      "[Rampup Batch Size Phase], completed step: 3, seconds: 0.5, total_weights: 64, loss: 9.1");
  ASSERT_TRUE(r && r->step);
  EXPECT_TRUE(r->step->rampup);
  EXPECT_FALSE(r->step->tokens_per_device);
  auto p = parse_maxtext_line(
      "completed profiler activation/deactivation step: 4, total_weights: 64, loss: 9.0, lm_loss: 9.0");
  ASSERT_TRUE(p && p->step);
  EXPECT_TRUE(p->step->profiler_boundary);
  EXPECT_FALSE(p->step->seconds);
}

TEST(MaxtextLog, EvalLinesNewAndOld) {
  auto n = parse_maxtext_line(
      "I1202 metric_logger.py:280] Completed eval after train step 99, loss=2.345, perplexity=10.4, "
      "total_weights=512, avg_z_loss=0.000");
  ASSERT_TRUE(n && n->eval);
  EXPECT_EQ(n->eval->after_step, 99);
  EXPECT_DOUBLE_EQ(n->eval->loss, 2.345);
  auto o = parse_maxtext_line("eval metrics after step: 49, loss=3.210, total_weights=100.0");
  ASSERT_TRUE(o && o->eval);
  EXPECT_EQ(o->eval->after_step, 49);
  EXPECT_DOUBLE_EQ(o->eval->loss, 3.21);
  EXPECT_FALSE(parse_maxtext_line("Completed eval step: 3, seconds: 0.1, running loss=2.0"));
}

TEST(MaxtextLog, CheckpointLines) {
  auto s =
      parse_maxtext_line("I1202 checkpointing.py:596] Started an asynchronous checkpoint save for step 5");
  ASSERT_TRUE(s && s->checkpoint);
  EXPECT_EQ(s->checkpoint->kind, cvs::CheckpointEventKind::SaveStarted);
  EXPECT_EQ(s->checkpoint->step, 5);
  auto sync = parse_maxtext_line("Saved a checkpoint at step 10.");
  ASSERT_TRUE(sync && sync->checkpoint);
  EXPECT_EQ(sync->checkpoint->kind, cvs::CheckpointEventKind::Saved);
  EXPECT_EQ(sync->checkpoint->step, 10);
  auto r = parse_maxtext_line("I1202 checkpointing.py:705] restoring from this run's directory step 5");
  ASSERT_TRUE(r && r->checkpoint);
  EXPECT_EQ(r->checkpoint->kind, cvs::CheckpointEventKind::Restored);
  EXPECT_EQ(r->checkpoint->step, 5);
  auto d = parse_maxtext_line(
      "I1202 event_tracking.py:184] [process=0] [async] Finished save (blocking + background) in 0.14 "
      "seconds @ "
      "/tmp/t/out/ck/checkpoints/10");
  ASSERT_TRUE(d && d->checkpoint);
  EXPECT_EQ(d->checkpoint->kind, cvs::CheckpointEventKind::SaveDuration);
  EXPECT_DOUBLE_EQ(d->checkpoint->seconds, 0.14);
  EXPECT_EQ(d->checkpoint->step, 10);
  auto l =
      parse_maxtext_line("[process=0] [sync] Finished load in 0.08 seconds @ /tmp/t/out/ck/checkpoints/5");
  ASSERT_TRUE(l && l->checkpoint);
  EXPECT_EQ(l->checkpoint->kind, cvs::CheckpointEventKind::LoadDuration);
  EXPECT_EQ(l->checkpoint->step, 5);
  EXPECT_FALSE(parse_maxtext_line("[async] Finished blocking save in 0.03 seconds. Continuing save @ /x/0."));
}

TEST(MaxtextLog, AbortAndMemstats) {
  auto a = parse_maxtext_line("I1202 metric_logger.py:349] Aborting training due to NaN loss.");
  ASSERT_TRUE(a && a->abort);
  EXPECT_EQ(*a->abort, "NaN");
  auto m = parse_maxtext_line("I1202 max_utils.py:786] \tUsing (GB) 150.2 / 191.98 (78.236%) on rocm:0");
  ASSERT_TRUE(m && m->memory_used_gb);
  EXPECT_DOUBLE_EQ(*m->memory_used_gb, 150.2);
  EXPECT_DOUBLE_EQ(*m->memory_limit_gb, 191.98);
}

TEST(MaxtextLog, ConfigParamLinesGiveTheEffectiveConfig) {
  auto ev = parse_maxtext_line(
      "I1202 12:31:38.846946 140709024938880 pyconfig.py:591] Config param quantization: nanoo_fp8");
  ASSERT_TRUE(ev && ev->config_param);
  EXPECT_EQ(ev->config_param->first, "quantization");
  EXPECT_EQ(ev->config_param->second, "nanoo_fp8");
  auto empty = parse_maxtext_line("I1202 12:31:38.8 1 pyconfig.py:591] Config param quantization: ");
  ASSERT_TRUE(empty && empty->config_param);
  EXPECT_EQ(empty->config_param->second, "");
}

TEST(MaxtextLog, OrdinaryLinesAreNotEvents) {
  EXPECT_FALSE(parse_maxtext_line(""));
}

// The fixed-order fast path (std::from_chars) and the general parser agree on every step line of
// the captured logs: both are checked against the numbers read off the line independently.
TEST(MaxtextLog, FastStepPathAgreesWithTheLineOnEveryCapturedStep) {
  const std::regex rx(
      R"(completed step: (\d+), seconds: ([^,]+), TFLOP/s/device: ([^,]+), Tokens/s/device: ([^,]+), total_weights: ([^,]+), loss: ([^,\s]+))");
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(cvs::test::data("logs"))) {
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (!std::regex_search(line, m, rx)) continue;
      const auto at = line.find("completed step: ");
      auto fast = cvs::parse_step_line(std::string_view(line).substr(at));
      auto general = cvs::parse_maxtext_line(line);
      ASSERT_TRUE(fast && general && general->step) << line;
      for (const auto* r : {&*fast, &*general->step}) {
        EXPECT_EQ(r->step, std::stoll(m[1]));
        EXPECT_EQ(*r->seconds, std::stod(m[2]));
        EXPECT_EQ(*r->tflops_per_device, std::stod(m[3]));
        EXPECT_EQ(*r->tokens_per_device, std::stod(m[4]));
        EXPECT_EQ(*r->total_weights, std::stod(m[5]));
        if (std::isnan(std::stod(m[6])))
          EXPECT_TRUE(std::isnan(r->loss));
        else
          EXPECT_EQ(r->loss, std::stod(m[6]));
        EXPECT_FALSE(r->rampup);
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 80);
  // Off the fixed order, the general parser reads it.
  auto moved = cvs::parse_step_line(
      "completed step: 3, loss: 1.5, seconds: 0.2, TFLOP/s/device: 1.0, Tokens/s/device: 9.0, total_weights: "
      "4");
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->loss, 1.5);
  EXPECT_EQ(*moved->seconds, 0.2);
  auto rampup = cvs::parse_step_line(
      "completed step: 3, seconds: 0.2, TFLOP/s/device: 1.0, Tokens/s/device: 9.0, total_weights: 4, loss: "
      "1.5 "
      "[Rampup Batch Size Phase]");
  ASSERT_TRUE(rampup);
  EXPECT_TRUE(rampup->rampup);
}

// The fast decimal path (N / 10^k, Clinger) gives exactly the double strtod gives, on random
// decimals of every length up to its 15 digits and past it (where from_chars takes over).
TEST(MaxtextLog, FastDecimalsAreTheCorrectlyRoundedDoubles) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    const int int_digits = static_cast<int>(rng() % 9), frac_digits = static_cast<int>(rng() % 12);
    std::string v = std::to_string(rng() % 1000000000ULL).substr(0, static_cast<std::size_t>(int_digits + 1));
    if (frac_digits > 0) {
      v += '.';
      for (int k = 0; k < frac_digits; ++k) v += static_cast<char>('0' + rng() % 10);
    }
    const std::string line = "completed step: 1, seconds: " + v + ", TFLOP/s/device: " + v +
                             ", Tokens/s/device: 1.5, total_weights: 8, loss: -" + v;
    const auto r = cvs::parse_step_line(line);
    ASSERT_TRUE(r) << line;
    EXPECT_EQ(*r->seconds, std::strtod(v.c_str(), nullptr)) << v;
    EXPECT_EQ(r->loss, -std::strtod(v.c_str(), nullptr)) << v;
  }
}

// Step lines of other MaxText versions (and AMD CVS's own unit-test cases): fields missing or in
// another order are still a step, and a NaN/Inf in any rate breaks it.
TEST(MaxtextLog, AStepLineWithFieldsMissingOrReorderedIsStillAStep) {
  auto r = cvs::parse_step_line("completed step: 1, TFLOP/s/device: NaN");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->step, 1);
  EXPECT_FALSE(r->loss_logged);
  EXPECT_FALSE(r->seconds);
  ASSERT_TRUE(cvs::first_nonfinite(*r));
  EXPECT_STREQ(cvs::first_nonfinite(*r)->field, "TFLOP/s/device");
  r = cvs::parse_step_line("completed step: 7, loss: 2.5, Tokens/s/device: inf, seconds: 0.5");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->loss_logged);
  EXPECT_EQ(r->loss, 2.5);
  EXPECT_EQ(*r->seconds, 0.5);
  EXPECT_STREQ(cvs::first_nonfinite(*r)->field, "Tokens/s/device");
  EXPECT_FALSE(cvs::parse_step_line("completed step: 3")) << "a step number alone is no step record";
  // Through `cvs metrics`: a log whose one step line is that NaN exits 1 naming the line.
  const auto dir = std::filesystem::path(::testing::TempDir());
  std::ofstream(dir / "nan_rate.log") << "I1204 17:13:34.762417 1 metric_logger.py:265] completed step: 1, "
                                         "TFLOP/s/device: NaN\n";
  const auto out =
      cvs::test::run_command(std::string(CVS_BINARY) + " metrics " + (dir / "nan_rate.log").string());
  EXPECT_EQ(out.exit_code, 1) << out.out;
  EXPECT_NE(out.out.find("nan_rate.log:1: non-finite TFLOP/s/device"), std::string::npos) << out.out;
  EXPECT_NE(out.out.find("\"steps\": 1"), std::string::npos) << out.out;
}

// Lines of other people's published logs (tests/data/maxtext_corpus): 2023's TFLOP/s, a comma
// and two spaces, main_model_loss and lm_loss, per-host prefixes, profiler windows.
TEST(MaxtextLog, PublishedStepLineForms) {
  auto r = parse_maxtext_line("# completed step: 2, seconds: 0.206, TFLOP/s: 72.958, loss: 9.352")->step;
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(*r->tflops_per_device, 72.958);
  EXPECT_FALSE(r->tokens_per_device);
  r = parse_maxtext_line("completed step: 0, seconds: 74.031, TFLOP/s/device: 37.835,  loss: 13.424")->step;
  ASSERT_TRUE(r && r->loss_logged);
  EXPECT_DOUBLE_EQ(r->loss, 13.424);
  r = parse_maxtext_line(
          "completed step: 4, seconds: 49.994, TFLOP/s/device: 56.026, main_model_loss: 11.337")
          ->step;
  ASSERT_TRUE(r && r->loss_logged);
  EXPECT_DOUBLE_EQ(r->loss, 11.337);
  r = parse_maxtext_line(
          "completed step: 3, seconds: 1, TFLOP/s/device: 1, loss: 12.5, main_model_loss: 11.0, mtp_loss: "
          "1.5")
          ->step;
  EXPECT_DOUBLE_EQ(r->loss, 12.5) << "the total training loss when the line has it";
  r = parse_maxtext_line("completed step: 3, seconds: 1, lm_loss: 12.979, perplexity: 433110.281")->step;
  EXPECT_DOUBLE_EQ(r->loss, 12.979);
  EXPECT_EQ(cvs::host_of_prefix("(run_maxtext_train pid=80538, ip=10.130.0.12) "), "10.130.0.12");
  EXPECT_EQ(cvs::host_of_prefix("3: "), "task 3");
  EXPECT_EQ(cvs::host_of_prefix("[1,7]<stdout>:"), "rank 7");
  EXPECT_EQ(cvs::host_of_prefix("[pod/worker-2/jax] "), "worker-2");
  EXPECT_EQ(cvs::host_of_prefix("I0317 10:00:13.224641 125344476638336 metric_logger.py:181] "), "");
  EXPECT_EQ(cvs::host_of_prefix("# "), "");
  EXPECT_EQ(*parse_maxtext_line("# Capture range started in the application.")->profiler,
            cvs::MarkerKind::ProfilerStart);
  EXPECT_EQ(*parse_maxtext_line("I0811 21:55:27.300535 7 profiler_session.cc:136] Profiler session started.")
                 ->profiler,
            cvs::MarkerKind::ProfilerStart);
  EXPECT_EQ(*parse_maxtext_line("# Capture range ended in the application.")->profiler,
            cvs::MarkerKind::ProfilerEnd);
}
