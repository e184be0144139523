// The suites' stages by the names gtest gives them (TEST(test_setup, ...), INSTANTIATE_TEST_SUITE_P(
// sweep, test_metric, ...)): one table that fleet mode, certify, calibrate and the reports filter
// and group on. The suites' TEST macros spell the same names (they cannot take a constant);
// `StageNames.EveryNameIsOneOfTheSuitesTests` lists the suites' tests and checks each name here.
#pragma once

#include <initializer_list>
#include <string>

namespace cvs::stage_names {

// A stage's test suite as results.json's `stage` holds it (after any "sweep/").
inline constexpr const char* kSetup = "test_setup";
inline constexpr const char* kSetupRdma = "test_setup_rdma";  // distributed only
inline constexpr const char* kSmoke = "test_smoke";
inline constexpr const char* kTrainingRun = "test_training_run";
inline constexpr const char* kMetric = "test_metric";
inline constexpr const char* kCheckpoint = "checkpoint_resume";
// The prefix of the value-parameterized stages (one case per sweep).
inline constexpr const char* kSweepPrefix = "sweep/";

// gtest's full test suite name of a stage: "test_setup", "sweep/test_training_run".
std::string test_suite_of(const char* stage);
// A --gtest_filter keeping exactly these stages: "test_setup.*:sweep/test_training_run.*".
std::string filter_of(std::initializer_list<const char*> stages);
// A --gtest_filter keeping every sweep's test_metric cases of the speed metrics alone
// ("sweep/test_metric.check/*__tokens_per_sec_per_gpu:..."): certify's nodes tier, whose question
// is speed (the loss gates are the suite's own run's).
std::string speed_metric_tests();

}  // namespace cvs::stage_names
