#include "cvs/logs/telemetry.hpp"
#include "cvs/base/text.hpp"

#include "cvs/base/enum_names.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

namespace cvs {

const char* to_string(GpuTool t) {
  static constexpr EnumWord<GpuTool> kWords[] = {{GpuTool::NvidiaSmi, "nvidia-smi"},
                                                 {GpuTool::AmdSmi, "amd-smi"},
                                                 {GpuTool::RocmSmi, "rocm-smi"},
                                                 {GpuTool::None, "none"}};
  return word_of(kWords, t);
}

namespace {

// amdgpu's device prefix, and the process a driver line names ("for process python3.12 pid
// 6071", "Process firefox-bin pid 7401").
struct DriverLines {
  RE2 amdgpu_bdf{R"(amdgpu ([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F]):)"};
  RE2 process{R"([Pp]rocess (\S+) pid (\d+))"};
};

const DriverLines& driver_lines() {
  static const DriverLines d;
  return d;
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
      {0x4, kPowerCapReason},       {0x8, "hardware slowdown"},       {0x20, "thermal (software)"},
      {0x40, "thermal (hardware)"}, {0x80, "power brake (hardware)"}, {0x10, "sync boost"}};
  for (auto [b, w] : bits)
    if (m & b) out.emplace_back(w);
  return out;
}

// The JSON of a tool's output, past any banner lines before it.
nlohmann::json tool_json(std::string_view text) {
  const auto at = text.find_first_of("[{");
  if (at == std::string_view::npos) throw std::runtime_error("no JSON in the output");
  return nlohmann::json::parse(text.substr(at));
}

}  // namespace

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
  auto text = [&](std::size_t i) { return trim(f[i]); };
  if (f.size() >= 17) s.uuid = std::string(text(16));
  if (f.size() >= 19) {  // samplers before the bus id and page retirement were queried sent 17
    s.bus_id = normalize_bus_id(text(17));
    const auto pending = text(18);
    if (pending == "Yes") s.pages_pending = true;
    if (pending == "No") s.pages_pending = false;
  }
  return s;
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

// nvidia-smi prints a count, or Yes / No, by version.
std::optional<double> count_or_flag(std::string_view v) {
  v = trim(v);
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

void TelemetryParser::sample_row(char kind, std::string_view rest) {
  if (samples_.empty()) return;  // a row before any sample line: nothing to attach it to
  auto& s = samples_.back();
  if (kind == 'R') return read_remap_row(rest, s);
  if (kind == 'O') return read_owner(rest, s);
  if (auto g = parse_nvidia_smi_row(rest))
    s.gpus.push_back(*g);
  else
    note("nvidia-smi output does not parse (" + tool_version_ + "): '" + std::string(rest.substr(0, 120)) +
         "'");
}

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
    case 'R':
    case 'O':
      sample_row(l[0], rest);
      return;
    case 'J':
      json_.append(rest).append("\n");
      return;
    case 'E':
      json_block();
      return;
    case 'K':
      kernel_record(rest);
      return;
    case 'X':
      block_kind_ = std::string(rest);
      return;
    case 'P':
      procs_.append(rest).append("\n");
      return;
    case 'Q':
      process_block();
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
  const std::string kind = std::exchange(block_kind_, "");
  try {
    if (tool_ == GpuTool::AmdSmi && !kind.empty()) return amd_block(kind + "\n" + text);
    if (samples_.empty()) return;
    if (tool_ == GpuTool::RocmSmi) {
      samples_.back().gpus = parse_rocm_smi(text);
      return;
    }
    auto gpus = parse_amd_smi_metric(text);
    // What the list and static said of each GPU: its address, its power cap and the most it may
    // be, its link's maxima.
    for (auto& g : gpus) {
      for (const auto& id : amd_ids_)
        if (id.index == g.index && g.bus_id.empty()) g.bus_id = id.bus_id;
      for (const auto& st : amd_static_)
        if (st.index == g.index) {
          if (g.bus_id.empty()) g.bus_id = st.bus_id;
          g.power_limit_w = st.power_cap_w;
          g.power_max_limit_w = st.power_max_w;
          g.pcie_width_max = st.pcie_width_max;
          if (st.pcie_rate_max) g.pcie_gen_max = pcie_gen_of_rate(*st.pcie_rate_max);
        }
    }
    samples_.back().gpus = std::move(gpus);
  } catch (const std::exception& e) {
    note(std::string(to_string(tool_)) + (kind.empty() ? "" : " " + kind) + " output does not parse (" +
         tool_version_ + "): " + e.what());
  }
}

// An amd-smi answer other than metric: "KIND\n" then its text.
void TelemetryParser::amd_block(const std::string& kind_and_text) {
  const auto nl = kind_and_text.find('\n');
  const std::string kind = kind_and_text.substr(0, nl);
  const std::string_view text = std::string_view(kind_and_text).substr(nl + 1);
  if (kind == "list") {
    amd_ids_ = parse_amd_smi_list(text);
  } else if (kind == "static") {
    amd_static_ = parse_amd_smi_static(text);
  } else if (kind == "bad-pages") {
    if (samples_.empty()) return;
    for (const auto& b : parse_amd_smi_bad_pages(text))
      for (auto& g : samples_.back().gpus)
        if (g.index == b.index) {
          g.pages_retired = b.retired;
          g.pages_unreservable = b.unreservable;
          if (b.pending) g.pages_pending = *b.pending > 0;
        }
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

// The node's GPU at a PCI address: amd-smi's list (the lowest index of a partitioned GPU), else
// the latest sample's GPUs.
std::optional<int> TelemetryParser::gpu_at(const std::string& bus_id) const {
  if (bus_id.empty()) return std::nullopt;
  std::optional<int> found;
  for (const auto& id : amd_ids_)
    if (id.bus_id == bus_id && (!found || id.index < *found)) found = id.index;
  if (found) return found;
  for (auto s = samples_.rbegin(); s != samples_.rend(); ++s) {
    for (const auto& g : s->gpus)
      if (g.bus_id == bus_id) return g.index;
    if (!s->gpus.empty()) break;
  }
  return std::nullopt;
}

namespace {

// The PCI device a kernel line names: an Xid's "(PCI:0000:8a:00)", amdgpu's "amdgpu 0000:68:00.0:".
std::string bus_of(const std::string& text) {
  if (const auto at = text.find("(PCI:"); at != std::string::npos) {
    const auto end = text.find(')', at);
    if (end != std::string::npos)
      return normalize_bus_id(std::string_view(text).substr(at + 5, end - at - 5));
  }
  std::string bdf;
  if (RE2::PartialMatch(text, driver_lines().amdgpu_bdf, &bdf)) return normalize_bus_id(bdf);
  return {};
}

}  // namespace

// A driver line naming a process ("for process python3.12 pid 6071") names the last line of its
// device, within an incident's gap, that named none.
void TelemetryParser::attach_process(const KernelLine& k) {
  std::string name;
  long long pid = 0;
  if (k.bus_id.empty() || !RE2::PartialMatch(k.text, driver_lines().process, &name, &pid) || pid <= 0) return;
  for (auto it = kernel_.rbegin(); it != kernel_.rend() && k.t - it->t <= kIncidentGapS; ++it)
    if (it->bus_id == k.bus_id) {
      if (it->pid == 0) {
        it->pid = pid;
        it->process = name;
      }
      return;
    }
}

// "K prio,seq,usec,flags;text": a catalog line joins its incident (or repeats a line of it).
void TelemetryParser::kernel_record(std::string_view rest) {
  const auto semi = rest.find(';');
  if (semi == std::string_view::npos) return;
  KernelLine k;
  const auto head = split(rest.substr(0, semi), ',');
  if (head.size() >= 3)
    if (const auto us = num(head[2])) k.t = *us / 1e6;
  k.text = std::string(rest.substr(semi + 1, 1000));
  k.pattern = match_kernel_line(k.text, &k.xid);
  k.bus_id = bus_of(k.text);
  if (!k.pattern) return attach_process(k);
  k.gpu = gpu_at(k.bus_id);
  if (k.pattern->kind != KernelPattern::Kind::Gpu) {
    kernel_.push_back(std::move(k));
    return;
  }
  const auto last_gpu_line = std::find_if(kernel_.rbegin(), kernel_.rend(), [](const KernelLine& e) {
    return e.pattern->kind == KernelPattern::Kind::Gpu;
  });
  const bool joins = last_gpu_line != kernel_.rend() && k.t - last_gpu_line->t <= kIncidentGapS;
  k.incident = joins ? last_gpu_line->incident : ++incidents_;
  for (auto& e : kernel_)
    if (e.incident == k.incident && e.pattern == k.pattern && e.bus_id == k.bus_id) {
      ++e.repeats;
      return;
    }
  const int incident = k.incident;
  kernel_.push_back(std::move(k));
  settle_incident(incident);
}

// Who an incident blames: an old ring timeout without an address takes the next reset line's;
// the GPUs of its faults, or, with no fault, the GPUs it reset; every other GPU's lines are context.
void TelemetryParser::settle_incident(int incident) {
  using R = KernelPattern::Role;
  std::vector<KernelLine*> lines;
  for (auto& e : kernel_)
    if (e.incident == incident) lines.push_back(&e);
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (lines[i]->bus_id.empty() && lines[i]->pattern->role == R::Fault)
      for (std::size_t j = i + 1; j < lines.size(); ++j)
        if (lines[j]->pattern->role == R::Reset && !lines[j]->bus_id.empty()) {
          lines[i]->bus_id = lines[j]->bus_id;
          lines[i]->gpu = lines[j]->gpu;
          break;
        }
  auto blamed_by = [&](R role) {
    std::vector<std::string> buses;
    for (const auto* e : lines)
      if (e->pattern->role == role && !e->bus_id.empty()) buses.push_back(e->bus_id);
    return buses;
  };
  auto blamed = blamed_by(R::Fault);
  if (blamed.empty()) blamed = blamed_by(R::Reset);
  for (auto* e : lines)
    e->context = !e->bus_id.empty() && !blamed.empty() &&
                 std::find(blamed.begin(), blamed.end(), e->bus_id) == blamed.end();
}

const KernelLine* TelemetryParser::kernel_failure() const {
  for (const auto& k : kernel_)
    if (k.pattern->fails && !k.context) return &k;
  return nullptr;
}

std::vector<KernelLine> TelemetryParser::take_new_kernel_lines() {
  std::vector<KernelLine> out(kernel_.begin() + static_cast<long>(kernel_taken_), kernel_.end());
  kernel_taken_ = kernel_.size();
  return out;
}

}  // namespace cvs
