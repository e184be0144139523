#include "cvs/logs/amd_smi.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "cvs/base/text.hpp"

namespace cvs {
namespace {

using J = nlohmann::json;

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The leading number of "234 W", "32 GT/s", "16"; nullopt for "N/A", "0x1002", text.
std::optional<double> leading_number(std::string_view s) {
  s = trim(s);
  if (s.empty() || s.rfind("N/A", 0) == 0 || s.rfind("0x", 0) == 0) return std::nullopt;
  const std::string t(s);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end == t.c_str() || !std::isfinite(v)) return std::nullopt;
  if (*end != '\0' && *end != ' ') return std::nullopt;  // "2025/06/19" is not a figure
  return v;
}

// A text value as --json would have written it: "234 W" -> {"value": 234, "unit": "W"}, "16" ->
// 16, anything else (N/A, ENABLED, 0x1002, a date) as it is.
J text_value(std::string_view v) {
  v = trim(v);
  const auto n = leading_number(v);
  if (!n) return std::string(v);
  const auto sp = v.find(' ');
  if (sp == std::string_view::npos) return *n;
  return J{{"value", *n}, {"unit", std::string(trim(v.substr(sp + 1)))}};
}

// One "KEY: value" or "KEY:" line of the text form; false for anything else (a command line, a
// note such as "[output truncated]", a blank).
bool key_line(std::string_view line, std::size_t& indent, std::string& key, std::string_view& value) {
  indent = line.find_first_not_of(' ');
  if (indent == std::string_view::npos) return false;
  const auto rest = line.substr(indent);
  const auto colon = rest.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  const auto k = rest.substr(0, colon);
  if (!std::all_of(k.begin(), k.end(), [](char c) {
        return std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
               c == '_' || c == ' ';
      }))
    return false;
  key = lower(k);
  value = colon + 1 < rest.size() ? trim(rest.substr(colon + 1)) : std::string_view();
  return true;
}

// The text form as the --json tree: one object per "GPU: N" block, nested by indentation; a key
// repeated at one level (a list's items, as the text prints them) becomes a list.
J text_gpus(std::string_view text) {
  J gpus = J::array();
  std::optional<J> gpu;
  std::size_t gpu_indent = 0;
  std::vector<std::pair<std::size_t, J*>> stack;  // indentation -> the object it opens
  auto close = [&] {
    if (gpu) gpus.push_back(std::move(*gpu));
    gpu.reset();
    stack.clear();
  };
  for (std::size_t at = 0; at < text.size();) {
    const auto nl = text.find('\n', at);
    const auto line = text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at);
    at = nl == std::string_view::npos ? text.size() : nl + 1;
    std::size_t indent = 0;
    std::string key;
    std::string_view value;
    if (!key_line(line, indent, key, value)) continue;
    if (key == "gpu" && (!gpu || indent <= gpu_indent)) {
      close();
      const auto n = leading_number(value);
      if (!n) continue;
      gpu = J{{"gpu", static_cast<int>(*n)}};
      gpu_indent = indent;
      stack.push_back({indent, &*gpu});
      continue;
    }
    if (!gpu) continue;
    while (stack.size() > 1 && stack.back().first >= indent) stack.pop_back();
    J& parent = *stack.back().second;
    J item = value.empty() ? J::object() : text_value(value);
    J* slot = nullptr;
    if (parent.contains(key)) {  // a list's next item
      J& existing = parent[key];
      if (!existing.is_array()) existing = J::array({std::move(existing)});
      existing.push_back(std::move(item));
      slot = &existing.back();
    } else {
      slot = &(parent[key] = std::move(item));
    }
    if (value.empty()) stack.push_back({indent, slot});
  }
  close();
  return gpus;
}

}  // namespace

J amd_smi_gpus(std::string_view output) {
  for (std::size_t at = 0; at < output.size();) {
    const auto nl = output.find('\n', at);
    const auto line =
        trim(output.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at));
    if (!line.empty() && (line.front() == '[' || line.front() == '{')) {
      J j = J::parse(output.substr(output.find_first_of("[{", at)));
      if (j.is_object() && j.contains("gpu_data")) j = j["gpu_data"];
      if (j.is_object()) j = J::array({j});
      if (!j.is_array()) throw std::runtime_error("neither a list of GPUs nor gpu_data");
      return j;
    }
    if (line.rfind("GPU:", 0) == 0) return text_gpus(output.substr(at));
    at = nl == std::string_view::npos ? output.size() : nl + 1;
  }
  throw std::runtime_error("no GPU in the answer (neither --json output nor amd-smi's text)");
}

std::optional<double> amd_figure(const J& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_object() && j.contains("value")) return amd_figure(j["value"]);
  if (j.is_string()) return leading_number(j.get<std::string>());
  return std::nullopt;
}

const J* amd_node(const J& g, std::initializer_list<std::string_view> path) {
  const J* p = &g;
  for (const auto k : path) {
    if (!p->is_object()) return nullptr;
    const J* next = nullptr;
    for (auto it = p->begin(); it != p->end(); ++it)
      if (lower(it.key()) == lower(k)) next = &it.value();
    if (!next) return nullptr;
    p = next;
  }
  return p;
}

std::optional<double> amd_figure_at(const J& g, std::initializer_list<std::string_view> path) {
  const J* p = amd_node(g, path);
  return p ? amd_figure(*p) : std::nullopt;
}

namespace {

int index_of(const J& g, std::size_t fallback) {
  const auto i = amd_figure_at(g, {"gpu"});
  return i ? static_cast<int>(*i) : static_cast<int>(fallback);
}

std::string text_at(const J& g, std::initializer_list<std::string_view> path) {
  const J* p = amd_node(g, path);
  return p && p->is_string() ? p->get<std::string>() : std::string();
}

// A rate in GT/s from {"value", "unit"} (GT/s or MT/s) or "32 GT/s".
std::optional<double> rate_gts(const J* j) {
  if (!j) return std::nullopt;
  const auto v = amd_figure(*j);
  if (!v) return std::nullopt;
  std::string unit;
  if (j->is_object() && j->contains("unit") && (*j)["unit"].is_string())
    unit = (*j)["unit"].get<std::string>();
  if (j->is_string()) unit = j->get<std::string>();
  return unit.find("MT/s") != std::string::npos ? *v / 1000 : *v;
}

// A bad-pages answer: "No bad pages found." 0, an object 1, a list its size, "N/A" none.
std::optional<double> page_count(const J* j) {
  if (!j) return std::nullopt;
  if (j->is_array()) return static_cast<double>(j->size());
  if (j->is_object()) return 1.0;
  if (j->is_string() && j->get<std::string>().rfind("No bad pages", 0) == 0) return 0.0;
  return std::nullopt;
}

// The violation section (6.3+ `throttle`, 7.x `violation` too): the reasons active in this sample.
void violation_reasons(const J& g, std::vector<std::string>& out) {
  static const std::pair<std::string_view, const char*> kReasons[] = {
      {"ppt", kPowerCapReason},
      {"socket_thermal", "thermal"},
      {"hbm_thermal", "thermal (HBM)"},
      {"vr_thermal", "thermal (voltage regulator)"},
      {"prochot", "thermal (PROCHOT)"}};
  for (const auto section : {"throttle", "violation"}) {
    const J* t = amd_node(g, {section});
    if (!t || !t->is_object()) continue;
    for (const auto& [key, words] : kReasons) {
      const J* status = amd_node(*t, {std::string(key) + "_violation_status"});
      const auto activity = amd_figure_at(*t, {std::string(key) + "_violation_activity"});
      const bool active = (status && status->is_string() && status->get<std::string>() == "ACTIVE") ||
                          (status && status->is_boolean() && status->get<bool>()) ||
                          (activity && *activity > 0);
      if (active && std::find(out.begin(), out.end(), words) == out.end()) out.emplace_back(words);
    }
  }
}

std::optional<double> median_of(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void ecc_of(const J& g, GpuSample& s) {
  s.ecc_corrected = amd_figure_at(g, {"ecc", "total_correctable_count"});
  s.ecc_uncorrected = amd_figure_at(g, {"ecc", "total_uncorrectable_count"});
  const J* blocks = amd_node(g, {"ecc_blocks"});
  if (!blocks || !blocks->is_object()) return;
  for (auto it = blocks->begin(); it != blocks->end(); ++it) {
    std::string name = it.key();
    for (auto& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (const auto c = amd_figure_at(it.value(), {"correctable_count"})) s.ecc_block_corrected[name] = *c;
    if (const auto u = amd_figure_at(it.value(), {"uncorrectable_count"})) s.ecc_block_uncorrected[name] = *u;
  }
}

void pcie_of(const J& g, GpuSample& s) {
  s.pcie_width = amd_figure_at(g, {"pcie", "width"});
  if (const auto r = rate_gts(amd_node(g, {"pcie", "speed"}))) s.pcie_gen = pcie_gen_of_rate(*r);
  s.pcie_replays = amd_figure_at(g, {"pcie", "replay_count"});
  s.pcie_recoveries = amd_figure_at(g, {"pcie", "l0_to_recovery_count"});
  const auto sent = amd_figure_at(g, {"pcie", "nak_sent_count"});
  const auto received = amd_figure_at(g, {"pcie", "nak_received_count"});
  if (sent || received) s.pcie_naks = sent.value_or(0) + received.value_or(0);
}

GpuSample metric_gpu(const J& g, std::size_t fallback_index) {
  GpuSample s;
  s.index = index_of(g, fallback_index);
  s.power_w = amd_figure_at(g, {"power", "socket_power"});
  if (!s.power_w) s.power_w = amd_figure_at(g, {"power", "average_socket_power"});
  s.temp_c = amd_figure_at(g, {"temperature", "edge"});
  s.temp_hotspot_c = amd_figure_at(g, {"temperature", "hotspot"});
  s.temp_mem_c = amd_figure_at(g, {"temperature", "mem"});
  s.util_pct = amd_figure_at(g, {"usage", "gfx_activity"});
  // An MI300-class GPU clocks each XCD (gfx_0..gfx_7): the GPU's clock is their median.
  std::vector<double> xcd;
  for (int i = 0; i < 16; ++i)
    if (const auto c = amd_figure_at(g, {"clock", "gfx_" + std::to_string(i), "clk"})) xcd.push_back(*c);
  s.sm_clock_mhz = median_of(xcd);
  if (!s.sm_clock_mhz) s.sm_clock_mhz = amd_figure_at(g, {"clock", "gfx_clock"});
  s.mem_clock_mhz = amd_figure_at(g, {"clock", "mem_0", "clk"});
  if (!s.mem_clock_mhz) s.mem_clock_mhz = amd_figure_at(g, {"clock", "mem_clock"});
  ecc_of(g, s);
  pcie_of(g, s);
  violation_reasons(g, s.throttle);
  // Older GPUs' one-word status (MI300-class GPUs print N/A): only where no violation section.
  const std::string st = text_at(g, {"power", "throttle_status"});
  if (s.throttle.empty() && !amd_node(g, {"throttle"}) && !st.empty() && st != "UNTHROTTLED" && st != "N/A")
    s.throttle.emplace_back("throttled (" + st + ")");
  return s;
}

}  // namespace

namespace {

// One T a GPU of an amd-smi --json output, in its order: read(gpu, its position) gives each.
template <typename T, typename Read>
std::vector<T> each_gpu(std::string_view output, Read read) {
  const J gpus = amd_smi_gpus(output);
  std::vector<T> out;
  out.reserve(gpus.size());
  for (std::size_t i = 0; i < gpus.size(); ++i) out.push_back(read(gpus[i], i));
  return out;
}

}  // namespace

std::vector<AmdGpuId> parse_amd_smi_list(std::string_view output) {
  return each_gpu<AmdGpuId>(output, [](const J& g, std::size_t i) {
    AmdGpuId id;
    id.index = index_of(g, i);
    id.bdf = text_at(g, {"bdf"});
    id.bus_id = normalize_bus_id(id.bdf);
    id.uuid = text_at(g, {"uuid"});
    if (const auto p = amd_figure_at(g, {"partition_id"})) id.partition = static_cast<int>(*p);
    return id;
  });
}

std::vector<AmdGpuStatic> parse_amd_smi_static(std::string_view output) {
  return each_gpu<AmdGpuStatic>(output, [](const J& g, std::size_t i) {
    AmdGpuStatic s;
    s.index = index_of(g, i);
    s.market_name = text_at(g, {"asic", "market_name"});
    s.bdf = text_at(g, {"bus", "bdf"});
    s.bus_id = normalize_bus_id(s.bdf);
    s.power_cap_w = amd_figure_at(g, {"limit", "socket_power"});
    if (!s.power_cap_w) s.power_cap_w = amd_figure_at(g, {"limit", "ppt0", "socket_power_limit"});
    s.power_max_w = amd_figure_at(g, {"limit", "max_power"});
    if (!s.power_max_w) s.power_max_w = amd_figure_at(g, {"limit", "ppt0", "max_power_limit"});
    s.pcie_width_max = amd_figure_at(g, {"bus", "max_pcie_width"});
    s.pcie_rate_max = rate_gts(amd_node(g, {"bus", "max_pcie_speed"}));
    return s;
  });
}

std::vector<AmdBadPages> parse_amd_smi_bad_pages(std::string_view output) {
  return each_gpu<AmdBadPages>(output, [](const J& g, std::size_t i) {
    AmdBadPages b;
    b.index = index_of(g, i);
    b.retired = page_count(amd_node(g, {"retired"}));
    b.pending = page_count(amd_node(g, {"pending"}));
    b.unreservable = page_count(amd_node(g, {"un_res"}));
    return b;
  });
}

std::vector<GpuSample> parse_amd_smi_metric(std::string_view output) {
  const J gpus = amd_smi_gpus(output);
  std::vector<GpuSample> out;
  for (std::size_t i = 0; i < gpus.size(); ++i) out.push_back(metric_gpu(gpus[i], i));
  return out;
}

}  // namespace cvs
