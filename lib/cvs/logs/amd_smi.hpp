// amd-smi as it prints, every version since ROCm 6.1 (the recorded outputs and their sources:
// shared/data/amd/SOURCES.md; amd-smi's own code, amdsmi_cli/amdsmi_commands.py, for the keys):
//   --json: 6.x a bare list of GPU objects, 7.x {"gpu_data": [...]}; figures {"value", "unit"}
//     from 6.1.0 on, bare numbers or "N/A" elsewhere; any leaf may be "N/A".
//   the text it prints without --json: the same tree with its keys upper-cased, one "GPU: N"
//     block per GPU, four spaces a level, a figure as "234 W" (read into the same tree here, so
//     one reader serves both: the recorded samples are mostly text).
// Either may open with WARNING lines. Nothing here throws on a leaf it does not know; an answer
// that is neither form is a std::runtime_error (the sampler's parser turns it into a note).
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cvs/logs/gpu_sample.hpp"

namespace cvs {

// The GPU objects of one answer (JSON or text), keys lower case; each has "gpu": its index.
nlohmann::json amd_smi_gpus(std::string_view output);

// A figure of the tree: {"value": v, "unit": u}, a number, "234 W", or none ("N/A", absent).
std::optional<double> amd_figure(const nlohmann::json& j);
// The node at a path of keys (compared without case), nullptr when absent.
const nlohmann::json* amd_node(const nlohmann::json& g, std::initializer_list<std::string_view> path);
std::optional<double> amd_figure_at(const nlohmann::json& g, std::initializer_list<std::string_view> path);

// amd-smi list: a GPU's index, its PCI address (normalised: domain kept, function folded, so a
// partitioned GPU's partitions share their physical GPU's address) and as printed.
struct AmdGpuId {
  int index = 0;
  std::string bus_id;  // normalize_bus_id's form
  std::string bdf;     // as printed: "0000:05:00.0"
  std::string uuid;
  std::optional<int> partition;
};
std::vector<AmdGpuId> parse_amd_smi_list(std::string_view output);

// amd-smi static: what a GPU is and what it may do.
struct AmdGpuStatic {
  int index = 0;
  std::string market_name, bdf, bus_id;
  std::optional<double> power_cap_w;     // limit.socket_power (7.x: limit.ppt0.socket_power_limit)
  std::optional<double> power_max_w;     // limit.max_power (7.x: limit.ppt0.max_power_limit)
  std::optional<double> pcie_width_max;  // bus.max_pcie_width
  std::optional<double> pcie_rate_max;   // bus.max_pcie_speed, GT/s
};
std::vector<AmdGpuStatic> parse_amd_smi_static(std::string_view output);

// amd-smi bad-pages: how many pages are retired, pending retirement, and could not be retired
// (un_res); each answer is "No bad pages found." (0), one page's object (1), a list of them, or
// "N/A" (nullopt: not readable, often without root).
struct AmdBadPages {
  int index = 0;
  std::optional<double> retired, pending, unreservable;
};
std::vector<AmdBadPages> parse_amd_smi_bad_pages(std::string_view output);

// amd-smi metric: one sample of each GPU (its power, the median of its XCDs' gfx clocks, the
// temperatures, the link and its error counters, ECC totals and blocks, the throttle/violation
// section's active reasons).
std::vector<GpuSample> parse_amd_smi_metric(std::string_view output);

}  // namespace cvs
