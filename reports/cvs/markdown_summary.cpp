// `--summary-md FILE`: a session, fleet run or certification in Markdown, for a CI job's summary page
// (GitHub's $GITHUB_STEP_SUMMARY, a Jenkins description, a merge request comment): the verdict first, every
// gate that did not pass with its interval and words, the stages' counts, and links to the files.
#include <fmt/format.h>

#include <filesystem>
#include <string>

#include "cvs/base/format.hpp"
#include "cvs/base/text.hpp"
#include "cvs/catalog/stage_names.hpp"
#include "cvs/reporters.hpp"

namespace cvs::report {
namespace {

// A table cell: no newline, no unescaped pipe.
std::string cell(const std::string& s) {
  return escape_chars(s, {{'\n', " "}, {'\r', " "}, {'|', "\\|"}});
}

bool not_passed(Outcome o) {
  return o == Outcome::Fail || o == Outcome::Inconclusive || o == Outcome::Error;
}

std::string session_markdown(const Results& r, const std::string& folder) {
  std::string md = fmt::format("## {}: **{}**\n\n", r.suite, to_string(r.status()));
  md += fmt::format("Config `{}` ({}), {} node(s) × {} GPU(s), started {}.\n\n", r.config.file,
                    r.config.model, r.cluster.nodes.size(), r.config.gpus_per_node, r.started_at);
  std::string gates;
  for (const auto& [key, sweep] : r.sweeps)
    for (const auto& e : sweep.evaluations) {
      if (!not_passed(e.outcome)) continue;
      const std::string interval =
          e.interval ? "[" + short_number(e.interval->first) + ", " + short_number(e.interval->second) + "]"
                     : "-";
      const std::string gate = e.gate ? e.gate->kind + " " + short_number(e.gate->threshold) : "-";
      gates += fmt::format("| `{}` | {} | **{}** | {} | {} | {} | {} |\n", key, e.metric,
                           to_string(e.outcome), short_number(e.value), interval, gate, cell(e.message));
    }
  std::string stages;
  int passed = 0, failed = 0, errors = 0, skipped = 0;
  for (const auto& s : r.stages) {
    if (s.outcome == Outcome::Pass || s.outcome == Outcome::Record) ++passed;
    if (s.outcome == Outcome::Fail || s.outcome == Outcome::Inconclusive) ++failed;
    if (s.outcome == Outcome::Error) ++errors;
    if (s.outcome == Outcome::Skipped || s.outcome == Outcome::NA) ++skipped;
    if (not_passed(s.outcome) && s.stage != stage_names::kMetric)
      stages += fmt::format("| {} | **{}** | {} |\n", s.test, to_string(s.outcome), cell(s.message));
  }
  if (!gates.empty())
    md +=
        "### Gates not passed\n\n| Sweep | Metric | Outcome | Value | Interval | Gate | Why "
        "|\n|---|---|---|---|---|---|---|\n" +
        gates + "\n";
  if (!stages.empty())
    md += "### Stages not passed\n\n| Stage | Outcome | Why |\n|---|---|---|\n" + stages + "\n";
  md += fmt::format("Stages: {} passed, {} failed, {} errors, {} skipped or N/A.\n\n", passed, failed, errors,
                    skipped);
  md += fmt::format(
      "Files: [report.html]({0}/report.html) · [results.json]({0}/results.json) · "
      "[junit.xml]({0}/junit.xml)\n",
      folder);
  return md;
}

std::string fleet_markdown(const FleetReport& f, const std::string& folder) {
  const auto suspects = f.score.suspects();
  std::string md = fmt::format("## jaxmaxtext_fleet: **{}**\n\n{} node(s), {} suspect(s).\n\n",
                               to_string(suspects.empty() ? Outcome::Pass : Outcome::Fail),
                               f.score.nodes.size(), suspects.size());
  if (!suspects.empty()) {
    md += "| Node | Why |\n|---|---|\n";
    for (const auto& n : f.score.nodes)
      if (n.suspect) md += fmt::format("| {} | {} |\n", n.name, cell(fleet_reasons(n)));
    md += "\n";
  }
  if (f.pairs)
    for (const auto& [a, b] : f.pairs->slow_links) md += fmt::format("Slow link: {} ↔ {}\n\n", a, b);
  md += fmt::format(
      "Files: [fleet.html]({0}/fleet.html) · [fleet.json]({0}/fleet.json) · "
      "[suspect_nodes.txt]({0}/suspect_nodes.txt)\n",
      folder);
  return md;
}

std::string pct_cell(const std::optional<double>& v) {
  return v ? fmt::format("{:.1f}", *v) : "-";
}

std::string certification_markdown(const Certificate& c, const std::string& folder) {
  std::string md =
      fmt::format("## jaxmaxtext_certify: **{}**\n\n{}\n\n", to_string(c.verdict), cell(c.verdict_reason));
  std::string names;
  for (const auto& n : c.certified) names += (names.empty() ? "`" : ", `") + n + "`";
  md += fmt::format("Certified: {}.\n\n", names.empty() ? "none" : names);
  md += "| Tier | Outcome | Summary |\n|---|---|---|\n";
  for (const auto& t : c.tiers)
    md += fmt::format("| {} | **{}** | {} |\n", to_string(t.kind),
                      t.state == TierState::Decided ? to_string(t.outcome, "?") : to_string(t.state),
                      cell(t.summary.empty() ? t.why_not_run : t.summary));
  if (!c.excluded.empty()) {
    md += "\n| Excluded node | Tier | Why |\n|---|---|---|\n";
    for (const auto& x : c.excluded)
      md += fmt::format("| {} | {} | {} |\n", x.node, x.tier, cell(x.evidence));
  }
  if (const auto* scale = c.tier(TierKind::Scale); scale && !scale->rungs.empty()) {
    md += "\n| Nodes | Efficiency % | Interval | Bound % | Verdict |\n|---|---|---|---|---|\n";
    for (const auto& r : scale->rungs)
      md += fmt::format("| {} | {} | {} | {:.1f} | {} |\n", r.nodes, pct_cell(r.efficiency_pct),
                        r.efficiency_lo_pct && r.efficiency_hi_pct
                            ? "[" + pct_cell(r.efficiency_lo_pct) + ", " + pct_cell(r.efficiency_hi_pct) + "]"
                            : "-",
                        r.bound_pct, to_string(r.verdict));
  }
  md += fmt::format(
      "\nFiles: [certificate.html]({0}/certificate.html) · [certificate.json]({0}/certificate.json) · "
      "[slurm_exclude.txt]({0}/slurm_exclude.txt)\n",
      folder);
  return md;
}

class MarkdownSummaryReporter : public Reporter {
 public:
  explicit MarkdownSummaryReporter(std::string file) : file_(std::move(file)) {}
  std::string name() const override { return "summary"; }
  std::string write(const ReportContext& c) override {
    // The links from where the summary is, to the run's folder.
    std::error_code ec;
    auto rel = std::filesystem::relative(std::filesystem::absolute(c.folder),
                                         std::filesystem::absolute(file_).parent_path(), ec);
    const std::string folder =
        ec || rel.empty() ? std::filesystem::absolute(c.folder).string() : rel.string();
    if (c.certification)
      write_file_whole(file_, certification_markdown(c.certification->certificate, folder));
    else if (c.fleet)
      write_file_whole(file_, fleet_markdown(*c.fleet, folder));
    else if (c.results)
      write_file_whole(file_, session_markdown(*c.results, folder));
    else
      return "";
    return file_;
  }

 private:
  std::string file_;
};

}  // namespace

std::unique_ptr<Reporter> make_markdown_summary(const std::string& file) {
  return std::make_unique<MarkdownSummaryReporter>(file);
}

}  // namespace cvs::report
