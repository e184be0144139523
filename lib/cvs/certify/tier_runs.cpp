#include "cvs/certify/tier_runs.hpp"

#include <fmt/format.h>

#include <iterator>
#include <numeric>

namespace cvs::certify {

namespace {

std::vector<RunGroup> preflight_runs(const Inputs& in, std::size_t n) {
  std::vector<RunGroup> v{{"each node's setup", n, 1, 0.25, 0, 0, true}};
  if (!in.distributed_config.empty())
    v.push_back({"the distributed config's setup and RDMA check on each node", n, 1, 0.25, 0, 0, true});
  return v;
}

// Under the user's --gtest_filter: the stages it keeps, no steps past them, no checkpoint run of
// the tier's own; a node slow on speed alone runs once more either way (NodesTier).
std::vector<RunGroup> nodes_runs(const Options& o, const Inputs& in, std::size_t n) {
  const bool filtered = user_filter(o);
  RunGroup each{filtered ? std::string("the stages the --gtest_filter keeps, on each node")
                         : fmt::format("the setup and {} sweep(s)' training and speed gates on each node",
                                       in.single_steps.size()),
                n,
                1,
                static_cast<double>(in.single_steps.size()),
                std::accumulate(in.single_steps.begin(), in.single_steps.end(), 0LL),
                filtered ? 0 : std::accumulate(in.single_caps.begin(), in.single_caps.end(), 0LL),
                true};
  std::vector<RunGroup> v{each};
  if (!filtered && in.checkpoint_resume)
    v.push_back({"the checkpoint save and resume once, on one node", 1, 1, 2, in.checkpoint_steps, 0, true});
  each.what = "each node slow on speed alone once more";
  each.certain = false;
  v.push_back(each);
  return v;
}

std::vector<RunGroup> links_runs(const Inputs& in, std::size_t n) {
  const std::size_t pairs = (n + 1) / 2;  // an odd last node pairs with the first
  return {{fmt::format("{} two-node run(s)", pairs), pairs, 2, 1, in.distributed_steps, 0, true},
          {"each slow pair once more, and each of its nodes with a known-good node (each slow run of those "
           "once more)",
           5 * pairs, 2, 1, in.distributed_steps, 0, false}};
}

std::vector<RunGroup> scale_runs(const Inputs& in, std::size_t n) {
  std::vector<RunGroup> v;
  for (auto k : ladder(n))
    v.push_back({fmt::format("{} node(s)", k), 1, k, 1, in.distributed_steps, 0, true});
  // The reruns in one sentence (the plan's words), on the first of their groups.
  static_assert(std::size(kRungRerunMultiples) == 2, "the words say twice");
  const std::string again =
      fmt::format("each rung twice more ({}x and {}x its steps) while it has no interval",
                  kRungRerunMultiples[0], kRungRerunMultiples[1]);
  const auto rungs = v.size();
  for (auto k : ladder(n))
    for (auto m : kRungRerunMultiples)
      v.push_back({v.size() == rungs ? again : "", 1, k, 1, m * in.distributed_steps, 0, false});
  return v;
}

}  // namespace

std::vector<RunGroup> tier_runs(TierKind k, const Options& o, const Inputs& in, std::size_t n) {
  switch (k) {
    case TierKind::Preflight:
      return preflight_runs(in, n);
    case TierKind::Nodes:
      return nodes_runs(o, in, n);
    case TierKind::Links:
      return links_runs(in, n);
    case TierKind::Scale:
      return scale_runs(in, n);
  }
  return {};
}

std::size_t rounds_of(const RunGroup& g, std::size_t max_parallel) {
  const std::size_t at_once = max_parallel ? std::min(max_parallel, g.runs) : g.runs;
  return at_once ? (g.runs + at_once - 1) / at_once : 0;
}

}  // namespace cvs::certify
