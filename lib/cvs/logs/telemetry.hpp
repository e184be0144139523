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
//   X <list|static|bad-pages>                        which amd-smi answer the next J lines are
//                                                    (none: metric; list and static come with
//                                                    the first sample, bad-pages with the first
//                                                    and the last)
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

#include "cvs/logs/amd_smi.hpp"
#include "cvs/logs/gpu_processes.hpp"
#include "cvs/logs/gpu_sample.hpp"

namespace cvs {

enum class GpuTool { None, NvidiaSmi, AmdSmi, RocmSmi };
const char* to_string(GpuTool t);

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
  // A GPU line's part in an incident (lines of the node's GPUs close together in time): the
  // fault itself (an uncorrectable error, a page fault, consumed poison, a ring timeout), a reset,
  // or what follows a fault on the GPUs around it (ACA records, correctable errors, saved bad
  // pages). A real MI300X incident logs the uncorrectable error on one GPU, ACA records on others
  // and a MODE1 reset on every GPU of the XGMI hive: the incident blames its faults' GPUs; only an
  // incident without a fault blames the GPUs it reset.
  enum class Role { Fault, Reset, Context };
  std::string_view name;
  std::string_view regex;    // RE2, case-insensitive
  std::string_view meaning;  // in words, for the message
  Kind kind;
  // Seen during a run, it fails the training stage (GPU faults, machine checks, a NIC link down).
  // An OOM kill or a segfault names the cause when the training died, and is recorded otherwise
  // (it may be another process's).
  bool fails;
  Role role = Role::Fault;
};
const std::vector<KernelPattern>& kernel_patterns();
// The first pattern the kernel log text matches; nullptr for none. An NVIDIA Xid line names its
// code: `xid` gets it.
const KernelPattern* match_kernel_line(std::string_view text, int* xid = nullptr);

struct KernelLine {
  double t = 0;  // seconds since boot
  std::string text;
  const KernelPattern* pattern = nullptr;
  int xid = 0;  // an NVIDIA Xid's code
  // The PCI device the line names (an Xid's "PCI:0000:8a:00", amdgpu's "amdgpu 0000:68:00.0:"),
  // normalised; an old amdgpu ring timeout names none: the reset line after it does.
  std::string bus_id;
  std::optional<int> gpu;  // the node's GPU at that address (the tool's index)
  long long pid = 0;       // the process the driver names (a page fault's, a ring timeout's)
  std::string process;
  int incident = 0;      // lines of the node's GPUs within kIncidentGapS of each other share one
  bool context = false;  // another GPU's fault explains it: not this GPU's blame, nor the run's cause
  int repeats = 1;       // the same line kind on the same GPU in the same incident, counted here
  std::string meaning() const;
  // "GPU 5 [0000:af:00]", "0000:af:00" when the tool lists no GPU there, "" when no device.
  std::string device() const;
};
// Kernel lines of a node's GPUs further apart than this are separate incidents.
inline constexpr double kIncidentGapS = 10;

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
  // The kernel line that fails the run: the first failing one that is not another GPU's context
  // (as known now: a later line of its incident may name its GPU or make it context). nullptr for none.
  const KernelLine* kernel_failure() const;
  // amd-smi's list and static, as the first sample read them (empty for other tools).
  const std::vector<AmdGpuId>& amd_gpus() const { return amd_ids_; }
  const std::vector<AmdGpuStatic>& amd_static() const { return amd_static_; }

 private:
  void line(std::string_view l);
  void json_block();
  void sample_row(char kind, std::string_view rest);  // G, R, O: a row of the last sample
  void amd_block(const std::string& text);
  void process_block();
  void note(const std::string& n);
  void kernel_record(std::string_view rest);
  void attach_process(const KernelLine& k);
  void settle_incident(int incident);
  std::optional<int> gpu_at(const std::string& bus_id) const;

  std::string buf_, json_, procs_, block_kind_;
  std::vector<AmdGpuId> amd_ids_;
  std::vector<AmdGpuStatic> amd_static_;
  int incidents_ = 0;
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

// The vendor tools' outputs, one GPU each (exposed for the tests of recorded outputs; amd-smi's
// are logs/amd_smi's).
std::optional<GpuSample> parse_nvidia_smi_row(std::string_view csv);
std::vector<GpuSample> parse_rocm_smi(std::string_view json);

}  // namespace cvs
