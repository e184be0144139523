// The compute processes on a node's GPUs, as the vendor tools list them: the setup stage fails a
// node whose GPU another job holds, and the telemetry names the process that shared a GPU during
// a run. The tools' forms (each read leniently; nothing here throws on what a node sends):
//   nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv[,nounits]
//     (a header row names the columns; without one, that order; "1002 MiB" or "1002")
//   amd-smi process --json      [{"gpu": 0, "process_list": [{"process_info": {"name", "pid",
//                                 "memory_usage": {"vram_mem": {"value", "unit"}}}}]}]
//   rocm-smi --showpids --json  {"system": {"PID1234": "python3, 1, 4141056, 0, unknown"}}
//     (name, GPUs, VRAM bytes, ...: no GPU index)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cvs {

struct GpuProcess {
  int gpu = -1;  // the GPU's index; -1 when the tool does not say which
  long long pid = 0;
  std::string name;
  std::optional<double> memory_mib;
};

// Whose a listed process is, as the node's sampler saw it: the training's own tree, another
// process this namespace can see, or a pid this namespace does not have (a container's PID
// namespace: whose it is cannot be told).
enum class ProcessOwner { Ours, Other, Unseen };

struct GpuProcessList {
  std::vector<GpuProcess> processes;
  std::string error;  // the tool's answer did not parse (or it cannot list processes)
};

// A node's GPU as nvidia-smi names it: its index and its UUID ("" when the query had none).
struct GpuId {
  int index = 0;
  std::string uuid;
};
// `gpus`: the node's GPUs; a process's GPU is the one its gpu_uuid names, and with one GPU, that one.
GpuProcessList parse_nvidia_compute_apps(std::string_view csv, const std::vector<GpuId>& gpus = {});
GpuProcessList parse_amd_smi_process(std::string_view json);
GpuProcessList parse_rocm_smi_pids(std::string_view json);

// "GPU 0: pid 484 (python3, 1002 MiB)"; "a GPU" when the tool does not say which.
std::string describe(const GpuProcess& p);
// " (python3, 1002 MiB)": its name and memory as far as known ("" for neither).
std::string detail(const GpuProcess& p);

// What the setup stage and the words say to do about a process that is not this session's.
inline constexpr const char* kSharedGpuFix =
    "another job is on this GPU: stop it or drain the node (telemetry.allow_shared_gpu allows it)";

}  // namespace cvs
