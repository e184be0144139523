#include "cvs/results/telemetry_record.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "cvs/results/metrics.hpp"

namespace cvs {
namespace {

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
std::vector<double> rates(const std::vector<HostSample>& s, Get get, double scale) {
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

GpuTelemetry summarize_gpu(int index, const std::vector<const GpuSample*>& s) {
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
    if (x->pcie_width) g.pcie_width_min = std::min(g.pcie_width_min.value_or(1e9), *x->pcie_width);
    if (x->pcie_width_max) g.pcie_width_max = std::max(g.pcie_width_max.value_or(0.0), *x->pcie_width_max);
    if (x->pcie_gen) g.pcie_gen_min = std::min(g.pcie_gen_min.value_or(1e9), *x->pcie_gen);
    if (x->pcie_gen_max) g.pcie_gen_max = std::max(g.pcie_gen_max.value_or(0.0), *x->pcie_gen_max);
  }
  for (const auto& [k, v] : f) gpu_figure(g, k.c_str(), v);
  const double n = std::max<double>(1.0, static_cast<double>(s.size()));
  g.throttled_fraction = static_cast<double>(throttled) / n;
  g.power_capped_fraction = static_cast<double>(capped) / n;
  for (const auto& [r, c] : reasons) g.throttle_reasons[r] = static_cast<double>(c) / n;
  auto delta = [&](auto member) -> std::optional<double> {
    std::optional<double> first, last;
    for (const auto* x : s)
      if (const auto v = (*x).*member) {
        if (!first) first = v;
        last = v;
      }
    if (!first) return std::nullopt;
    return *last - *first;
  };
  g.ecc_corrected_delta = delta(&GpuSample::ecc_corrected);
  g.ecc_uncorrected_delta = delta(&GpuSample::ecc_uncorrected);
  return g;
}

std::string pct(double f) {
  return fmt::format("{:.0f} %", 100 * f);
}

}  // namespace

NodeTelemetry summarize_telemetry(const std::string& node, const TelemetryParser& p) {
  NodeTelemetry t;
  t.node = node;
  t.tool = to_string(p.tool());
  t.tool_version = p.tool_version();
  t.cores = p.cores();
  const auto& s = p.samples();
  t.samples = s.size();
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
  std::map<int, std::vector<const GpuSample*>> by_gpu;
  for (const auto& h : s)
    for (const auto& g : h.gpus) by_gpu[g.index].push_back(&g);
  for (const auto& [i, v] : by_gpu) t.gpus.push_back(summarize_gpu(i, v));
  for (const auto& k : p.kernel())
    t.kernel.push_back({k.t, k.text, std::string(k.pattern->name), k.meaning(), k.pattern->fails});
  t.notes = p.notes();
  return t;
}

std::vector<std::string> telemetry_violations(const NodeTelemetry& t, const TelemetryGates& gates) {
  std::vector<std::string> v;
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

// What stands out in one GPU's telemetry, given the node's usual GPU clock.
void gpu_words(const GpuTelemetry& g, double usual, std::vector<std::string>& why) {
  const auto clock = g.figures.find("sm_clock_mhz");
  const auto hot = g.figures.find("temp_hotspot_c");
  if (g.throttled_fraction < 0.1 && clock != g.figures.end() && usual > 0 &&
      clock->second.min < 0.8 * usual) {
    std::string s = fmt::format("GPU {} clocked down to {:.0f} MHz (the node's GPUs at {:.0f} MHz)", g.index,
                                clock->second.min, usual);
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
  if (g.pcie_width_min && g.pcie_width_max && *g.pcie_width_min < *g.pcie_width_max)
    why.push_back(
        fmt::format("GPU {} PCIe link at x{:.0f} of x{:.0f}", g.index, *g.pcie_width_min, *g.pcie_width_max));
  else if (g.pcie_gen_min && g.pcie_gen_max && *g.pcie_gen_min < *g.pcie_gen_max)
    why.push_back(
        fmt::format("GPU {} PCIe link at gen {:.0f} of {:.0f}", g.index, *g.pcie_gen_min, *g.pcie_gen_max));
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

std::string explain_telemetry(const NodeTelemetry& t) {
  std::vector<std::string> why;
  for (const auto& k : t.kernel) why.push_back("kernel: " + k.meaning + " (" + k.text.substr(0, 160) + ")");
  // The node's usual GPU clock: the median of its GPUs' median clocks.
  std::vector<double> medians;
  for (const auto& g : t.gpus)
    if (auto c = g.figures.find("sm_clock_mhz"); c != g.figures.end()) medians.push_back(c->second.median);
  const double usual = medians.empty() ? 0.0 : percentile_in_place(medians, 50);
  for (const auto& g : t.gpus) gpu_words(g, usual, why);
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

std::optional<Spread> spread_from(const J& j, const char* key) {
  if (!j.contains(key) || !j[key].is_object()) return std::nullopt;
  const J& s = j[key];
  return Spread{s.value("min", 0.0), s.value("median", 0.0), s.value("max", 0.0)};
}

// A series with NaN as null (JSON has no NaN).
J series(const std::vector<double>& v) {
  J a = J::array();
  for (double x : v) a.push_back(std::isfinite(x) ? J(x) : J(nullptr));
  return a;
}

std::vector<double> series_from(const J& j, const char* key) {
  std::vector<double> v;
  if (j.contains(key) && j[key].is_array())
    for (const auto& x : j[key]) v.push_back(x.is_number() ? x.get<double>() : NAN);
  return v;
}

void opt_put(J& j, const char* key, const std::optional<double>& v) {
  if (v) j[key] = *v;
}

std::optional<double> opt_get(const J& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? std::optional(j[key].get<double>()) : std::nullopt;
}

}  // namespace

nlohmann::ordered_json to_json(const NodeTelemetry& t) {
  J j = {{"tool", t.tool},
         {"tool_version", t.tool_version},
         {"samples", t.samples},
         {"seconds", t.seconds},
         {"cores", t.cores}};
  if (t.cpu_share) j["cpu_share"] = spread_json(*t.cpu_share);
  if (t.psi_cpu) j["psi_cpu_some"] = spread_json(*t.psi_cpu);
  if (t.psi_memory) j["psi_memory_some"] = spread_json(*t.psi_memory);
  if (t.psi_io) j["psi_io_some"] = spread_json(*t.psi_io);
  opt_put(j, "mem_available_min_gb", t.mem_available_min_gb);
  j["series"] = {
      {"t", series(t.t)}, {"cpu_share", series(t.cpu_share_series)}, {"psi_cpu", series(t.psi_cpu_series)}};
  J gpus = J::array();
  for (const auto& g : t.gpus) {
    J gj = {{"index", g.index}, {"samples", g.samples}, {"throttled_fraction", g.throttled_fraction}};
    J figs = J::object();
    for (const auto& [k, s] : g.figures) figs[k] = spread_json(s);
    gj["figures"] = figs;
    J reasons = J::object();
    for (const auto& [k, f] : g.throttle_reasons) reasons[k] = f;
    gj["throttle_reasons"] = reasons;
    gj["power_capped_fraction"] = g.power_capped_fraction;
    opt_put(gj, "power_limit_w", g.power_limit_w);
    opt_put(gj, "power_default_limit_w", g.power_default_limit_w);
    opt_put(gj, "ecc_corrected_delta", g.ecc_corrected_delta);
    opt_put(gj, "ecc_uncorrected_delta", g.ecc_uncorrected_delta);
    opt_put(gj, "pcie_width_min", g.pcie_width_min);
    opt_put(gj, "pcie_width_max", g.pcie_width_max);
    opt_put(gj, "pcie_gen_min", g.pcie_gen_min);
    opt_put(gj, "pcie_gen_max", g.pcie_gen_max);
    gj["series"] = {{"sm_clock_mhz", series(g.sm_clock_mhz)},
                    {"power_w", series(g.power_w)},
                    {"temp_c", series(g.temp_c)}};
    gpus.push_back(gj);
  }
  j["gpus"] = gpus;
  J kernel = J::array();
  for (const auto& k : t.kernel)
    kernel.push_back(
        {{"t", k.t}, {"pattern", k.pattern}, {"meaning", k.meaning}, {"fails", k.fails}, {"line", k.text}});
  j["kernel"] = kernel;
  j["notes"] = t.notes;
  const std::string why = explain_telemetry(t);
  if (!why.empty()) j["explanation"] = why;
  return j;
}

NodeTelemetry telemetry_from_json(const nlohmann::ordered_json& j) {
  NodeTelemetry t;
  if (!j.is_object()) return t;
  t.tool = j.value("tool", std::string());
  t.tool_version = j.value("tool_version", std::string());
  t.samples = j.value("samples", std::size_t{0});
  t.seconds = j.value("seconds", 0.0);
  t.cores = j.value("cores", 0);
  t.cpu_share = spread_from(j, "cpu_share");
  t.psi_cpu = spread_from(j, "psi_cpu_some");
  t.psi_memory = spread_from(j, "psi_memory_some");
  t.psi_io = spread_from(j, "psi_io_some");
  t.mem_available_min_gb = opt_get(j, "mem_available_min_gb");
  if (j.contains("series") && j["series"].is_object()) {
    t.t = series_from(j["series"], "t");
    t.cpu_share_series = series_from(j["series"], "cpu_share");
    t.psi_cpu_series = series_from(j["series"], "psi_cpu");
  }
  if (j.contains("gpus") && j["gpus"].is_array())
    for (const auto& gj : j["gpus"]) {
      GpuTelemetry g;
      g.index = gj.value("index", 0);
      g.samples = gj.value("samples", std::size_t{0});
      g.throttled_fraction = gj.value("throttled_fraction", 0.0);
      if (gj.contains("figures") && gj["figures"].is_object())
        for (const auto& [k, v] : gj["figures"].items())
          if (auto sp = spread_from(gj["figures"], k.c_str())) g.figures[k] = *sp;
      if (gj.contains("throttle_reasons") && gj["throttle_reasons"].is_object())
        for (const auto& [k, v] : gj["throttle_reasons"].items())
          if (v.is_number()) g.throttle_reasons[k] = v.get<double>();
      g.power_capped_fraction = gj.value("power_capped_fraction", 0.0);
      g.power_limit_w = opt_get(gj, "power_limit_w");
      g.power_default_limit_w = opt_get(gj, "power_default_limit_w");
      g.ecc_corrected_delta = opt_get(gj, "ecc_corrected_delta");
      g.ecc_uncorrected_delta = opt_get(gj, "ecc_uncorrected_delta");
      g.pcie_width_min = opt_get(gj, "pcie_width_min");
      g.pcie_width_max = opt_get(gj, "pcie_width_max");
      g.pcie_gen_min = opt_get(gj, "pcie_gen_min");
      g.pcie_gen_max = opt_get(gj, "pcie_gen_max");
      if (gj.contains("series") && gj["series"].is_object()) {
        g.sm_clock_mhz = series_from(gj["series"], "sm_clock_mhz");
        g.power_w = series_from(gj["series"], "power_w");
        g.temp_c = series_from(gj["series"], "temp_c");
      }
      t.gpus.push_back(std::move(g));
    }
  if (j.contains("kernel") && j["kernel"].is_array())
    for (const auto& k : j["kernel"])
      t.kernel.push_back({k.value("t", 0.0), k.value("line", std::string()),
                          k.value("pattern", std::string()), k.value("meaning", std::string()),
                          k.value("fails", false)});
  if (j.contains("notes") && j["notes"].is_array())
    for (const auto& n : j["notes"])
      if (n.is_string()) t.notes.push_back(n.get<std::string>());
  return t;
}

}  // namespace cvs
