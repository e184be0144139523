#include "cvs/certify/certificate.hpp"

#include "cvs/base/enum_names.hpp"
#include "cvs/base/exit_codes.hpp"
#include "cvs/config/config_error.hpp"
#include "cvs/config/json_fields.hpp"
#include "cvs/config/json_in.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>

namespace cvs {

using J = nlohmann::ordered_json;

namespace {

constexpr EnumWord<TierKind> kTierNames[] = {{TierKind::Preflight, "preflight"},
                                             {TierKind::Nodes, "nodes"},
                                             {TierKind::Links, "links"},
                                             {TierKind::Scale, "scale"}};
constexpr EnumWord<TierState> kStateNames[] = {
    {TierState::Pending, "pending"}, {TierState::Decided, "decided"}, {TierState::NotRun, "not run"}};
constexpr EnumWord<Verdict> kVerdictNames[] = {{Verdict::Certified, "CERTIFIED"},
                                               {Verdict::NotCertified, "NOT CERTIFIED"},
                                               {Verdict::Incomplete, "INCOMPLETE"},
                                               {Verdict::Error, "ERROR"}};

constexpr const char* kFix = "pass a certificate.json that cvs certify wrote, or start a new certification";

// [lo, hi], or nullopt for null.
std::optional<std::pair<double, double>> pair_from(const JsonIn& in, const char* k) {
  const J& v = in.at(k);
  if (v.is_null()) return std::nullopt;
  if (!v.is_array() || v.size() != 2) in.fail(in.at_ptr(k), "is not [lo, hi] or null");
  return std::pair{in.number(v[0], pointer_join(in.at_ptr(k), 0)),
                   in.number(v[1], pointer_join(in.at_ptr(k), 1))};
}

std::optional<Outcome> outcome_at(const JsonIn& in, const char* k) {
  const std::string s = in.req_str(k);
  const auto o = outcome_from_string(s);
  if (!o && !s.empty()) in.fail(in.at_ptr(k), "is '" + s + "', not an outcome (PASS, FAIL, ...)");
  return o;
}

constexpr auto kExclusionFields =
    std::make_tuple(field("node", &Exclusion::node), field("tier", &Exclusion::tier),
                    field("evidence", &Exclusion::evidence));

J exclusions_json(const std::vector<Exclusion>& v) {
  J a = J::array();
  for (const auto& e : v) write_fields(a.emplace_back(J::object()), e, kExclusionFields);
  return a;
}
std::vector<Exclusion> exclusions_from(const JsonIn& in, const char* k) {
  std::vector<Exclusion> v;
  for (std::size_t i = 0; i < in.array(k).size(); ++i)
    read_fields(in.element(k, i), v.emplace_back(), kExclusionFields);
  return v;
}

// A rung's plain fields; its outcomes and intervals are written beside them.
constexpr auto kRungFields = std::make_tuple(
    field("nodes", &Rung::nodes), field("failure", &Rung::failure), field("sweep", &Rung::sweep),
    field("tokens_per_sec_per_gpu", &Rung::tok_s_per_gpu), field("efficiency_pct", &Rung::efficiency_pct),
    field("bound_pct", &Rung::bound_pct), field("seconds", &Rung::seconds), field("steps", &Rung::steps));

J interval_json(const std::optional<double>& lo, const std::optional<double>& hi) {
  return lo && hi ? J::array({*lo, *hi}) : J(nullptr);
}

J rung_json(const Rung& r) {
  J j = J::object();
  write_fields(j, r, kRungFields);
  j["status"] = to_string(r.status, "");
  j["interval"] = r.interval ? J::array({r.interval->first, r.interval->second}) : J(nullptr);
  j["efficiency_interval_pct"] = interval_json(r.efficiency_lo_pct, r.efficiency_hi_pct);
  j["verdict"] = to_string(r.verdict);
  return j;
}

Rung rung_from(const JsonIn& in) {
  Rung r;
  read_fields(in, r, kRungFields);
  r.status = outcome_at(in, "status");
  r.interval = pair_from(in, "interval");
  if (const auto e = pair_from(in, "efficiency_interval_pct")) {
    r.efficiency_lo_pct = e->first;
    r.efficiency_hi_pct = e->second;
  }
  r.verdict = outcome_at(in, "verdict").value_or(Outcome::Inconclusive);
  return r;
}

// A tier's plain fields; its kind, state, outcome, exclusions and rungs are written beside them.
constexpr auto kTierFields = std::make_tuple(
    field("summary", &TierRecord::summary), field("why_not_run", &TierRecord::why_not_run),
    field("nodes_in", &TierRecord::nodes_in), field("reruns", &TierRecord::reruns),
    optional_field("ran", &TierRecord::ran), field("started_at", &TierRecord::started_at),
    field("ended_at", &TierRecord::ended_at), field("seconds", &TierRecord::seconds),
    field("node_minutes", &TierRecord::node_minutes), field("node_steps", &TierRecord::node_steps),
    field("dir", &TierRecord::dir),
    optional_field("run_seconds", &TierRecord::run_seconds),  // certificates before it: no estimate
    optional_field("budget_minutes", &TierRecord::budget_minutes),
    optional_field("detection_power_pct", &TierRecord::detection_power_pct),
    optional_field("detection_power_figure", &TierRecord::detection_power_figure));

// A tier's phases in node-minutes, its training share, and the compile cache's part.
J phases_json(const PhaseTotals& p) {
  const auto m = [](double s) { return std::round(s / 60 * 1000) / 1000; };
  return {{"startup", m(p.startup_s)},
          {"compile", m(p.compile_s)},
          {"training", m(p.training_s)},
          {"stalls", m(p.stall_s)},
          {"checkpoint", m(p.checkpoint_s)},
          {"teardown", m(p.teardown_s)},
          {"other", m(p.other_s)},
          {"training_share_pct", std::round(p.training_share() * 1000) / 10},
          {"runs", p.runs},
          {"train_step_from_cache", p.train_step_from_cache}};
}

PhaseTotals phases_from(const JsonIn& in) {
  PhaseTotals p;
  p.startup_s = in.num("startup") * 60;
  p.compile_s = in.num("compile") * 60;
  p.training_s = in.num("training") * 60;
  p.stall_s = in.num("stalls", 0.0) * 60;
  p.checkpoint_s = in.num("checkpoint") * 60;
  p.teardown_s = in.num("teardown") * 60;
  p.other_s = in.num("other") * 60;
  p.runs = in.integer<int>("runs");
  p.train_step_from_cache = in.integer<int>("train_step_from_cache");
  return p;
}

J tier_json(const TierRecord& t) {
  J j = {{"tier", to_string(t.kind)}, {"state", to_string(t.state)}, {"outcome", to_string(t.outcome, "")}};
  write_fields(j, t, kTierFields);
  j["excluded"] = exclusions_json(t.excluded);
  J rungs = J::array();
  for (const auto& r : t.rungs) rungs.push_back(rung_json(r));
  j["rungs"] = rungs;
  j["phase_node_minutes"] = phases_json(t.phases);
  return j;
}

TierRecord tier_from(const JsonIn& in) {
  TierRecord t;
  t.kind = in.one_of("tier", kTierNames);
  t.state = in.one_of("state", kStateNames);
  t.outcome = outcome_at(in, "outcome");
  read_fields(in, t, kTierFields);
  t.excluded = exclusions_from(in, "excluded");
  in.at("rungs");
  for (std::size_t i = 0; i < in.array("rungs").size(); ++i)
    t.rungs.push_back(rung_from(in.element("rungs", i)));
  if (in.has("phase_node_minutes")) t.phases = phases_from(in.object("phase_node_minutes"));  // older: none
  return t;
}

// certificate.json's /inputs, one list for the writer and the reader; min_deviation is written
// as a percentage beside them.
constexpr auto kInputFields = std::make_tuple(
    field("cluster_file", &CertificateInputs::cluster_file),
    field("cluster_sha256", &CertificateInputs::cluster_sha256), field("hosts", &CertificateInputs::hosts),
    field("config_file", &CertificateInputs::config_file),
    field("config_sha256", &CertificateInputs::config_sha256),
    field("distributed_config_file", &CertificateInputs::distributed_config_file),
    field("distributed_config_sha256", &CertificateInputs::distributed_config_sha256),
    field("baseline_file", &CertificateInputs::baseline_file),
    field("baseline_sha256", &CertificateInputs::baseline_sha256),
    field("baseline_provenance", &CertificateInputs::baseline_provenance),  // the calibration's, as it was
    field("min_nodes", &CertificateInputs::min_nodes),
    field("budget_minutes", &CertificateInputs::budget_minutes),
    field("scaling_per_doubling_pct", &CertificateInputs::scaling_per_doubling_pct),
    field("max_z", &CertificateInputs::max_z), field("min_fleet", &CertificateInputs::min_fleet),
    field("drain", &CertificateInputs::drain), field("early_stop", &CertificateInputs::early_stop),
    field("suite_args", &CertificateInputs::suite_args),
    optional_field("history", &CertificateInputs::history),  // certificates before it: none recorded
    optional_field("detect_slowdown_pct", &CertificateInputs::detect_slowdown_pct));  // before it: none

J inputs_json(const CertificateInputs& in) {
  J j = J::object();
  write_fields(j, in, kInputFields);
  j["min_deviation_pct"] = in.min_deviation * 100;
  return j;
}

CertificateInputs inputs_from(const JsonIn& j) {
  CertificateInputs in;
  read_fields(j, in, kInputFields);
  in.min_deviation = j.req_num("min_deviation_pct") / 100;
  return in;
}

}  // namespace

const char* to_string(TierKind t) {
  return word_of(kTierNames, t);
}
const char* to_string(TierState s) {
  return word_of(kStateNames, s);
}
const char* to_string(Verdict v) {
  return word_of(kVerdictNames, v);
}

TierRecord* Certificate::tier(TierKind k) {
  for (auto& t : tiers)
    if (t.kind == k) return &t;
  return nullptr;
}
const TierRecord* Certificate::tier(TierKind k) const {
  for (const auto& t : tiers)
    if (t.kind == k) return &t;
  return nullptr;
}

std::vector<std::string> Certificate::healthy() const {
  std::vector<std::string> out;
  for (const auto& h : inputs.hosts) {
    bool gone = false;
    for (const auto& t : tiers)
      if (t.state == TierState::Decided)
        for (const auto& e : t.excluded) gone = gone || e.node == h;
    if (!gone) out.push_back(h);
  }
  return out;
}

double run_estimate_s(const Certificate& c) {
  const auto* nodes = c.tier(TierKind::Nodes);
  return nodes && nodes->state == TierState::Decided ? nodes->run_seconds : 0.0;
}

std::string over_budget(double need, double budget_minutes, double elapsed_min) {
  if (budget_minutes <= 0) return "";
  const double left = budget_minutes - elapsed_min;
  if (left > 0 && need <= left) return "";
  return fmt::format("budget: about {:.1f} min needed, {:.1f} of --budget-minutes {} left", need,
                     std::max(0.0, left), budget_minutes);
}

std::vector<std::size_t> ladder(std::size_t n) {
  std::vector<std::size_t> r;
  for (std::size_t k = 1; k < n; k *= 2) r.push_back(k);
  if (n > 0) r.push_back(n);
  return r;
}

double scaling_bound_pct(std::size_t nodes, double per_doubling) {
  return 100.0 * std::pow(per_doubling, std::log2(static_cast<double>(std::max<std::size_t>(1, nodes))));
}

void score_ladder(std::vector<Rung>& rungs, double per_doubling) {
  if (rungs.empty()) return;
  const Rung& one = rungs.front();
  for (auto& r : rungs) {
    r.bound_pct = scaling_bound_pct(r.nodes, per_doubling);
    r.efficiency_pct.reset();
    r.efficiency_lo_pct.reset();
    r.efficiency_hi_pct.reset();
    // A run that failed its own gates still measured its speed; one that left no figure did not.
    if (!r.status || one.status != Outcome::Pass || one.tok_s_per_gpu <= 0 || r.tok_s_per_gpu <= 0) {
      r.verdict = r.status == Outcome::Fail ? Outcome::Fail : Outcome::Error;
      continue;
    }
    r.efficiency_pct = 100 * r.tok_s_per_gpu / one.tok_s_per_gpu;
    if (r.nodes == one.nodes) {  // the reference itself
      r.efficiency_lo_pct = r.efficiency_hi_pct = 100.0;
      r.verdict = Outcome::Pass;
      continue;
    }
    if (r.interval && one.interval && one.interval->first > 0) {
      r.efficiency_lo_pct = 100 * r.interval->first / one.interval->second;
      r.efficiency_hi_pct = 100 * r.interval->second / one.interval->first;
    }
    if (!r.efficiency_lo_pct) {  // a point estimate decides nothing either way
      r.verdict = Outcome::Inconclusive;
      continue;
    }
    r.verdict = *r.efficiency_lo_pct >= r.bound_pct  ? Outcome::Pass
                : *r.efficiency_hi_pct < r.bound_pct ? Outcome::Fail
                                                     : Outcome::Inconclusive;
  }
}

void decide(Certificate& c) {
  c.excluded.clear();
  for (const auto& t : c.tiers)
    if (t.state == TierState::Decided)
      c.excluded.insert(c.excluded.end(), t.excluded.begin(), t.excluded.end());
  c.certified = c.healthy();
  const std::string of = std::to_string(c.certified.size()) + " of " + std::to_string(c.inputs.hosts.size());
  const std::size_t need = c.inputs.min_nodes ? c.inputs.min_nodes : c.inputs.hosts.size();
  auto set = [&](Verdict v, std::string why) {
    c.verdict = v;
    c.verdict_reason = std::move(why);
  };
  for (const auto& t : c.tiers)
    if (t.state == TierState::Decided && t.outcome == Outcome::Error)
      return set(Verdict::Error,
                 std::string("the ") + to_string(t.kind) + " tier could not run its nodes: " + t.summary);
  if (c.certified.size() < need || c.certified.empty())
    return set(Verdict::NotCertified,
               of + " node(s) left healthy; " + std::to_string(need) + " needed" +
                   (c.inputs.min_nodes ? " (--min-nodes)" : " (every node: no --min-nodes)"));
  for (const auto& t : c.tiers)
    if (t.state != TierState::Decided)
      return set(Verdict::Incomplete, std::string("the ") + to_string(t.kind) + " tier did not run" +
                                          (t.why_not_run.empty() ? "" : ": " + t.why_not_run));
  for (const auto& t : c.tiers)
    if ((t.kind == TierKind::Scale || t.kind == TierKind::Links) && t.outcome != Outcome::Pass &&
        t.excluded.empty())
      return set(Verdict::NotCertified, std::string("the ") + to_string(t.kind) + " tier is " +
                                            to_string(t.outcome, "undecided") + ": " + t.summary);
  set(Verdict::Certified,
      of + " node(s) certified" +
          (c.inputs.min_nodes ? " (at least " + std::to_string(c.inputs.min_nodes) + " needed)" : ""));
}

int exit_code(const Certificate& c) {
  switch (c.verdict) {
    case Verdict::Certified:
      return kExitOk;
    case Verdict::Error:
      return kExitInfra;
    default:
      return kExitFail;
  }
}

J to_json(const Certificate& c) {
  J j = {{"schema_version", Certificate::kSchemaVersion},
         {"tool", "cvs-maxtext"},
         {"tool_version", c.tool_version},
         {"git_commit", c.git_commit},
         {"started_at", c.started_at},
         {"ended_at", c.ended_at},
         {"verdict", to_string(c.verdict)},
         {"verdict_reason", c.verdict_reason}};
  j["inputs"] = inputs_json(c.inputs);
  j["certified"] = c.certified;
  j["excluded"] = exclusions_json(c.excluded);
  J tiers = J::array();
  double node_minutes = 0;
  long long node_steps = 0;
  PhaseTotals phases;
  for (const auto& t : c.tiers) {
    tiers.push_back(tier_json(t));
    node_minutes += t.node_minutes;
    node_steps += t.node_steps;
    phases.add(t.phases, 1);
  }
  j["tiers"] = tiers;
  j["node_minutes"] = node_minutes;
  j["node_steps"] = node_steps;
  j["phase_node_minutes"] = phases_json(phases);
  j["drain_commands"] = c.drain_commands;
  return j;
}

Certificate read_certificate(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in)
    throw ConfigError(file.string(), "", "cannot read the certificate",
                      "pass the folder a cvs certify wrote");
  const auto j = J::parse(in, nullptr, false);
  if (j.is_discarded())
    throw ConfigError(file.string(), "", "is not JSON", "pass the certificate.json a cvs certify wrote");
  return certificate_from_json(j, file.string());
}

Certificate certificate_from_json(const J& j, const std::string& file) {
  const JsonIn root(j, "", file, kFix);
  const int v = root.integer<int>("schema_version", 0);
  if (v != Certificate::kSchemaVersion)
    root.fail("/schema_version",
              "is " + std::to_string(v) + ", this tool reads " + std::to_string(Certificate::kSchemaVersion));
  Certificate c;
  c.tool_version = root.req_str("tool_version");
  c.git_commit = root.req_str("git_commit");
  c.started_at = root.req_str("started_at");
  c.ended_at = root.req_str("ended_at");
  c.verdict = root.one_of("verdict", kVerdictNames);
  c.verdict_reason = root.req_str("verdict_reason");
  c.inputs = inputs_from(root.object("inputs"));
  c.certified = root.strings("certified");
  c.excluded = exclusions_from(root, "excluded");
  root.at("tiers");
  for (std::size_t i = 0; i < root.array("tiers").size(); ++i)
    c.tiers.push_back(tier_from(root.element("tiers", i)));
  c.drain_commands = root.strings("drain_commands");
  return c;
}

}  // namespace cvs
