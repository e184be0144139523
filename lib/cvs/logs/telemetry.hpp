// What a node's telemetry sampler saw during a run (lib/cvs/exec/agent/telemetry.sh): its lines
// parsed, the vendor tool's output read, the kernel log matched against a catalog of failure
// signatures. Lines, one per fact:
//   H tick=<CLK_TCK> cores=<n> tool=<nvidia-smi|amd-smi|rocm-smi|none>
//   V <the vendor tool's version output>
//   S <uptime s> cpu=<the training's CPU ticks, reaped children's included> psi_cpu=<us> psi_mem=<us>
//     psi_io=<us> mem_kb=<MemAvailable> steps=<0|1|-: the training has logged a step>
//     ("-" for what could not be read; the PSI figures are the "some" totals)
//   G <nvidia-smi --query-gpu CSV row>              one per GPU, after its S
//   R <nvidia-smi --query-remapped-rows CSV row: bus id, pending, failure>   after its G rows
//   J <a line of amd-smi / rocm-smi JSON>, then E   after its S
//   K <a /dev/kmsg record: prio,seq,usec,flags;text>
//   P <a line of the tool's compute-process list>, then Q   after its S (and G/J)
//   O <pid> <ours|other|unseen>                      whose a listed process is
//   N <a note: what could not be read>
//   F                                               the sampler's last line
// A tool output that does not parse becomes a note naming the tool and its version; nothing here
// throws on what a node sends.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cvs/logs/gpu_processes.hpp"

namespace cvs {

enum class GpuTool { None, NvidiaSmi, AmdSmi, RocmSmi };
const char* to_string(GpuTool t);

struct GpuSample {
  int index = 0;
  std::optional<double> power_w, sm_clock_mhz, mem_clock_mhz, temp_c, temp_hotspot_c, temp_mem_c, util_pct;
  std::vector<std::string> throttle;  // the reasons slowing the clocks now (power cap, thermal, ...)
  bool idle = false;                  // the tool says the GPU has no work (nvidia-smi's "GPU idle" reason)
  std::optional<double> ecc_corrected, ecc_uncorrected;  // counters since the driver loaded
  std::optional<double> pcie_width, pcie_width_max, pcie_gen, pcie_gen_max;
  // The power ceiling the driver enforces now and its default (nvidia-smi's enforced.power.limit,
  // power.default_limit): a GPU held at its default limit under full load is working as built (a
  // real H200 under a bf16 matmul sits at 690 of 700 W with "power cap" set, clocks ~1460 MHz:
  // tests/data/telemetry/nvidia_smi_h200_*); one whose limit was lowered is not.
  std::optional<double> power_limit_w, power_default_limit_w;
  std::string uuid;    // nvidia-smi's GPU-... (a compute process names its GPU by it)
  std::string bus_id;  // the PCI bus id, normalised ("8a:00": bus and device; a kernel Xid line names it)
  std::optional<bool> pages_pending;  // memory pages pending retirement (retired_pages.pending)
  std::optional<double> remap_pending, remap_failure;  // row remapping: pending (a reset applies it), failed
};

// A PCI address as nvidia-smi ("00000000:8A:00.0") or the kernel ("0000:8a:00") writes it, as
// "8a:00" (bus and device, lower case): the one form both are compared in. Empty when none.
std::string normalize_bus_id(std::string_view pci);

struct HostSample {
  double t = 0;  // the node's uptime, seconds
  std::optional<double> cpu_ticks, psi_cpu_us, psi_mem_us, psi_io_us, mem_available_kb;
  // Whether the training had logged a step by this sample (samples before it are import and
  // compile); nullopt when the sampler could not read the training's log.
  std::optional<bool> training;
  bool training_log_unreadable = false;  // steps=-: the sampler could not read the training's log
  std::vector<GpuSample> gpus;
  // The compute processes the tool listed on the GPUs, and whose each one is.
  std::optional<GpuProcessList> processes;
  std::map<long long, ProcessOwner> owners;
};

// A kernel log signature: what it looks like and what it means.
struct KernelPattern {
  enum class Kind { Gpu, MachineCheck, Nic, OomKill, Segfault };
  std::string_view name;
  std::string_view regex;    // RE2, case-insensitive
  std::string_view meaning;  // in words, for the message
  Kind kind;
  // Seen during a run, it fails the training stage (GPU faults, machine checks, a NIC link down).
  // An OOM kill or a segfault names the cause when the training died, and is recorded otherwise
  // (it may be another process's).
  bool fails;
};
const std::vector<KernelPattern>& kernel_patterns();
// The first pattern the kernel log text matches; nullptr for none. An NVIDIA Xid line names its
// code: `xid` gets it.
const KernelPattern* match_kernel_line(std::string_view text, int* xid = nullptr);

struct KernelLine {
  double t = 0;  // seconds since boot
  std::string text;
  const KernelPattern* pattern = nullptr;
  int xid = 0;         // an NVIDIA Xid's code
  std::string bus_id;  // the PCI device the line names (an Xid's "PCI:0000:8a:00"), normalised
  std::string meaning() const;
};

// Parses a sampler's output as it arrives (bytes split anywhere).
class TelemetryParser {
 public:
  void feed(std::string_view bytes);

  GpuTool tool() const { return tool_; }
  const std::string& tool_version() const { return tool_version_; }
  double tick_hz() const { return tick_; }
  int cores() const { return cores_; }
  bool finished() const { return finished_; }
  const std::vector<HostSample>& samples() const { return samples_; }
  const std::vector<KernelLine>& kernel() const { return kernel_; }
  const std::vector<std::string>& notes() const { return notes_; }
  // Kernel lines not yet taken (the run monitor acts on each once).
  std::vector<KernelLine> take_new_kernel_lines();

 private:
  void line(std::string_view l);
  void json_block();
  void process_block();
  void note(const std::string& n);

  std::string buf_, json_, procs_;
  GpuTool tool_ = GpuTool::None;
  std::string tool_version_;
  double tick_ = 100;
  int cores_ = 0;
  bool finished_ = false;
  std::vector<HostSample> samples_;
  std::vector<KernelLine> kernel_;
  std::size_t kernel_taken_ = 0;
  std::vector<std::string> notes_;
};

// The vendor tools' outputs, one GPU each (exposed for the tests of recorded outputs).
std::optional<GpuSample> parse_nvidia_smi_row(std::string_view csv);
std::vector<GpuSample> parse_amd_smi_metric(std::string_view json);
std::vector<GpuSample> parse_rocm_smi(std::string_view json);

}  // namespace cvs
