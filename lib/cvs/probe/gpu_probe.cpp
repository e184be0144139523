#include "cvs/probe/gpu_probe.hpp"
#include "cvs/base/text.hpp"

#include "cvs/catalog/gpu_catalog.hpp"
#include "cvs/logs/amd_smi.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace cvs {
namespace {

using J = nlohmann::ordered_json;

std::optional<double> to_number(const J& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (end != s.c_str()) return d;
  }
  return std::nullopt;
}

// amd-smi writes sizes as {"value": 196592, "unit": "MB"} (newer) or "196592 MB" (older).
std::optional<double> size_gb(const J& v) {
  double value = 0;
  std::string unit = "MB";
  if (v.is_object() && v.contains("value")) {
    auto n = to_number(v["value"]);
    if (!n) return std::nullopt;
    value = *n;
    unit = v.value("unit", std::string("MB"));
  } else if (v.is_string()) {
    std::istringstream in(v.get<std::string>());
    if (!(in >> value)) return std::nullopt;
    in >> unit;
  } else if (v.is_number()) {
    value = v.get<double>();
  } else {
    return std::nullopt;
  }
  if (unit == "B") return value / 1e9;
  if (unit == "KB") return value / 1e6;
  if (unit == "GB") return value;
  return value / 1e3;  // MB
}

}  // namespace

GpuProbe parse_rocm_smi_json(const std::string& text) {
  GpuProbe p;
  p.source = "rocm-smi";
  J j;
  try {
    j = J::parse(text);
  } catch (const std::exception& e) {
    p.error = std::string("rocm-smi output is not JSON: ") + e.what();
    return p;
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key().rfind("card", 0) != 0 || !it->is_object()) continue;  // "system" etc.
    GpuDevice d;
    d.index = std::atoi(it.key().c_str() + 4);
    const auto& c = *it;
    d.name = c.value("Card Series", c.value("Card series", c.value("Card SKU", std::string())));
    d.arch = c.value("GFX Version", std::string());
    if (c.contains("VRAM Total Memory (B)")) {
      if (const auto total = to_number(c["VRAM Total Memory (B)"])) {
        d.total_gb = total.value() / 1e9;
        if (c.contains("VRAM Total Used Memory (B)"))
          if (const auto used = to_number(c["VRAM Total Used Memory (B)"]))
            d.free_gb = (total.value() - used.value()) / 1e9;
      }
    }
    p.devices.push_back(d);
  }
  return p;
}

GpuProbe parse_amd_smi_json(const std::string& static_json, const std::string& metric_json) {
  GpuProbe p;
  p.source = "amd-smi";
  nlohmann::json st, me = nlohmann::json::array();
  std::vector<AmdGpuStatic> statics;
  try {
    st = amd_smi_gpus(static_json);
    statics = parse_amd_smi_static(static_json);
    if (metric_json.find_first_not_of(" \n") != std::string::npos) me = amd_smi_gpus(metric_json);
  } catch (const std::exception& e) {
    p.error = std::string("amd-smi output is not JSON: ") + e.what();
    return p;
  }
  for (std::size_t i = 0; i < st.size(); ++i) {
    const auto& g = st[i];
    const auto& info = statics[i];
    GpuDevice d;
    d.index = info.index;
    d.name = info.market_name;
    d.arch = g.contains("asic") ? g["asic"].value("target_graphics_version", std::string()) : "";
    d.bus_id = info.bus_id;
    d.power_cap_w = info.power_cap_w;
    d.power_max_w = info.power_max_w;
    d.pcie_width_max = info.pcie_width_max;
    if (info.pcie_rate_max) d.pcie_gen_max = pcie_gen_of_rate(*info.pcie_rate_max);
    if (g.contains("vram") && g["vram"].contains("size")) d.total_gb = size_gb(g["vram"]["size"]);
    for (const auto& m : me)
      if (m.value("gpu", -1) == d.index && m.contains("mem_usage")) {
        const auto& mu = m["mem_usage"];
        if (mu.contains("total_vram")) d.total_gb = size_gb(mu["total_vram"]);
        if (mu.contains("free_vram"))
          d.free_gb = size_gb(mu["free_vram"]);
        else if (mu.contains("used_vram") && d.total_gb)
          if (auto u = size_gb(mu["used_vram"])) d.free_gb = *d.total_gb - *u;
      }
    p.devices.push_back(d);
  }
  return p;
}

GpuProbe parse_nvidia_smi_csv(const std::string& text) {
  GpuProbe p;
  p.source = "nvidia-smi";
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (trim(line).empty()) continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.emplace_back(trim(x));
    if (f.size() < 4) {
      p.error = "unexpected nvidia-smi line: " + line;
      continue;
    }
    GpuDevice d;
    d.index = std::atoi(f[0].c_str());
    d.name = f[1];
    d.total_gb = std::strtod(f[2].c_str(), nullptr) * 1.048576 / 1000.0;  // MiB -> GB
    d.free_gb = std::strtod(f[3].c_str(), nullptr) * 1.048576 / 1000.0;
    if (f.size() >= 6) d.uuid = f[5];
    if (f.size() >= 5 && !f[4].empty()) {
      std::string cc = f[4];
      cc.erase(std::remove(cc.begin(), cc.end(), '.'), cc.end());
      d.arch = "sm_" + cc;
    }
    p.devices.push_back(d);
  }
  return p;
}

// The compute-process listing of the probe: `procs CMD PATTERN` prints CMD's answer, asked again
// after 2 s when it lists a process (PATTERN): a process that just ended (the JAX probe a moment
// before) can linger in the first answer while the driver tears its context down.
std::vector<std::string> gpu_probe_command() {
  return {"sh", "-c",
          "procs() { a=$(sh -c \"$1\" 2>&1); if printf '%s' \"$a\" | grep -q \"$2\"; then sleep 2; "
          "a=$(sh -c \"$1\" 2>&1); fi; printf '%s\\n' \"$a\"; }; "
          "if command -v amd-smi >/dev/null 2>&1; then echo CVS-AMDSMI-STATIC; amd-smi static --asic --bus "
          "--limit "
          "--vram --json 2>/dev/null || amd-smi static --asic --vram --json; "
          "echo; echo CVS-AMDSMI-METRIC; amd-smi metric --mem-usage --json; "
          "echo; echo CVS-AMDSMI-PROCESS; procs 'amd-smi process --json' '\"pid\"'; "
          "elif command -v rocm-smi >/dev/null 2>&1; then echo CVS-ROCMSMI; rocm-smi --showproductname "
          "--showmeminfo vram --json; echo; echo CVS-ROCMSMI-PIDS; procs 'rocm-smi --showpids --json' PID; "
          "elif command -v nvidia-smi >/dev/null 2>&1; then echo CVS-NVSMI; "
          "nvidia-smi --query-gpu=index,name,memory.total,memory.free,compute_cap,uuid "
          "--format=csv,noheader,nounits; "
          "echo CVS-NVSMI-APPS; procs 'nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_memory "
          "--format=csv,nounits' '^[^p]*[0-9]'; "
          "else echo CVS-NONE; fi"};
}

namespace {

// The section of the probe's output after a marker line, up to the next marker ("CVS-...").
std::string section(const std::string& out, const std::string& marker) {
  const auto p = out.find(marker + "\n");
  if (p == std::string::npos) return {};
  const auto from = p + marker.size() + 1;
  const auto next = out.find("\nCVS-", from);
  return out.substr(from, next == std::string::npos ? std::string::npos : next + 1 - from);
}

bool has(const std::string& out, const char* marker) {
  return out.find(std::string(marker) + "\n") != std::string::npos;
}

// The compute processes the tool listed (its section present: it was asked).
void take_processes(GpuProbe& p, GpuProcessList list) {
  p.processes_listed = list.error.empty();
  p.processes = std::move(list.processes);
  p.processes_error = std::move(list.error);
}

}  // namespace

GpuProbe parse_probe_output(const std::string& out) {
  if (has(out, "CVS-AMDSMI-STATIC")) {
    auto p = parse_amd_smi_json(section(out, "CVS-AMDSMI-STATIC"), section(out, "CVS-AMDSMI-METRIC"));
    if (has(out, "CVS-AMDSMI-PROCESS"))
      take_processes(p, parse_amd_smi_process(section(out, "CVS-AMDSMI-PROCESS")));
    return p;
  }
  if (has(out, "CVS-ROCMSMI")) {
    auto p = parse_rocm_smi_json(section(out, "CVS-ROCMSMI"));
    if (has(out, "CVS-ROCMSMI-PIDS"))
      take_processes(p, parse_rocm_smi_pids(section(out, "CVS-ROCMSMI-PIDS")));
    return p;
  }
  if (has(out, "CVS-NVSMI")) {
    auto p = parse_nvidia_smi_csv(section(out, "CVS-NVSMI"));
    if (has(out, "CVS-NVSMI-APPS")) {
      std::vector<GpuId> gpus;
      for (const auto& d : p.devices) gpus.push_back({d.index, d.uuid});
      take_processes(p, parse_nvidia_compute_apps(section(out, "CVS-NVSMI-APPS"), gpus));
    }
    return p;
  }
  GpuProbe none;
  none.source = "none";
  none.error = "none of amd-smi, rocm-smi, nvidia-smi is installed in the runtime";
  return none;
}

nlohmann::ordered_json to_json(const GpuProbe& p) {
  J j;
  j["source"] = p.source;
  j["gpu_count"] = p.devices.size();
  if (p.no_gpu()) j["result"] = "no GPU";
  J devs = J::array();
  for (const auto& d : p.devices) {
    J dj = {{"index", d.index}, {"name", d.name}, {"arch", d.arch}};
    dj["total_gb"] = d.total_gb ? J(*d.total_gb) : J(nullptr);
    dj["free_gb"] = d.free_gb ? J(*d.free_gb) : J(nullptr);
    if (!d.bus_id.empty()) dj["bus_id"] = d.bus_id;
    auto opt = [&](const char* k, const std::optional<double>& v) {
      if (v) dj[k] = *v;
    };
    opt("power_cap_w", d.power_cap_w);
    opt("power_max_w", d.power_max_w);
    opt("pcie_width_max", d.pcie_width_max);
    opt("pcie_gen_max", d.pcie_gen_max);
    devs.push_back(dj);
  }
  j["devices"] = devs;
  if (p.processes_listed) {
    J procs = J::array();
    for (const auto& x : p.processes) {
      J pj = {{"gpu", x.gpu}, {"pid", x.pid}, {"name", x.name}};
      pj["memory_mib"] = x.memory_mib ? J(*x.memory_mib) : J(nullptr);
      procs.push_back(pj);
    }
    j["processes"] = procs;
  } else if (!p.processes_error.empty()) {
    j["processes_error"] = p.processes_error;
  }
  if (p.sanity_kernel_ok) {
    j["sanity_kernel_ok"] = *p.sanity_kernel_ok;
    j["sanity_detail"] = p.sanity_detail;
  }
  if (!p.error.empty()) j["error"] = p.error;
  return j;
}

GpuProbe probe_from_json(const nlohmann::ordered_json& j) {
  GpuProbe p;
  p.source = j.value("source", std::string());
  p.error = j.value("error", std::string());
  for (const auto& d : j.value("devices", J::array())) {
    GpuDevice g;
    g.index = d.value("index", 0);
    g.name = d.value("name", std::string());
    g.arch = d.value("arch", std::string());
    if (d.contains("total_gb") && d["total_gb"].is_number()) g.total_gb = d["total_gb"].get<double>();
    if (d.contains("free_gb") && d["free_gb"].is_number()) g.free_gb = d["free_gb"].get<double>();
    g.bus_id = d.value("bus_id", std::string());
    auto opt = [&](const char* k, std::optional<double>& v) {
      if (d.contains(k) && d[k].is_number()) v = d[k].get<double>();
    };
    opt("power_cap_w", g.power_cap_w);
    opt("power_max_w", g.power_max_w);
    opt("pcie_width_max", g.pcie_width_max);
    opt("pcie_gen_max", g.pcie_gen_max);
    p.devices.push_back(g);
  }
  if (j.contains("processes") && j["processes"].is_array()) {
    p.processes_listed = true;
    for (const auto& x : j["processes"]) {
      GpuProcess g;
      g.gpu = x.value("gpu", -1);
      g.pid = x.value("pid", 0LL);
      g.name = x.value("name", std::string());
      if (x.contains("memory_mib") && x["memory_mib"].is_number())
        g.memory_mib = x["memory_mib"].get<double>();
      p.processes.push_back(g);
    }
  }
  p.processes_error = j.value("processes_error", std::string());
  if (j.contains("sanity_kernel_ok")) p.sanity_kernel_ok = j["sanity_kernel_ok"].get<bool>();
  p.sanity_detail = j.value("sanity_detail", std::string());
  return p;
}

std::vector<std::string> check_probe(const GpuProbe& p, const std::string& gpu_name, int gpus_per_node,
                                     bool allow_shared_gpu, double min_free_fraction) {
  std::vector<std::string> bad;
  if (p.no_gpu()) {
    bad.push_back("no GPU found (" + p.source + (p.error.empty() ? "" : ": " + p.error) +
                  "), gpus_per_node is " + std::to_string(gpus_per_node));
    return bad;
  }
  if (static_cast<int>(p.devices.size()) != gpus_per_node)
    bad.push_back(std::to_string(p.devices.size()) + " GPU(s) visible (" + p.source + "), gpus_per_node is " +
                  std::to_string(gpus_per_node));
  if (auto want = expected_arch(gpu_name)) {
    for (const auto& d : p.devices)
      if (!d.arch.empty() && d.arch.rfind(*want, 0) != 0) {
        bad.push_back("GPU " + std::to_string(d.index) + " (" + d.name + ") is " + d.arch +
                      " but gpu_name '" + gpu_name + "' runs on " + *want);
        break;
      }
  }
  for (const auto& d : p.devices)
    if (d.total_gb && d.free_gb && *d.total_gb > 0 && *d.free_gb < min_free_fraction * *d.total_gb) {
      char b[200];
      std::snprintf(b, sizeof b,
                    "GPU %d has %.1f of %.1f GB free (< %.0f%%, telemetry.min_free_memory_fraction): another "
                    "job holds its memory",
                    d.index, *d.free_gb, *d.total_gb, min_free_fraction * 100);
      bad.push_back(b);
    }
  // Before the training nothing of this session's runs on a GPU: every compute process listed is
  // another job's, whatever memory it holds (a matmul loop in 1 GB halved a real H200's training).
  if (!allow_shared_gpu)
    for (const auto& x : p.processes) bad.push_back(describe(x) + " is on it: " + kSharedGpuFix);
  if (p.sanity_kernel_ok && !*p.sanity_kernel_ok)
    bad.push_back("the on-device sanity kernel failed: " + p.sanity_detail);
  return bad;
}

namespace {

// The most common value of a figure over the GPUs other than `self` (nullopt when none has it).
std::optional<double> siblings_usual(const GpuProbe& p, const GpuDevice& self,
                                     std::optional<double> GpuDevice::*figure) {
  std::map<double, int> count;
  for (const auto& d : p.devices)
    if (&d != &self && d.*figure) ++count[*(d.*figure)];
  if (count.empty()) return std::nullopt;
  return std::max_element(count.begin(), count.end(),
                          [](const auto& a, const auto& b) { return a.second < b.second; })
      ->first;
}

std::string figure(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f", v);
  return b;
}

}  // namespace

std::string describe_gpus(const GpuProbe& p) {
  if (p.devices.empty() || p.devices.front().name.empty()) return "";
  const auto& d = p.devices.front();
  std::string s = std::to_string(p.devices.size()) + "x " + d.name;
  if (d.power_cap_w) s += ", power cap " + figure(*d.power_cap_w) + " W";
  if (d.power_max_w) s += " (at most " + figure(*d.power_max_w) + " W)";
  if (d.pcie_width_max && d.pcie_gen_max)
    s += ", PCIe x" + figure(*d.pcie_width_max) + " gen " + figure(*d.pcie_gen_max) + " at most";
  std::string at;
  for (const auto& g : p.devices)
    if (!g.bus_id.empty()) at += (at.empty() ? "" : " ") + std::to_string(g.index) + "=" + g.bus_id;
  if (!at.empty()) s += " (" + at + ")";
  return s;
}

std::vector<std::string> gpus_unlike_their_siblings(const GpuProbe& p) {
  std::vector<std::string> out;
  if (p.devices.size() < 2) return out;
  struct Figure {
    std::optional<double> GpuDevice::*member;
    const char *what, *prefix, *unit;
  };
  static const Figure kFigures[] = {{&GpuDevice::power_cap_w, "power cap ", "", " W"},
                                    {&GpuDevice::pcie_width_max, "PCIe link at most ", "x", ""},
                                    {&GpuDevice::pcie_gen_max, "PCIe link at most ", "gen ", ""}};
  for (const auto& d : p.devices)
    for (const auto& f : kFigures) {
      const auto mine = d.*f.member;
      const auto usual = siblings_usual(p, d, f.member);
      if (mine && usual && std::fabs(*mine - *usual) > 0.5)
        out.push_back("GPU " + std::to_string(d.index) + (d.bus_id.empty() ? "" : " [" + d.bus_id + "]") +
                      ": " + f.what + f.prefix + figure(*mine) + f.unit + ", the node's other GPUs " +
                      f.prefix + figure(*usual) + f.unit);
    }
  return out;
}

}  // namespace cvs
