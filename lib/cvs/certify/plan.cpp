#include "cvs/certify/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace cvs::certify {

namespace {

std::size_t batches(std::size_t runs, std::size_t max_parallel) {
  const std::size_t at_once = max_parallel ? std::min(max_parallel, runs) : runs;
  return at_once ? (runs + at_once - 1) / at_once : 0;
}

std::string runs_of(TierKind k, const Options& o, const Inputs& in, std::size_t n) {
  switch (k) {
    case TierKind::Preflight:
      return "each node's setup" + std::string(in.distributed_config.empty()
                                                   ? ""
                                                   : ", and the distributed config's setup and RDMA check");
    case TierKind::Nodes:
      if (user_filter(o)) return "the stages the --gtest_filter keeps, on each node";
      return fmt::format("the setup and {} sweep(s)' training and speed gates on each node{}",
                         in.single_steps.size(),
                         in.checkpoint_resume ? "; the checkpoint save and resume once, on one node" : "");
    case TierKind::Links:
      return fmt::format("two rounds of {} two-node run(s)", n / 2);
    case TierKind::Scale: {
      std::string s;
      for (auto k2 : ladder(n)) s += (s.empty() ? "" : ", ") + std::to_string(k2);
      return "the ladder of " + s + " node(s)";
    }
  }
  return "";
}

// A tier's wall and node seconds from the configs' steps and the guess.
// capped: the nodes tier's runs each to its cap (statistics.extend_max_steps), as a precision
// target (--detect-slowdown-pct) may have them step.
std::pair<double, double> guessed(TierKind k, const Options& o, const Inputs& in, std::size_t n,
                                  const PlanGuess& g, bool capped = false) {
  const auto run = [&](long long steps) { return g.startup_s + static_cast<double>(steps) * g.step_s; };
  const auto per_node_batches = static_cast<double>(batches(n, o.max_parallel));
  switch (k) {
    case TierKind::Preflight: {
      const double per = g.startup_s / 4 * (in.distributed_config.empty() ? 1 : 2);  // setup alone
      return {per_node_batches * per, static_cast<double>(n) * per};
    }
    case TierKind::Nodes: {
      double per = 0;
      for (auto s : capped ? in.single_caps : in.single_steps) per += run(s);
      const double ck = in.checkpoint_resume && !user_filter(o)
                            ? 2 * g.startup_s + static_cast<double>(in.checkpoint_steps) * g.step_s
                            : 0;
      return {per_node_batches * per + ck, static_cast<double>(n) * per + ck};
    }
    case TierKind::Links: {
      const std::size_t pairs = n / 2;
      const double per = run(in.distributed_steps);
      return {2 * static_cast<double>(batches(pairs, o.max_parallel)) * per,
              2 * static_cast<double>(pairs) * 2 * per};
    }
    case TierKind::Scale: {
      double wall = 0, node = 0;
      for (auto k2 : ladder(n)) {
        wall += run(in.distributed_steps);
        node += static_cast<double>(k2) * run(in.distributed_steps);
      }
      return {wall, node};
    }
  }
  return {0, 0};
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
    tp.runs = runs_of(t.kind, o, in, n);
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
      const auto [wall, node] = guessed(t.kind, o, in, n, guess);
      tp.minutes = wall / 60;
      tp.node_minutes = node / 60;
      if (t.kind == TierKind::Nodes && target > 0) {
        const auto [most_wall, most_node] = guessed(t.kind, o, in, n, guess, true);
        tp.runs += fmt::format(
            "; up to ~{:.1f} min, {:.1f} node-min if every run steps to its cap for "
            "--detect-slowdown-pct {:g}",
            most_wall / 60, most_node / 60, target);
      }
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
