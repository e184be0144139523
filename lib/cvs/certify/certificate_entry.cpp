#include "cvs/certify/certificate_entry.hpp"

#include <algorithm>
#include <string>

#include "cvs/catalog/metric_catalog.hpp"

namespace fs = std::filesystem;

namespace cvs::certify {

using history::MetricEntry;
using history::NodeEntry;
using history::SessionEntry;

namespace {

const std::string kTokS(to_string(Metric::TokensPerSecPerGpu));

// A certification's verdict as a session's status: CERTIFIED passes, NOT CERTIFIED fails, a
// certification that ended early (budget, Ctrl-C) decided nothing, an infrastructure error is one.
Outcome status_of(Verdict v) {
  switch (v) {
    case Verdict::Certified:
      return Outcome::Pass;
    case Verdict::NotCertified:
      return Outcome::Fail;
    case Verdict::Incomplete:
      return Outcome::Inconclusive;
    case Verdict::Error:
      break;
  }
  return Outcome::Error;
}

// Each rung of the ladder as the sweep "rung-<nodes>": its tokens/s/GPU and its efficiency
// against the 1-node rung, each with its interval; the efficiency carries the rung's verdict.
void add_rungs(SessionEntry& e, const std::vector<Rung>& rungs) {
  for (const auto& r : rungs) {
    const std::string sweep = "rung-" + std::to_string(r.nodes);
    MetricEntry speed{
        sweep, kTokS,   history::stored_figure(r.tok_s_per_gpu), history::stored_figure(r.tok_s_per_gpu), {},
        {},    r.status};
    if (r.interval) {
      speed.lo = history::stored_figure(r.interval->first);
      speed.hi = history::stored_figure(r.interval->second);
    }
    e.metrics.push_back(std::move(speed));
    if (r.efficiency_pct)
      e.metrics.push_back({sweep, std::string(to_string(Metric::ScalingEfficiencyPct)), r.efficiency_pct,
                           r.efficiency_pct, r.efficiency_lo_pct, r.efficiency_hi_pct, r.verdict});
  }
}

// Each decided tier's time as the sweep "tier-<kind>": its wall seconds, its node-minutes and their
// phases (what cvs certify --plan estimates from).
void add_tier_times(SessionEntry& e, const Certificate& c) {
  for (const auto& t : c.tiers) {
    if (t.state != TierState::Decided) continue;
    const std::string sweep = std::string("tier-") + to_string(t.kind);
    const auto add = [&](const char* metric, double v) {
      e.metrics.push_back({sweep, metric, v, v, {}, {}, t.outcome});
    };
    add("seconds", t.seconds);
    add("node_minutes", t.node_minutes);
    add("nodes_in", static_cast<double>(t.nodes_in.size()));
    // What the nodes tier's runs stepped for (its time depends on it: cvs certify --plan).
    if (t.kind == TierKind::Nodes) add("detect_slowdown_pct", c.inputs.detect_slowdown_pct);
    if (t.phases.runs == 0) continue;
    add("training_node_minutes", t.phases.training_s / 60);
    add("startup_node_minutes", t.phases.startup_s / 60);
    add("compile_node_minutes", t.phases.compile_s / 60);
    add("checkpoint_node_minutes", t.phases.checkpoint_s / 60);
    add("teardown_node_minutes", t.phases.teardown_s / 60);
    add("other_node_minutes", t.phases.other_s / 60);
  }
}

}  // namespace

history::SessionEntry entry_of_certificate(const Certificate& c, const fs::path& folder) {
  using namespace history;
  SessionEntry e;
  e.kind = "certify";
  e.suite = "jaxmaxtext_certify";
  e.source = folder.string();
  e.started_at = c.started_at;
  e.finished_at = c.ended_at;
  e.revision = c.ended_at;  // a resumed certification keeps its start: its end tells the parts apart
  e.status = status_of(c.verdict);
  e.config_file = c.inputs.config_file;
  e.config_sha256 = c.inputs.config_sha256;
  e.cluster = c.inputs.cluster_file;
  e.nodes = static_cast<int>(c.inputs.hosts.size());
  e.provenance = {{"verdict", to_string(c.verdict)},
                  {"verdict_reason", c.verdict_reason},
                  {"tool_version", c.tool_version},
                  {"git_commit", c.git_commit},
                  {"distributed_config", c.inputs.distributed_config_file},
                  {"baseline", c.inputs.baseline_file}};
  if (const auto* scale = c.tier(TierKind::Scale)) add_rungs(e, scale->rungs);
  add_tier_times(e, c);
  // Every host: excluded (a suspect, in its tier's words), certified, or neither (not reached).
  for (const auto& host : c.inputs.hosts) {
    NodeEntry n{host, std::nullopt, false, "", std::nullopt};
    if (std::find(c.certified.begin(), c.certified.end(), host) != c.certified.end())
      n.outcome = Outcome::Pass;
    for (const auto& x : c.excluded)
      if (x.node == host) {
        n.outcome = Outcome::Fail;
        n.suspect = true;
        n.evidence = x.tier + ": " + x.evidence;
      }
    e.node_entries.push_back(std::move(n));
  }
  e.id = session_id(e);
  return e;
}

SessionEntry entry_of_folder(const fs::path& path) {
  if (fs::is_directory(path) && fs::exists(path / "certificate.json"))
    return entry_of_certificate(read_certificate(path / "certificate.json"), path);
  return history::entry_of_folder(path);
}

}  // namespace cvs::certify
