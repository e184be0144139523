#include "cvs/results/telemetry_record.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <span>

#include "cvs/config/config_error.hpp"
#include "cvs/config/json_fields.hpp"
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
void link_and_errors(GpuTelemetry& g, const std::vector<const GpuSample*>& all) {
  for (const auto* x : all) {
    if (x->pcie_width_max) g.pcie_width_max = std::max(g.pcie_width_max.value_or(0.0), *x->pcie_width_max);
    if (x->pcie_gen_max) g.pcie_gen_max = std::max(g.pcie_gen_max.value_or(0.0), *x->pcie_gen_max);
    if (!x->bus_id.empty()) g.bus_id = x->bus_id;
    g.pages_pending = g.pages_pending || x->pages_pending.value_or(false);
    if (x->remap_pending) g.remap_pending = std::max(g.remap_pending.value_or(0.0), *x->remap_pending);
    if (x->remap_failure) g.remap_failure = std::max(g.remap_failure.value_or(0.0), *x->remap_failure);
    if (!(x->util_pct && *x->util_pct >= kBusyUtilPct) || x->idle) continue;
    if (x->pcie_width) g.pcie_width_min = std::min(g.pcie_width_min.value_or(1e9), *x->pcie_width);
    if (x->pcie_gen) g.pcie_gen_min = std::min(g.pcie_gen_min.value_or(1e9), *x->pcie_gen);
  }
  auto delta = [&](auto member) -> std::optional<double> {
    std::optional<double> first, last;
    for (const auto* x : all)
      if (const auto v = (*x).*member) {
        if (!first) first = v;
        last = v;
      }
    if (!first) return std::nullopt;
    return *last - *first;
  };
  g.ecc_corrected_delta = delta(&GpuSample::ecc_corrected);
  g.ecc_uncorrected_delta = delta(&GpuSample::ecc_uncorrected);
}

// One GPU: its figures over the training's samples `s`, its link and error counters over `all`.
GpuTelemetry summarize_gpu(int index, const std::vector<const GpuSample*>& s,
                           const std::vector<const GpuSample*>& all) {
  GpuTelemetry g;
  g.index = index;
  g.samples = s.size();
  std::map<std::string, std::vector<double>> f;
  std::size_t throttled = 0, capped = 0;
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
    const bool lowered =
        x->power_limit_w && x->power_default_limit_w && *x->power_limit_w < *x->power_default_limit_w - 0.5;
    bool slowed = false;
    for (const auto& r : x->throttle) {
      if (r == "power cap" && !lowered) {
        ++capped;
        continue;
      }
      ++reasons[r];
      slowed = true;
    }
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

std::string pct(double f) {
  return fmt::format("{:.0f} %", 100 * f);
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

std::string SharedGpu::words() const {
  return fmt::format("{} shared with pid {}{} in {} of samples",
                     process.gpu >= 0 ? fmt::format("GPU {}", process.gpu) : std::string("a GPU"),
                     process.pid, detail(process), pct(fraction));
}

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
  const std::span<const HostSample> s = std::span(all).subspan(start > 0 ? start - 1 : 0);
  shared_gpus(gs, t);
  if (s.size() >= 2) t.seconds = s.back().t - s.front().t;
  const double tick = p.tick_hz() > 0 ? p.tick_hz() : 100;
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
  std::map<int, std::vector<const GpuSample*>> by_gpu, all_by_gpu;
  for (const auto& h : gs)
    for (const auto& g : h.gpus) by_gpu[g.index].push_back(&g);
  for (const auto& h : all)
    for (const auto& g : h.gpus) all_by_gpu[g.index].push_back(&g);
  for (const auto& [i, v] : all_by_gpu) t.gpus.push_back(summarize_gpu(i, by_gpu[i], v));
  for (const auto& k : p.kernel()) {
    KernelEvent e{k.t, k.text, std::string(k.pattern->name), k.meaning(), k.pattern->fails, std::nullopt};
    for (const auto& g : t.gpus)
      if (!k.bus_id.empty() && g.bus_id == k.bus_id) e.gpu = g.index;
    t.kernel.push_back(std::move(e));
  }
  return t;
}

std::vector<std::string> telemetry_violations(const NodeTelemetry& t, const TelemetryGates& gates) {
  std::vector<std::string> v;
  if (!gates.allow_shared_gpu)
    for (const auto& x : t.shared_gpu) v.push_back(t.node + ": " + x.words() + ": " + kSharedGpuFix);
  for (const auto& g : t.gpus) {
    if (g.ecc_uncorrected_delta && *g.ecc_uncorrected_delta > gates.max_ecc_uncorrected)
      v.push_back(fmt::format("{}: GPU {} gained {} uncorrected ECC error(s) during the run (at most {})",
                              t.node, g.index, *g.ecc_uncorrected_delta, gates.max_ecc_uncorrected));
    if (g.samples > 0 && g.throttled_fraction > gates.max_throttled_fraction)
      v.push_back(fmt::format("{}: GPU {} was slowed in {} of the samples (at most {})", t.node, g.index,
                              pct(g.throttled_fraction), pct(gates.max_throttled_fraction)));
  }
  if (gates.min_cpu_share > 0 && t.cpu_share && t.cpu_share->median < gates.min_cpu_share)
    v.push_back(fmt::format("{}: the training had {:.2f} CPUs (median over the run; at least {:.2f})", t.node,
                            t.cpu_share->median, gates.min_cpu_share));
  return v;
}

namespace {

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

// What is wrong with a GPU whether or not it has cost speed yet: a lowered power limit is said by
// gpu_words; here the link under load and the memory's pending repairs.
void defect_words(const GpuTelemetry& g, std::vector<std::string>& why) {
  const bool narrow = g.pcie_width_min && g.pcie_width_max && *g.pcie_width_min < *g.pcie_width_max;
  const bool slow_gen = g.pcie_gen_min && g.pcie_gen_max && *g.pcie_gen_min < *g.pcie_gen_max;
  if (narrow || slow_gen)
    why.push_back(fmt::format("GPU {} PCIe link under load at x{} gen {} (capable of x{} gen {})", g.index,
                              g.pcie_width_min ? fmt::format("{:.0f}", *g.pcie_width_min) : "?",
                              g.pcie_gen_min ? fmt::format("{:.0f}", *g.pcie_gen_min) : "?",
                              g.pcie_width_max ? fmt::format("{:.0f}", *g.pcie_width_max) : "?",
                              g.pcie_gen_max ? fmt::format("{:.0f}", *g.pcie_gen_max) : "?"));
  if (g.remap_failure && *g.remap_failure > 0)
    why.push_back(fmt::format("GPU {} row remapping failed (out of spare rows: replace the GPU)", g.index));
  if (g.remap_pending && *g.remap_pending > 0)
    why.push_back(fmt::format("GPU {} has row remaps pending (a GPU reset applies them)", g.index));
  if (g.pages_pending) why.push_back(fmt::format("GPU {} has memory pages pending retirement", g.index));
}

// What stands out in one GPU's telemetry, given its peers' usual clock under load.
void gpu_words(const GpuTelemetry& g, double usual, std::vector<std::string>& why) {
  const auto clock = g.figures.find("sm_clock_mhz");
  const auto* busy = busy_clock(g);
  const auto hot = g.figures.find("temp_hotspot_c");
  if (g.throttled_fraction < 0.1 && busy && usual > 0 && busy->min < 0.8 * usual) {
    std::string s =
        fmt::format("GPU {} clocked down to {:.0f} MHz under load (the node's other GPUs at {:.0f} MHz)",
                    g.index, busy->min, usual);
    if (hot != g.figures.end()) s += fmt::format(", hotspot {:.0f} C", hot->second.max);
    why.push_back(s);
  }
  if (g.throttled_fraction >= 0.1) {
    // Every reason, the most frequent first.
    std::vector<std::pair<std::string, double>> rs(g.throttle_reasons.begin(), g.throttle_reasons.end());
    std::stable_sort(rs.begin(), rs.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string r;
    for (const auto& [reason, f] : rs) r += (r.empty() ? "" : ", ") + reason;
    std::string s = fmt::format("GPU {} slowed ({}) in {} of samples", g.index, r, pct(g.throttled_fraction));
    if (hot != g.figures.end())
      s += fmt::format(", hotspot {:.0f} C", hot->second.max);
    else if (auto t = g.figures.find("temp_c"); t != g.figures.end())
      s += fmt::format(", {:.0f} C", t->second.max);
    if (clock != g.figures.end())
      s += fmt::format(", clock {:.0f}-{:.0f} MHz", clock->second.min, clock->second.max);
    why.push_back(s);
  }
  if (g.power_limit_w && g.power_default_limit_w && *g.power_limit_w < *g.power_default_limit_w - 0.5)
    why.push_back(fmt::format("GPU {} power limit lowered to {:.0f} W (default {:.0f} W)", g.index,
                              *g.power_limit_w, *g.power_default_limit_w));
  if (g.ecc_uncorrected_delta && *g.ecc_uncorrected_delta > 0)
    why.push_back(
        fmt::format("GPU {} gained {} uncorrected ECC error(s)", g.index, *g.ecc_uncorrected_delta));
  if (g.ecc_corrected_delta && *g.ecc_corrected_delta > 0)
    why.push_back(fmt::format("GPU {} gained {} corrected ECC error(s)", g.index, *g.ecc_corrected_delta));
  defect_words(g, why);
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

std::vector<std::string> telemetry_defects(const NodeTelemetry& t) {
  std::vector<std::string> why;
  for (const auto& g : t.gpus) {
    if (g.power_limit_w && g.power_default_limit_w && *g.power_limit_w < *g.power_default_limit_w - 0.5)
      why.push_back(fmt::format("GPU {} power limit lowered to {:.0f} W (default {:.0f} W)", g.index,
                                *g.power_limit_w, *g.power_default_limit_w));
    defect_words(g, why);
  }
  return why;
}

std::string explain_telemetry(const NodeTelemetry& t) {
  std::vector<std::string> why;
  for (const auto& x : t.shared_gpu) why.push_back(x.words());
  for (const auto& k : t.kernel)
    why.push_back((k.gpu ? fmt::format("GPU {}: kernel: ", *k.gpu) : std::string("kernel: ")) + k.meaning +
                  " (" + k.text.substr(0, 160) + ")");
  for (const auto& g : t.gpus) gpu_words(g, peers_busy_clock(t, g), why);
  host_words(t, why);
  std::string out;
  for (const auto& w : why) out += (out.empty() ? "" : "; ") + w;
  return out;
}

namespace {

using J = nlohmann::ordered_json;

J spread_json(const Spread& s) {
  return {{"min", s.min}, {"median", s.median}, {"max", s.max}};
}

// Absent or null: none.
std::optional<Spread> spread_from(const JsonIn& in, const char* key) {
  const J* v = in.find(key);
  if (!v || v->is_null()) return std::nullopt;
  const JsonIn s = in.object(key);
  return Spread{s.num("min"), s.num("median"), s.num("max")};
}

// A series with NaN as null (JSON has no NaN).
J series(const std::vector<double>& v) {
  J a = J::array();
  for (double x : v) a.push_back(std::isfinite(x) ? J(x) : J(nullptr));
  return a;
}

std::vector<double> series_from(const JsonIn& in, const char* key) {
  std::vector<double> v;
  const J& a = in.array(key);
  for (std::size_t i = 0; i < a.size(); ++i) v.push_back(in.number(a[i], pointer_join(in.at_ptr(key), i)));
  return v;
}

// The record's plain fields, one list for the writer and the reader; every key optional (a record
// of an earlier version reads as the defaults).
constexpr auto kNodeFields = std::make_tuple(
    optional_field("tool", &NodeTelemetry::tool),
    optional_field("tool_version", &NodeTelemetry::tool_version),
    optional_field("samples", &NodeTelemetry::samples), optional_field("seconds", &NodeTelemetry::seconds),
    optional_field("cores", &NodeTelemetry::cores),
    optional_field("mem_available_min_gb", &NodeTelemetry::mem_available_min_gb),
    optional_field("samples_before_training", &NodeTelemetry::samples_before_training),
    optional_field("notes", &NodeTelemetry::notes));
constexpr auto kGpuFields = std::make_tuple(
    optional_field("index", &GpuTelemetry::index), optional_field("samples", &GpuTelemetry::samples),
    optional_field("throttled_fraction", &GpuTelemetry::throttled_fraction),
    optional_field("power_capped_fraction", &GpuTelemetry::power_capped_fraction),
    optional_field("power_limit_w", &GpuTelemetry::power_limit_w),
    optional_field("power_default_limit_w", &GpuTelemetry::power_default_limit_w),
    optional_field("ecc_corrected_delta", &GpuTelemetry::ecc_corrected_delta),
    optional_field("ecc_uncorrected_delta", &GpuTelemetry::ecc_uncorrected_delta),
    optional_field("pcie_width_min", &GpuTelemetry::pcie_width_min),
    optional_field("pcie_width_max", &GpuTelemetry::pcie_width_max),
    optional_field("pcie_gen_min", &GpuTelemetry::pcie_gen_min),
    optional_field("pcie_gen_max", &GpuTelemetry::pcie_gen_max),
    optional_field("bus_id", &GpuTelemetry::bus_id),
    optional_field("pages_pending", &GpuTelemetry::pages_pending),
    optional_field("remap_pending", &GpuTelemetry::remap_pending),
    optional_field("remap_failure", &GpuTelemetry::remap_failure));
constexpr auto kKernelFields = std::make_tuple(
    optional_field("t", &KernelEvent::t), optional_field("pattern", &KernelEvent::pattern),
    optional_field("meaning", &KernelEvent::meaning), optional_field("fails", &KernelEvent::fails),
    optional_field("line", &KernelEvent::text), optional_field("gpu", &KernelEvent::gpu));

}  // namespace

nlohmann::ordered_json to_json(const NodeTelemetry& t) {
  J j = J::object();
  write_fields(j, t, kNodeFields);
  if (t.cpu_share) j["cpu_share"] = spread_json(*t.cpu_share);
  if (t.psi_cpu) j["psi_cpu_some"] = spread_json(*t.psi_cpu);
  if (t.psi_memory) j["psi_memory_some"] = spread_json(*t.psi_memory);
  if (t.psi_io) j["psi_io_some"] = spread_json(*t.psi_io);
  j["series"] = {
      {"t", series(t.t)}, {"cpu_share", series(t.cpu_share_series)}, {"psi_cpu", series(t.psi_cpu_series)}};
  J gpus = J::array();
  for (const auto& g : t.gpus) {
    J gj = J::object();
    write_fields(gj, g, kGpuFields);
    J figs = J::object();
    for (const auto& [k, s] : g.figures) figs[k] = spread_json(s);
    gj["figures"] = figs;
    J reasons = J::object();
    for (const auto& [k, f] : g.throttle_reasons) reasons[k] = f;
    gj["throttle_reasons"] = reasons;
    gj["series"] = {{"sm_clock_mhz", series(g.sm_clock_mhz)},
                    {"power_w", series(g.power_w)},
                    {"temp_c", series(g.temp_c)}};
    gpus.push_back(gj);
  }
  j["gpus"] = gpus;
  J kernel = J::array();
  for (const auto& k : t.kernel) write_fields(kernel.emplace_back(J::object()), k, kKernelFields);
  j["kernel"] = kernel;
  J shared = J::array();
  for (const auto& x : t.shared_gpu) {
    J sj = {{"gpu", x.process.gpu}, {"pid", x.process.pid}, {"name", x.process.name}};
    sj["memory_mib"] = x.process.memory_mib ? J(*x.process.memory_mib) : J(nullptr);
    sj["fraction"] = x.fraction;
    sj["other_namespace"] = x.unseen;
    shared.push_back(sj);
  }
  j["shared_gpu"] = shared;
  const std::string why = explain_telemetry(t);
  if (!why.empty()) j["explanation"] = why;
  return j;
}

namespace {

GpuTelemetry gpu_from_json(const JsonIn& in) {
  GpuTelemetry g;
  read_fields(in, g, kGpuFields);
  if (in.has("figures")) {
    const JsonIn figs = in.object("figures");
    for (const auto& [k, v] : in.at("figures").items())
      if (auto sp = spread_from(figs, k.c_str())) g.figures[k] = *sp;
  }
  if (in.has("throttle_reasons")) {
    const JsonIn reasons = in.object("throttle_reasons");
    for (const auto& [k, v] : in.at("throttle_reasons").items())
      g.throttle_reasons[k] = reasons.number(v, reasons.at_ptr(k.c_str()));
  }
  if (in.has("series")) {
    const JsonIn series = in.object("series");
    g.sm_clock_mhz = series_from(series, "sm_clock_mhz");
    g.power_w = series_from(series, "power_w");
    g.temp_c = series_from(series, "temp_c");
  }
  return g;
}

SharedGpu shared_gpu_from_json(const JsonIn& in) {
  SharedGpu g;
  g.process.gpu = in.integer<int>("gpu", -1);
  g.process.pid = in.integer<long long>("pid", 0);
  g.process.name = in.str("name");
  g.process.memory_mib = in.nullable_num("memory_mib");
  g.fraction = in.num("fraction", 0.0);
  g.unseen = in.boolean("other_namespace", false);
  return g;
}

}  // namespace

// Absent keys read as their defaults (records of earlier versions); a key of the wrong type is a
// ConfigError at its pointer (the reader of the file the record is in names the file).
NodeTelemetry telemetry_from_json(const JsonIn& in) {
  NodeTelemetry t;
  read_fields(in, t, kNodeFields);
  t.cpu_share = spread_from(in, "cpu_share");
  t.psi_cpu = spread_from(in, "psi_cpu_some");
  t.psi_memory = spread_from(in, "psi_memory_some");
  t.psi_io = spread_from(in, "psi_io_some");
  if (in.has("series")) {
    const JsonIn series = in.object("series");
    t.t = series_from(series, "t");
    t.cpu_share_series = series_from(series, "cpu_share");
    t.psi_cpu_series = series_from(series, "psi_cpu");
  }
  for (std::size_t i = 0; i < in.array("gpus").size(); ++i)
    t.gpus.push_back(gpu_from_json(in.element("gpus", i)));
  for (std::size_t i = 0; i < in.array("kernel").size(); ++i) {
    read_fields(in.element("kernel", i), t.kernel.emplace_back(), kKernelFields);
  }
  for (std::size_t i = 0; i < in.array("shared_gpu").size(); ++i)
    t.shared_gpu.push_back(shared_gpu_from_json(in.element("shared_gpu", i)));
  return t;
}

NodeTelemetry telemetry_from_json(const nlohmann::ordered_json& j) {
  static const std::string kRecord = "(a telemetry record)";
  return telemetry_from_json(JsonIn(j, "", kRecord, "pass a telemetry record a cvs suite wrote"));
}

}  // namespace cvs
