#include "cvs/results/telemetry_diagnosis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "cvs/logs/gpu_processes.hpp"
#include "cvs/statistics/metrics.hpp"

namespace cvs {

std::string at_address(const std::string& bus_id);

namespace {

std::string pct(double f) {
  return fmt::format("{:.0f} %", 100 * f);
}

std::string opt_fig(const std::optional<double>& v) {
  return v ? fmt::format("{:.0f}", *v) : "?";
}

// A GPU's clock under load: its busy samples' figure (older records: its non-idle samples').
const Spread* busy_clock(const GpuTelemetry& g) {
  for (const char* k : {"sm_clock_busy_mhz", "sm_clock_mhz"})
    if (const auto it = g.figures.find(k); it != g.figures.end()) return &it->second;
  return nullptr;
}

// The usual clock under load of the node's GPUs other than `self`: the median of their busy
// medians; 0 when no other GPU has one (a GPU at its power cap under load clocks below its lightly
// loaded samples by design: it is compared with its peers under the same load, never with itself).
double peers_busy_clock(const NodeTelemetry& t, const GpuTelemetry& self) {
  std::vector<double> medians;
  for (const auto& g : t.gpus)
    if (&g != &self)
      if (const auto* c = busy_clock(g)) medians.push_back(c->median);
  return medians.empty() ? 0.0 : percentile_in_place(medians, 50);
}

// The usual power limit of the node's GPUs other than `self`; nullopt when none has one.
std::optional<double> peers_power_limit(const NodeTelemetry& t, const GpuTelemetry& self) {
  std::vector<double> limits;
  for (const auto& g : t.gpus)
    if (&g != &self && g.power_limit_w) limits.push_back(*g.power_limit_w);
  if (limits.empty()) return std::nullopt;
  return percentile_in_place(limits, 50);
}

// "42 replays, 3 recoveries to L0": the link's error counters that rose.
std::string link_errors(const GpuTelemetry& g) {
  std::string s;
  auto add = [&](const std::optional<double>& v, const char* what) {
    if (v && *v > 0) s += fmt::format("{}{:.0f} {}", s.empty() ? "" : ", ", *v, what);
  };
  add(g.pcie_replays_delta, "replays");
  add(g.pcie_recoveries_delta, "recoveries to L0");
  add(g.pcie_naks_delta, "NAKs");
  return s;
}

// " (UMC 2, GFX 1)": the blocks an ECC count rose in.
std::string blocks(const std::map<std::string, double>& b) {
  std::string s;
  for (const auto& [block, n] : b) s += fmt::format("{}{} {:.0f}", s.empty() ? "" : ", ", block, n);
  return s.empty() ? s : " (" + s + ")";
}

using Findings = std::vector<GpuFinding>;

void power_and_speed(const NodeTelemetry& t, const GpuTelemetry& g, Findings& out) {
  const auto name = gpu_name(g);
  const auto* clock = busy_clock(g);
  const auto all = g.figures.find("sm_clock_mhz");
  const auto hot = g.figures.find("temp_hotspot_c");
  const double usual = peers_busy_clock(t, g);
  const bool below_peers = clock && usual > 0 && clock->min < 0.8 * usual;
  if (g.throttled_fraction < 0.1 && below_peers) {
    std::string s =
        fmt::format("{} clocked down to {:.0f} MHz under load (the node's other GPUs at {:.0f} MHz)", name,
                    clock->min, usual);
    if (hot != g.figures.end()) s += fmt::format(", hotspot {:.0f} C", hot->second.max);
    out.push_back({g.index, GpuFault::ClockedDown, s});
  }
  if (g.throttled_fraction >= 0.1) {
    // Every reason, the most frequent first.
    std::vector<std::pair<std::string, double>> rs(g.throttle_reasons.begin(), g.throttle_reasons.end());
    std::stable_sort(rs.begin(), rs.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string r;
    for (const auto& [reason, f] : rs) r += (r.empty() ? "" : ", ") + reason;
    std::string s = fmt::format("{} slowed ({}) in {} of samples", name, r, pct(g.throttled_fraction));
    if (hot != g.figures.end())
      s += fmt::format(", hotspot {:.0f} C", hot->second.max);
    else if (auto tc = g.figures.find("temp_c"); tc != g.figures.end())
      s += fmt::format(", {:.0f} C", tc->second.max);
    if (all != g.figures.end())
      s += fmt::format(", clock {:.0f}-{:.0f} MHz", all->second.min, all->second.max);
    if (below_peers) s += fmt::format(" (the node's other GPUs at {:.0f} MHz)", usual);
    out.push_back({g.index, GpuFault::Slowed, s});
  }
  if (power_limit_lowered(g, t)) {
    std::string s = fmt::format("{} power limit lowered to {:.0f} W", name, *g.power_limit_w);
    if (g.power_default_limit_w)
      s += fmt::format(" (default {:.0f} W)", *g.power_default_limit_w);
    else if (const auto peers = peers_power_limit(t, g))
      s += fmt::format(" (it may be {:.0f} W; the node's other GPUs at {:.0f} W)", *g.power_max_limit_w,
                       *peers);
    else
      s += fmt::format(" (it may be {:.0f} W)", *g.power_max_limit_w);
    out.push_back({g.index, GpuFault::PowerLimitLowered, s, true});
  }
}

void link(const GpuTelemetry& g, Findings& out) {
  const auto name = gpu_name(g);
  const bool narrow = g.pcie_width_min && g.pcie_width_max && *g.pcie_width_min < *g.pcie_width_max;
  const bool slow_gen = g.pcie_gen_min && g.pcie_gen_max && *g.pcie_gen_min < *g.pcie_gen_max;
  if (narrow || slow_gen)
    out.push_back({g.index, GpuFault::LinkDegraded,
                   fmt::format("{} PCIe link under load at x{} gen {} (capable of x{} gen {})", name,
                               opt_fig(g.pcie_width_min), opt_fig(g.pcie_gen_min), opt_fig(g.pcie_width_max),
                               opt_fig(g.pcie_gen_max)),
                   true});
  const double errors =
      g.pcie_replays_delta.value_or(0) + g.pcie_recoveries_delta.value_or(0) + g.pcie_naks_delta.value_or(0);
  if (errors >= kLinkErrorsNoted)
    out.push_back({g.index, GpuFault::LinkErrors,
                   fmt::format("{} PCIe link errors during the run: {}", name, link_errors(g)), true});
}

void memory(const GpuTelemetry& g, Findings& out) {
  const auto name = gpu_name(g);
  if (g.ecc_uncorrected_delta && *g.ecc_uncorrected_delta > 0)
    out.push_back({g.index, GpuFault::EccUncorrected,
                   fmt::format("{} gained {} uncorrected ECC error(s){}", name, *g.ecc_uncorrected_delta,
                               blocks(g.ecc_uncorrected_blocks))});
  if (g.ecc_corrected_delta && *g.ecc_corrected_delta > 0)
    out.push_back({g.index, GpuFault::EccCorrected,
                   fmt::format("{} gained {} corrected ECC error(s){}", name, *g.ecc_corrected_delta,
                               blocks(g.ecc_corrected_blocks))});
  if (g.remap_failure && *g.remap_failure > 0)
    out.push_back({g.index, GpuFault::RemapFailed,
                   name + " row remapping failed (out of spare rows: replace the GPU)", true});
  if (g.remap_pending && *g.remap_pending > 0)
    out.push_back(
        {g.index, GpuFault::RemapPending, name + " has row remaps pending (a GPU reset applies them)", true});
  if (g.pages_pending)
    out.push_back({g.index, GpuFault::PagesPending, name + " has memory pages pending retirement", true});
  if (g.pages_retired_delta && *g.pages_retired_delta > 0)
    out.push_back(
        {g.index, GpuFault::PagesRetired,
         fmt::format("{} retired {:.0f} memory page(s) during the run", name, *g.pages_retired_delta), true});
  if (g.pages_unreservable && *g.pages_unreservable > 0)
    out.push_back({g.index, GpuFault::PagesUnreservable,
                   fmt::format("{} has {:.0f} bad memory page(s) that could not be retired", name,
                               *g.pages_unreservable),
                   true});
}

// Every GPU's power limit below the most it may be, all alike: the node's setting, not one GPU's
// fault (no GPU is named).
std::string node_power_cap(const NodeTelemetry& t) {
  if (t.gpus.size() < 2) return "";
  const auto& first = t.gpus.front();
  if (!first.power_limit_w || !first.power_max_limit_w || first.power_default_limit_w) return "";
  for (const auto& g : t.gpus)
    if (!g.power_limit_w || !g.power_max_limit_w ||
        std::fabs(*g.power_limit_w - *first.power_limit_w) > 0.5 ||
        *g.power_limit_w >= *g.power_max_limit_w - 0.5)
      return "";
  return fmt::format("every GPU's power limit is {:.0f} W (they may be {:.0f} W)", *first.power_limit_w,
                     *first.power_max_limit_w);
}

// The kernel's lines in words: an incident's faulting GPUs, then the GPUs it touched as context.
void kernel_words(const NodeTelemetry& t, std::vector<std::string>& why) {
  std::map<int, std::vector<std::string>> context;  // incident -> its context in words
  for (const auto& k : t.kernel) {
    if (!k.context) continue;
    const std::string gpu = k.gpu ? fmt::format("GPU {}", *k.gpu) : k.bus_id;
    context[k.incident].push_back(fmt::format("{} {}", gpu, k.meaning));
  }
  for (const auto& k : t.kernel) {
    if (k.context) continue;
    const std::string device = k.gpu ? fmt::format("GPU {}", *k.gpu) : k.bus_id;
    std::string s =
        (device.empty() ? "" : device + ": ") + "kernel: " + k.meaning + " (" + k.text.substr(0, 160) + ")";
    if (k.repeats > 1) s += fmt::format(" x{}", k.repeats);
    if (k.gpu) s += at_address(k.bus_id);
    if (auto c = context.find(k.incident); c != context.end() && k.incident > 0) {
      std::string also;
      for (const auto& w : c->second) also += (also.empty() ? "" : ", ") + w;
      s += "; then, its context (not their fault): " + also;
      context.erase(c);
    }
    why.push_back(s);
  }
}

// The host: the training short of CPU (a CPU-bound training's share of the cores; any: PSI),
// memory pressure.
void host_words(const NodeTelemetry& t, std::vector<std::string>& why) {
  const bool starved = t.psi_cpu && t.psi_cpu->median >= 0.2;
  const bool short_of_cpu =
      t.cpu_share && t.cores > 0 && t.gpus.empty() && t.cpu_share->median < 0.5 * t.cores;
  if (starved || short_of_cpu) {
    std::string s = t.cpu_share ? fmt::format("the training had {:.2f} CPUs", t.cpu_share->median) : "";
    if (t.psi_cpu) s += fmt::format("{}PSI cpu some {}", s.empty() ? "" : ": ", pct(t.psi_cpu->median));
    why.push_back(s);
  }
  if (t.psi_memory && t.psi_memory->median >= 0.1)
    why.push_back(fmt::format("memory pressure: PSI memory some {}", pct(t.psi_memory->median)));
}

}  // namespace

std::string gpu_name(const GpuTelemetry& g) {
  return fmt::format("GPU {}", g.index);
}

std::string at_address(const std::string& bus_id) {
  return bus_id.empty() ? "" : " [" + bus_id + "]";
}

bool power_limit_lowered(const GpuTelemetry& g, const NodeTelemetry& node) {
  if (!g.power_limit_w) return false;
  if (g.power_default_limit_w) return *g.power_limit_w < *g.power_default_limit_w - 0.5;
  if (!g.power_max_limit_w || *g.power_limit_w >= *g.power_max_limit_w - 0.5) return false;
  // No default (amd-smi): below its maximum and below its peers; a cap every GPU shares is the
  // node's setting (node_power_cap), not this GPU's fault.
  const auto peers = peers_power_limit(node, g);
  return !peers || *g.power_limit_w < *peers - 0.5;
}

std::vector<GpuFinding> gpu_findings(const NodeTelemetry& t) {
  Findings out;
  for (const auto& g : t.gpus) {
    const auto first = out.size();
    power_and_speed(t, g, out);
    link(g, out);
    memory(g, out);
    for (auto i = first; i < out.size(); ++i) out[i].words += at_address(g.bus_id);
  }
  return out;
}

std::string SharedGpu::words() const {
  return fmt::format("{} shared with pid {}{} in {} of samples",
                     process.gpu >= 0 ? fmt::format("GPU {}", process.gpu) : std::string("a GPU"),
                     process.pid, detail(process), pct(fraction));
}

std::vector<std::string> telemetry_violations(const NodeTelemetry& t, const TelemetryGates& gates) {
  std::vector<std::string> v;
  if (!gates.allow_shared_gpu)
    for (const auto& x : t.shared_gpu) v.push_back(t.node + ": " + x.words() + ": " + kSharedGpuFix);
  for (const auto& g : t.gpus) {
    if (g.ecc_uncorrected_delta && *g.ecc_uncorrected_delta > gates.max_ecc_uncorrected)
      v.push_back(fmt::format("{}: {} gained {} uncorrected ECC error(s){} during the run (at most {}){}",
                              t.node, gpu_name(g), *g.ecc_uncorrected_delta, blocks(g.ecc_uncorrected_blocks),
                              gates.max_ecc_uncorrected, at_address(g.bus_id)));
    if (g.samples > 0 && g.throttled_fraction > gates.max_throttled_fraction)
      v.push_back(fmt::format("{}: {} was slowed in {} of the samples (at most {}){}", t.node, gpu_name(g),
                              pct(g.throttled_fraction), pct(gates.max_throttled_fraction),
                              at_address(g.bus_id)));
  }
  if (gates.min_cpu_share > 0 && t.cpu_share && t.cpu_share->median < gates.min_cpu_share)
    v.push_back(fmt::format("{}: the training had {:.2f} CPUs (median over the run; at least {:.2f})", t.node,
                            t.cpu_share->median, gates.min_cpu_share));
  return v;
}

std::vector<std::string> telemetry_defects(const NodeTelemetry& t) {
  std::vector<std::string> why;
  for (auto& f : gpu_findings(t))
    if (f.defect) why.push_back(std::move(f.words));
  if (auto node = node_power_cap(t); !node.empty()) why.push_back(std::move(node));
  return why;
}

std::string explain_telemetry(const NodeTelemetry& t) {
  std::vector<std::string> why;
  for (const auto& x : t.shared_gpu) why.push_back(x.words());
  kernel_words(t, why);
  for (auto& f : gpu_findings(t)) why.push_back(std::move(f.words));
  if (auto node = node_power_cap(t); !node.empty()) why.push_back(std::move(node));
  host_words(t, why);
  std::string out;
  for (const auto& w : why) out += (out.empty() ? "" : "; ") + w;
  return out;
}

}  // namespace cvs
