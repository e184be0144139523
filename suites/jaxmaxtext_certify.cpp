// jaxmaxtext_certify (`cvs certify`): from a list of hosts to "these N nodes are certified for this
// workload, these are excluded and why", in tiers (lib/cvs/certify/certificate.hpp): preflight,
// nodes, links and the scaling ladder, each only on the nodes the tier before left healthy, each
// tier's outcome written to certificate.json before the next starts.
//
//   jaxmaxtext_certify --cluster FILE --config SINGLE.json [--distributed-config DIST.json]
//                      [--baseline CALIBRATION] [--budget-minutes M] [--min-nodes N] [--output DIR]
//                      [--drain] [--resume DIR] [--max-parallel N] [--max-z Z]
//                      [--min-deviation-pct P] [--min-fleet N] [--scaling-per-doubling-pct P]
//                      [SUITE ARGS...]
//
// The tiers are lib/cvs/certify (tiers.hpp); this front end parses, wires the ProcessRunner and
// catches. Every run is a suite executable beside this one (certify/suite_runs.hpp), with its config copied
// into <output>/inputs with statistics.on_inconclusive "extend" (each speed gate stops once decisive). Exit 0
// certified, 1 not (or incomplete: budget, Ctrl-C), 2 bad input, 3 infrastructure.
#include <spdlog/spdlog.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cvs/base/cli_checks.hpp"
#include "cvs/base/utc_time.hpp"
#include "cvs/certify/inputs.hpp"
#include "cvs/certify/plan.hpp"
#include "cvs/certify/runner.hpp"
#include "cvs/certify/tiers.hpp"
#include "cvs/config/config_error.hpp"
#include "cvs/config/layout.hpp"
#include "cvs/exec/launch.hpp"
#include "cvs/reporters.hpp"
#include "front_end.hpp"

#ifndef CVS_GIT_COMMIT
#define CVS_GIT_COMMIT "unknown"
#endif
#ifndef CVS_VERSION
#define CVS_VERSION "unknown"
#endif

namespace fs = std::filesystem;
using cvs::certify::Options;

namespace {

Options parse_options(CLI::App& app, int argc, char** argv, cvs::report::ReporterOptions& reports,
                      cvs::certify::PlanGuess& guess) {
  Options o;
  std::string cluster, config, dist, baseline, output, resume;
  app.allow_extras();
  app.add_option("--cluster", cluster, "the cluster file listing the hosts");
  app.add_option("--config", config, "a single-node suite config (preflight and the nodes tier)");
  app.add_option("--distributed-config", dist, "a distributed config: the links tier and the scaling ladder");
  app.add_option("--baseline", baseline, "a calibration of a known-good node (cvs calibrate)");
  app.add_option("--budget-minutes", o.budget_minutes,
                 "stop before a tier that would not end within this many minutes (0: no budget)")
      ->check(cvs::cli_checks::kNonNegative);
  app.add_option("--min-nodes", o.min_nodes,
                 "certified when at least this many nodes pass (default: every node)");
  app.add_option("--output", output, "the certification's folder (default: cvs-results/certify-<UTC time>)");
  app.add_flag("--drain", o.drain,
               "Slurm: drain each excluded node (scontrol update ... State=DRAIN Reason=...)");
  app.add_flag("--fixed-steps", o.fixed_steps,
               "benchmarks: every run its configured steps (on_inconclusive fail), no early stop");
  app.add_option("--resume", resume, "continue the certification in this folder (decided tiers are kept)");
  app.add_flag(
      "--plan", o.plan,
      "print the tiers, their runs and the estimated minutes, node-minutes and GPU-hours (from the "
      "history's last certification of this config and host count, else a guess), and start nothing");
  app.add_option("--plan-startup-s", guess.startup_s,
                 "--plan's guess of a run's start-up, compile and teardown")
      ->check(cvs::cli_checks::kNonNegative);
  app.add_option("--plan-step-s", guess.step_s, "--plan's guess of a training step's seconds")
      ->check(cvs::cli_checks::kNonNegative);
  cvs::fleet::add_policy_options(app, o.policy, o.max_parallel,
                                 "runs at once in a tier (default: every node)");
  app.add_option(
         "--detect-slowdown-pct", o.detect_slowdown_pct,
         "the nodes tier steps each run until its tokens/s interval is narrow enough to catch one "
         "node this % slow, up to 4 x its steps (above --min-deviation-pct; default 0: each run stops "
         "once its speed gates are decisive)")
      ->check(CLI::Range(0.0, 100.0));
  app.add_option(
         "--scaling-per-doubling-pct", o.per_doubling_pct,
         "the least scaling efficiency each doubling of the nodes may keep, in % (90: 81 % at 4 nodes)")
      ->check(CLI::Range(0.0, 100.0));
  cvs::fleet::add_report_options(app, reports, "certification");
  app.parse(argc, argv);
  auto abs = [](const std::string& s) { return s.empty() ? fs::path() : fs::absolute(s); };
  o.cluster = abs(cluster);
  o.config = abs(cvs::config_argument(config));  // a path, or a shipped config's name
  o.distributed_config = abs(cvs::config_argument(dist));
  o.baseline = abs(baseline);
  o.resume = abs(resume);
  o.output = !resume.empty() ? o.resume
             : output.empty()
                 ? fs::absolute(fs::path("cvs-results") / ("certify-" + cvs::utc_now("%Y%m%d-%H%M%S")))
                 : fs::absolute(output);
  o.suite_args = app.remaining();
  o.history = reports.history;
  reports.certify_files = true;
  o.tool_version = CVS_VERSION;
  o.git_commit = CVS_GIT_COMMIT;
  return o;
}

// Ctrl-C: passed on to every run (run_all), which stops its training and ends ERROR; the tier in
// flight is left undecided, the certificate written, and --resume continues from it.
void print_summary(const cvs::Certificate& c, const fs::path& out) {
  std::cout << "certify: " << to_string(c.verdict) << " - " << c.verdict_reason << "\n";
  for (const auto& t : c.tiers)
    std::cout << "  " << to_string(t.kind) << ": "
              << (t.state == cvs::TierState::Decided ? to_string(t.outcome, "?") : to_string(t.state))
              << (t.summary.empty() ? "" : "  " + t.summary)
              << (t.why_not_run.empty() ? "" : "  " + t.why_not_run) << "\n";
  // Where the node-minutes went, each tier's and the whole's (the runs' logs: run_timeline.hpp).
  cvs::PhaseTotals all;
  double minutes = 0;
  for (const auto& t : c.tiers) {
    all.add(t.phases, 1);
    minutes += t.node_minutes;
    if (const auto w = t.phases.words(); !w.empty())
      std::cout << "  " << to_string(t.kind) << " time: " << fmt::format("{:.1f}", t.node_minutes)
                << " node-minute(s): " << w << "\n";
  }
  if (const auto w = all.words(); !w.empty())
    std::cout << "time: " << fmt::format("{:.1f}", minutes) << " node-minute(s): " << w << "\n";
  const char* word = c.verdict == cvs::Verdict::Certified ? "CERTIFIED " : "healthy   ";
  for (const auto& n : c.certified) std::cout << word << n << "\n";
  for (const auto& e : c.excluded)
    std::cout << "EXCLUDED  " << e.node << "  (" << e.tier << ") " << e.evidence << "\n";
  std::cout << "certificate: " << (out / "certificate.html").string() << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_pattern("[%H:%M:%S] [%^%l%$] %v");
  CLI::App app{
      "jaxmaxtext_certify (cvs certify): preflight, nodes, links and a scaling ladder, each on the nodes the "
      "tier before left healthy; a certificate. Arguments it does not know pass to every suite run.",
      "cvs certify"};
  Options o;
  cvs::certify::Inputs in;
  cvs::report::ReporterOptions reports;  // the certificate's files, the history record, the exports
  cvs::certify::PlanGuess guess;
  if (auto rc = cvs::fleet::check_at_edge(app, "cvs certify", [&] {
        o = parse_options(app, argc, argv, reports, guess);
        cvs::certify::check_suite_args("jaxmaxtext_single", o.suite_args);  // a typo runs nothing
        in = cvs::certify::load_inputs(o);  // every check before any node runs or anything is written
        reports.history = o.history;        // resolved: a resumed certification's own store
      }))
    return *rc;
  if (o.plan)
    return cvs::fleet::run_at_edge(
        "cvs certify --plan",
        [&] {
          const auto store = cvs::history::Store::open(o.history);
          const auto earlier = store ? store->certification_times(in.certificate.inputs.config_sha256,
                                                                  static_cast<int>(in.cluster.nodes.size()))
                                     : std::nullopt;
          std::cout << to_text(cvs::certify::make_plan(o, in, earlier, guess));
          return 0;
        },
        "");
  cvs::install_interrupt_handler();
  auto& cert = in.certificate;
  // Caught once, here: whatever a tier throws (a config it derives, a write on a full disk, a
  // reporter), the stack unwinds first, so the Slurm allocation is released on every path.
  return cvs::fleet::run_at_edge(
      "cvs certify",
      [&] {
        cvs::certify::ProcessRunner runner(in.cluster);
        const int rc = cvs::certify::run(o, in, runner);
        const cvs::report::CertificationReport made{cert, in.cluster};
        for (const auto& line : cvs::report::run_reporters(cvs::report::reporters(reports),
                                                           {.folder = o.output, .certification = &made}))
          std::cerr << "certify: " << line << "\n";
        print_summary(cert, o.output);
        return rc;
      },
      "the certification stopped; " + o.output.string() + " keeps what was decided: cvs certify --resume " +
          o.output.string());
}
