#include "cvs/certify/plan.hpp"
#include "cvs/certify/tier_runs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace cvs::certify {

namespace {

// A tier's runs in words: its certain groups (certify/tier_runs.hpp).
std::string runs_of(TierKind k, const std::vector<RunGroup>& groups, std::size_t n) {
  if (k == TierKind::Scale) {
    std::string s;
    for (auto k2 : ladder(n)) s += (s.empty() ? "" : ", ") + std::to_string(k2);
    return "the ladder of " + s + " node(s)";
  }
  std::string s;
  for (const auto& g : groups)
    if (g.certain) s += (s.empty() ? "" : "; ") + g.what;
  return s;
}

struct Cost {
  double wall = 0, node = 0;  // seconds
};

// A tier's wall and node seconds from its groups, the configs' steps and the guess: the certain
// groups, or with `reruns` every group; `capped`: each run to its cap where it has one.
Cost guessed(const std::vector<RunGroup>& groups, std::size_t max_parallel, const PlanGuess& g, bool reruns,
             bool capped = false) {
  Cost c;
  for (const auto& r : groups) {
    if (!r.certain && !reruns) continue;
    const long long steps = capped && r.steps_at_cap > 0 ? r.steps_at_cap : r.steps;
    const double run = r.startups * g.startup_s + static_cast<double>(steps) * g.step_s;
    c.wall += static_cast<double>(rounds_of(r, max_parallel)) * run;
    c.node += static_cast<double>(r.runs * r.nodes) * run;
  }
  return c;
}

// The bounds beside a guessed estimate: every run to its cap for a precision target; every rerun
// the tier may call for.
std::string bounds(const std::vector<RunGroup>& groups, const Options& o, const Inputs& in,
                   const PlanGuess& g, TierKind k) {
  std::string s;
  const double target = in.certificate.inputs.detect_slowdown_pct;
  if (k == TierKind::Nodes && target > 0) {
    const auto most = guessed(groups, o.max_parallel, g, false, true);
    s += fmt::format(
        "; up to ~{:.1f} min, {:.1f} node-min if every run steps to its cap for --detect-slowdown-pct {:g}",
        most.wall / 60, most.node / 60, target);
  }
  std::string again;
  for (const auto& r : groups)
    if (!r.certain && !r.what.empty()) again += (again.empty() ? "" : ", ") + r.what;
  if (!again.empty()) {
    const auto most = guessed(groups, o.max_parallel, g, true);
    s += fmt::format("; at most ~{:.1f} min, {:.1f} node-min with every rerun it may call for ({})",
                     most.wall / 60, most.node / 60, again);
  }
  return s;
}

}  // namespace

Plan make_plan(const Options& o, const Inputs& in,
               const std::optional<history::Store::CertificationTimes>& earlier, const PlanGuess& guess) {
  Plan p;
  const std::size_t n = in.cluster.nodes.size();
  const std::string guess_words = fmt::format(
      "{:.0f} s of start-up, compile and teardown a run and {:g} s a step (a guess: --plan-startup-s, "
      "--plan-step-s)",
      guess.startup_s, guess.step_s);
  p.basis = earlier ? fmt::format(
                          "each tier's time in the history's certification {} ({}, {} host(s), {}); a tier "
                          "it did not decide: {}",
                          earlier->id, earlier->started_at, earlier->hosts, earlier->verdict, guess_words)
                    : "no earlier certification of this config and host count in the history: " + guess_words;
  for (const auto& t : in.certificate.tiers) {
    TierPlan tp;
    tp.kind = t.kind;
    const auto groups = tier_runs(t.kind, o, in, n);
    tp.runs = runs_of(t.kind, groups, n);
    const std::map<std::string, double>* rec = nullptr;
    if (earlier)
      if (const auto it = earlier->tiers.find(to_string(t.kind)); it != earlier->tiers.end())
        rec = &it->second;
    // The nodes tier's time depends on the precision its runs stepped for: another one's is no guide.
    const double target = in.certificate.inputs.detect_slowdown_pct;
    if (rec && t.kind == TierKind::Nodes) {
      const auto it = rec->find("detect_slowdown_pct");
      if (const double then = it == rec->end() ? 0 : it->second; then != target) {
        tp.runs += fmt::format(
            " (a guess: the history's certification stepped for --detect-slowdown-pct {:g})", then);
        rec = nullptr;
      }
    }
    if (rec && rec->count("seconds") && rec->count("node_minutes")) {
      tp.minutes = rec->at("seconds") / 60;
      tp.node_minutes = rec->at("node_minutes");
      tp.from_history = true;
    } else {
      const auto cost = guessed(groups, o.max_parallel, guess, false);
      tp.minutes = cost.wall / 60;
      tp.node_minutes = cost.node / 60;
      tp.runs += bounds(groups, o, in, guess, t.kind);
    }
    p.minutes += tp.minutes;
    p.node_minutes += tp.node_minutes;
    if (o.budget_minutes > 0 && p.budget.empty() && p.minutes > o.budget_minutes)
      p.budget = fmt::format("--budget-minutes {:g}: the {} tier and those after it would not start",
                             o.budget_minutes, to_string(t.kind));
    p.tiers.push_back(tp);
  }
  p.gpu_hours = p.node_minutes / 60 * in.gpus_per_node;
  return p;
}

std::string to_text(const Plan& p) {
  std::string s = "cvs certify --plan: nothing was started\n  from " + p.basis + "\n";
  for (const auto& t : p.tiers)
    s += fmt::format("  {:<9} ~{:.1f} min, {:.1f} node-min{}: {}\n", to_string(t.kind), t.minutes,
                     t.node_minutes, t.from_history ? "" : " (guess)", t.runs);
  s += fmt::format("estimate: {:.1f} min, {:.1f} node-minutes, {:.2f} GPU-hours\n", p.minutes, p.node_minutes,
                   p.gpu_hours);
  if (!p.budget.empty()) s += p.budget + "\n";
  return s;
}

}  // namespace cvs::certify
