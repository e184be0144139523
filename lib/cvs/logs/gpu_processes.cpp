#include "cvs/logs/gpu_processes.hpp"
#include "cvs/base/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <utility>

namespace cvs {
namespace {

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t at = 0;
  while (true) {
    const auto p = line.find(',', at);
    out.push_back(trim(line.substr(at, p == std::string_view::npos ? std::string_view::npos : p - at)));
    if (p == std::string_view::npos) return out;
    at = p + 1;
  }
}

std::optional<double> number(std::string_view s) {
  s = trim(s);
  if (s.empty() || s.front() == '[' || s.rfind("N/A", 0) == 0) return std::nullopt;
  const std::string t(s);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end == t.c_str()) return std::nullopt;
  return v;
}

// A size with its unit (B, KB, KiB, MB, MiB, GB, GiB) in MiB.
double to_mib(double v, std::string_view unit) {
  std::string u(trim(unit));
  std::transform(u.begin(), u.end(), u.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (u == "B") return v / 1048576.0;
  if (u == "KB" || u == "KIB") return v / 1024.0;
  if (u == "GB" || u == "GIB") return v * 1024.0;
  return v;  // MB, MiB, none
}

}  // namespace

namespace {

// The columns of a compute-apps list: from its header row, else the query's order.
struct AppColumns {
  int uuid = 0, pid = 1, name = 2, mem = 3;
  // A header row ("gpu_uuid, pid, process_name, used_gpu_memory [MiB]") sets the columns.
  bool read_header(std::string_view line, const std::vector<std::string_view>& f) {
    if (line.find("pid") == std::string_view::npos || number(f[0]) || f[0].rfind("GPU-", 0) == 0)
      return false;
    uuid = pid = name = mem = -1;
    for (int i = 0; i < static_cast<int>(f.size()); ++i) {
      const auto h = f[static_cast<std::size_t>(i)];
      if (h.rfind("gpu_uuid", 0) == 0) uuid = i;
      if (h == "pid") pid = i;
      if (h.rfind("process_name", 0) == 0 || h == "name") name = i;
      if (h.rfind("used_gpu_memory", 0) == 0 || h.rfind("used_memory", 0) == 0) mem = i;
    }
    return true;
  }
};

std::optional<std::string_view> column(const std::vector<std::string_view>& f, int i) {
  if (i < 0 || i >= static_cast<int>(f.size())) return std::nullopt;
  return f[static_cast<std::size_t>(i)];
}

}  // namespace

GpuProcessList parse_nvidia_compute_apps(std::string_view csv, const std::vector<GpuId>& gpus) {
  GpuProcessList out;
  AppColumns cols;
  bool first = true;
  for (std::size_t at = 0; at < csv.size();) {
    auto nl = csv.find('\n', at);
    if (nl == std::string_view::npos) nl = csv.size();
    const auto line = trim(csv.substr(at, nl - at));
    at = nl + 1;
    if (line.empty() || line.find("No running") != std::string_view::npos) continue;
    const auto f = fields(line);
    if (std::exchange(first, false) && cols.read_header(line, f)) {
      if (cols.pid < 0) out.error = "nvidia-smi compute-apps header without pid: '" + std::string(line) + "'";
      continue;
    }
    const auto pid_field = column(f, cols.pid);
    const auto pid = pid_field ? number(*pid_field) : std::nullopt;
    if (!pid) {
      out.error = "nvidia-smi compute-apps output does not parse: '" + std::string(line.substr(0, 120)) + "'";
      continue;
    }
    GpuProcess p;
    p.pid = static_cast<long long>(*pid);
    if (const auto n = column(f, cols.name)) p.name = *n;
    if (const auto m = column(f, cols.mem)) p.memory_mib = number(*m);
    if (const auto u = column(f, cols.uuid))
      for (const auto& g : gpus)
        if (!g.uuid.empty() && g.uuid == *u) p.gpu = g.index;
    if (p.gpu < 0 && gpus.size() == 1) p.gpu = gpus.front().index;  // one GPU: it is that GPU's
    out.processes.push_back(std::move(p));
  }
  return out;
}

namespace {

std::optional<double> amd_size_mib(const nlohmann::json& j) {
  if (j.is_number()) return j.get<double>() / 1048576.0;  // a bare number: bytes
  if (j.is_object() && j.contains("value") && j["value"].is_number())
    return to_mib(j["value"].get<double>(), j.value("unit", std::string("B")));
  return std::nullopt;
}

void amd_process(const nlohmann::json& info, int gpu, GpuProcessList& out) {
  if (!info.is_object() || !info.contains("pid") || !info["pid"].is_number()) return;
  GpuProcess p;
  p.gpu = gpu;
  p.pid = info["pid"].get<long long>();
  p.name = info.value("name", std::string());
  if (info.contains("memory_usage") && info["memory_usage"].is_object() &&
      info["memory_usage"].contains("vram_mem"))
    p.memory_mib = amd_size_mib(info["memory_usage"]["vram_mem"]);
  else if (info.contains("mem_usage"))
    p.memory_mib = amd_size_mib(info["mem_usage"]);
  else if (info.contains("mem"))
    p.memory_mib = amd_size_mib(info["mem"]);
  out.processes.push_back(std::move(p));
}

}  // namespace

GpuProcessList parse_amd_smi_process(std::string_view text) {
  GpuProcessList out;
  const auto at = text.find_first_of("[{");
  if (at == std::string_view::npos) {
    out.error = "amd-smi process printed no JSON: '" + std::string(trim(text.substr(0, 120))) + "'";
    return out;
  }
  const auto j = nlohmann::json::parse(text.substr(at), nullptr, false);
  if (j.is_discarded()) {
    out.error = "amd-smi process output is not JSON";
    return out;
  }
  // 7.x wraps the list as {"gpu_data": [...]}.
  const nlohmann::json& data = j.is_object() && j.contains("gpu_data") ? j["gpu_data"] : j;
  const nlohmann::json list = data.is_array() ? data : nlohmann::json::array({data});
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& g = list[i];
    if (!g.is_object()) continue;
    const int gpu =
        g.contains("gpu") && g["gpu"].is_number_integer() ? g["gpu"].get<int>() : static_cast<int>(i);
    if (!g.contains("process_list") || !g["process_list"].is_array()) continue;
    for (const auto& e : g["process_list"])
      amd_process(e.contains("process_info") ? e["process_info"] : e, gpu, out);
  }
  return out;
}

GpuProcessList parse_rocm_smi_pids(std::string_view text) {
  GpuProcessList out;
  const auto at = text.find('{');
  const auto j = at == std::string_view::npos ? nlohmann::json()
                                              : nlohmann::json::parse(text.substr(at), nullptr, false);
  if (!j.is_object()) {
    out.error = "rocm-smi --showpids output is not JSON";
    return out;
  }
  const auto& sys = j.contains("system") ? j["system"] : j;
  for (const auto& [key, v] : sys.items()) {
    if (key.rfind("PID", 0) != 0 || !v.is_string()) continue;
    GpuProcess p;
    p.pid = std::atoll(key.c_str() + 3);
    const auto f = fields(v.get_ref<const std::string&>());
    if (!f.empty()) p.name = f[0];
    if (f.size() >= 3)
      if (const auto bytes = number(f[2])) p.memory_mib = *bytes / 1048576.0;
    out.processes.push_back(std::move(p));
  }
  return out;
}

std::string detail(const GpuProcess& p) {
  // nvidia-smi's "[Not Found]" (or "[Insufficient Permissions]"): a pid of another PID namespace,
  // a container's, whose name this namespace cannot read.
  const bool unnamed = p.name.size() > 1 && p.name.front() == '[' && p.name.back() == ']';
  std::string d = unnamed ? "name not visible here: a process of another container or PID namespace" : p.name;
  if (p.memory_mib)
    d += fmt::format("{}{:.0f} MiB", d.empty() ? "" : ", ", *p.memory_mib);
  else if (!d.empty())
    d += ", memory not reported";
  return d.empty() ? "" : " (" + d + ")";
}

std::string describe(const GpuProcess& p) {
  return (p.gpu >= 0 ? fmt::format("GPU {}: pid {}", p.gpu, p.pid) : fmt::format("a GPU: pid {}", p.pid)) +
         detail(p);
}

}  // namespace cvs
