// Calibration files: the rule, what is kept from the base threshold file, where they live, and
// the provenance they are held against.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include "cvs/base/sha256.hpp"
#include "cvs/config/cluster.hpp"
#include "cvs/config/config.hpp"
#include "cvs/results/results_file.hpp"
#include "cvs/verdicts/calibration.hpp"
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

namespace {

double tok_gate(const std::vector<cvs::Results>& r, cvs::CalibrationRule rule = {}) {
  return cvs::build_calibration(r, std::nullopt, rule,
                                "d")[kSweep]["training.tokens_per_sec_per_gpu"]["value"]
      .get<double>();
}

std::string refusal(const std::vector<cvs::Results>& r, cvs::CalibrationRule rule = {}) {
  try {
    cvs::build_calibration(r, std::nullopt, rule, "d");
  } catch (const cvs::CalibrationRefused& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// Each branch of the slack rule, with the answer worked by hand (k = 3, min slack 5 %, the default).
TEST(Calibration, KnownAnswersForEachBranchOfTheSlackRule) {
  // The floor: centre 1000, spread 1.4826 x 10, h 10: noise 1 + (44.478 + 10) / 1000 = 1.054478,
  // worst 1.05 x 1000 / 980 = 1.071429: both under a 15 % floor.
  cvs::CalibrationRule floor15;
  floor15.min_slack_pct = 15;
  EXPECT_NEAR(tok_gate({repeat(990, 10), repeat(1000, 10), repeat(1010, 10)}, floor15), 1000 / 1.15, 1e-9);
  // Under the default 5 % floor the worst repeat decides: 1.05 x 1000 / 980.
  EXPECT_NEAR(tok_gate({repeat(990, 10), repeat(1000, 10), repeat(1010, 10)}), 1000 / (1.05 * 1000 / 980),
              1e-9);
  // The spread: centre 1000, spread 1.4826 x 80 = 118.608, h 20: 1 + (355.824 + 20) / 1000 = 1.375824;
  // worst 1.05 x 1000 / 900 = 1.166667.
  EXPECT_NEAR(tok_gate({repeat(920, 20), repeat(1000, 20), repeat(1080, 20)}), 1000 / 1.375824, 1e-9);
  // The worst repeat: centre 1000, spread 0, h 60 (median of 60, 60, 200): noise 1.06;
  // worst 1.05 x 1000 / (1000 - 200) = 1.3125.
  EXPECT_NEAR(tok_gate({repeat(1000, 60), repeat(1000, 60), repeat(1000, 200)}), 1000 / 1.3125, 1e-9);
  // The same for a max gate (step time): centre 1000 ms, worst 1.05 x (1e6 / 800) / 1000 = 1.3125.
  const auto f =
      cvs::build_calibration({repeat(1000, 60), repeat(1000, 60), repeat(1000, 200)}, std::nullopt, {}, "d");
  EXPECT_NEAR(f[kSweep]["training.step_time_mean_ms"]["value"].get<double>(), 1000 * 1.3125, 1e-9);
}

TEST(Calibration, ANoisierRepeatNeverTightensAGate) {
  // The issue's case: the third repeat's lower bound at +1, then -1 (refused, not a tighter gate), then 900.
  const double wide = tok_gate({repeat(1000, 30), repeat(1000, 30), repeat(1000, 60)});
  for (double hw : {60.0, 90.0, 150.0, 240.0, 300.0, 400.0}) {
    const auto r = std::vector<cvs::Results>{repeat(1000, 30), repeat(1000, 30), repeat(1000, hw)};
    if (const auto why = refusal(r); !why.empty()) {
      EXPECT_GE(hw, 240.0) << why;
      continue;
    }
    const double g = tok_gate(r);
    EXPECT_LE(g, wide + 1e-9) << "half-width " << hw;
    EXPECT_LE(g, (1000 - hw) / 1.05 + 1e-9) << "the repeat clears its gate with its whole interval";
  }
}

TEST(Calibration, RefusesWhatItCannotGateHonestly) {
  // An interval that reaches 0, one wider than half its estimate: refused, naming metric and repeat.
  auto why = refusal({repeat(1000, 20), repeat(1000, 20), repeat(300, 301)});
  EXPECT_NE(why.find("tokens_per_sec_per_gpu: repeat 3"), std::string::npos) << why;
  EXPECT_NE(why.find("reaches 0"), std::string::npos) << why;
  why = refusal({repeat(1000, 20), repeat(1000, 20), repeat(1000, 260)});
  EXPECT_NE(why.find("spans 52.0 %"), std::string::npos) << why;
  EXPECT_NE(why.find("steady steps"), std::string::npos) << why;
  // A slack over the ceiling: the repeats disagree by more than 2x.
  why = refusal({repeat(1000, 20), repeat(450, 20), repeat(1000, 20)});
  EXPECT_NE(why.find("over the ceiling of 2x"), std::string::npos) << why;
  // A repeat without the interval while the others have it.
  auto no_interval = repeat(1000, 20);
  no_interval.sweeps[0].second.steady_state->intervals.clear();
  no_interval.sweeps[0].second.steady_state->why = "24 steady-state steps: too few for an interval";
  why = refusal({repeat(1000, 20), no_interval, repeat(1000, 20)});
  EXPECT_NE(why.find("repeat 2: 24 steady-state steps: too few"), std::string::npos) << why;
}

TEST(Calibration, AMetricNoRepeatCanGateIsNamedNotDropped) {
  std::vector<cvs::Results> r = {repeat(1000, 20), repeat(1000, 20), repeat(1000, 20)};
  const auto f = cvs::build_calibration(r, std::nullopt, {}, "d");
  const auto& nc = f["_calibration"]["not_calibrated"];
  ASSERT_TRUE(nc.contains(kSweep) && nc[kSweep].contains("tflops_per_sec_per_gpu")) << nc.dump();
  EXPECT_NE(nc[kSweep]["tflops_per_sec_per_gpu"].get<std::string>().find("repeat 1"), std::string::npos);
  EXPECT_FALSE(f[kSweep].contains("training.tflops_per_sec_per_gpu"));
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

// One typed record and one reader of "_calibration": the writer's keys read back the same, a
// schema_version this cvs does not know and a mistyped key are errors naming their pointers.
TEST(CalibrationFile, ItsOneReaderReadsWhatItsWriterWroteAndNamesAWrongKey) {
  cvs::CalibrationSection c;
  c.rule = "the rule";
  c.k = 3;
  c.repeats = 3;
  c.date = "2026-12-05";
  c.provenance = {{"device_kind", "cpu"}};
  c.statistics["BS=2"]["tokens_per_sec_per_gpu"] = {
      3, 1000.0, 4.5, 2.0, 1.01, 1.02, 1.05, nlohmann::ordered_json::array({{1000, 998, 1002}})};
  c.not_calibrated["BS=2"]["step_time_p95_ms"] = "too few steps";
  auto j = cvs::to_json(c);
  EXPECT_EQ(j["schema_version"], cvs::CalibrationSection::kSchemaVersion);
  const auto back = cvs::calibration_from_json(j, "cal.json");
  EXPECT_EQ(cvs::to_json(back), j);
  EXPECT_DOUBLE_EQ(back.statistics.at("BS=2").at("tokens_per_sec_per_gpu").mad_sigma, 4.5);
  auto newer = j;
  newer["schema_version"] = 2;
  try {
    cvs::calibration_from_json(newer, "cal.json");
    ADD_FAILURE() << "a newer schema read";
  } catch (const cvs::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/_calibration/schema_version"), std::string::npos) << e.what();
  }
  auto wrong = j;
  wrong["statistics"]["BS=2"]["tokens_per_sec_per_gpu"]["median"] = "fast";
  try {
    cvs::calibration_from_json(wrong, "cal.json");
    ADD_FAILURE() << "a string median read";
  } catch (const cvs::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/_calibration/statistics/BS=2/tokens_per_sec_per_gpu/median"),
              std::string::npos)
        << e.what();
  }
}

// A repeat whose steps gave no interval (too few, too correlated) or too wide a one runs again
// with twice the steps while the budget holds it, and the calibration says so; when the budget is
// spent, the refusal says what it would need and what is left. Sessions already run (--from) are
// never run again.
TEST(Calibration, ARepeatTooShortForAnIntervalRunsAgainLongerWithinTheBudget) {
  auto no_interval = repeat(1000, 20);
  no_interval.sweeps[0].second.steady_state->intervals.clear();
  std::vector<cvs::Results> results = {repeat(1000, 20), no_interval, repeat(1010, 20)};
  std::vector<double> seconds = {30, 30, 30};
  std::vector<std::pair<std::size_t, long long>> reruns;
  const auto rerun = [&](std::size_t i, long long factor, const std::string&) {
    reruns.emplace_back(i, factor);
    results[i] = repeat(995, 10);  // twice the steps: an interval, narrower
    seconds[i] = 55;
    return true;
  };
  std::vector<std::string> extended;
  const auto f = cvs::calibrate_extending(results, seconds, std::nullopt, {},
                                          {600, std::chrono::steady_clock::now(), "d"}, rerun, extended);
  ASSERT_EQ(reruns, (std::vector<std::pair<std::size_t, long long>>{{1, 2}}));
  ASSERT_EQ(extended.size(), 1u);
  EXPECT_NE(extended[0].find("repeat 2: "), std::string::npos) << extended[0];
  EXPECT_NE(extended[0].find("ran again with 2x the steps in 55 s"), std::string::npos) << extended[0];
  EXPECT_TRUE(f[kSweep].contains("training.tokens_per_sec_per_gpu"));
  // A budget that cannot hold twice the repeat's 30 s: refused, with the figures.
  results = {repeat(1000, 20), no_interval, repeat(1010, 20)};
  seconds = {30, 30, 30};
  reruns.clear();
  try {
    cvs::calibrate_extending(results, seconds, std::nullopt, {}, {50, std::chrono::steady_clock::now(), "d"},
                             rerun, extended);
    ADD_FAILURE() << "calibrated without the rerun";
  } catch (const cvs::CalibrationRefused& e) {
    EXPECT_NE(std::string(e.what()).find("running repeat 2 again with 2x the steps needs about 1 min"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("of the 50 s budget is left (--budget-minutes)"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(reruns.empty());
  // --from: no seconds, nothing runs again.
  results = {repeat(1000, 20), no_interval, repeat(1010, 20)};
  std::vector<double> none;
  EXPECT_THROW(cvs::calibrate_extending(results, none, std::nullopt, {},
                                        {600, std::chrono::steady_clock::now(), "d"}, rerun, extended),
               cvs::CalibrationRefused);
  EXPECT_TRUE(reruns.empty());
}

// The config a repeat runs again with: the shipped CPU default's steps doubled everywhere they are
// said, the threshold file it resolved to by absolute path (the copy lives elsewhere), and it loads.
TEST(Calibration, TheLongerRepeatsConfigLoadsWithTwiceTheSteps) {
  const auto dir = std::filesystem::temp_directory_path() / ("cvs-x2-" + std::to_string(::getpid()));
  const std::filesystem::path shipped =
      std::string(CVS_SOURCE_ROOT) + "/configs/cpu_jaxmaxtext_tiny_single.json";
  const auto base = cvs::load_config(shipped, {.user = "u", .require_threshold_file = true});
  cvs::write_config_with_steps(shipped, base.threshold_path, 2, dir / "config-x2.json");
  const auto x2 = cvs::load_config(dir / "config-x2.json", {.user = "u", .require_threshold_file = true});
  std::filesystem::remove_all(dir);
  EXPECT_EQ(x2.threshold_path, std::filesystem::absolute(base.threshold_path));
  ASSERT_EQ(x2.runs, base.runs);
  for (const auto& sweep : base.runs) EXPECT_EQ(x2.steps_for(sweep), 2 * base.steps_for(sweep)) << sweep;
}
