#include "cvs/logs/telemetry.hpp"

#include "cvs/base/enum_names.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>

namespace cvs {

const char* to_string(GpuTool t) {
  static constexpr EnumWord<GpuTool> kWords[] = {{GpuTool::NvidiaSmi, "nvidia-smi"},
                                                 {GpuTool::AmdSmi, "amd-smi"},
                                                 {GpuTool::RocmSmi, "rocm-smi"},
                                                 {GpuTool::None, "none"}};
  return word_of(kWords, t);
}

// ---- the kernel log catalog ------------------------------------------------------------------

const std::vector<KernelPattern>& kernel_patterns() {
  using K = KernelPattern::Kind;
  static const std::vector<KernelPattern> v = {
      {"nvidia_xid", R"(NVRM: Xid \([^)]*\): \d+)", "an NVIDIA Xid error", K::Gpu, true},
      {"amdgpu_ring_timeout", R"(amdgpu.*ring \S+ timeout)", "an AMD GPU ring (a job on the GPU) timed out",
       K::Gpu, true},
      {"amdgpu_reset", R"(amdgpu.*(GPU reset|GPU recovery|reset begin))", "an AMD GPU was reset", K::Gpu,
       true},
      {"amdgpu_ras", R"(amdgpu.*(uncorrectable|RAS).*error)", "an AMD GPU RAS (ECC) error", K::Gpu, true},
      {"machine_check", R"(mce: \[Hardware Error\]|Machine check events logged|Machine Check Exception)",
       "a machine check (a CPU, memory or bus hardware error)", K::MachineCheck, true},
      {"nic_link_down", R"(NIC Link is Down|mlx5_core\S* \S+:.*[Ll]ink down)", "a network link went down",
       K::Nic, true},
      {"rdma_error",
       R"(mlx5_core.*(Fatal|health compromised|cmd_work_handler.*timeout)|ib\w*:.*catastrophic)",
       "an RDMA adapter error", K::Nic, true},
      {"oom_kill", R"(Out of memory: Killed process|Memory cgroup out of memory|oom-kill:)",
       "the kernel's OOM killer killed a process", K::OomKill, false},
      {"segfault", R"(segfault at|traps: .* general protection)", "a process crashed (segfault)", K::Segfault,
       false},
  };
  return v;
}

namespace {

struct CompiledPatterns {
  std::vector<std::unique_ptr<RE2>> re;
  RE2 xid{R"(NVRM: Xid \([^)]*\): (\d+))"};
  CompiledPatterns() {
    RE2::Options o;
    o.set_case_sensitive(false);
    o.set_log_errors(false);
    for (const auto& p : kernel_patterns()) re.push_back(std::make_unique<RE2>(std::string(p.regex), o));
  }
};

const CompiledPatterns& compiled() {
  static const CompiledPatterns c;
  return c;
}

std::string xid_meaning(int code) {
  switch (code) {
    case 13:
      return "graphics engine exception: an application fault or a failing GPU";
    case 31:
      return "GPU memory page fault";
    case 43:
      return "the GPU stopped processing";
    case 45:
      return "preemptive cleanup after another fault";
    case 48:
      return "double-bit ECC error";
    case 61:
    case 62:
      return "internal micro-controller halt";
    case 63:
      return "ECC page retirement or row remapping";
    case 64:
      return "ECC page retirement or row remapping failed";
    case 74:
      return "NVLink error";
    case 79:
      return "the GPU has fallen off the bus";
    case 92:
      return "high single-bit ECC error rate";
    case 94:
      return "contained ECC error";
    case 95:
      return "uncontained ECC error";
    case 119:
    case 120:
      return "GSP firmware error";
    default:
      return "an NVIDIA Xid error";
  }
}

std::optional<double> num(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '(')) s.remove_prefix(1);
  if (s.empty() || s.front() == '[' || s.rfind("N/A", 0) == 0) return std::nullopt;
  std::string t(s);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end == t.c_str() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t at = 0;
  while (true) {
    const auto p = s.find(sep, at);
    out.push_back(s.substr(at, p == std::string_view::npos ? std::string_view::npos : p - at));
    if (p == std::string_view::npos) break;
    at = p + 1;
  }
  return out;
}

// nvidia-smi's clocks_event_reasons.active bits that slow the clocks down (idle, application
// clocks and the display are not slowdowns).
std::optional<unsigned long long> num_hex(std::string_view hex) {
  std::string t(hex);
  while (!t.empty() && t.front() == ' ') t.erase(0, 1);
  if (t.rfind("0x", 0) != 0) return std::nullopt;
  return std::strtoull(t.c_str() + 2, nullptr, 16);
}

std::vector<std::string> nvidia_reasons(std::string_view hex) {
  std::vector<std::string> out;
  const auto mask = num_hex(hex);
  if (!mask) return out;
  const unsigned long long m = *mask;
  const std::pair<unsigned long long, const char*> bits[] = {
      {0x4, "power cap"},           {0x8, "hardware slowdown"},       {0x20, "thermal (software)"},
      {0x40, "thermal (hardware)"}, {0x80, "power brake (hardware)"}, {0x10, "sync boost"}};
  for (auto [b, w] : bits)
    if (m & b) out.emplace_back(w);
  return out;
}

// A figure of amd-smi's JSON: {"value": v, "unit": u}, a bare number, or "N/A".
std::optional<double> amd_value(const nlohmann::json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_object() && j.contains("value")) return amd_value(j["value"]);
  if (j.is_string()) return num(j.get<std::string>());
  return std::nullopt;
}

const nlohmann::json* at_path(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return nullptr;
    p = &(*p)[k];
  }
  return p;
}

std::optional<double> amd_at(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const auto* p = at_path(j, path);
  return p ? amd_value(*p) : std::nullopt;
}

// The JSON of a tool's output, past any banner lines before it.
nlohmann::json tool_json(std::string_view text) {
  const auto at = text.find_first_of("[{");
  if (at == std::string_view::npos) throw std::runtime_error("no JSON in the output");
  return nlohmann::json::parse(text.substr(at));
}

GpuSample amd_gpu(const nlohmann::json& g, int fallback_index) {
  GpuSample s;
  s.index = g.contains("gpu") && g["gpu"].is_number_integer() ? g["gpu"].get<int>() : fallback_index;
  s.power_w = amd_at(g, {"power", "socket_power"});
  if (!s.power_w) s.power_w = amd_at(g, {"power", "average_socket_power"});
  s.temp_c = amd_at(g, {"temperature", "edge"});
  s.temp_hotspot_c = amd_at(g, {"temperature", "hotspot"});
  s.temp_mem_c = amd_at(g, {"temperature", "mem"});
  s.util_pct = amd_at(g, {"usage", "gfx_activity"});
  s.sm_clock_mhz = amd_at(g, {"clock", "gfx_0", "clk"});
  if (!s.sm_clock_mhz) s.sm_clock_mhz = amd_at(g, {"clock", "gfx_clock"});
  s.mem_clock_mhz = amd_at(g, {"clock", "mem_0", "clk"});
  if (!s.mem_clock_mhz) s.mem_clock_mhz = amd_at(g, {"clock", "mem_clock"});
  s.ecc_corrected = amd_at(g, {"ecc", "total_correctable_count"});
  s.ecc_uncorrected = amd_at(g, {"ecc", "total_uncorrectable_count"});
  s.pcie_width = amd_at(g, {"pcie", "width"});
  s.pcie_width_max = amd_at(g, {"pcie", "max_width"});
  if (const auto sp = amd_at(g, {"pcie", "speed"})) s.pcie_gen = *sp;  // GT/s
  if (const auto* t = at_path(g, {"power", "throttle_status"}); t && t->is_string()) {
    const auto st = t->get<std::string>();
    if (st != "UNTHROTTLED" && st != "N/A") s.throttle.emplace_back("throttled (" + st + ")");
  }
  return s;
}

}  // namespace

const KernelPattern* match_kernel_line(std::string_view text, int* xid) {
  const auto& c = compiled();
  const re2::StringPiece sp(text.data(), text.size());
  for (std::size_t i = 0; i < c.re.size(); ++i)
    if (RE2::PartialMatch(sp, *c.re[i])) {
      if (xid) {
        int code = 0;
        if (RE2::PartialMatch(sp, c.xid, &code)) *xid = code;
      }
      return &kernel_patterns()[i];
    }
  return nullptr;
}

std::string KernelLine::meaning() const {
  if (!pattern) return "";
  if (pattern->name == "nvidia_xid") return "NVIDIA Xid " + std::to_string(xid) + ": " + xid_meaning(xid);
  return std::string(pattern->meaning);
}

std::optional<GpuSample> parse_nvidia_smi_row(std::string_view csv) {
  const auto f = split(csv, ',');
  if (f.size() < 14) return std::nullopt;
  const auto idx = num(f[0]);
  if (!idx) return std::nullopt;
  GpuSample s;
  s.index = static_cast<int>(*idx);
  s.power_w = num(f[1]);
  s.sm_clock_mhz = num(f[2]);
  s.mem_clock_mhz = num(f[3]);
  s.temp_c = num(f[4]);
  s.temp_mem_c = num(f[5]);
  s.util_pct = num(f[6]);
  s.throttle = nvidia_reasons(f[7]);
  if (const auto bits = num_hex(f[7])) s.idle = (*bits & 0x1) != 0;
  s.ecc_corrected = num(f[8]);
  s.ecc_uncorrected = num(f[9]);
  s.pcie_width = num(f[10]);
  s.pcie_width_max = num(f[11]);
  s.pcie_gen = num(f[12]);
  s.pcie_gen_max = num(f[13]);
  if (f.size() >= 16) {  // samplers before the power limits were queried sent 14 fields
    s.power_limit_w = num(f[14]);
    s.power_default_limit_w = num(f[15]);
  }
  auto text = [&](std::size_t i) {
    auto u = f[i];
    while (!u.empty() && u.front() == ' ') u.remove_prefix(1);
    while (!u.empty() && (u.back() == ' ' || u.back() == '\r')) u.remove_suffix(1);
    return u;
  };
  if (f.size() >= 17) s.uuid = std::string(text(16));
  if (f.size() >= 19) {  // samplers before the bus id and page retirement were queried sent 17
    s.bus_id = normalize_bus_id(text(17));
    const auto pending = text(18);
    if (pending == "Yes") s.pages_pending = true;
    if (pending == "No") s.pages_pending = false;
  }
  return s;
}

std::string normalize_bus_id(std::string_view pci) {
  // [domain:]bus:device[.function]
  while (!pci.empty() && pci.front() == ' ') pci.remove_prefix(1);
  while (!pci.empty() && (pci.back() == ' ' || pci.back() == '\r')) pci.remove_suffix(1);
  if (const auto dot = pci.rfind('.'); dot != std::string_view::npos) pci = pci.substr(0, dot);
  const auto last = pci.rfind(':');
  if (last == std::string_view::npos || last == 0) return {};
  const auto before = pci.rfind(':', last - 1);
  std::string_view bus = pci.substr(before == std::string_view::npos ? 0 : before + 1,
                                    last - (before == std::string_view::npos ? 0 : before + 1));
  std::string_view dev = pci.substr(last + 1);
  if (bus.empty() || dev.empty() || bus.size() > 2 || dev.size() > 2) return {};
  std::string out = std::string(bus) + ":" + std::string(dev);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (out.find_first_not_of("0123456789abcdef:") != std::string::npos) return {};
  return out;
}

std::vector<GpuSample> parse_amd_smi_metric(std::string_view text) {
  const auto j = tool_json(text);
  const nlohmann::json& list = j.is_object() && j.contains("gpu_data") ? j["gpu_data"] : j;
  if (!list.is_array()) throw std::runtime_error("neither a list of GPUs nor gpu_data");
  std::vector<GpuSample> out;
  for (std::size_t i = 0; i < list.size(); ++i) out.push_back(amd_gpu(list[i], static_cast<int>(i)));
  return out;
}

std::vector<GpuSample> parse_rocm_smi(std::string_view text) {
  const auto j = tool_json(text);
  if (!j.is_object()) throw std::runtime_error("not an object of cards");
  std::vector<GpuSample> out;
  for (const auto& [key, card] : j.items()) {
    if (key.rfind("card", 0) != 0 || !card.is_object()) continue;
    GpuSample s;
    s.index = std::atoi(key.c_str() + 4);
    auto str = [&](const char* k) -> std::optional<double> {
      return card.contains(k) && card[k].is_string() ? num(card[k].get<std::string>()) : std::nullopt;
    };
    s.temp_c = str("Temperature (Sensor edge) (C)");
    s.temp_hotspot_c = str("Temperature (Sensor junction) (C)");
    s.temp_mem_c = str("Temperature (Sensor memory) (C)");
    s.power_w = str("Average Graphics Package Power (W)");
    if (!s.power_w) s.power_w = str("Current Socket Graphics Package Power (W)");
    s.sm_clock_mhz = str("sclk clock speed:");
    s.mem_clock_mhz = str("mclk clock speed:");
    s.util_pct = str("GPU use (%)");
    out.push_back(s);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  return out;
}

void TelemetryParser::feed(std::string_view bytes) {
  buf_.append(bytes);
  std::size_t at = 0;
  for (std::size_t nl; (nl = buf_.find('\n', at)) != std::string::npos; at = nl + 1)
    line(std::string_view(buf_).substr(at, nl - at));
  buf_.erase(0, at);
}

void TelemetryParser::note(const std::string& n) {
  if (std::find(notes_.begin(), notes_.end(), n) == notes_.end() && notes_.size() < 50) notes_.push_back(n);
}

namespace {

// "H tick=100 cores=2 tool=nvidia-smi sid=42"
void read_header(std::string_view rest, double& tick, int& cores, GpuTool& tool) {
  for (auto kv : split(rest, ' ')) {
    const auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    const auto k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "tick" && num(v)) tick = *num(v);
    if (k == "cores" && num(v)) cores = static_cast<int>(*num(v));
    if (k == "tool")
      tool = v == "nvidia-smi" ? GpuTool::NvidiaSmi
             : v == "amd-smi"  ? GpuTool::AmdSmi
             : v == "rocm-smi" ? GpuTool::RocmSmi
                               : GpuTool::None;
  }
}

// "S <uptime> cpu=<ticks> psi_cpu=<us> psi_mem=<us> psi_io=<us> mem_kb=<kb>"
std::optional<HostSample> read_sample(std::string_view rest) {
  const auto f = split(rest, ' ');
  if (f.empty() || !num(f[0])) return std::nullopt;
  HostSample s;
  s.t = *num(f[0]);
  for (std::size_t i = 1; i < f.size(); ++i) {
    const auto eq = f[i].find('=');
    if (eq == std::string_view::npos) continue;
    const auto k = f[i].substr(0, eq);
    const auto v = num(f[i].substr(eq + 1));
    if (k == "cpu") s.cpu_ticks = v;
    if (k == "psi_cpu") s.psi_cpu_us = v;
    if (k == "psi_mem") s.psi_mem_us = v;
    if (k == "psi_io") s.psi_io_us = v;
    if (k == "mem_kb") s.mem_available_kb = v;
    if (k == "steps") {
      if (f[i].substr(eq + 1) == "-")
        s.training_log_unreadable = true;
      else
        s.training = v && *v > 0;
    }
  }
  return s;
}

// "K prio,seq,usec,flags;text": a catalog line, or nothing.
std::optional<KernelLine> read_kernel(std::string_view rest) {
  const auto semi = rest.find(';');
  if (semi == std::string_view::npos) return std::nullopt;
  KernelLine k;
  const auto head = split(rest.substr(0, semi), ',');
  if (head.size() >= 3)
    if (const auto us = num(head[2])) k.t = *us / 1e6;
  k.text = std::string(rest.substr(semi + 1, 1000));
  k.pattern = match_kernel_line(k.text, &k.xid);
  if (const auto at = k.text.find("(PCI:"); at != std::string::npos) {
    const auto end = k.text.find(')', at);
    if (end != std::string::npos)
      k.bus_id = normalize_bus_id(std::string_view(k.text).substr(at + 5, end - at - 5));
  }
  if (!k.pattern) return std::nullopt;
  return k;
}

// nvidia-smi prints a count, or Yes / No, by version.
std::optional<double> count_or_flag(std::string_view v) {
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\r')) v.remove_suffix(1);
  if (v == "Yes") return 1.0;
  if (v == "No") return 0.0;
  return num(v);
}

// An R line: the row remapping of the GPU whose bus id the row names (bus id, pending, failure).
void read_remap_row(std::string_view rest, HostSample& s) {
  const auto f = split(rest, ',');
  if (f.size() < 3) return;
  const auto bus = normalize_bus_id(f[0]);
  for (auto& g : s.gpus)
    if (!bus.empty() && g.bus_id == bus) {
      g.remap_pending = count_or_flag(f[1]);
      g.remap_failure = count_or_flag(f[2]);
    }
}

// An O line: whose a listed compute process is.
void read_owner(std::string_view rest, HostSample& s) {
  const auto f = split(rest, ' ');
  if (f.size() != 2 || !num(f[0])) return;
  s.owners[static_cast<long long>(*num(f[0]))] = f[1] == "ours"    ? ProcessOwner::Ours
                                                 : f[1] == "other" ? ProcessOwner::Other
                                                                   : ProcessOwner::Unseen;
}

}  // namespace

void TelemetryParser::line(std::string_view l) {
  if (l.empty()) return;
  const std::string_view rest = l.size() > 2 ? l.substr(2) : std::string_view();
  switch (l[0]) {
    case 'H':
      read_header(rest, tick_, cores_, tool_);
      return;
    case 'V':
      tool_version_ = std::string(rest.substr(0, 200));
      return;
    case 'S':
      if (auto s = read_sample(rest)) samples_.push_back(std::move(*s));
      return;
    case 'G':
      if (samples_.empty()) return;
      if (auto g = parse_nvidia_smi_row(rest))
        samples_.back().gpus.push_back(*g);
      else
        note("nvidia-smi output does not parse (" + tool_version_ + "): '" +
             std::string(rest.substr(0, 120)) + "'");
      return;
    case 'R':
      if (!samples_.empty()) read_remap_row(rest, samples_.back());
      return;
    case 'J':
      json_.append(rest).append("\n");
      return;
    case 'E':
      json_block();
      return;
    case 'K':
      if (auto k = read_kernel(rest)) kernel_.push_back(std::move(*k));
      return;
    case 'P':
      procs_.append(rest).append("\n");
      return;
    case 'Q':
      process_block();
      return;
    case 'O':
      if (!samples_.empty()) read_owner(rest, samples_.back());
      return;
    case 'N':
      note(std::string(rest));
      return;
    case 'F':
      finished_ = true;
      return;
    default:
      return;
  }
}

void TelemetryParser::json_block() {
  const std::string text = std::move(json_);
  json_.clear();
  if (samples_.empty()) return;
  try {
    samples_.back().gpus = tool_ == GpuTool::RocmSmi ? parse_rocm_smi(text) : parse_amd_smi_metric(text);
  } catch (const std::exception& e) {
    note(std::string(to_string(tool_)) + " output does not parse (" + tool_version_ + "): " + e.what());
  }
}

void TelemetryParser::process_block() {
  const std::string text = std::move(procs_);
  procs_.clear();
  if (samples_.empty()) return;
  auto& sample = samples_.back();
  GpuProcessList list;
  if (tool_ == GpuTool::NvidiaSmi) {
    std::vector<GpuId> gpus;
    for (const auto& g : sample.gpus) gpus.push_back({g.index, g.uuid});
    list = parse_nvidia_compute_apps(text, gpus);
  } else if (tool_ == GpuTool::AmdSmi) {
    list = parse_amd_smi_process(text);
  } else if (tool_ == GpuTool::RocmSmi) {
    list = parse_rocm_smi_pids(text);
  }
  if (!list.error.empty())
    note(std::string(to_string(tool_)) + " cannot list the GPUs' processes (" + tool_version_ +
         "): " + list.error);
  sample.processes = std::move(list);
}

std::vector<KernelLine> TelemetryParser::take_new_kernel_lines() {
  std::vector<KernelLine> out(kernel_.begin() + static_cast<long>(kernel_taken_), kernel_.end());
  kernel_taken_ = kernel_.size();
  return out;
}

}  // namespace cvs
