// Calibration files: the rule, what is kept from the base threshold file, where they live, and
// the provenance they are held against.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "cvs/base/sha256.hpp"
#include "cvs/exec/cluster.hpp"
#include "cvs/results/calibration.hpp"
#include "cvs/results/results_file.hpp"
#include "test_helpers.hpp"

using J = nlohmann::ordered_json;

namespace {

const char* kSweep = "BS=2,PRECISION=BF16,SL=128";

// A results.json of one repeat: tokens/s estimate e with interval e +- hw, step time 1000 / e.
cvs::Results repeat(double e, double hw, const std::string& status = "COMPLETED") {
  J r;
  r["schema_version"] = 1;
  r["provenance_fields"] = {{"maxtext_version", "0.2.5"}, {"cpu_count", 2}, {"config_sha256", "abc"}};
  J iv = {{"tokens_per_sec_per_gpu", {{"estimate", e}, {"lo", e - hw}, {"hi", e + hw}}},
          {"step_time_mean_ms", {{"estimate", 1e6 / e}, {"lo", 1e6 / (e + hw)}, {"hi", 1e6 / (e - hw)}}}};
  r["sweeps"][kSweep] = {{"status", status}, {"steady_state", {{"found", true}, {"intervals", iv}}}};
  return cvs::results_from_json(r);
}

cvs::ThresholdFile base_file() {
  return cvs::parse_thresholds(R"({"BS=2,PRECISION=BF16,SL=128": {
      "training.final_loss": {"kind": "within", "value": 0.258, "tolerance_pct": 25},
      "training.tokens_per_sec_per_gpu": {"kind": "min_tok_s", "value": 99999},
      "training.step_time_p95_ms": {"kind": "info", "value": 0}}})",
                               "base_threshold.json");
}

}  // namespace

TEST(Calibration, GatesFollowTheRuleAndKeepTheBaseFilesOtherGates) {
  const std::vector<cvs::Results> results = {repeat(1000, 20), repeat(1040, 20), repeat(960, 20)};
  cvs::CalibrationRule rule;
  rule.min_slack_pct = 40;
  const auto f = cvs::build_calibration(results, base_file(), rule, "2026-12-03");
  const auto& cell = f[kSweep];
  // Kept: the loss gate. Replaced: the typed-in throughput floor. Dropped: speed info entries.
  EXPECT_EQ(cell["training.final_loss"]["kind"], "within");
  EXPECT_DOUBLE_EQ(cell["training.final_loss"]["tolerance_pct"].get<double>(), 25.0);
  EXPECT_FALSE(cell.contains("training.step_time_p95_ms"));
  const auto& tok = cell["training.tokens_per_sec_per_gpu"];
  EXPECT_EQ(tok["kind"], "min_tok_s");
  // centre 1000, spread 1.4826 x 40, h 20: noise slack 1 + (3 x 59.3 + 20) / 1000 = 1.198 and the
  // worst repeat 1.05 x 1000 / 940 = 1.117, both under the 40 % floor: gate = 1000 / 1.4.
  EXPECT_NEAR(tok["value"].get<double>(), 1000 / 1.4, 1e-6);
  const auto& ms = cell["training.step_time_mean_ms"];
  EXPECT_EQ(ms["kind"], "max_ms");
  EXPECT_NEAR(ms["value"].get<double>(), 1000.0 * 1.4, 1e-6);
  const auto& cal = f["_calibration"];
  EXPECT_EQ(cal["repeats"], 3);
  EXPECT_EQ(cal["provenance"]["maxtext_version"], "0.2.5");
  const auto& st = cal["statistics"][kSweep]["tokens_per_sec_per_gpu"];
  EXPECT_DOUBLE_EQ(st["median"].get<double>(), 1000.0);
  EXPECT_EQ(st["runs"].size(), 3u);
  // The file reads back as a threshold file with its calibration.
  const auto back = cvs::parse_thresholds(f.dump(), "cal.json");
  ASSERT_TRUE(back.calibration);
  ASSERT_NE(back.cell(kSweep), nullptr);
}

TEST(Calibration, NoisyRepeatsWidenTheSlackUpToItsCeiling) {
  // One slow repeat: the gate stays below it (every known-good repeat passes).
  auto f =
      cvs::build_calibration({repeat(1000, 50), repeat(1000, 50), repeat(650, 50)}, std::nullopt, {}, "d");
  EXPECT_LT(f[kSweep]["training.tokens_per_sec_per_gpu"]["value"].get<double>(), 600.0);
  // Wild repeats: never looser than half the centre (a 2x slower run always fails).
  f = cvs::build_calibration({repeat(1000, 400), repeat(300, 200), repeat(1500, 400)}, std::nullopt, {}, "d");
  EXPECT_NEAR(f[kSweep]["training.tokens_per_sec_per_gpu"]["value"].get<double>(), 500.0, 1e-6);
}

TEST(Calibration, ARepeatThatDidNotCompleteIsRefused) {
  try {
    cvs::build_calibration({repeat(1000, 20), repeat(1000, 20, "FAILED")}, std::nullopt, {}, "d");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("repeat 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("known-good"), std::string::npos) << e.what();
  }
}

TEST(Calibration, DefaultFileIsOutsideTheCheckoutAndNamedByConfigAndCluster) {
  ::setenv("CVS_CALIBRATION_DIR", "/var/tmp/cal", 1);
  EXPECT_EQ(cvs::default_calibration_file("configs/a_single.json", ""),
            "/var/tmp/cal/a_single_threshold.json");
  EXPECT_EQ(cvs::default_calibration_file("configs/a.json", "clusters/rack7.json"),
            "/var/tmp/cal/a@rack7_threshold.json");
  ::unsetenv("CVS_CALIBRATION_DIR");
  ::setenv("XDG_STATE_HOME", "/home/ops/.state", 1);
  EXPECT_EQ(cvs::default_calibration_dir(), "/home/ops/.state/cvs-maxtext/calibration");
  ::unsetenv("XDG_STATE_HOME");
}

TEST(Calibration, ProvenanceDifferencesNameEachField) {
  const J cal = {{"maxtext_version", "0.2.5"}, {"cpu_count", 2}, {"image_id", ""}};
  const J now = {{"maxtext_version", "0.2.6"}, {"cpu_count", 2}};
  const auto d = cvs::provenance_differences(cal, now);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].field, "maxtext_version");
  EXPECT_EQ(d[0].calibrated, "0.2.5");
  EXPECT_EQ(d[0].now, "0.2.6");
  EXPECT_EQ(d[1].field, "image_id");
  EXPECT_EQ(d[1].now, "(absent)");
  EXPECT_TRUE(cvs::provenance_differences(cal, cal).empty());
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(cvs::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(cvs::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, ConfigHashIsOfTheEffectiveConfig) {
  const auto file = cvs::test::data("../../configs/cpu_jaxmaxtext_tiny_single.json");
  const auto plain = cvs::load_config(file);
  EXPECT_EQ(plain.sha256, cvs::sha256_hex(cvs::test::read_file(file)));
  cvs::Cluster c = cvs::default_cluster();
  c.overrides = {{"gpus_per_node", 1}, {"smoke", {{"steps", 4}}}};
  const auto overridden = cvs::load_config_for_cluster(file, c);
  EXPECT_NE(overridden.sha256, plain.sha256)
      << "a cluster override changes what runs, so it changes the hash";
}
