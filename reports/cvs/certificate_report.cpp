#include "cvs/certificate_report.hpp"

#include <fmt/format.h>

#include <fstream>
#include <map>

#include "cvs/base/text.hpp"
#include "cvs/junit.hpp"

namespace cvs::report {
namespace {

std::string esc(const std::string& s) {
  return html_escape(s);
}

const char* verdict_color(Verdict v) {
  return v == Verdict::Certified ? "#1a7f37" : v == Verdict::NotCertified ? "#cf222e" : "#9a6700";
}

std::string tier_word(const TierRecord& t) {
  return t.state == TierState::Decided ? to_string(t.outcome, "?") : to_string(t.state);
}

std::string excluded_table(const Certificate& c) {
  if (c.excluded.empty()) return "<p>No node excluded.</p>";
  std::string h = "<table><tr><th>Node</th><th>Tier</th><th>Evidence</th></tr>";
  for (const auto& e : c.excluded)
    h += fmt::format("<tr class=\"bad\"><td>{}</td><td>{}</td><td>{}</td></tr>", esc(e.node), esc(e.tier),
                     esc(e.evidence));
  return h + "</table>";
}

std::string tiers_table(const Certificate& c) {
  std::string h =
      "<table><tr><th>Tier</th><th>Outcome</th><th>Nodes in</th><th>Excluded</th><th>Minutes</th>"
      "<th>Node-minutes</th><th>Node-steps</th><th>Budget</th><th>What it found</th></tr>";
  for (const auto& t : c.tiers)
    h += fmt::format(
        "<tr><td>{}</td><td "
        "class=\"{}\">{}</td><td>{}</td><td>{}</td><td>{:.1f}</td><td>{:.1f}</td><td>{}</td>"
        "<td>{}</td><td>{}</td></tr>",
        to_string(t.kind), t.outcome == Outcome::Pass && t.state == TierState::Decided ? "ok" : "bad",
        esc(tier_word(t)), t.nodes_in.size(), t.excluded.size(), t.seconds / 60, t.node_minutes, t.node_steps,
        t.budget_minutes > 0 ? fmt::format("{} min", t.budget_minutes) : std::string("none"),
        esc(t.state == TierState::Decided ? t.summary : t.why_not_run));
  return h + "</table>";
}

// Where each tier's node-minutes went (its runs' phases, from their logs), and what each ran.
std::string time_table(const Certificate& c) {
  PhaseTotals all;
  std::string rows;
  const auto row = [](const std::string& name, const PhaseTotals& p, const std::string& ran) {
    const auto m = [](double s) { return fmt::format("{:.2f}", s / 60); };
    return fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0f} %</td>"
        "<td>{} of {}</td><td>{}</td></tr>",
        esc(name), m(p.training_s), m(p.startup_s), m(p.compile_s), m(p.checkpoint_s), m(p.teardown_s),
        m(p.other_s), p.training_share() * 100, p.train_step_from_cache, p.runs, esc(ran));
  };
  for (const auto& t : c.tiers) {
    if (t.phases.runs == 0) continue;
    all.add(t.phases, 1);
    rows += row(to_string(t.kind), t.phases, t.ran);
  }
  if (all.runs == 0) return "";
  return "<h2>Where the time went</h2><p>Node-minutes of each tier's runs by phase, from their logs: "
         "start-up "
         "(imports, JAX and model init), compile (XLA, before the first step), training (stepping), "
         "checkpoint I/O, teardown; other is the runs' time their logs leave out (setup probe, containers, "
         "the controller). Cached: runs whose train step compiled from the persistent cache.</p>"
         "<table><tr><th>Tier</th><th>Training</th><th>Start-up</th><th>Compile</th><th>Checkpoint I/O</th>"
         "<th>Teardown</th><th>Other</th><th>Training share</th><th>Cached</th><th>Ran</th></tr>" +
         rows + row("all", all, "") + "</table>";
}

std::string ladder_table(const Certificate& c) {
  const auto* t = c.tier(TierKind::Scale);
  if (!t || t->rungs.empty()) return "";
  std::string h =
      "<h2>Scaling ladder</h2><p>Tokens/s per GPU of each rung against the 1-node rung measured in this "
      "certification; the interval from the two runs' steady-state intervals; the bound is " +
      fmt::format("{:.0f}", c.inputs.scaling_per_doubling_pct) +
      " % per doubling.</p><table><tr><th>Nodes</th><th>Run</th><th>Tokens/s/GPU</th><th>Efficiency</th>"
      "<th>Interval</th><th>Bound</th><th>Verdict</th></tr>";
  for (const auto& g : t->rungs)
    h += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{:.1f}</td><td>{}</td><td>{}</td><td>{:.1f} %</td><td "
        "class=\"{}\">{}</td></tr>",
        g.nodes, esc(to_string(g.status, "no results")), g.tok_s_per_gpu,
        g.efficiency_pct ? fmt::format("{:.1f} %", *g.efficiency_pct) : "-",
        g.efficiency_lo_pct ? fmt::format("[{:.1f}, {:.1f}] %", *g.efficiency_lo_pct, *g.efficiency_hi_pct)
                            : "-",
        g.bound_pct, g.verdict == Outcome::Pass ? "ok" : "bad", to_string(g.verdict));
  return h + "</table>";
}

std::string inputs_table(const Certificate& c) {
  const auto& i = c.inputs;
  auto row = [](const std::string& k, const std::string& file, const std::string& sha) {
    return file.empty() ? std::string()
                        : fmt::format("<tr><td>{}</td><td>{}</td><td><code>{}</code></td></tr>", k, esc(file),
                                      esc(sha.substr(0, 16)));
  };
  std::string h = "<h2>Inputs</h2><table><tr><th></th><th>File</th><th>sha256</th></tr>" +
                  row("cluster", i.cluster_file, i.cluster_sha256) +
                  row("config", i.config_file, i.config_sha256) +
                  row("distributed config", i.distributed_config_file, i.distributed_config_sha256) +
                  row("calibration", i.baseline_file, i.baseline_sha256) + "</table>";
  if (!i.history.empty())
    h += "<p>Recorded in <code>" + esc(i.history) + "</code> (the certification and every run of it).</p>";
  h += fmt::format(
      "<p>Outliers: modified z beyond {} and at least {:.0f} % from the median (fleets of {} or more); "
      "scaling bound "
      "{:.0f} % per doubling; {}; {}; {}.</p>",
      i.max_z, i.min_deviation * 100, i.min_fleet, i.scaling_per_doubling_pct,
      !i.early_stop ? "fixed steps (--fixed-steps: no early stop)"
      : i.detect_slowdown_pct > 0
          ? fmt::format("every speed gate with on_inconclusive extend (stop once decisive), the nodes tier's "
                        "runs also until they could see a node {:g} % slow (--detect-slowdown-pct)",
                        i.detect_slowdown_pct)
          : "every speed gate with on_inconclusive extend (stop once decisive)",
      i.min_nodes ? fmt::format("certified with at least {} node(s)", i.min_nodes) : "every node must pass",
      i.budget_minutes > 0 ? fmt::format("budget {} min", i.budget_minutes) : "no budget");
  if (!i.baseline_provenance.is_null())
    h += "<p>Calibration provenance: <code>" + esc(i.baseline_provenance.dump()) + "</code></p>";
  if (!c.drain_commands.empty()) {
    h += "<h2>Drained (--drain)</h2><pre>";
    for (const auto& d : c.drain_commands) h += esc(d) + "\n";
    h += "</pre>";
  }
  return h;
}

}  // namespace

std::string render_certificate_html(const Certificate& c) {
  std::string h =
      "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>cvs certify: " +
      std::string(to_string(c.verdict)) +
      "</title><style>body{font-family:sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse;"
      "margin:.5em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}"
      ".bad{color:#cf222e}.ok{color:#1a7f37}.verdict{font-size:1.6em;font-weight:bold;padding:.4em "
      ".8em;color:#fff;"
      "display:inline-block}</style></head><body>";
  h += fmt::format("<div class=\"verdict\" style=\"background:{}\">{}</div>", verdict_color(c.verdict),
                   to_string(c.verdict));
  h += "<p>" + esc(c.verdict_reason) + "</p>";
  h += fmt::format("<p><b>Certified ({}):</b> {}</p>", c.certified.size(), [&] {
    std::string s;
    for (const auto& n : c.certified) s += (s.empty() ? "" : ", ") + esc(n);
    return s.empty() ? std::string("none") : s;
  }());
  h += "<h2>Excluded</h2>" + excluded_table(c);
  h += "<h2>Tiers</h2>" + tiers_table(c) + time_table(c) + ladder_table(c) + inputs_table(c);
  h += fmt::format("<p>cvs-maxtext {} (commit {}), {} to {}.</p></body></html>\n", esc(c.tool_version),
                   esc(c.git_commit), esc(c.started_at), esc(c.ended_at));
  return h;
}

void write_certificate_files(const std::filesystem::path& dir, const Certificate& c, const Cluster& cluster) {
  write_file_whole(dir / "certificate.html", render_certificate_html(c));
  write_file_whole(dir / "junit.xml", render_certificate_junit(c));
  std::vector<std::string> excluded;
  for (const auto& e : c.excluded) excluded.push_back(e.node);
  write_slurm_exclude(dir / "slurm_exclude.txt", hosts_by_name(cluster), excluded);
  if (!c.certified.empty()) write_cluster_file_of(dir / "healthy_cluster.json", cluster, c.certified);
}

}  // namespace cvs::report
