// The results history on its SQLite engine (a store file in the test's folder; the PostgreSQL
// engine runs the same through tests/integration/history_test.sh): ingest, idempotent re-ingest,
// the ledger, lemons, a writer killed inside its transaction, two writers at once, change points on
// a history built from a real captured log, the OpenMetrics text.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>
#include <set>
#include <thread>

#include "cvs/catalog/metric_catalog.hpp"
#include "cvs/certify/certificate_entry.hpp"
#include "cvs/history/openmetrics.hpp"
#include "cvs/history/store.hpp"
#include "cvs/history/trend.hpp"
#include "cvs/logs/logscan.hpp"
#include "cvs/results/results_file.hpp"
#include "cvs/statistics/metrics.hpp"
#include "cvs/statistics/run_figures.hpp"
#include "cvs/trend_page.hpp"
#include "test_helpers.hpp"

namespace fs = std::filesystem;
using J = nlohmann::ordered_json;

namespace {

struct TempDir {
  fs::path p = fs::temp_directory_path() /
               ("cvs_history_" + std::to_string(::getpid()) + "_" +
                std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  TempDir() { fs::create_directories(p); }
  ~TempDir() { fs::remove_all(p); }
};

// A session folder from the committed real session, started at `day`, on node `node`, with the
// given status and maxtext_version.
fs::path session(const fs::path& dir, int day, const std::string& node, bool pass,
                 const std::string& version = "0.2.5") {
  auto r = cvs::test::read_json(cvs::test::data("results/cpu_single_results_current.json"));
  r["started_at"] = "2026-11-" + std::string(day < 10 ? "0" : "") + std::to_string(day) + "T03:00:00Z";
  r["cluster"]["nodes"] = J::array({{{"name", node}, {"host", node}, {"transport", "ssh"}}});
  r["cluster"]["file"] = "/etc/cvs/rack7.json";
  r["provenance_fields"]["maxtext_version"] = version;
  if (!pass) r["stages"][2]["status"] = "FAIL", r["stages"][2]["outcome"] = "FAIL";
  const auto f = dir / (node + "-" + std::to_string(day));
  fs::create_directories(f);
  std::ofstream(f / "results.json") << r.dump();
  return f;
}

cvs::test::Proc cvs_history(const fs::path& store, const std::string& args, const std::string& env = "") {
  return cvs::test::run_command(env + " " + std::string(CVS_BINARY) + " history --history " + store.string() +
                                " " + args);
}

}  // namespace

TEST(HistoryStore, IngestIsIdempotentAndTheLedgerAndLemonsReadIt) {
  TempDir t;
  const auto store = t.p / "h.sqlite";
  std::vector<fs::path> folders;
  for (int d = 1; d <= 6; ++d) {
    folders.push_back(session(t.p, d, "gpu-01", true));
    folders.push_back(session(t.p, d, "gpu-07", d % 2 == 0));  // fails every other night
  }
  std::string all;
  for (const auto& f : folders) all += " " + f.string();
  auto p = cvs_history(store, "ingest" + all);
  ASSERT_EQ(p.exit_code, 0) << p.out;
  EXPECT_NE(p.out.find("12 recorded, 0 already there"), std::string::npos) << p.out;
  p = cvs_history(store, "ingest" + all);
  EXPECT_NE(p.out.find("0 recorded, 12 already there"), std::string::npos) << p.out;
  auto s = cvs::history::Store::open(store.string());
  EXPECT_EQ(s->sessions("", "", "").size(), 12u) << "the same session twice is one row";
  EXPECT_EQ(s->sessions("cpu_jaxmaxtext_tiny_single", "rack7", "2026-11-04").size(), 6u);
  const auto ledger = s->ledger("gpu-07");
  ASSERT_EQ(ledger.size(), 6u);
  EXPECT_EQ(ledger[0].outcome, cvs::Outcome::Fail);
  EXPECT_EQ(ledger[1].outcome, cvs::Outcome::Pass);
  const auto lemons = s->lemons(2, 5, 10);
  ASSERT_EQ(lemons.size(), 1u);
  EXPECT_EQ(lemons[0].node, "gpu-07");
  EXPECT_EQ(lemons[0].suspect_in, 2) << "failed in 2 of its last 5 (nights 2-6)";
  p = cvs_history(store, "node gpu-07 --json");
  ASSERT_EQ(p.exit_code, 0) << p.out;
  EXPECT_EQ(nlohmann::json::parse(p.out).size(), 6u);
  p = cvs_history(store, "lemons");
  EXPECT_NE(p.out.find("gpu-07\tsuspect or failed in 2 of its last 5 session(s)"), std::string::npos)
      << p.out;
}

TEST(HistoryStore, ANewerSchemaIsRefusedWithItsVersion) {
  TempDir t;
  const auto store = t.p / "h.sqlite";
  { cvs::history::Store::open(store.string())->db().exec("UPDATE cvs_schema SET version = 99"); }
  try {
    cvs::history::Store::open(store.string());
    FAIL() << "opened a store of schema 99";
  } catch (const cvs::history::StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 99, newer than this cvs's 1"), std::string::npos)
        << e.what();
  }
  const auto p = cvs_history(store, "sessions");
  EXPECT_EQ(p.exit_code, 3) << p.out;
}

TEST(HistoryStore, AWriterKilledInsideItsTransactionLeavesTheStoreAsItWas) {
  TempDir t;
  const auto store = t.p / "h.sqlite";
  const auto first = session(t.p, 1, "gpu-01", true), second = session(t.p, 2, "gpu-01", true);
  ASSERT_EQ(cvs_history(store, "ingest " + first.string()).exit_code, 0);
  const auto marker = t.p / "inside";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("CVS_HISTORY_TEST_HOLD", marker.c_str(), 1);
    ::execl(CVS_BINARY, "cvs", "history", "--history", store.c_str(), "ingest", second.c_str(), nullptr);
    ::_exit(127);
  }
  for (int i = 0; i < 300 && !fs::exists(marker); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(fs::exists(marker)) << "the writer never reached its commit";
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  auto s = cvs::history::Store::open(store.string());
  EXPECT_EQ(s->sessions("", "", "").size(), 1u) << "the killed writer's session is not half there";
  EXPECT_EQ(s->db()
                .query("SELECT COUNT(*) FROM metrics WHERE session_id NOT IN (SELECT id FROM sessions)")[0][0]
                .num(),
            0);
  EXPECT_EQ(cvs_history(store, "ingest " + second.string()).exit_code, 0) << "and the store takes it again";
  EXPECT_EQ(cvs::history::Store::open(store.string())->sessions("", "", "").size(), 2u);
}

TEST(HistoryStore, TwoWritersAtOnceBothLand) {
  TempDir t;
  const auto store = t.p / "h.sqlite";
  std::string a, b;
  for (int d = 1; d <= 8; ++d) {
    a += " " + session(t.p, d, "gpu-a", true).string();
    b += " " + session(t.p, d, "gpu-b", true).string();
  }
  auto one = std::async(std::launch::async, [&] { return cvs_history(store, "ingest" + a); });
  auto two = std::async(std::launch::async, [&] { return cvs_history(store, "ingest" + b); });
  const auto r1 = one.get(), r2 = two.get();
  EXPECT_EQ(r1.exit_code, 0) << r1.out;
  EXPECT_EQ(r2.exit_code, 0) << r2.out;
  EXPECT_EQ(cvs::history::Store::open(store.string())->sessions("", "", "").size(), 16u);
}

namespace {

// 24 nightly sessions' tokens/s estimates from the real captured 30-step log: each night's step
// times the log's own, scaled by a seeded ±2 % jitter, and from night `shift_at` on by `shift`
// (the tokens per step unchanged: 11 % fewer tokens/s is 12 % longer steps); maxtext_version
// changes there.
std::vector<cvs::history::TrendPoint> nights(std::size_t shift_at, double shift) {
  cvs::LogScanner sc(cvs::default_error_patterns());
  sc.feed(cvs::test::read_file(cvs::test::data("logs/cpu_bs4_30steps.log")));
  sc.finish();
  const auto base = sc.result().steps;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> jitter(0.98, 1.02);
  std::vector<cvs::history::TrendPoint> out;
  for (std::size_t n = 0; n < 24; ++n) {
    const double f = jitter(rng) * (n >= shift_at ? 1.0 + shift : 1.0);
    std::vector<cvs::StepRecord> steps;
    for (int rep = 0; rep < 4; ++rep)  // 120 steps: the log four times over, numbered on
      for (const auto& s : base) {
        auto r = s;
        r.step = s.step + 30 * rep;
        r.seconds = *s.seconds / f;
        r.tokens_per_device = *s.tokens_per_device * f;
        r.tflops_per_device = *s.tflops_per_device * f;
        steps.push_back(r);
      }
    const auto m = cvs::compute_metrics(steps, {}, {});
    cvs::history::TrendPoint p;
    p.session_id = "s" + std::to_string(n);
    p.started_at = "2026-11-" + std::string(n + 1 < 10 ? "0" : "") + std::to_string(n + 1) + "T03:00:00Z";
    p.sweep = "BS=4,PRECISION=BF16,SL=128";
    const auto it = m.steady.intervals.find("tokens_per_sec_per_gpu");
    p.estimate =
        it != m.steady.intervals.end() ? it->second.estimate : *m.get(cvs::Metric::TokensPerSecPerGpu);
    p.provenance = {{"image_id", "sha256:abc"}, {"maxtext_version", n >= shift_at ? "0.2.6" : "0.2.5"}};
    out.push_back(p);
  }
  return out;
}

}  // namespace

TEST(HistoryTrend, OneShiftIsOneChangePointAttributedToTheFieldThatChanged) {
  const auto pts = nights(12, -0.11);
  const auto cps = cvs::history::change_points(pts, "tokens_per_sec_per_gpu");
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_EQ(cps[0].index, 12u);
  EXPECT_NEAR(cps[0].change_pct, -11.0, 1.5);
  ASSERT_EQ(cps[0].changed.size(), 1u);
  EXPECT_EQ(std::get<0>(cps[0].changed[0]), "maxtext_version");
  EXPECT_NE(cps[0].words.find(
                "tokens_per_sec_per_gpu -11 % from 2026-11-13, when maxtext_version 0.2.5 -> 0.2.6 changed"),
            std::string::npos)
      << cps[0].words;
  const auto html = cvs::report::render_trend_html("cpu", "tokens_per_sec_per_gpu", pts, cps);
  EXPECT_NE(html.find("class=\"cp\""), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos) << "self-contained";
}

TEST(HistoryTrend, NoShiftNoChangePoint) {
  auto pts = nights(99, 0.0);
  pts[12].provenance[1].second = "0.2.6";  // a provenance change that moved nothing
  EXPECT_TRUE(cvs::history::change_points(pts, "tokens_per_sec_per_gpu").empty());
  EXPECT_EQ(cvs::history::provenance_changes(pts).size(), 2u) << "marked on the page, not a change point";
}

TEST(HistoryOpenMetrics, NamesInBaseUnitsLabelsEscapedAndAnEof) {
  EXPECT_EQ(cvs::history::prometheus_name("tokens_per_sec_per_gpu").first,
            "cvs_maxtext_tokens_per_second_per_gpu");
  EXPECT_EQ(cvs::history::prometheus_name("step_time_mean_ms"),
            std::pair(std::string("cvs_maxtext_step_time_mean_seconds"), 1e-3));
  EXPECT_EQ(cvs::history::prometheus_name("scaling_efficiency_pct").first,
            "cvs_maxtext_scaling_efficiency_ratio");
  EXPECT_EQ(cvs::history::prometheus_name("tokens_per_sec_total").first,
            "cvs_maxtext_tokens_per_second_all_gpus");
  const auto r = cvs::read_results(cvs::test::data("results/cpu_single_results_current.json"));
  const auto text = cvs::history::openmetrics_text(cvs::history::entry_of_session(r, "x"));
  EXPECT_NE(text.find("# TYPE cvs_maxtext_tokens_per_second_per_gpu gauge"), std::string::npos);
  EXPECT_NE(
      text.find(
          "cvs_maxtext_session_passed{suite=\"jaxmaxtext_single\",config=\"cpu_jaxmaxtext_tiny_single\""),
      std::string::npos)
      << text.substr(0, 400);
  EXPECT_NE(text.find("sweep=\"BS=2,PRECISION=BF16,SL=128\""), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - 6), "# EOF\n");
}

// Every catalog figure exported as a gauge: none may end in a suffix Prometheus keeps for counters,
// histograms and summaries (promtool refused cvs_maxtext_stall_count in CI), nor repeat a name.
TEST(HistoryOpenMetrics, NoCatalogFigureTakesASuffixPrometheusReserves) {
  std::set<std::string> seen;
  for (const auto& spec : cvs::metric_catalog()) {
    const std::string name = cvs::history::prometheus_name(std::string(spec.name)).first;
    for (const std::string_view reserved : {"_count", "_sum", "_bucket", "_total", "_created", "_info"})
      EXPECT_FALSE(name.size() > reserved.size() && name.ends_with(reserved)) << spec.name << " -> " << name;
    EXPECT_TRUE(seen.insert(name).second) << name;
  }
  EXPECT_EQ(seen.size(), cvs::kMetricCount);
}

// A results.json with one field mangled, under any name: the results reader's error with its JSON
// pointer, exit 2 (it was "not a calibration file", exit 3, for every such file).
TEST(HistoryStore, AMangledResultsFileIsBadInputNamingItsPointer) {
  TempDir t;
  const auto store = t.p / "h.sqlite";
  auto r = cvs::test::read_json(session(t.p, 1, "gpu-01", true) / "results.json");
  r["stages"][0]["status"] = 42;
  std::ofstream(t.p / "fuzzed-17.json") << r.dump();
  const auto p = cvs_history(store, "ingest " + (t.p / "fuzzed-17.json").string());
  EXPECT_EQ(p.exit_code, 2) << p.out;
  EXPECT_NE(p.out.find("/stages/0/status"), std::string::npos) << p.out;
  EXPECT_EQ(p.out.find("not a calibration file"), std::string::npos) << p.out;
}

// `cvs history trend --out` never overwrites a page that is there.
TEST(HistoryStore, TheTrendPageRefusesAnExistingFile) {
  TempDir t;
  const auto store = t.p / "h.sqlite";
  std::string all;
  for (int d = 1; d <= 4; ++d) all += " " + session(t.p, d, "gpu-01", true).string();
  ASSERT_EQ(cvs_history(store, "ingest" + all).exit_code, 0);
  const auto cfg = cvs::test::read_json(session(t.p, 1, "gpu-01", true) / "results.json")["config"]["file"];
  const auto page = t.p / "trend.html";
  const std::string args =
      "trend --config " + cfg.get<std::string>() + " --metric tokens_per_sec_per_gpu --out " + page.string();
  auto p = cvs_history(store, args);
  ASSERT_EQ(p.exit_code, 0) << p.out;
  const auto first = cvs::test::read_file(page);
  std::ofstream(page) << "someone's page";
  p = cvs_history(store, args);
  EXPECT_EQ(p.exit_code, 2) << p.out;
  EXPECT_NE(p.out.find("exists"), std::string::npos) << p.out;
  EXPECT_EQ(cvs::test::read_file(page), "someone's page");
  EXPECT_FALSE(first.empty());
}

// A real certification (the certify e2e's degraded run: ns-b excluded by the nodes tier, ns-d by the
// links tier, two rungs) in the history: one session of kind certify, each host's ledger in the
// tier's words, the ladder's rungs as metrics; a resumed certification (same start, a later end) is
// a session of its own; its OpenMetrics text says the certified count and the excluded nodes; the
// Markdown summary of its certificate.json says the verdict, the exclusions and the ladder.
TEST(HistoryStore, ACertificationIsRecordedWithItsExclusionsAndLadder) {
  TempDir t;
  const auto store = t.p / "h.sqlite";
  const auto folder = t.p / "certify-1";
  fs::create_directories(folder);
  auto cert = cvs::test::read_json(cvs::test::data("results/certify_degraded/certificate.json"));
  std::ofstream(folder / "certificate.json") << cert.dump(2);
  auto p = cvs_history(store, "ingest " + folder.string());
  ASSERT_EQ(p.exit_code, 0) << p.out;
  EXPECT_NE(p.out.find("1 recorded, 0 already there"), std::string::npos) << p.out;
  p = cvs_history(store, "ingest " + folder.string());
  EXPECT_NE(p.out.find("0 recorded, 1 already there"), std::string::npos) << p.out;
  auto s = cvs::history::Store::open(store.string());
  const auto sessions = s->sessions("", "", "");
  ASSERT_EQ(sessions.size(), 1u);
  EXPECT_EQ(sessions[0].kind, "certify");
  EXPECT_EQ(sessions[0].status, cvs::Outcome::Pass) << "CERTIFIED";
  EXPECT_EQ(sessions[0].nodes, 4);
  const auto b = s->ledger("ns-b");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].outcome, cvs::Outcome::Fail);
  EXPECT_TRUE(b[0].suspect);
  EXPECT_EQ(b[0].evidence.rfind("nodes: ", 0), 0u) << b[0].evidence;
  EXPECT_NE(b[0].evidence.find("PSI cpu some 79 %"), std::string::npos) << b[0].evidence;
  EXPECT_NE(s->ledger("ns-d")[0].evidence.find("links: pairs: every two-node run with it was slow"),
            std::string::npos);
  EXPECT_EQ(s->ledger("ns-a")[0].outcome, cvs::Outcome::Pass);
  EXPECT_FALSE(s->ledger("ns-a")[0].suspect);

  const auto e = cvs::certify::entry_of_folder(folder);
  bool rung2 = false;
  for (const auto& m : e.metrics)
    if (m.sweep == "rung-2" && m.metric == "scaling_efficiency_pct") {
      rung2 = true;
      EXPECT_NEAR(*m.estimate, 21.7068, 1e-3);
      EXPECT_NEAR(*m.lo, 18.4456, 1e-3);
      EXPECT_NEAR(*m.hi, 25.4362, 1e-3);
      EXPECT_EQ(m.outcome, cvs::Outcome::Pass);
    }
  EXPECT_TRUE(rung2) << "the 2-node rung's efficiency is a metric of the session";
  const auto text = cvs::history::openmetrics_text(e);
  EXPECT_NE(text.find("cvs_maxtext_certified_nodes{suite=\"jaxmaxtext_certify\""), std::string::npos) << text;
  EXPECT_NE(text.find("} 2\n"), std::string::npos) << "two nodes certified\n" << text;
  EXPECT_NE(text.find("node=\"ns-d\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cvs_maxtext_scaling_efficiency_ratio_low{"), std::string::npos) << text;

  // Resumed: the same start, a later end and verdict; recorded beside the first.
  cert["ended_at"] = "2026-12-04T13:10:00Z";
  const auto resumed = t.p / "certify-1-resumed";
  fs::create_directories(resumed);
  std::ofstream(resumed / "certificate.json") << cert.dump(2);
  p = cvs_history(store, "ingest " + resumed.string());
  EXPECT_NE(p.out.find("1 recorded, 0 already there"), std::string::npos) << p.out;

  const auto md = t.p / "summary.md";
  p = cvs::test::run_command(std::string(CVS_BINARY) + " report " + (folder / "certificate.json").string() +
                             " --out " + (t.p / "c.html").string() + " --summary-md " + md.string());
  ASSERT_EQ(p.exit_code, 0) << p.out;
  const auto summary = cvs::test::read_file(md);
  EXPECT_NE(summary.find("## jaxmaxtext_certify: **CERTIFIED**"), std::string::npos) << summary;
  EXPECT_NE(summary.find("| ns-b | nodes | BS=2,PRECISION=BF16,SL=128 step_time_p50_ms"), std::string::npos)
      << summary;
  EXPECT_NE(summary.find("| 2 | 21.7 | [18.4, 25.4] | 1.0 | PASS |"), std::string::npos) << summary;
  EXPECT_NE(summary.find("Certified: `ns-a`, `ns-c`."), std::string::npos) << summary;
  EXPECT_NE(summary.find("[certificate.html](certify-1/certificate.html)"), std::string::npos) << summary;
}
