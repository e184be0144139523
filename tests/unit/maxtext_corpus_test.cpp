// `cvs metrics` on MaxText output that other people published (tests/data/maxtext_corpus: 20
// excerpts, 2023-2026, TPU and GPU, verbatim, with the figures each one's own lines support
// written down by hand in corpus.json). The binary as a user runs it: exit code, JSON, notes.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cvs/logs/logscan.hpp"
#include "cvs/statistics/run_figures.hpp"
#include "test_helpers.hpp"

using cvs::test::run_command;
namespace fs = std::filesystem;

namespace {

nlohmann::json corpus() {
  std::ifstream in(cvs::test::data("maxtext_corpus/corpus.json"));
  return nlohmann::json::parse(in);
}

struct Ran {
  int exit_code = 0;
  nlohmann::json out;
  std::string text;
};

Ran metrics_of(const fs::path& log) {
  // stdout only: the JSON (stderr says the non-finite line and is checked as text elsewhere)
  auto p = run_command(std::string(CVS_BINARY) + " metrics " + log.string());
  Ran r{p.exit_code, nlohmann::json(), p.out};
  const auto at = p.out.front() == '{' ? 0 : p.out.find("\n{");
  if (at != std::string::npos) r.out = nlohmann::json::parse(p.out.substr(at));
  return r;
}

bool notes_contain(const nlohmann::json& out, const std::string& what) {
  for (const auto& n : out["notes"])
    if (n.get<std::string>().find(what) != std::string::npos) return true;
  return false;
}

void expect_figure(const nlohmann::json& c, const nlohmann::json& m, const char* key, const char* metric) {
  const std::string file = c["file"];
  if (c[key].is_null()) {
    EXPECT_FALSE(m.contains(metric) && !m[metric].is_null()) << file << ": " << metric << " should be absent";
    return;
  }
  ASSERT_TRUE(m.contains(metric) && m[metric].is_number()) << file << ": " << metric << " missing";
  const double want = c[key].get<double>(), got = m[metric].get<double>();
  // The hand-written figure is tokens (TFLOPs) over time across the steps of the run: the tool's
  // figure is that within the print rounding (0.1 %), far inside the 10 %.
  EXPECT_NEAR(got, want, 1e-3 * want) << file << ": " << metric;
}

}  // namespace

TEST(MaxTextCorpus, EveryPublishedLogGivesTheFiguresItsOwnLinesSupport) {
  const auto all = corpus();
  ASSERT_GE(all["cases"].size(), 20u);
  for (const auto& c : all["cases"]) {
    const std::string file = c["file"];
    SCOPED_TRACE(file);
    const auto r = metrics_of(cvs::test::data("maxtext_corpus/" + file));
    EXPECT_EQ(r.exit_code, c["exit"].get<int>()) << r.text;
    ASSERT_TRUE(r.out.is_object()) << r.text;
    const auto& m = r.out["metrics"];
    if (c["final_loss"].is_null()) {
      EXPECT_TRUE(!m.contains("final_loss") || m["final_loss"].is_null()) << r.text;
    } else {
      EXPECT_DOUBLE_EQ(m["final_loss"].get<double>(), c["final_loss"].get<double>()) << r.text;
    }
    expect_figure(c, m, "tflops", "tflops_per_sec_per_gpu");
    expect_figure(c, m, "tokens", "tokens_per_sec_per_gpu");
    for (const auto& n : c["notes"])
      EXPECT_TRUE(notes_contain(r.out, n.get<std::string>())) << n << "\n" << r.text;
    if (c.contains("excluded"))
      for (const auto& x : c["excluded"]) {
        bool found = false;
        for (const auto& e : r.out["excluded_steps"])
          found = found || (e["step"] == x[0] && e["rule"] == x[1]);
        EXPECT_TRUE(found) << "step " << x[0] << " " << x[1] << " not excluded:\n" << r.text;
      }
    if (c.contains("hosts")) {
      EXPECT_EQ(r.out["hosts"].size(), c["hosts"].get<std::size_t>()) << r.text;
    }
    if (c.contains("nan_step")) {
      EXPECT_EQ(r.out["nonfinite"]["field"], "loss");
      EXPECT_EQ(r.out["nonfinite"]["step"], c["nan_step"]);
      ASSERT_FALSE(r.out["errors"].empty()) << "a NaN loss is an error of the run, in the JSON too";
      EXPECT_EQ(r.out["errors"][0]["pattern"], "non-finite loss");
    }
  }
}

// A NaN loss is named as the training's, not blamed on a timer.
TEST(MaxTextCorpus, ANanLossIsNamedAsTheLoss) {
  auto p = run_command(std::string(CVS_BINARY) + " metrics " +
                       cvs::test::data("maxtext_corpus/tpu_v4-8_gemma_swa_nan_2025.log").string());
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_NE(p.out.find("non-finite loss (nan) at step 9: the training diverged"), std::string::npos) << p.out;
  EXPECT_EQ(p.out.find("a timer"), std::string::npos) << p.out;
}

// Two published runs one after the other in one file (built here from two corpus excerpts) are
// input the tool cannot read as one run: exit 2 with the fix, no figures.
TEST(MaxTextCorpus, AFileHoldingTwoRunsIsBadInputWithTheFix) {
  const auto dir = fs::temp_directory_path() / ("cvs_corpus_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto blended = dir / "blended.log";
  {
    std::ofstream out(blended);
    for (const char* f : {"doc_v5p-8_understand_logs_2025.log", "gke_pathways_batch_2026.log"})
      out << std::ifstream(cvs::test::data(std::string("maxtext_corpus/") + f)).rdbuf();
  }
  auto p = run_command(std::string(CVS_BINARY) + " metrics " + blended.string());
  EXPECT_EQ(p.exit_code, 2) << p.out;
  EXPECT_NE(p.out.find("step numbers go down (9 then 1)"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("split it"), std::string::npos) << p.out;
  fs::remove_all(dir);
}

// srun --label, Open MPI --tag-output and kubectl --prefix name hosts as Ray does: each host is
// one view of the run (here the published v5p-8 log as two hosts would print it).
TEST(MaxTextCorpus, PerHostPrefixesAreReadAsViewsOfOneRun) {
  const auto dir = fs::temp_directory_path() / ("cvs_corpus_hosts_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::vector<std::string> lines;
  {
    std::ifstream in(cvs::test::data("maxtext_corpus/doc_v5p-8_understand_logs_2025.log"));
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  for (const auto& [name, a, b] :
       {std::tuple{"srun", "0: ", "1: "}, std::tuple{"mpi", "[1,0]<stdout>:", "[1,1]<stdout>:"},
        std::tuple{"kubectl", "[pod/w-0/jax] ", "[pod/w-1/jax] "}}) {
    const auto log = dir / (std::string(name) + ".log");
    {
      std::ofstream out(log);
      for (const auto& l : lines) out << a << l << "\n" << b << l << "\n";
    }
    const auto r = metrics_of(log);
    ASSERT_EQ(r.exit_code, 0) << name << "\n" << r.text;
    ASSERT_EQ(r.out["hosts"].size(), 2u) << name << "\n" << r.text;
    EXPECT_NEAR(r.out["metrics"]["tokens_per_sec_per_gpu"].get<double>(), 8724.686, 0.01) << name;
    EXPECT_DOUBLE_EQ(r.out["metrics"]["final_loss"].get<double>(), 10.374) << name;
  }
  fs::remove_all(dir);
}

// One pipeline from a log to its figures (lib/cvs/statistics/run_figures.hpp): every corpus log,
// and one two-host view of it, through both front ends: the suite's (the records a LogScanner keeps
// of a node's log, as the run monitor's scan has them, into figures_of_records, as
// fixtures/cvs/session.cpp calls it) and `cvs metrics` (the binary, streaming). The same figures,
// steps, warm-up, exclusions and stalls, to the last bit the JSON carries.
TEST(MaxTextCorpus, TheSuiteAndCvsMetricsGiveEveryLogTheSameFigures) {
  const auto dir = fs::temp_directory_path() / ("cvs_corpus_same_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::vector<fs::path> logs;
  const auto all = corpus();
  for (const auto& c : all["cases"])
    logs.push_back(cvs::test::data("maxtext_corpus/" + c["file"].get<std::string>()));
  {  // the v5p-8 log as two srun-labelled hosts print it
    logs.push_back(dir / "two_hosts.log");
    std::ifstream in(cvs::test::data("maxtext_corpus/doc_v5p-8_understand_logs_2025.log"));
    std::ofstream out(logs.back());
    for (std::string l; std::getline(in, l);) out << "0: " << l << "\n1: " << l << "\n";
  }
  std::size_t compared = 0;
  for (const auto& log : logs) {
    SCOPED_TRACE(log.filename().string());
    const auto cmd = metrics_of(log);
    ASSERT_TRUE(cmd.out.is_object()) << cmd.text;
    const auto scan = cvs::scan_log_file(log, cvs::default_error_patterns(), nullptr);
    cvs::MetricsContext ctx;  // `cvs metrics` with no option: one node, its devices
    ctx.distributed = false;
    auto suite = cvs::figures_of_records(scan.steps, scan.evals, scan.markers, ctx, log.string());
    cvs::add_log_figures(suite.metrics, scan);
    const auto& want = cmd.out["metrics"];
    std::size_t figures = 0;
    for (const auto& [metric, v] : suite.metrics.values.entries()) {
      const std::string name(cvs::to_string(metric));
      ASSERT_TRUE(want.contains(name)) << name << " only in the suite's figures\n" << cmd.text;
      if (std::isnan(v))
        EXPECT_TRUE(want[name].is_null()) << name;
      else
        EXPECT_EQ(want[name].get<double>(), v) << name;
      ++figures;
    }
    EXPECT_EQ(figures, want.size()) << "figures only in cvs metrics'\n" << cmd.text;
    EXPECT_EQ(cmd.out["steps"].get<std::size_t>(), suite.steps);
    EXPECT_EQ(cmd.out["warmup_steps_dropped"].get<std::size_t>(), suite.metrics.warmup_dropped);
    EXPECT_EQ(cmd.out["excluded_steps"].size(), suite.metrics.excluded.size());
    EXPECT_EQ(cmd.out["stalls"].size(), suite.metrics.stalls.size());
    EXPECT_EQ(cmd.out.contains("hosts") ? cmd.out["hosts"].size() : 0u, suite.hosts.size());
    EXPECT_EQ(cmd.out.contains("nonfinite"), suite.nonfinite.seen.has_value());
    compared += figures > 0;
  }
  EXPECT_GE(compared, 20u) << "logs with figures compared";
  fs::remove_all(dir);
}
