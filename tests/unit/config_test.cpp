// One test per rule of the config loader (spec: "Config layout" .. "Sweeps and runs").
#include <gtest/gtest.h>

#include <algorithm>

#include "cvs/config/config.hpp"
#include "test_helpers.hpp"

using cvs::test::has_issue;
using cvs::test::issues_of;
using cvs::test::load_json;
using cvs::test::spec_example_untagged;
using nlohmann::ordered_json;

TEST(Config, SpecExampleLoadsOnceTagsReplaced) {
  auto c = load_json(spec_example_untagged());
  EXPECT_EQ(c.gpu_name, "mi3xx");
  EXPECT_EQ(c.gpus_per_node, 8);
  EXPECT_FALSE(c.enforce_thresholds);
  EXPECT_EQ(c.mode, cvs::Mode::Distributed);
  EXPECT_EQ(c.container.runtime, "docker");
  EXPECT_TRUE(c.container.args.privileged);
  EXPECT_EQ(c.container.args.shm_size, "256G");
  ASSERT_EQ(c.runs.size(), 2u);
  EXPECT_EQ(c.sweeps.size(), 2u);
  EXPECT_EQ(c.scaling_baseline.tokens_per_sec_total, 394000.0);
  EXPECT_EQ(c.convergence.target_value, 10.0);
  EXPECT_EQ(c.loss_curve.milestone_steps, (std::vector<long long>{100, 500, 1000, 5000}));
  EXPECT_EQ(c.error_patterns.size(), 2u);
  EXPECT_FALSE(c.error_patterns_defaulted);
  EXPECT_EQ(c.threshold_path.filename(), "mi325x_jaxmaxtext_llama-3.3-70b_distributed_threshold.json");
  EXPECT_EQ(c.train_params.xla_flags.size(), 2u);
}

TEST(Config, TaggedSpecExampleFailsWithOnePointerPerEnvAndThresholdTag) {
  auto issues = issues_of(
      cvs::test::read_json(cvs::test::data("configs/mi3xx_jaxmaxtext_llama-3.3-70b_distributed.json")));
  EXPECT_TRUE(has_issue(issues, "/threshold_json", "<changeme>"));
  EXPECT_TRUE(has_issue(issues, "/container/env/NCCL_IB_HCA", "<changeme>"));
  EXPECT_TRUE(has_issue(issues, "/container/env/NCCL_SOCKET_IFNAME", "<changeme>"));
  EXPECT_TRUE(has_issue(issues, "/container/env/GLOO_SOCKET_IFNAME", "<changeme>"));
  EXPECT_TRUE(has_issue(issues, "/container/env/NCCL_IB_GID_INDEX", "<changeme>"));
  EXPECT_EQ(issues.size(), 5u) << "image <changeme> must not be a load error; every other tag is one issue";
}

TEST(Config, ImageChangemeIsPreflightNotLoadError) {
  auto j = spec_example_untagged();
  j["container"]["image"] = "rocm/jax-training:maxtext-v26.4 <changeme>";
  auto c = load_json(j);
  auto pf = cvs::preflight(c);
  ASSERT_EQ(pf.size(), 1u);
  EXPECT_EQ(pf[0].pointer, "/container/image");
  j["container"]["image"] = "rocm/jax-training:maxtext-v26.4";
  EXPECT_TRUE(cvs::preflight(load_json(j)).empty());
}

TEST(Config, CommentKeysAreDroppedEverywhere) {
  auto j = spec_example_untagged();
  j["_top_comment"] = "x";
  j["smoke"]["_why"] = "y";
  auto c = load_json(j);
  for (const auto& [k, v] : c.container.env) EXPECT_NE(k[0], '_') << k;
  EXPECT_TRUE(c.sweep("BS=3,PRECISION=BF16,SL=8192").overrides.empty());
}

TEST(Config, CommentKeyInsideMaxtextConfigIsAnError) {
  auto j = spec_example_untagged();
  j["train_params"]["maxtext_config"]["_note"] = "MaxText would reject this";
  EXPECT_TRUE(has_issue(issues_of(j), "/train_params/maxtext_config/_note", "MaxText YAML"));
}

TEST(Config, PlaceholdersResolveFromPathsAndUser) {
  auto c = load_json(spec_example_untagged());
  EXPECT_EQ(c.paths.shared_fs, "/home/alice");
  EXPECT_EQ(c.paths.models_dir, "/home/alice/cache/maxtext");
  EXPECT_EQ(c.paths.temp_dir, "/tmp/alice/jaxmaxtext");
  EXPECT_EQ(c.train_params.maxtext_config["tokenizer_path"], "/home/alice/cache/maxtext/Meta-Llama-70-B");
  EXPECT_EQ(c.container.args.volumes.back(), "/home/alice:/home/alice");
}

TEST(Config, PlaceholderCycleIsAnError) {
  auto j = spec_example_untagged();
  j["paths"]["shared_fs"] = "{log_dir}/x";
  j["paths"]["log_dir"] = "{shared_fs}/LOGS";
  EXPECT_TRUE(has_issue(issues_of(j), "/paths/log_dir", "cycle"));
}

TEST(Config, UnknownPlaceholderIsAnError) {
  auto j = spec_example_untagged();
  j["train_params"]["maxtext_config"]["tokenizer_path"] = "{paths.nope}/tok";
  EXPECT_TRUE(has_issue(issues_of(j), "/train_params/maxtext_config/tokenizer_path", "{paths.nope}"));
}

TEST(Config, RegexQuantifiersInErrorPatternsAreNotPlaceholders) {
  auto j = spec_example_untagged();
  j["error_patterns"]["Xid"] = "Xid [0-9]{2,3}";
  auto c = load_json(j);
  EXPECT_EQ(c.error_patterns.back().regex, "Xid [0-9]{2,3}");
}

TEST(Config, ChangemeInEnvIsAnErrorWithThePointer) {
  auto j = spec_example_untagged();
  j["container"]["env"]["NCCL_IB_TC"] = "41 <changeme>";
  EXPECT_TRUE(has_issue(issues_of(j), "/container/env/NCCL_IB_TC", "<changeme>"));
}

TEST(Config, ThresholdJsonChangemeIsAnError) {
  auto j = spec_example_untagged();
  j["threshold_json"] = "mi325x_x_threshold.json <changeme>";
  EXPECT_TRUE(has_issue(issues_of(j), "/threshold_json", "<changeme>"));
}

TEST(Config, MissingThresholdFileIsAnError) {
  auto j = spec_example_untagged();
  j["threshold_json"] = "nope_threshold.json";
  EXPECT_TRUE(has_issue(issues_of(j), "/threshold_json", "not found"));
}

TEST(Config, InjectedKeysInMaxtextConfigAreErrors) {
  auto j = spec_example_untagged();
  j["train_params"]["maxtext_config"]["run_name"] = "mine";
  j["train_params"]["maxtext_config"]["base_output_directory"] = "/x";
  auto issues = issues_of(j);
  EXPECT_TRUE(has_issue(issues, "/train_params/maxtext_config/run_name", "injected"));
  EXPECT_TRUE(has_issue(issues, "/train_params/maxtext_config/base_output_directory", "injected"));
}

TEST(Config, EveryLauncherOwnedEnvVarIsAnError) {
  for (const auto& var : cvs::launcher_owned_env()) {
    auto j = spec_example_untagged();
    j["container"]["env"][var] = "1";
    EXPECT_TRUE(has_issue(issues_of(j), "/container/env/" + var, "launcher")) << var;
  }
}

TEST(Config, RunsMustBeSweepKeys) {
  auto j = spec_example_untagged();
  j["runs"].push_back("BS=4,PRECISION=BF16,SL=8192");
  EXPECT_TRUE(has_issue(issues_of(j), "/runs/2", "not a key of sweeps"));
}

TEST(Config, DuplicateRunIsAnError) {
  auto j = spec_example_untagged();
  j["runs"].push_back("BS=3,PRECISION=BF16,SL=8192");
  EXPECT_TRUE(has_issue(issues_of(j), "/runs/2", "twice"));
}

TEST(Config, ModeIsSingleWithoutNcclDeviceVars) {
  auto j = spec_example_untagged();
  for (const auto& v : cvs::distributed_marker_env()) j["container"]["env"].erase(v);
  EXPECT_EQ(load_json(j).mode, cvs::Mode::Single);
  j["container"]["env"]["GLOO_SOCKET_IFNAME"] = "lo";
  EXPECT_EQ(load_json(j).mode, cvs::Mode::Distributed);
}

TEST(Config, AllErrorsOfAFileAreReportedTogether) {
  auto j = spec_example_untagged();
  j["gpus_per_node"] = "eight";
  j["smoke"]["steps"] = 0;
  j["train_params"]["maxtext_config"]["run_name"] = "x";
  j["runs"].push_back("BS=9,PRECISION=BF16,SL=1");
  auto issues = issues_of(j);
  EXPECT_TRUE(has_issue(issues, "/gpus_per_node", "integer"));
  EXPECT_TRUE(has_issue(issues, "/smoke/steps", ">= 1"));
  EXPECT_TRUE(has_issue(issues, "/train_params/maxtext_config/run_name"));
  EXPECT_TRUE(has_issue(issues, "/runs/2"));
  EXPECT_GE(issues.size(), 4u);
}

TEST(Config, UnknownKeyIsAnErrorWithASuggestion) {
  auto j = spec_example_untagged();
  j["enforce_threshold"] = true;
  EXPECT_TRUE(has_issue(issues_of(j), "/enforce_threshold", "unknown key"));
  auto issues = issues_of(j);
  bool suggested = false;
  for (const auto& i : issues) suggested |= i.fix.find("enforce_thresholds") != std::string::npos;
  EXPECT_TRUE(suggested);
}

TEST(Config, OmittedBlocksGetSpecDefaults) {
  auto j = spec_example_untagged();
  for (const char* b :
       {"scaling_baseline", "convergence", "loss_curve", "smoke", "checkpoint_resume", "error_patterns"})
    j.erase(b);
  auto c = load_json(j);
  EXPECT_EQ(c.scaling_baseline.tokens_per_sec_total, 0.0);
  EXPECT_EQ(c.scaling_baseline.num_nodes, 1);
  EXPECT_EQ(c.convergence.target_metric, "auto");
  EXPECT_EQ(c.convergence.target_value, 0.0);
  EXPECT_EQ(c.loss_curve.sample_every, 10);
  EXPECT_EQ(c.loss_curve.max_slope, 0.0);
  EXPECT_TRUE(c.loss_curve.enforce);
  EXPECT_TRUE(c.smoke.enabled);
  EXPECT_EQ(c.smoke.steps, 5);
  EXPECT_EQ(c.smoke.per_device_batch_size, 1);
  EXPECT_EQ(c.smoke.max_target_length, 2048);
  EXPECT_FALSE(c.checkpoint_resume.enabled);
  EXPECT_EQ(c.checkpoint_resume.steps_before_ckpt, 6);
  EXPECT_EQ(c.checkpoint_resume.steps_after_resume, 6);
  EXPECT_EQ(c.checkpoint_resume.checkpoint_period, 5);
  EXPECT_DOUBLE_EQ(c.checkpoint_resume.loss_tolerance, 0.1);
  EXPECT_TRUE(c.checkpoint_resume.delete_ckpt_dir);
  EXPECT_TRUE(c.error_patterns_defaulted);
  EXPECT_EQ(c.error_patterns.size(), cvs::default_error_patterns().size());
}

TEST(Config, CheckpointPeriodAboveStepsBeforeCkptIsAnError) {
  auto j = spec_example_untagged();
  j["checkpoint_resume"]["checkpoint_period"] = 7;
  EXPECT_TRUE(has_issue(issues_of(j), "/checkpoint_resume/checkpoint_period", "save nothing"));
}

TEST(Config, BadErrorPatternRegexIsAnError) {
  auto j = spec_example_untagged();
  j["error_patterns"]["bad"] = "NCCL (ERROR";
  EXPECT_TRUE(has_issue(issues_of(j), "/error_patterns/bad", "invalid regex"));
}

TEST(Config, BadSweepKeyIsReportedAtItsPointer) {
  auto j = spec_example_untagged();
  j["sweeps"]["BS=3,PRECISION=FP16,SL=8192"] = ordered_json::object();
  EXPECT_TRUE(has_issue(issues_of(j), "/sweeps/BS=3,PRECISION=FP16,SL=8192", "PRECISION=FP16"));
}

TEST(Config, XlaFlagsInEnvPointToTrainParams) {
  auto j = spec_example_untagged();
  j["container"]["env"]["XLA_FLAGS"] = "--xla_gpu_autotune_level=0";
  auto issues = issues_of(j);
  ASSERT_TRUE(has_issue(issues, "/container/env/XLA_FLAGS"));
  for (const auto& i : issues) {
    if (i.pointer == "/container/env/XLA_FLAGS") {
      EXPECT_NE(i.fix.find("train_params.xla_flags"), std::string::npos);
    }
  }
}

TEST(Config, StepsAreRequiredForCompletionDetection) {
  auto j = spec_example_untagged();
  j["train_params"]["maxtext_config"].erase("steps");
  EXPECT_TRUE(has_issue(issues_of(j), "/train_params/maxtext_config/steps", "no 'steps'"));
  j["sweeps"]["BS=3,PRECISION=BF16,SL=8192"]["steps"] = 40;
  j["sweeps"]["BS=3,PRECISION=FP8,SL=8192"]["steps"] = 50;
  auto c = load_json(j);
  EXPECT_EQ(c.steps_for("BS=3,PRECISION=FP8,SL=8192"), 50);
}

// Both runs read the one maxtext_config.steps: one key, one problem, listed once.
TEST(Config, ABadStepCountSharedByTwoRunsIsListedOnce) {
  auto j = spec_example_untagged();
  j["train_params"]["maxtext_config"]["steps"] = "ten";
  const auto issues = issues_of(j);
  EXPECT_TRUE(has_issue(issues, "/train_params/maxtext_config/steps", "positive integer"));
  EXPECT_EQ(std::count_if(issues.begin(), issues.end(),
                          [](const auto& i) { return i.pointer == "/train_params/maxtext_config/steps"; }),
            1);
}

TEST(Config, InvalidJsonNamesLineAndColumn) {
  try {
    cvs::load_config_text("{\n  \"gpu_name\": \"mi3xx\",\n}\n", "bad.json");
    FAIL() << "expected ConfigError";
  } catch (const cvs::ConfigError& e) {
    ASSERT_EQ(e.issues().size(), 1u);
    EXPECT_NE(e.issues()[0].message.find("line 3"), std::string::npos) << e.what();
    EXPECT_EQ(e.issues()[0].file, "bad.json");
  }
}

TEST(Config, StatisticsBlockDefaultsAndRules) {
  auto c = load_json(spec_example_untagged());
  EXPECT_DOUBLE_EQ(c.statistics.confidence, 0.95);
  EXPECT_EQ(c.statistics.on_inconclusive, cvs::OnInconclusive::Fail);
  EXPECT_EQ(c.statistics.extend_max_steps, 0);
  EXPECT_DOUBLE_EQ(c.statistics.calibration_min_slack_pct, 5.0);
  EXPECT_DOUBLE_EQ(c.statistics.stop_half_width_pct, 0);
  auto j = spec_example_untagged();
  j["statistics"] = {
      {"confidence", 0.99},     {"on_inconclusive", "extend"},       {"extend_max_steps", 400},
      {"min_steady_steps", 30}, {"calibration_min_slack_pct", 60.0}, {"stop_half_width_pct", 2.5}};
  c = load_json(j);
  EXPECT_EQ(c.statistics.on_inconclusive, cvs::OnInconclusive::Extend);
  EXPECT_EQ(c.statistics.extend_max_steps, 400);
  EXPECT_EQ(c.statistics.min_steady_steps, 30);
  EXPECT_DOUBLE_EQ(c.statistics.stop_half_width_pct, 2.5);
  j["statistics"] = {{"confidence", 1.5},
                     {"on_inconclusive", "maybe"},
                     {"min_steady_steps", 2},
                     {"confidense", 0.9},
                     {"stop_half_width_pct", 100}};
  const auto i = issues_of(j);
  EXPECT_TRUE(has_issue(i, "/statistics/stop_half_width_pct", "not below 100"));
  EXPECT_TRUE(has_issue(i, "/statistics/confidence", "outside [0.5, 1)"));
  EXPECT_TRUE(has_issue(i, "/statistics/on_inconclusive", "not fail, pass or extend"));
  EXPECT_TRUE(has_issue(i, "/statistics/min_steady_steps", ">= 25"));
  EXPECT_TRUE(has_issue(i, "/statistics/confidense", "unknown key"));
  // A precision to step to acts only through extend's looks: set without them it would do nothing.
  j["statistics"] = {{"on_inconclusive", "pass"}, {"stop_half_width_pct", 3}};
  EXPECT_TRUE(has_issue(issues_of(j), "/statistics/stop_half_width_pct", "needs on_inconclusive extend"));
  j["statistics"] = {{"stop_half_width_pct", 3}};  // the default, fail
  EXPECT_TRUE(has_issue(issues_of(j), "/statistics/stop_half_width_pct", "needs on_inconclusive extend"));
}

TEST(Config, AJsonSyntaxErrorSaysItsLineAndColumnOnce) {
  try {
    cvs::load_config_text("{\n \"gpu_name\": \"cpu\",\n}\n", "bad.json",
                          {.user = "u", .require_threshold_file = false});
    ADD_FAILURE() << "no error";
  } catch (const cvs::ConfigError& e) {
    const auto msg = e.issues().at(0).to_string();
    EXPECT_NE(msg.find("line 3, column 1"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("line"), msg.rfind("line")) << "one position, nlohmann's: " << msg;
  }
}

TEST(Config, TheFreeMemoryFractionIsAKeyOfTheTelemetryBlock) {
  auto c = load_json(spec_example_untagged());
  EXPECT_DOUBLE_EQ(c.telemetry.min_free_memory_fraction, 0.8);
  auto j = spec_example_untagged();
  j["telemetry"] = {{"min_free_memory_fraction", 0.5}};
  EXPECT_DOUBLE_EQ(load_json(j).telemetry.min_free_memory_fraction, 0.5);
  j["telemetry"] = {{"min_free_memory_fraction", 80}};
  EXPECT_TRUE(has_issue(issues_of(j), "/telemetry/min_free_memory_fraction", "fraction"));
}
