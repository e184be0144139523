// The summary of what a node's sampler sent during one run: its samples per GPU and for the host,
// the training's own samples told from the import and compile before them.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <span>

#include "cvs/results/telemetry_diagnosis.hpp"
#include "cvs/results/telemetry_record.hpp"
#include "cvs/statistics/metrics.hpp"

namespace cvs {
namespace {

// A sample at or above this utilisation is under load.
constexpr double kBusyUtilPct = 50;

std::optional<Spread> spread_of(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  Spread s;
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  s.median = percentile_in_place(v, 50);
  return s;
}

// Per interval between consecutive samples: the change of a cumulative counter over the seconds.
template <class Get>
std::vector<double> rates(std::span<const HostSample> s, Get get, double scale) {
  std::vector<double> out;
  for (std::size_t i = 1; i < s.size(); ++i) {
    const auto a = get(s[i - 1]), b = get(s[i]);
    const double dt = s[i].t - s[i - 1].t;
    if (a && b && dt > 0 && *b >= *a) out.push_back((*b - *a) / scale / dt);
  }
  return out;
}

void gpu_figure(GpuTelemetry& g, const char* name, const std::vector<double>& v) {
  if (auto s = spread_of(v)) g.figures[name] = *s;
}

// The link under load (the busy samples': an idle GPU drops its link to gen 1 by design) and the
// error counters over every sample of the run (an ECC error during the compile counts as much as
// one during the steps), the memory's pending repairs as the most any sample said.
void counters(GpuTelemetry& g, const std::vector<const GpuSample*>& all);

void link_and_errors(GpuTelemetry& g, const std::vector<const GpuSample*>& all) {
  for (const auto* x : all) {
    if (x->pcie_width_max) g.pcie_width_max = std::max(g.pcie_width_max.value_or(0.0), *x->pcie_width_max);
    if (x->pcie_gen_max) g.pcie_gen_max = std::max(g.pcie_gen_max.value_or(0.0), *x->pcie_gen_max);
    if (!x->bus_id.empty()) g.bus_id = x->bus_id;
    if (x->power_max_limit_w) g.power_max_limit_w = x->power_max_limit_w;
    g.pages_pending = g.pages_pending || x->pages_pending.value_or(false);
    if (x->pages_retired) g.pages_retired = std::max(g.pages_retired.value_or(0.0), *x->pages_retired);
    if (x->pages_unreservable)
      g.pages_unreservable = std::max(g.pages_unreservable.value_or(0.0), *x->pages_unreservable);
    if (x->remap_pending) g.remap_pending = std::max(g.remap_pending.value_or(0.0), *x->remap_pending);
    if (x->remap_failure) g.remap_failure = std::max(g.remap_failure.value_or(0.0), *x->remap_failure);
    if (!(x->util_pct && *x->util_pct >= kBusyUtilPct) || x->idle) continue;
    if (x->pcie_width) g.pcie_width_min = std::min(g.pcie_width_min.value_or(1e9), *x->pcie_width);
    if (x->pcie_gen) g.pcie_gen_min = std::min(g.pcie_gen_min.value_or(1e9), *x->pcie_gen);
  }
  counters(g, all);
}

// A counter's rise over the run: its last value less its first (nullopt when never read).
template <class Member>
std::optional<double> rise(const std::vector<const GpuSample*>& all, Member member) {
  std::optional<double> first, last;
  for (const auto* x : all)
    if (const auto v = (*x).*member) {
      if (!first) first = v;
      last = v;
    }
  if (!first) return std::nullopt;
  return *last - *first;
}

// The error counters' rises over the run, per hardware block too (the blocks whose count rose).
void counters(GpuTelemetry& g, const std::vector<const GpuSample*>& all) {
  auto delta = [&](auto member) { return rise(all, member); };
  g.ecc_corrected_delta = delta(&GpuSample::ecc_corrected);
  g.ecc_uncorrected_delta = delta(&GpuSample::ecc_uncorrected);
  g.pcie_replays_delta = delta(&GpuSample::pcie_replays);
  g.pcie_recoveries_delta = delta(&GpuSample::pcie_recoveries);
  g.pcie_naks_delta = delta(&GpuSample::pcie_naks);
  g.pages_retired_delta = delta(&GpuSample::pages_retired);
  // Per block: the blocks whose counters rose.
  auto block_deltas = [&](auto member, std::map<std::string, double>& out) {
    std::map<std::string, double> first, last;
    for (const auto* x : all)
      for (const auto& [block, v] : (*x).*member) {
        first.emplace(block, v);
        last[block] = v;
      }
    for (const auto& [block, v] : last)
      if (v > first[block]) out[block] = v - first[block];
  };
  block_deltas(&GpuSample::ecc_block_corrected, g.ecc_corrected_blocks);
  block_deltas(&GpuSample::ecc_block_uncorrected, g.ecc_uncorrected_blocks);
}

// One GPU: its figures over the training's samples `s`, its link and error counters over `all`.
// The power cap among its slowing reasons is counted apart (power_capped_fraction): whether it
// slowed the GPU is the diagnosis's to say (a GPU at its own full limit works as built), after
// every GPU of the node is summarised; `capped_only` counts the samples it was the only reason.
GpuTelemetry summarize_gpu(int index, const std::vector<const GpuSample*>& s,
                           const std::vector<const GpuSample*>& all, std::size_t& capped_only) {
  GpuTelemetry g;
  g.index = index;
  g.samples = s.size();
  std::map<std::string, std::vector<double>> f;
  std::size_t throttled = 0, capped = 0;
  capped_only = 0;
  std::map<std::string, std::size_t> reasons;
  for (const auto* x : s) {
    auto add = [&](const char* k, const std::optional<double>& v) {
      if (v) f[k].push_back(*v);
    };
    add("power_w", x->power_w);
    // An idle GPU parks its clocks (a real H200: 345 MHz before the work starts): the clock
    // figures are the busy samples' (the chart keeps every sample).
    const bool idle = x->idle || (x->util_pct && *x->util_pct <= 0);
    if (!idle) {
      add("sm_clock_mhz", x->sm_clock_mhz);
      add("mem_clock_mhz", x->mem_clock_mhz);
    }
    // Under load (the clock a GPU holds at its power cap): what "clocked down" is judged on.
    if (x->util_pct && *x->util_pct >= kBusyUtilPct) add("sm_clock_busy_mhz", x->sm_clock_mhz);
    add("temp_c", x->temp_c);
    add("temp_hotspot_c", x->temp_hotspot_c);
    add("temp_mem_c", x->temp_mem_c);
    add("util_pct", x->util_pct);
    g.sm_clock_mhz.push_back(x->sm_clock_mhz.value_or(NAN));
    g.power_w.push_back(x->power_w.value_or(NAN));
    g.temp_c.push_back(x->temp_hotspot_c.value_or(x->temp_c.value_or(NAN)));
    if (x->power_limit_w) g.power_limit_w = std::min(g.power_limit_w.value_or(1e18), *x->power_limit_w);
    if (x->power_default_limit_w) g.power_default_limit_w = x->power_default_limit_w;
    bool slowed = false, cap = false;
    for (const auto& r : x->throttle) {
      if (r == kPowerCapReason) {
        cap = true;
        continue;
      }
      ++reasons[r];
      slowed = true;
    }
    capped += cap;
    capped_only += cap && !slowed;
    throttled += slowed;
  }
  for (const auto& [k, v] : f) gpu_figure(g, k.c_str(), v);
  const double n = std::max<double>(1.0, static_cast<double>(s.size()));
  g.throttled_fraction = static_cast<double>(throttled) / n;
  g.power_capped_fraction = static_cast<double>(capped) / n;
  for (const auto& [r, c] : reasons) g.throttle_reasons[r] = static_cast<double>(c) / n;
  link_and_errors(g, all);
  return g;
}

}  // namespace

namespace {

// Where the training itself starts among the samples: the first that saw a step logged (the ones
// before are import and compile: on a real H200 most of a short run's samples, at idle power and
// clocks). 0 when the sampler could not tell, or no step was logged at all.
std::size_t training_start(const std::vector<HostSample>& all, NodeTelemetry& t) {
  const auto first =
      std::find_if(all.begin(), all.end(), [](const HostSample& h) { return h.training.value_or(false); });
  if (!all.empty() && all.front().training_log_unreadable)
    t.notes.push_back(
        "the training's log is not readable where the sampler runs: the figures cover every sample");
  if (first == all.end()) return 0;
  t.samples_before_training = static_cast<std::size_t>(first - all.begin());
  if (t.samples_before_training > 0)
    t.notes.push_back(
        fmt::format("{} of {} samples came before the training's first step (import, compile): "
                    "left out of the figures",
                    t.samples_before_training, all.size()));
  return t.samples_before_training;
}

// The processes on the GPUs that are not the training's, over the training's samples. A pid this
// namespace does not have is another namespace's: foreign when the training's own processes are
// seen in the lists (the namespaces agree), else whose it is cannot be told (said once).
void shared_gpus(std::span<const HostSample> s, NodeTelemetry& t) {
  std::size_t listed = 0;
  bool ours_seen = false;
  std::map<std::pair<int, long long>, std::pair<SharedGpu, std::size_t>> seen;
  std::vector<long long> unseen;
  for (const auto& h : s) {
    if (!h.processes || !h.processes->error.empty()) continue;
    ++listed;
    for (const auto& x : h.processes->processes) {
      const auto o = h.owners.find(x.pid);
      const auto owner = o == h.owners.end() ? ProcessOwner::Unseen : o->second;
      if (owner == ProcessOwner::Ours) {
        ours_seen = true;
        continue;
      }
      auto& [rec, n] = seen[{x.gpu, x.pid}];
      if (n == 0) rec.process = x;
      if (x.memory_mib)
        rec.process.memory_mib = std::max(rec.process.memory_mib.value_or(0.0), *x.memory_mib);
      rec.unseen = owner == ProcessOwner::Unseen;
      ++n;
    }
  }
  for (auto& [key, v] : seen) {
    auto& [rec, n] = v;
    if (rec.unseen && !ours_seen) {
      unseen.push_back(rec.process.pid);
      continue;
    }
    rec.fraction = static_cast<double>(n) / static_cast<double>(std::max<std::size_t>(1, listed));
    t.shared_gpu.push_back(rec);
  }
  if (!unseen.empty()) {
    std::string pids;
    for (auto p : unseen) pids += (pids.empty() ? "" : ", ") + std::to_string(p);
    t.notes.push_back("the GPUs' process list names pids this namespace does not have (" + pids +
                      ") and none of the training's: whose they are cannot be told here (a container's PID "
                      "namespace); run the sampler on the host to name them");
  }
}

}  // namespace

namespace {

// The host over the training's samples (the interval into its first step included): the CPUs the
// training used, PSI, the memory left.
void host_figures(std::span<const HostSample> s, double tick, NodeTelemetry& t) {
  if (s.size() >= 2) t.seconds = s.back().t - s.front().t;
  const auto share = rates(
      s, [](const HostSample& h) { return h.cpu_ticks; }, tick);
  const auto psi_cpu = rates(
      s, [](const HostSample& h) { return h.psi_cpu_us; }, 1e6);
  t.cpu_share = spread_of(share);
  t.psi_cpu = spread_of(psi_cpu);
  t.psi_memory = spread_of(rates(
      s, [](const HostSample& h) { return h.psi_mem_us; }, 1e6));
  t.psi_io = spread_of(rates(
      s, [](const HostSample& h) { return h.psi_io_us; }, 1e6));
  for (std::size_t i = 1; i < s.size(); ++i) t.t.push_back(s[i].t - s.front().t);
  if (share.size() == t.t.size()) t.cpu_share_series = share;
  if (psi_cpu.size() == t.t.size()) t.psi_cpu_series = psi_cpu;
  for (const auto& h : s)
    if (h.mem_available_kb)
      t.mem_available_min_gb =
          std::min(t.mem_available_min_gb.value_or(1e18), *h.mem_available_kb / 1048576.0);
}

// Each GPU over the training's samples `gs` (its counters over all), named as the tool's static
// answer names it; a GPU whose power limit was lowered has its capped samples as throttled ones.
void gpu_figures(std::span<const HostSample> gs, std::span<const HostSample> all, const TelemetryParser& p,
                 NodeTelemetry& t) {
  std::map<int, std::vector<const GpuSample*>> by_gpu, all_by_gpu;
  for (const auto& h : gs)
    for (const auto& g : h.gpus) by_gpu[g.index].push_back(&g);
  for (const auto& h : all)
    for (const auto& g : h.gpus) all_by_gpu[g.index].push_back(&g);
  std::vector<std::size_t> capped_only;
  for (const auto& [i, v] : all_by_gpu)
    t.gpus.push_back(summarize_gpu(i, by_gpu[i], v, capped_only.emplace_back()));
  for (const auto& st : p.amd_static())
    for (auto& g : t.gpus)
      if (g.index == st.index) g.name = st.market_name;
  for (std::size_t i = 0; i < t.gpus.size(); ++i) {
    auto& g = t.gpus[i];
    if (g.power_capped_fraction <= 0 || !power_limit_lowered(g, t)) continue;
    g.throttle_reasons[kPowerCapReason] = g.power_capped_fraction;
    g.throttled_fraction +=
        static_cast<double>(capped_only[i]) / std::max<double>(1.0, static_cast<double>(g.samples));
    g.power_capped_fraction = 0;  // held at its own limit: not this GPU
  }
}

KernelEvent kernel_event(const KernelLine& k, const NodeTelemetry& t) {
  KernelEvent e;
  e.t = k.t;
  e.text = k.text;
  e.pattern = std::string(k.pattern->name);
  e.meaning = k.meaning();
  e.fails = k.pattern->fails;
  e.gpu = k.gpu;
  if (!e.gpu)
    for (const auto& g : t.gpus)
      if (!k.bus_id.empty() && g.bus_id == k.bus_id) e.gpu = g.index;
  e.bus_id = k.bus_id;
  e.context = k.context;
  e.incident = k.incident;
  e.repeats = k.repeats;
  return e;
}

}  // namespace

NodeTelemetry summarize_telemetry(const std::string& node, const TelemetryParser& p) {
  NodeTelemetry t;
  t.node = node;
  t.tool = to_string(p.tool());
  t.tool_version = p.tool_version();
  t.cores = p.cores();
  t.notes = p.notes();
  const auto& all = p.samples();
  t.samples = all.size();
  const std::size_t start = training_start(all, t);
  // The GPUs' samples are the training's; the host's rates take the interval leading into its first
  // step too (a rate needs two samples, and a short run may have few).
  const std::span<const HostSample> gs = std::span(all).subspan(start);
  shared_gpus(gs, t);
  host_figures(std::span(all).subspan(start > 0 ? start - 1 : 0), p.tick_hz() > 0 ? p.tick_hz() : 100, t);
  gpu_figures(gs, all, p, t);
  for (const auto& k : p.kernel()) t.kernel.push_back(kernel_event(k, t));
  return t;
}

}  // namespace cvs
