// cvs certify's certificate: the ladder and its efficiency intervals, the verdict from the tiers,
// the schema's round trip (the state --resume continues from), the JUnit file, the drain command,
// and bad input refused (exit 2) before any node runs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cvs/certificate_report.hpp"
#include "cvs/certify/certificate.hpp"
#include "cvs/exec/process.hpp"
#include "cvs/exec/slurm.hpp"
#include "cvs/history/store.hpp"
#include "cvs/junit.hpp"
#include "test_helpers.hpp"

namespace fs = std::filesystem;
using cvs::Outcome;
using cvs::Rung;

namespace {

Rung rung(std::size_t nodes, double tok, double lo, double hi) {
  Rung r;
  r.nodes = nodes;
  r.status = Outcome::Pass;
  r.tok_s_per_gpu = tok;
  r.interval = {{lo, hi}};
  return r;
}

cvs::Certificate four_hosts(std::vector<cvs::TierKind> kinds) {
  cvs::Certificate c;
  c.inputs.hosts = {"a", "b", "c", "d"};
  for (auto k : kinds) {
    cvs::TierRecord t;
    t.kind = k;
    t.state = cvs::TierState::Decided;
    t.outcome = Outcome::Pass;
    c.tiers.push_back(t);
  }
  return c;
}

}  // namespace

TEST(Certificate, TheLadderDoublesAndEndsAtEveryNode) {
  EXPECT_EQ(cvs::ladder(1), (std::vector<std::size_t>{1}));
  EXPECT_EQ(cvs::ladder(4), (std::vector<std::size_t>{1, 2, 4}));
  EXPECT_EQ(cvs::ladder(6), (std::vector<std::size_t>{1, 2, 4, 6}));
  EXPECT_EQ(cvs::ladder(64), (std::vector<std::size_t>{1, 2, 4, 8, 16, 32, 64}));
  EXPECT_TRUE(cvs::ladder(0).empty());
  EXPECT_DOUBLE_EQ(cvs::scaling_bound_pct(1, 0.9), 100);
  EXPECT_NEAR(cvs::scaling_bound_pct(4, 0.9), 81, 1e-9);
  EXPECT_NEAR(cvs::scaling_bound_pct(6, 0.9), 100 * std::pow(0.9, std::log2(6.0)), 1e-9);
}

// Efficiency against the 1-node rung of the same session: the interval from the two runs'
// intervals; the rung is PASS only when the whole interval clears the bound, FAIL when the whole
// interval is below it.
TEST(Certificate, ARungIsDecidedByItsWholeEfficiencyInterval) {
  std::vector<Rung> rungs = {rung(1, 1000, 990, 1010), rung(2, 950, 940, 960), rung(4, 700, 690, 710),
                             rung(8, 560, 500, 620)};
  cvs::score_ladder(rungs, 0.9);
  EXPECT_EQ(rungs[0].verdict, Outcome::Pass);
  EXPECT_NEAR(*rungs[1].efficiency_pct, 95, 1e-9);
  EXPECT_NEAR(*rungs[1].efficiency_lo_pct, 100 * 940.0 / 1010, 1e-9);
  EXPECT_NEAR(*rungs[1].efficiency_hi_pct, 100 * 960.0 / 990, 1e-9);
  EXPECT_EQ(rungs[1].verdict, Outcome::Pass);  // [93.1, 97.0] >= 90
  EXPECT_EQ(rungs[2].verdict, Outcome::Fail);  // [68.3, 71.7] < 81
  EXPECT_NEAR(rungs[3].bound_pct, 72.9, 1e-9);
  EXPECT_EQ(rungs[3].verdict, Outcome::Fail);  // [49.5, 62.6] wholly below 72.9
  rungs[3].interval = {{600, 800}};            // [59.4, 80.8] straddles it
  cvs::score_ladder(rungs, 0.9);
  EXPECT_EQ(rungs[3].verdict, Outcome::Inconclusive);
  // No interval (too few steady steps): a point estimate decides nothing, even 4 % against 90 %.
  rungs[1].interval.reset();
  rungs[1].tok_s_per_gpu = 40;
  cvs::score_ladder(rungs, 0.9);
  EXPECT_NEAR(*rungs[1].efficiency_pct, 4, 1e-9);
  EXPECT_EQ(rungs[1].verdict, Outcome::Inconclusive);
  // A failed 1-node rung leaves nothing to compare with.
  rungs[0].status = Outcome::Fail;
  cvs::score_ladder(rungs, 0.9);
  EXPECT_FALSE(rungs[1].efficiency_pct);
  EXPECT_EQ(rungs[1].verdict, Outcome::Error);
}

TEST(Certificate, TheVerdictComesFromTheTiersAndMinNodes) {
  using K = cvs::TierKind;
  auto c = four_hosts({K::Preflight, K::Nodes, K::Links, K::Scale});
  cvs::decide(c);
  EXPECT_EQ(c.verdict, cvs::Verdict::Certified);
  EXPECT_EQ(c.certified.size(), 4u);
  EXPECT_EQ(cvs::exit_code(c), 0);
  // A node excluded: not certified unless --min-nodes allows it.
  c.tier(K::Nodes)->excluded.push_back({"c", "nodes", "slow"});
  c.tier(K::Nodes)->outcome = Outcome::Fail;
  cvs::decide(c);
  EXPECT_EQ(c.verdict, cvs::Verdict::NotCertified);
  EXPECT_EQ(c.certified, (std::vector<std::string>{"a", "b", "d"}));
  EXPECT_EQ(cvs::exit_code(c), 1);
  c.inputs.min_nodes = 3;
  cvs::decide(c);
  EXPECT_EQ(c.verdict, cvs::Verdict::Certified) << c.verdict_reason;
  // A tier that did not run is never a PASS.
  c.tier(K::Scale)->state = cvs::TierState::NotRun;
  c.tier(K::Scale)->why_not_run = "budget";
  cvs::decide(c);
  EXPECT_EQ(c.verdict, cvs::Verdict::Incomplete);
  EXPECT_NE(c.verdict_reason.find("scale tier did not run: budget"), std::string::npos) << c.verdict_reason;
  EXPECT_EQ(cvs::exit_code(c), 1);
  // The ladder failing fails the certification (no node to blame).
  c.tier(K::Scale)->state = cvs::TierState::Decided;
  c.tier(K::Scale)->outcome = Outcome::Fail;
  cvs::decide(c);
  EXPECT_EQ(c.verdict, cvs::Verdict::NotCertified);
  // A tier that could not run its nodes is infrastructure: exit 3.
  c.tier(K::Preflight)->outcome = Outcome::Error;
  cvs::decide(c);
  EXPECT_EQ(c.verdict, cvs::Verdict::Error);
  EXPECT_EQ(cvs::exit_code(c), 3);
}

TEST(Certificate, TheCertificateRoundTripsAndAnotherSchemaIsRefused) {
  using K = cvs::TierKind;
  auto c = four_hosts({K::Preflight, K::Nodes, K::Links, K::Scale});
  c.tool_version = "0.1.0";
  c.git_commit = "abc";
  c.inputs.cluster_sha256 = "ff";
  c.tier(K::Nodes)->excluded.push_back({"b", "nodes", "tokens/s 40 % below"});
  c.tier(K::Nodes)->reruns = {"b"};
  c.tier(K::Nodes)->node_minutes = 12.5;
  std::vector<Rung> rungs = {rung(1, 1000, 990, 1010), rung(2, 950, 940, 960)};
  cvs::score_ladder(rungs, 0.9);
  c.tier(K::Scale)->rungs = rungs;
  cvs::decide(c);
  const auto j = cvs::to_json(c);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["node_minutes"], 12.5);
  const auto back = cvs::certificate_from_json(j, "certificate.json");
  EXPECT_EQ(cvs::to_json(back).dump(), j.dump());
  // Every wrong file names its pointer (a resume or `cvs report` says which key, exit 2).
  auto pointer_of = [](const nlohmann::ordered_json& bad) -> std::string {
    try {
      cvs::certificate_from_json(bad, "certificate.json");
    } catch (const cvs::ConfigError& e) {
      EXPECT_EQ(e.issues().at(0).file, "certificate.json");
      EXPECT_NE(e.issues().at(0).fix.find("cvs certify"), std::string::npos);
      return e.issues().at(0).pointer + ": " + e.issues().at(0).message;
    }
    return "(read)";
  };
  auto other = j;
  other["schema_version"] = 99;
  EXPECT_EQ(pointer_of(other), "/schema_version: is 99, this tool reads 1");
  other = j;
  other["tiers"][0].erase("state");
  EXPECT_EQ(pointer_of(other), "/tiers/0/state: is missing");
  other = j;
  other["tiers"][1]["tier"] = "lnks";
  EXPECT_EQ(pointer_of(other), "/tiers/1/tier: is 'lnks', not one of preflight, nodes, links, scale");
  other = j;
  other["inputs"]["hosts"][2] = 7;
  EXPECT_EQ(pointer_of(other), "/inputs/hosts/2: is a number, not a string");
  other = j;
  other["tiers"][3]["rungs"][1]["interval"] = "wide";
  EXPECT_EQ(pointer_of(other), "/tiers/3/rungs/1/interval: is not [lo, hi] or null");
}

// --resume with --budget-minutes: the later tiers are held against the run time the kept nodes tier
// measured (it was 0 on resume: the budget never stopped links or scale).
TEST(Certificate, AResumedCertificationsBudgetEstimatesFromItsKeptNodesTier) {
  using K = cvs::TierKind;
  auto c = four_hosts({K::Preflight, K::Nodes, K::Links, K::Scale});
  c.tier(K::Links)->state = cvs::TierState::Pending;
  c.tier(K::Scale)->state = cvs::TierState::Pending;
  c.tier(K::Nodes)->run_seconds = 120;
  // What --resume reads back: the certificate file.
  const auto resumed = cvs::certificate_from_json(cvs::to_json(c), "certificate.json");
  const double run_s = cvs::run_estimate_s(resumed);
  EXPECT_DOUBLE_EQ(run_s, 120);
  // 3 of 5 minutes left: a tier of two runs (links: 4 min) does not start, and says why (the
  // tiers' own needs and the whole loop: certify_tiers_test.cpp).
  const auto why = cvs::over_budget(2 * run_s / 60, 5, 2);
  EXPECT_NE(why.find("budget: about 4.0 min needed, 3.0 of --budget-minutes 5 left"), std::string::npos)
      << why;
  EXPECT_EQ(cvs::over_budget(2 * run_s / 60, 10, 2), "");
  EXPECT_EQ(cvs::over_budget(3 * run_s / 60, 0, 100), "") << "no budget";
  // A nodes tier not decided (interrupted): no estimate.
  c.tier(K::Nodes)->state = cvs::TierState::Pending;
  EXPECT_DOUBLE_EQ(cvs::run_estimate_s(c), 0);
}

TEST(Certificate, JunitHasATestcasePerTierAndPerNode) {
  using K = cvs::TierKind;
  auto c = four_hosts({K::Preflight, K::Nodes});
  c.tier(K::Nodes)->excluded.push_back({"b", "nodes", "tokens/s <low>"});
  c.tier(K::Nodes)->outcome = Outcome::Fail;
  cvs::decide(c);
  const auto x = cvs::report::render_certificate_junit(c);
  EXPECT_TRUE(cvs::test::valid_junit(x));
  EXPECT_NE(x.find("tests=\"6\" failures=\"2\" errors=\"0\""), std::string::npos) << x;
  EXPECT_NE(x.find("name=\"tier.preflight\" classname=\"cvs_certify.tiers\""), std::string::npos) << x;
  EXPECT_NE(x.find("name=\"node.b\" classname=\"cvs_certify.nodes\" time=\"0.000\">"), std::string::npos)
      << x;
  EXPECT_NE(x.find("tokens/s &lt;low&gt;"), std::string::npos) << x;
  auto h = cvs::report::render_certificate_html(c);
  EXPECT_NE(h.find("NOT CERTIFIED"), std::string::npos);
  EXPECT_LT(h.find("NOT CERTIFIED"), h.find("Excluded"));  // the verdict first
  EXPECT_EQ(h.find("--detect-slowdown-pct"), std::string::npos) << "no target, none said";
  // The power the nodes tier stepped for: in the inputs, read back by --resume, on the page.
  c.inputs.detect_slowdown_pct = 15;
  EXPECT_DOUBLE_EQ(cvs::certificate_from_json(cvs::to_json(c), "c.json").inputs.detect_slowdown_pct, 15);
  h = cvs::report::render_certificate_html(c);
  EXPECT_NE(
      h.find("the nodes tier's runs also until they could see a node 15 % slow (--detect-slowdown-pct)"),
      std::string::npos)
      << h;
}

TEST(Certificate, TheDrainCommandIsOneLineWithTheEvidence) {
  const auto a = cvs::slurm_drain_argv("gpu-07", "tokens/s \"31 %\" below\nthe fleet");
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(a[2], "NodeName=gpu-07");
  EXPECT_EQ(a[3], "State=DRAIN");
  EXPECT_EQ(a[4], "Reason=cvs-maxtext: tokens/s  31 %  below the fleet");
  EXPECT_LE(cvs::slurm_drain_argv("n", std::string(500, 'x'))[4].size(), 207u);
}

// Bad input: exit 2 with the file, the pointer and the fix, before any node runs and without
// writing the output folder.
TEST(Certificate, BadInputIsExitTwoBeforeAnyNodeRuns) {
  const fs::path tmp = fs::temp_directory_path() / ("cvs-certify-bad-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  const std::string root = CVS_SOURCE_ROOT;
  const std::string single = root + "/configs/cpu_jaxmaxtext_tiny_single.json";
  const std::string dist = root + "/configs/cpu_jaxmaxtext_tiny_distributed.json";
  const std::string cluster = root + "/configs/clusters/local_2nodes.json";
  auto certify = [&](std::vector<std::string> args) {
    args.insert(args.begin(), CVS_SUITE_CERTIFY);
    return cvs::run_one({args, std::chrono::seconds(60), "certify"});
  };
  const auto out = (tmp / "out").string();
  auto r = certify({"--cluster", cluster, "--config", dist, "--output", out});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/mode"), std::string::npos) << r.err;
  r = certify({"--cluster", cluster, "--config", single, "--distributed-config", single, "--output", out});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--distributed-config takes a distributed config"), std::string::npos) << r.err;
  r = certify({"--cluster", cluster, "--config", single, "--drain", "--output", out});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/scheduler"), std::string::npos) << r.err;
  r = certify({"--cluster", cluster, "--config", single, "--min-nodes", "3", "--output", out});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(fs::exists(out)) << "nothing written for bad input";
  // A target the rule can never flag (at or below --min-deviation-pct), or one with --fixed-steps.
  r = certify({"--cluster", cluster, "--config", single, "--detect-slowdown-pct", "8", "--output", out});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--detect-slowdown-pct 8 is not above --min-deviation-pct 10"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("pass more than 10"), std::string::npos) << r.err;
  r = certify({"--cluster", cluster, "--config", single, "--fixed-steps", "--detect-slowdown-pct", "20",
               "--output", out});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("drop one of the two"), std::string::npos) << r.err;
  // Two nodes are fewer than --min-fleet 3: no node would ever be scored against the others.
  r = certify({"--cluster", cluster, "--config", single, "--detect-slowdown-pct", "20", "--output", out});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("has 2 node(s), fewer than --min-fleet 3"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out)) << "nothing written for bad input";
  // A calibration of other sweeps does not fit the config.
  std::ofstream(tmp / "cal.json")
      << R"({"_calibration": {"statistics": {"BS=64,OTHER": {"tokens_per_sec_per_gpu":
      {"median": 100, "mad_sigma": 1}}}}})";
  r = certify(
      {"--cluster", cluster, "--config", single, "--baseline", (tmp / "cal.json").string(), "--output", out});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/_calibration/statistics/BS=64,OTHER"), std::string::npos) << r.err;
  // An existing folder is never reused; --resume of a folder with no certificate is refused.
  fs::create_directories(out);
  r = certify({"--cluster", cluster, "--config", single, "--output", out});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("never reused"), std::string::npos) << r.err;
  r = certify({"--resume", out});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no certificate to resume"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(out));
  fs::remove_all(tmp);
}

// A resumed certification records where it started: another --history is refused (exit 2, the
// pointer and the fix) before any node runs; a redacted PostgreSQL password is never written.
TEST(Certificate, AResumeKeepsItsStoreAndRefusesAnother) {
  const fs::path tmp = fs::temp_directory_path() / ("cvs-certify-store-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp / "cert");
  auto c = four_hosts({cvs::TierKind::Preflight, cvs::TierKind::Nodes});
  c.inputs.history = (tmp / "first.sqlite").string();
  std::ofstream(tmp / "cert" / "certificate.json") << cvs::to_json(c).dump(1);
  const auto r = cvs::run_one({{CVS_SUITE_CERTIFY, "--resume", (tmp / "cert").string(), "--history",
                                (tmp / "second.sqlite").string()},
                               std::chrono::seconds(60),
                               "certify"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("/inputs/history"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("records in " + (tmp / "first.sqlite").string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("drop --history"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(tmp / "second.sqlite")) << "nothing recorded in the other store";
  EXPECT_EQ(cvs::history::redacted_store_spec("postgresql://ops:s3cret@db:5432/cvs"),
            "postgresql://ops:***@db:5432/cvs");
  EXPECT_EQ(cvs::history::redacted_store_spec("host=db dbname=cvs password=s3cret"),
            "host=db dbname=cvs password=***");
  EXPECT_EQ(cvs::history::resolve_store_spec("sqlite:rel/h.sqlite"),
            (fs::current_path() / "rel/h.sqlite").string());
  fs::remove_all(tmp);
}
