// What GPUs a node has, from the HIP runtime (tools/gpu_probe) or from the vendor tools'
// machine-readable output (rocm-smi --json, amd-smi --json, nvidia-smi --query-gpu CSV), and
// the checks test_setup makes against the config: device count, architecture, free memory.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cvs/catalog/gpu_catalog.hpp"
#include "cvs/logs/gpu_processes.hpp"

namespace cvs {

struct GpuDevice {
  int index = 0;
  std::string name;  // marketing name, e.g. "AMD Instinct MI300X"
  std::string arch;  // gfx942 / gfx950 / sm_90 ...
  std::optional<double> total_gb;
  std::optional<double> free_gb;
  std::string uuid;  // nvidia-smi's GPU-..., which names a compute process's GPU
  // amd-smi static: its PCI address (normalised), its power cap and the most it may be set to,
  // and its link's maxima (width, PCIe generation).
  std::string bus_id;
  std::optional<double> power_cap_w, power_max_w, pcie_width_max, pcie_gen_max;
};

struct GpuProbe {
  std::string source;  // hip | rocm-smi | amd-smi | nvidia-smi | none
  std::vector<GpuDevice> devices;
  std::optional<bool> sanity_kernel_ok;  // hip only: a short kernel ran and its result was right
  std::string sanity_detail;
  std::string error;  // why nothing could be read (tools missing, runtime failed)
  // The compute processes on the GPUs (nvidia-smi --query-compute-apps, amd-smi process,
  // rocm-smi --showpids); processes_listed false when the tool could not list them (and why).
  std::vector<GpuProcess> processes;
  bool processes_listed = false;
  std::string processes_error;
  bool no_gpu() const { return devices.empty(); }
};

GpuProbe parse_rocm_smi_json(const std::string& text);
GpuProbe parse_amd_smi_json(const std::string& static_json, const std::string& metric_json);
GpuProbe parse_nvidia_smi_csv(const std::string& text);  // index,name,memory.total,memory.free,compute_cap

// The sh program test_setup runs inside the runtime on every node: the first of amd-smi,
// rocm-smi, nvidia-smi present prints its output after a marker line; parse_probe_output reads it.
std::vector<std::string> gpu_probe_command();
GpuProbe parse_probe_output(const std::string& out);

nlohmann::ordered_json to_json(const GpuProbe& p);
GpuProbe probe_from_json(const nlohmann::ordered_json& j);

// expected_arch (the architecture a gpu_name demands) is the GPU catalog's.

// What the setup stage says of a node's GPUs: "8x AMD Instinct MI300X, power cap 750 W, PCIe x16
// gen 5 at most", and each GPU whose power cap or link maximum differs from the node's other
// GPUs' ("GPU 5 [0000:af:00]: power cap 550 W, the node's other GPUs 750 W"); empty where the
// tool says nothing of them (nvidia-smi's probe, rocm-smi).
std::string describe_gpus(const GpuProbe& p);
std::vector<std::string> gpus_unlike_their_siblings(const GpuProbe& p);

// Problems of one node's probe against the config, each a sentence (the caller adds the node):
// device count != gpus_per_node, an architecture the gpu_name does not run on, free memory below
// min_free_fraction of total, or (unless allow_shared_gpu) a compute process on a GPU: another job
// holds the GPU.
std::vector<std::string> check_probe(const GpuProbe& p, const std::string& gpu_name, int gpus_per_node,
                                     bool allow_shared_gpu = false, double min_free_fraction = 0.8);

}  // namespace cvs
