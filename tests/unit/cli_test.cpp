// The `cvs` binary as a user runs it: exit codes and messages.
#include <gtest/gtest.h>

#include <algorithm>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cvs/catalog/metric_catalog.hpp"
#include "cvs/catalog/stage_names.hpp"
#include "cvs/config/config.hpp"
#include "test_helpers.hpp"

using cvs::test::run_command;

TEST(Cli, ValidateTaggedSpecExamplePrintsEveryPointerAndExits2) {
  auto p = run_command(std::string(CVS_BINARY) + " config validate " +
                       cvs::test::data("configs/mi3xx_jaxmaxtext_llama-3.3-70b_distributed.json").string());
  EXPECT_EQ(p.exit_code, 2) << p.out;
  for (const char* ptr :
       {"/threshold_json", "/container/env/NCCL_IB_HCA", "/container/env/NCCL_SOCKET_IFNAME",
        "/container/env/GLOO_SOCKET_IFNAME", "/container/env/NCCL_IB_GID_INDEX"})
    EXPECT_NE(p.out.find(ptr), std::string::npos) << ptr << " missing in:\n" << p.out;
  EXPECT_NE(p.out.find("5 error(s)"), std::string::npos) << p.out;
}

TEST(Cli, ValidateCleanConfigExits0) {
  auto dir = std::filesystem::temp_directory_path() / ("cvs_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(
      cvs::test::data("configs/mi325x_jaxmaxtext_llama-3.3-70b_distributed_threshold.json"),
      dir / "mi325x_jaxmaxtext_llama-3.3-70b_distributed_threshold.json");
  std::ofstream(dir / "c.json") << cvs::test::spec_example_untagged().dump(2);
  auto p = run_command(std::string(CVS_BINARY) + " config validate " + (dir / "c.json").string());
  EXPECT_EQ(p.exit_code, 0) << p.out;
  EXPECT_NE(p.out.find("OK (distributed"), std::string::npos) << p.out;
  std::filesystem::remove_all(dir);
}

TEST(Cli, MetricsOfARealLogAsJson) {
  auto p =
      run_command(std::string(CVS_BINARY) + " metrics " +
                  cvs::test::data("logs/cpu_tiny_12steps.log").string() + " --nodes 2 --gpus-per-node 4");
  ASSERT_EQ(p.exit_code, 0) << p.out;
  auto j = nlohmann::json::parse(p.out);
  const auto& m = j["metrics"];
  EXPECT_DOUBLE_EQ(m["final_loss"].get<double>(), 5.905);
  EXPECT_DOUBLE_EQ(m["tokens_per_sec_total"].get<double>(), m["tokens_per_sec_per_gpu"].get<double>() * 8);
  EXPECT_FALSE(m.contains("training.final_loss"));
}

// A file with no training step and no error in it (the wrong file, or a run still starting):
// bad input, exit 2 with the file and the fix; the JSON still printed.
TEST(Cli, MetricsOfALogWithNoStepIsBadInput) {
  const auto dir = std::filesystem::temp_directory_path() / ("cvs_no_step_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string text = cvs::test::read_file(cvs::test::data("logs/cpu_tiny_12steps.log"));
  std::ofstream(dir / "starting.log") << text.substr(0, text.rfind('\n', text.find("completed step: ")) + 1);
  auto p = run_command(std::string(CVS_BINARY) + " metrics " + (dir / "starting.log").string());
  EXPECT_EQ(p.exit_code, 2) << p.out;
  EXPECT_NE(p.out.find("starting.log: no training step in it"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("\"steps\": 0"), std::string::npos) << p.out;
  std::filesystem::remove_all(dir);
}

// A number out of its option's range is refused with what was wrong and what to pass, in every
// front end (not CLI11's bounds printed as DBL_MIN and DBL_MAX in full).
TEST(Cli, ANumberOutOfRangeSaysWhatToPass) {
  const std::string certify = CVS_SUITE_CERTIFY, single = CVS_SUITE_SINGLE;
  const std::pair<std::string, std::string> cases[] = {
      {certify + " --max-parallel 0", "--max-parallel: 0 is not above 0: pass 1 or more"},
      {certify + " --budget-minutes -1", "--budget-minutes: -1 is negative: pass 0 or more"},
      {single + " --step-budget-s 0", "--step-budget-s: 0 is not above 0: pass a number above 0"},
      {single + " --startup-budget-s ten", "--startup-budget-s: ten is not a number"},
      {std::string(CVS_BINARY) + " compare " + cvs::test::data("results/cpu_single_results.json").string() +
           " " + cvs::test::data("results/cpu_single_results.json").string() + " --tolerance-pct -5",
       "--tolerance-pct: -5 is negative: pass 0 or more"}};
  for (const auto& [cmd, words] : cases) {
    const auto p = run_command(cmd);
    EXPECT_EQ(p.exit_code, 2) << cmd << "\n" << p.out;
    EXPECT_NE(p.out.find(words), std::string::npos) << cmd << "\n" << p.out;
    EXPECT_EQ(p.out.find("179769"), std::string::npos) << cmd << "\n" << p.out;
  }
}

TEST(Cli, MetricsOfANanRunExits1) {
  auto p =
      run_command(std::string(CVS_BINARY) + " metrics " + cvs::test::data("logs/cpu_nan_abort.log").string());
  EXPECT_EQ(p.exit_code, 1) << p.out;
  EXPECT_NE(p.out.find("\"aborted_on\": \"NaN loss\""), std::string::npos) << p.out;
}

// The steady state a suite would decide on, at --confidence; a non-finite rate fails as the suite
// fails it, naming the line.
TEST(Cli, MetricsPrintsTheSteadyStateAndFailsANonFiniteRateWithItsLine) {
  const auto log = cvs::test::data("logs/cpu_bs4_30steps.log").string();
  auto p = run_command(std::string(CVS_BINARY) + " metrics " + log + " --confidence 0.9");
  ASSERT_EQ(p.exit_code, 0) << p.out;
  auto j = nlohmann::json::parse(p.out);
  const auto& st = j["steady_state"];
  EXPECT_EQ(st["confidence"].get<double>(), 0.9);
  EXPECT_EQ(st["source"], "tokens_rate");
  EXPECT_TRUE(st["found"].get<bool>());
  EXPECT_GE(st["first_step"].get<long long>(), 2);
  EXPECT_LE(st["tokens_per_step"][0].get<double>(), 512.0);
  EXPECT_GE(st["tokens_per_step"][1].get<double>(), 512.0);
  EXPECT_TRUE(st.contains("why") || !st["intervals"].empty()) << st.dump();
  // One step's TFLOP/s/device printed as nan: exit 1, the line named.
  const auto dir = std::filesystem::temp_directory_path() / ("cvs_nan_rate_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string text = cvs::test::read_file(log);
  const auto at = text.find("TFLOP/s/device: ", text.find("completed step: 12,"));
  text.replace(at + 16, 5, "nan");
  std::size_t line =
      1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
  std::ofstream(dir / "nan.log") << text;
  p = run_command(std::string(CVS_BINARY) + " metrics " + (dir / "nan.log").string());
  EXPECT_EQ(p.exit_code, 1) << p.out;
  EXPECT_NE(p.out.find("nan.log:" + std::to_string(line) + ": non-finite TFLOP/s/device (nan) at step 12"),
            std::string::npos)
      << p.out;
  std::filesystem::remove_all(dir);
}

namespace {

// A session of the shipped CPU config (its sha256) whose two sweeps have the given intervals.
nlohmann::ordered_json session_of(double tok, double tok_hw) {
  auto r = nlohmann::ordered_json::parse(
      cvs::test::read_file(cvs::test::data("results/cpu_single_results_current.json")));
  r["config"]["sha256"] =
      cvs::load_config(std::string(CVS_SOURCE_ROOT) + "/configs/cpu_jaxmaxtext_tiny_single.json").sha256;
  for (auto& [key, sw] : r["sweeps"].items()) {
    sw["steady_state"]["intervals"] = {
        {"tokens_per_sec_per_gpu", {{"estimate", tok}, {"lo", tok - tok_hw}, {"hi", tok + tok_hw}}},
        {"step_time_mean_ms",
         {{"estimate", 1e6 / tok}, {"lo", 1e6 / (tok + tok_hw)}, {"hi", 1e6 / (tok - tok_hw)}}}};
    sw["steady_state"]["steps"] = 95;
  }
  return r;
}

}  // namespace

TEST(Cli, CalibrateFromSessionsAlreadyRunRefusesATooWideRepeatAndWritesNothing) {
  const auto dir = std::filesystem::temp_directory_path() / ("cvs_cal_from_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string config = std::string(CVS_SOURCE_ROOT) + "/configs/cpu_jaxmaxtext_tiny_single.json";
  std::string files;
  for (auto [i, hw] : {std::pair{1, 200.0}, std::pair{2, 250.0}, std::pair{3, 300.0}}) {
    std::ofstream(dir / ("s" + std::to_string(i) + ".json")) << session_of(10000 + 100 * i, hw).dump();
    files += " " + (dir / ("s" + std::to_string(i) + ".json")).string();
  }
  const auto out = dir / "cal.json";
  auto p = run_command(std::string(CVS_BINARY) + " calibrate --config " + config + " --out " + out.string() +
                       " --from" + files);
  ASSERT_EQ(p.exit_code, 0) << p.out;
  auto cal = nlohmann::json::parse(cvs::test::read_file(out));
  EXPECT_EQ(cal["BS=2,PRECISION=BF16,SL=128"]["training.tokens_per_sec_per_gpu"]["kind"], "min_tok_s");
  EXPECT_EQ(cal["_calibration"]["repeats"], 3);
  EXPECT_NE(p.out.find("not calibrated: BS=2,PRECISION=BF16,SL=128 tflops_per_sec_per_gpu"),
            std::string::npos)
      << p.out;
  // A fourth session whose interval spans more than half its estimate: exit 1, the metric named, nothing
  // written.
  std::ofstream(dir / "s4.json") << session_of(10000, 2600).dump();
  const auto out2 = dir / "cal2.json";
  p = run_command(std::string(CVS_BINARY) + " calibrate --config " + config + " --out " + out2.string() +
                  " --from" + files + " " + (dir / "s4.json").string());
  EXPECT_EQ(p.exit_code, 1) << p.out;
  EXPECT_NE(p.out.find("tokens_per_sec_per_gpu: repeat 4's interval"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("nothing was written"), std::string::npos) << p.out;
  EXPECT_FALSE(std::filesystem::exists(out2));
  // Sessions of another config, or too few: bad input.
  auto other = session_of(10000, 200);
  other["config"]["sha256"] = "0123";
  std::ofstream(dir / "other.json") << other.dump();
  p = run_command(std::string(CVS_BINARY) + " calibrate --config " + config + " --out " + out2.string() +
                  " --from" + files + " " + (dir / "other.json").string());
  EXPECT_EQ(p.exit_code, 2) << p.out;
  EXPECT_NE(p.out.find("other.json: /config/sha256 is 0123"), std::string::npos) << p.out;
  p = run_command(std::string(CVS_BINARY) + " calibrate --config " + config + " --from " +
                  (dir / "s1.json").string());
  EXPECT_EQ(p.exit_code, 2) << p.out;
  std::filesystem::remove_all(dir);
}

TEST(Cli, UnknownCommandExits2) {
  EXPECT_EQ(run_command(std::string(CVS_BINARY) + " frobnicate").exit_code, 2);
}

TEST(Cli, CalibrateRejectsBadInputWithExit2AndWritesNothing) {
  auto p = run_command(std::string(CVS_BINARY) + " calibrate --config " + CVS_SOURCE_ROOT +
                       "/configs/cpu_jaxmaxtext_tiny_single.json --repeats 0");
  EXPECT_EQ(p.exit_code, 2) << p.out;
  EXPECT_NE(p.out.find("--repeats"), std::string::npos) << p.out;
  p = run_command(std::string(CVS_BINARY) + " calibrate --config /nonexistent/x.json");
  EXPECT_EQ(p.exit_code, 2) << p.out;
  EXPECT_NE(p.out.find("/nonexistent/x.json"), std::string::npos) << p.out;
  p = run_command(std::string(CVS_BINARY) + " calibrate --config " + CVS_SOURCE_ROOT +
                  "/configs/cpu_jaxmaxtext_tiny_single.json --min-slack-pct 150 --max-slack-pct 100");
  EXPECT_EQ(p.exit_code, 2) << p.out;
  EXPECT_NE(p.out.find("exceeds --max-slack-pct"), std::string::npos) << p.out;
  p = run_command(std::string(CVS_BINARY) + " calibrate --help");
  EXPECT_EQ(p.exit_code, 0) << p.out;
  EXPECT_NE(p.out.find("--repeats"), std::string::npos) << p.out;
}

TEST(Cli, EveryCommandAnswersHelpAndNamesTheOptionItRejectsWithExit2) {
  const std::string cvs = CVS_BINARY;
  for (const char* cmd : {"config", "metrics", "report", "card", "compare", "run", "calibrate"}) {
    auto p = run_command(cvs + " " + cmd + " --help");
    EXPECT_EQ(p.exit_code, 0) << cmd << ": " << p.out;
    EXPECT_NE(p.out.find("cvs " + std::string(cmd)), std::string::npos) << cmd << ": " << p.out;
  }
  const std::string results = cvs::test::data("results/cpu_single_results.json").string();
  auto p = run_command(cvs + " compare " + results + " " + results + " --tolerance-pct abc");
  EXPECT_EQ(p.exit_code, 2) << p.out;
  EXPECT_NE(p.out.find("--tolerance-pct"), std::string::npos) << p.out;
  p = run_command(cvs + " metrics " + cvs::test::data("logs/cpu_tiny_12steps.log").string() + " --nodes two");
  EXPECT_EQ(p.exit_code, 2) << p.out;
  EXPECT_NE(p.out.find("--nodes"), std::string::npos) << p.out;
  // A file that is not JSON is bad input (2), never "a regression" (1).
  const std::string log = cvs::test::data("logs/cpu_tiny_12steps.log").string();
  for (const std::string& cmd : {"report " + log, "card " + log + " --out /tmp/cvs_never_written.json",
                                 "compare " + log + " " + results}) {
    p = run_command(cvs + " " + cmd);
    EXPECT_EQ(p.exit_code, 2) << cmd << ": " << p.out;
    EXPECT_NE(p.out.find("is not valid JSON"), std::string::npos) << cmd << ": " << p.out;
  }
  p = run_command(cvs + " config list training/jaxmaxtext");
  EXPECT_EQ(p.exit_code, 0) << p.out;
  p = run_command(cvs + " config list training/other");
  EXPECT_EQ(p.exit_code, 2) << p.out;
}

TEST(Cli, ConfigPatternsPrintsNameTabRegexOfTheScannedPatterns) {
  const std::string cvs = CVS_BINARY;
  auto p = run_command(cvs + " config patterns");
  EXPECT_EQ(p.exit_code, 0) << p.out;
  EXPECT_NE(p.out.find("NCCL ERROR\tNCCL ERROR|NCCL timeout|"), std::string::npos) << p.out;
  EXPECT_EQ(std::count(p.out.begin(), p.out.end(), '\n'),
            static_cast<long>(cvs::default_error_patterns().size()));
  p = run_command(cvs + " config patterns " + std::string(CVS_SOURCE_ROOT) +
                  "/configs/cpu_jaxmaxtext_tiny_single.json");
  EXPECT_EQ(p.exit_code, 0) << p.out;
  p = run_command(cvs + " config patterns /nonexistent.json");
  EXPECT_EQ(p.exit_code, 2) << p.out;
}

// jaxmaxtext_fleet refuses bad input before any node runs: exit 2 naming the file, pointer and fix.
TEST(Cli, TheFleetRefusesADistributedConfigAndAReusedFolder) {
  const std::string fleet = CVS_SUITE_FLEET, root = CVS_SOURCE_ROOT;
  auto p =
      run_command(fleet + " --config " + root + "/configs/cpu_jaxmaxtext_tiny_distributed.json --cluster " +
                  root + "/configs/clusters/local_2nodes.json --output /tmp/cvs-fleet-never-made");
  EXPECT_EQ(p.exit_code, 2) << p.out;
  EXPECT_NE(p.out.find("/mode: fleet mode runs a single-node config"), std::string::npos) << p.out;
  p = run_command(fleet + " --config " + root + "/configs/cpu_jaxmaxtext_tiny_single.json --cluster " + root +
                  "/configs/clusters/local_2nodes.json --output " + root);
  EXPECT_EQ(p.exit_code, 2) << p.out;
  EXPECT_NE(p.out.find("a report folder is never reused"), std::string::npos) << p.out;
  p = run_command(fleet + " --config " + root + "/configs/cpu_jaxmaxtext_tiny_single.json --cluster " + root +
                  "/configs/clusters/local_2nodes.json --pairs " + root +
                  "/configs/cpu_jaxmaxtext_tiny_single.json --output /tmp/cvs-fleet-never-made");
  EXPECT_EQ(p.exit_code, 2) << p.out;
  EXPECT_NE(p.out.find("/mode: --pairs runs a distributed config on two nodes at a time"), std::string::npos)
      << p.out;
  p = run_command(fleet + " --config x.json");
  EXPECT_EQ(p.exit_code, 2) << p.out;
  EXPECT_NE(p.out.find("--cluster is required"), std::string::npos) << p.out;
  EXPECT_FALSE(std::filesystem::exists("/tmp/cvs-fleet-never-made"));
}

// Fleet mode through the cvs tool: `cvs fleet ...` and `cvs run jaxmaxtext_fleet ...` exec the same
// binary (its help, its exit 2 on a distributed config), and `cvs --help` lists it.
TEST(Cli, CvsFleetAndCvsRunReachFleetMode) {
  const std::string cvs = CVS_BINARY, root = CVS_SOURCE_ROOT;
  auto p = run_command(cvs + " --help");
  EXPECT_EQ(p.exit_code, 0) << p.out;
  EXPECT_NE(p.out.find("\n  fleet --cluster FILE --config FILE"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("jaxmaxtext_fleet"), std::string::npos) << p.out;
  for (const std::string& via : {cvs + " fleet", cvs + " run jaxmaxtext_fleet"}) {
    p = run_command(via + " --help");
    EXPECT_EQ(p.exit_code, 0) << via << ": " << p.out;
    EXPECT_NE(p.out.find("Usage: jaxmaxtext_fleet"), std::string::npos) << via << ": " << p.out;
    p = run_command(via + " --config " + root + "/configs/cpu_jaxmaxtext_tiny_distributed.json --cluster " +
                    root + "/configs/clusters/local_2nodes.json --output /tmp/cvs-fleet-never-made");
    EXPECT_EQ(p.exit_code, 2) << via << ": " << p.out;
    EXPECT_NE(p.out.find("/mode: fleet mode runs a single-node config"), std::string::npos)
        << via << ": " << p.out;
  }
  EXPECT_FALSE(std::filesystem::exists("/tmp/cvs-fleet-never-made"));
  p = run_command(cvs + " run jaxmaxtext_nothing");
  EXPECT_EQ(p.exit_code, 2) << p.out;
  EXPECT_NE(p.out.find("jaxmaxtext_single|jaxmaxtext_distributed|jaxmaxtext_fleet"), std::string::npos)
      << p.out;
}

TEST(Cli, TheSuitesAndGpuProbeParseTheirOptionsWithCli11) {
  const std::string suite = CVS_SUITE_SINGLE;
  auto p = run_command(suite + " --poll-interval-s abc");
  EXPECT_EQ(p.exit_code, 2) << p.out;
  EXPECT_NE(p.out.find("--poll-interval-s"), std::string::npos) << p.out;
  p = run_command(suite + " --baseline-tolerance-pct -3");
  EXPECT_EQ(p.exit_code, 2) << p.out;
  EXPECT_NE(p.out.find("--baseline-tolerance-pct"), std::string::npos) << p.out;
  p = run_command(suite + " --help");
  EXPECT_EQ(p.exit_code, 0) << p.out;
  EXPECT_NE(p.out.find("--strict-provenance"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("--gtest_filter"), std::string::npos) << "gtest's own flags follow: " << p.out;
  // gtest's flags pass through in their order.
  p = run_command(suite + " --config " + std::string(CVS_SOURCE_ROOT) +
                  "/configs/cpu_jaxmaxtext_tiny_single.json --gtest_list_tests '--gtest_filter=test_smoke*'");
  EXPECT_EQ(p.exit_code, 0) << p.out;
  EXPECT_NE(p.out.find("bf16_smoke"), std::string::npos) << p.out;
  EXPECT_EQ(p.out.find("containers_and_devices"), std::string::npos) << p.out;
  p = run_command(std::string(CVS_GPU_PROBE) + " --bogus");
  EXPECT_EQ(p.exit_code, 2) << p.out;
  EXPECT_NE(p.out.find("--bogus"), std::string::npos) << p.out;
}

// One exit-code table for every front end: an option no one knows is bad input (2) before
// anything runs, in the suites, `cvs run`, fleet mode, certify and calibrate; the nearest known
// option is named. Only gtest's own --gtest_* flags pass through.
TEST(Cli, AnUnknownOptionExits2BeforeAnythingRunsInEveryFrontEnd) {
  const auto dir = std::filesystem::temp_directory_path() / ("cvs_unknown_" + std::to_string(::getpid()));
  const std::string single = std::string(CVS_SOURCE_ROOT) + "/configs/cpu_jaxmaxtext_tiny_single.json";
  const std::string dist = std::string(CVS_SOURCE_ROOT) + "/configs/cpu_jaxmaxtext_tiny_distributed.json";
  const std::string cluster = std::string(CVS_SOURCE_ROOT) + "/configs/clusters/local_2nodes.json";
  const std::string out = " --output " + (dir / "out").string();
  struct Case {
    std::string cmd, says;
  };
  const std::vector<Case> cases = {
      {std::string(CVS_SUITE_SINGLE) + " --config " + single + out + " --bogus-option",
       "unknown option '--bogus-option'"},
      {std::string(CVS_BINARY) + " run jaxmaxtext_single --config " + single + out + " --startup-budget 5",
       "did you mean --startup-budget-s?"},
      {std::string(CVS_SUITE_FLEET) + " --config " + single + " --cluster " + cluster + out +
           " --poll-intervl-s 1",
       "unknown option '--poll-intervl-s' (did you mean --poll-interval-s?)"},
      {std::string(CVS_SUITE_CERTIFY) + " --config " + single + " --distributed-config " + dist +
           " --cluster " + cluster + out + " --plann",
       "unknown option '--plann'"},
      {std::string(CVS_BINARY) + " calibrate --config " + single + " --budget-minuts 5", "--budget-minuts"},
  };
  for (const auto& c : cases) {
    const auto p = run_command(c.cmd);
    EXPECT_EQ(p.exit_code, 2) << c.cmd << "\n" << p.out;
    EXPECT_NE(p.out.find(c.says), std::string::npos) << c.cmd << "\n" << p.out;
    EXPECT_FALSE(std::filesystem::exists(dir / "out")) << c.cmd << ": something ran";
    std::filesystem::remove_all(dir / "out");
  }
  // gtest's own flags pass; the suite's arguments are checked without running anything.
  EXPECT_EQ(run_command(std::string(CVS_SUITE_SINGLE) + " --check-options --gtest_filter=*smoke* --quiet")
                .exit_code,
            0);
  std::filesystem::remove_all(dir);
}

// 3: the tool or the infrastructure failed, not a gate and not the user's input; `cvs --help`
// lists every code.
TEST(Cli, AnUnexpectedFailureExits3AndTheUsageListsEveryCode) {
  const std::string single = std::string(CVS_SOURCE_ROOT) + "/configs/cpu_jaxmaxtext_tiny_single.json";
  const std::string cluster = std::string(CVS_SOURCE_ROOT) + "/configs/clusters/local_2nodes.json";
  // Each front end, its output where nothing can be made: the tool failed, no gate did (3).
  for (const std::string& cmd :
       {std::string(CVS_SUITE_SINGLE) + " --output /proc/cvs-cannot-be-made",
        std::string(CVS_SUITE_FLEET) + " --config " + single + " --cluster " + cluster +
            " --output /proc/cvs-cannot-be-made",
        std::string(CVS_SUITE_CERTIFY) + " --config " + single + " --cluster " + cluster +
            " --output /proc/cvs-cannot-be-made",
        std::string(CVS_BINARY) + " calibrate --config " + single + " --work-dir /proc/cvs-cannot-be-made",
        std::string(CVS_BINARY) + " history --history /proc/cvs-cannot-be-made/h.sqlite sessions"}) {
    const auto p = run_command(cmd);
    EXPECT_EQ(p.exit_code, 3) << cmd << "\n" << p.out;
  }
  // Every front end's --help (and so its man page) ends with the one table.
  for (const std::string& cmd :
       {std::string(CVS_BINARY) + " --help", std::string(CVS_BINARY) + " run --help",
        std::string(CVS_BINARY) + " calibrate --help", std::string(CVS_BINARY) + " history --help",
        std::string(CVS_BINARY) + " config --help", std::string(CVS_SUITE_SINGLE) + " --help",
        std::string(CVS_SUITE_FLEET) + " --help", std::string(CVS_SUITE_CERTIFY) + " --help"}) {
    const auto h = run_command(cmd);
    for (const char* code :
         {"0 ok", "1 a gate failed", "2 bad input", "3 the tool or the infrastructure failed"})
      EXPECT_NE(h.out.find(code), std::string::npos) << cmd << ": " << code << "\n" << h.out;
  }
}

// A shipped config's name, as `cvs config list` prints it, works wherever a config file does.
TEST(Cli, AShippedConfigsNameWorksWhereAFileDoes) {
  auto p = run_command(std::string(CVS_BINARY) + " config validate cpu_jaxmaxtext_tiny_single");
  EXPECT_EQ(p.exit_code, 0) << p.out;
  EXPECT_NE(p.out.find("/configs/cpu_jaxmaxtext_tiny_single.json: OK"), std::string::npos) << p.out;
  p = run_command(std::string(CVS_BINARY) +
                  " config validate training/jaxmaxtext/cpu_jaxmaxtext_tiny_distributed.json");
  EXPECT_EQ(p.exit_code, 0) << p.out;
  p = run_command(std::string(CVS_SUITE_SINGLE) +
                  " --config cpu_jaxmaxtext_tiny_4dev_single --gtest_list_tests");
  EXPECT_EQ(p.exit_code, 0) << p.out;
  EXPECT_NE(p.out.find("bf16_smoke"), std::string::npos) << p.out;
  p = run_command(std::string(CVS_BINARY) + " config validate no_such_config");
  EXPECT_EQ(p.exit_code, 2) << p.out;
  EXPECT_NE(p.out.find("cvs config list"), std::string::npos) << p.out;
}

// The stage names fleet mode, certify, calibrate and the reports filter on are the suites' own
// tests (the TEST macros cannot take the table's constants: this ties the two).
TEST(StageNames, EveryNameIsOneOfTheSuitesTests) {
  namespace sn = cvs::stage_names;
  const std::string single = std::string(CVS_SOURCE_ROOT) + "/configs/cpu_jaxmaxtext_tiny_single.json";
  const std::string dist = std::string(CVS_SOURCE_ROOT) + "/configs/cpu_jaxmaxtext_tiny_distributed.json";
  const auto s = run_command(std::string(CVS_SUITE_SINGLE) + " --config " + single + " --gtest_list_tests");
  const auto d =
      run_command(std::string(CVS_SUITE_DISTRIBUTED) + " --config " + dist + " --gtest_list_tests");
  ASSERT_EQ(s.exit_code, 0) << s.out;
  ASSERT_EQ(d.exit_code, 0) << d.out;
  for (const char* stage : {sn::kSetup, sn::kSmoke, sn::kTrainingRun, sn::kMetric, sn::kCheckpoint})
    EXPECT_NE(("\n" + s.out).find("\n" + sn::test_suite_of(stage) + ".\n"), std::string::npos)
        << stage << "\n"
        << s.out;
  EXPECT_NE(("\n" + d.out).find("\n" + sn::test_suite_of(sn::kSetupRdma) + ".\n"), std::string::npos)
      << d.out;
  EXPECT_EQ(sn::filter_of({sn::kSetup, sn::kTrainingRun}), "test_setup.*:sweep/test_training_run.*");
}

// Certify's nodes tier keeps the speed metrics' cases alone: the suite lists, for every sweep,
// each speed metric's test_metric case and no other.
TEST(StageNames, TheSpeedMetricFilterKeepsEverySweepsSpeedCasesAndNoOther) {
  namespace sn = cvs::stage_names;
  const std::string single = std::string(CVS_SOURCE_ROOT) + "/configs/cpu_jaxmaxtext_tiny_single.json";
  const auto l = run_command(std::string(CVS_SUITE_SINGLE) + " --config " + single +
                             " '--gtest_filter=" + sn::speed_metric_tests() + "' --gtest_list_tests");
  ASSERT_EQ(l.exit_code, 0) << l.out;
  const auto cfg = cvs::load_config(single, {.user = "", .require_threshold_file = false});
  std::size_t cases = 0, speed = 0;
  std::istringstream in(l.out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("  check/", 0) == 0) {
      ++cases;
      const auto name = line.substr(8, line.find(' ', 8) - 8);
      const auto metric = name.substr(name.rfind("__") + 2);
      EXPECT_TRUE(cvs::find_metric(metric) && cvs::find_metric(metric)->speed) << line;
    }
  for (const auto& m : cvs::metric_catalog()) speed += m.speed && m.gated_by == cvs::GatedBy::TestMetric;
  EXPECT_EQ(cases, cfg.runs.size() * speed) << l.out;
  EXPECT_GE(speed, 8u);
  EXPECT_EQ(l.out.find("__final_loss"), std::string::npos) << l.out;
}
