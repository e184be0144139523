// What a node's telemetry says, in one place: which GPU is at fault and how (the rules), the
// words that name it ("GPU 5 power limit lowered to 550 W (...) [0000:af:00]": every sentence
// naming a GPU ends with its PCI address where the tool gave one), and the telemetry
// block's gates. The same rules for every vendor: nvidia-smi's and amd-smi's samples reach here
// in one vocabulary (logs/gpu_sample.hpp).
#pragma once

#include <string>
#include <vector>

#include "cvs/config/blocks.hpp"
#include "cvs/results/telemetry_record.hpp"

namespace cvs {

// What can be wrong with one GPU.
enum class GpuFault {
  PowerLimitLowered,  // its power limit below its default, or (no default: amd-smi) below the
                      // most it may be set to and below the node's other GPUs
  Slowed,             // a slowing reason (thermal, a lowered power cap, ...) in >= 10 % of samples
  ClockedDown,        // its clock under load below 0.8x the node's other GPUs' with no reason given
  LinkDegraded,       // its PCIe link under load narrower or slower than it can be
  LinkErrors,         // PCIe replays, recoveries and NAKs during the run (>= kLinkErrorsNoted)
  EccUncorrected,     // uncorrected ECC errors gained during the run
  EccCorrected,
  RemapFailed,
  RemapPending,
  PagesPending,       // memory pages pending retirement
  PagesRetired,       // pages retired during the run
  PagesUnreservable,  // pages that could not be retired
};

struct GpuFinding {
  int gpu = 0;
  GpuFault fault;
  std::string words;    // "GPU 5 PCIe link under load at x8 gen 4 (capable of x16 gen 5) [0000:af:00]"
  bool defect = false;  // said in a passing run's notes too: wrong whether or not it cost speed yet
};

// PCIe errors during a run that are named: ROCm CVS's bound for the L0-to-recovery and NAK
// counters (verify_gpu_pcie_errors fails a node over 100).
inline constexpr double kLinkErrorsNoted = 100;

// "GPU 5": how every word names a GPU; at_address(bus id) its address as a sentence ends with it,
// " [0000:af:00]" ("" for none).
std::string gpu_name(const GpuTelemetry& g);
std::string at_address(const std::string& bus_id);

// Whether a GPU's power limit was lowered (see GpuFault::PowerLimitLowered).
bool power_limit_lowered(const GpuTelemetry& g, const NodeTelemetry& node);

// Every GPU's findings, GPU by GPU.
std::vector<GpuFinding> gpu_findings(const NodeTelemetry& t);

// The telemetry block's gates this node's run did not meet, one sentence each (the training stage
// fails with them). Kernel lines are not here: the run stops on them as on an error line.
std::vector<std::string> telemetry_violations(const NodeTelemetry& t, const TelemetryGates& gates);

// What in a node's telemetry explains a slow or failed run, in words ("GPU 3 slowed (thermal) in
// 62 % of samples, hotspot 104 C [0000:5d:00]"; "the training had 0.15 CPUs, PSI cpu some 84 %";
// a kernel incident's faulting GPU, the GPUs it touched as its context); empty when nothing stands out.
std::string explain_telemetry(const NodeTelemetry& t);

// What is wrong with a node's GPUs whether or not it has cost speed yet (the findings marked
// defect, and a power cap every GPU shares below its maximum): said in the run's notes even when
// every gate passes. Empty for none.
std::vector<std::string> telemetry_defects(const NodeTelemetry& t);

}  // namespace cvs
