#include "cvs/results/telemetry_record.hpp"

#include <fmt/format.h>

#include <cmath>

#include "cvs/config/config_error.hpp"
#include "cvs/config/json_fields.hpp"
#include "cvs/results/telemetry_diagnosis.hpp"

namespace cvs {

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

// A name -> number object (throttle reasons, ECC blocks); absent: none.
J number_map(const std::map<std::string, double>& m) {
  J o = J::object();
  for (const auto& [k, v] : m) o[k] = v;
  return o;
}

void read_number_map(const JsonIn& in, const char* key, std::map<std::string, double>& out) {
  if (!in.has(key)) return;
  const JsonIn o = in.object(key);
  for (const auto& [k, v] : in.at(key).items()) out[k] = o.number(v, o.at_ptr(k.c_str()));
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
    optional_field("power_max_limit_w", &GpuTelemetry::power_max_limit_w),
    optional_field("ecc_corrected_delta", &GpuTelemetry::ecc_corrected_delta),
    optional_field("ecc_uncorrected_delta", &GpuTelemetry::ecc_uncorrected_delta),
    optional_field("pcie_width_min", &GpuTelemetry::pcie_width_min),
    optional_field("pcie_width_max", &GpuTelemetry::pcie_width_max),
    optional_field("pcie_gen_min", &GpuTelemetry::pcie_gen_min),
    optional_field("pcie_gen_max", &GpuTelemetry::pcie_gen_max),
    optional_field("pcie_replays_delta", &GpuTelemetry::pcie_replays_delta),
    optional_field("pcie_recoveries_delta", &GpuTelemetry::pcie_recoveries_delta),
    optional_field("pcie_naks_delta", &GpuTelemetry::pcie_naks_delta),
    optional_field("bus_id", &GpuTelemetry::bus_id), optional_field("name", &GpuTelemetry::name),
    optional_field("pages_retired", &GpuTelemetry::pages_retired),
    optional_field("pages_retired_delta", &GpuTelemetry::pages_retired_delta),
    optional_field("pages_unreservable", &GpuTelemetry::pages_unreservable),
    optional_field("pages_pending", &GpuTelemetry::pages_pending),
    optional_field("remap_pending", &GpuTelemetry::remap_pending),
    optional_field("remap_failure", &GpuTelemetry::remap_failure));
constexpr auto kKernelFields = std::make_tuple(
    optional_field("t", &KernelEvent::t), optional_field("pattern", &KernelEvent::pattern),
    optional_field("meaning", &KernelEvent::meaning), optional_field("fails", &KernelEvent::fails),
    optional_field("line", &KernelEvent::text), optional_field("gpu", &KernelEvent::gpu),
    optional_field("bus_id", &KernelEvent::bus_id), optional_field("context", &KernelEvent::context),
    optional_field("incident", &KernelEvent::incident), optional_field("repeats", &KernelEvent::repeats));

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
    gj["throttle_reasons"] = number_map(g.throttle_reasons);
    if (!g.ecc_corrected_blocks.empty()) gj["ecc_corrected_blocks"] = number_map(g.ecc_corrected_blocks);
    if (!g.ecc_uncorrected_blocks.empty())
      gj["ecc_uncorrected_blocks"] = number_map(g.ecc_uncorrected_blocks);
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
  read_number_map(in, "throttle_reasons", g.throttle_reasons);
  read_number_map(in, "ecc_corrected_blocks", g.ecc_corrected_blocks);
  read_number_map(in, "ecc_uncorrected_blocks", g.ecc_uncorrected_blocks);
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
