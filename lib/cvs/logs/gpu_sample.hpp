// One GPU in one sample of a node's telemetry, as the vendor tools report it (nvidia-smi's
// --query-gpu row; amd-smi's metric with what its list, static and bad-pages said of that GPU;
// rocm-smi's card), in one vocabulary: what the summary and the diagnosis read, whatever the vendor.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cvs {

// The slowing reason a GPU's power limit gives (nvidia-smi's SW power cap, amd-smi's PPT
// violation): by design under full load at the GPU's own limit; a slowdown only below it.
inline constexpr const char* kPowerCapReason = "power cap";

struct GpuSample {
  int index = 0;
  std::optional<double> power_w, sm_clock_mhz, mem_clock_mhz, temp_c, temp_hotspot_c, temp_mem_c, util_pct;
  std::vector<std::string> throttle;  // the reasons slowing the clocks now (power cap, thermal, ...)
  bool idle = false;                  // the tool says the GPU has no work (nvidia-smi's "GPU idle" reason)
  std::optional<double> ecc_corrected, ecc_uncorrected;  // counters since the driver loaded
  // The same per hardware block (amd-smi's ecc_blocks: UMC, GFX, SDMA, MMHUB, ...).
  std::map<std::string, double> ecc_block_corrected, ecc_block_uncorrected;
  // The link now and at most; gen is the PCIe generation (amd-smi's GT/s read as one: 32 GT/s is 5).
  std::optional<double> pcie_width, pcie_width_max, pcie_gen, pcie_gen_max;
  // PCIe error counters since the driver loaded (amd-smi: replay_count, l0_to_recovery_count,
  // nak_sent_count + nak_received_count).
  std::optional<double> pcie_replays, pcie_recoveries, pcie_naks;
  // The power ceiling the driver enforces now and its default (nvidia-smi's enforced.power.limit,
  // power.default_limit): a GPU held at its default limit under full load is working as built (a
  // real H200 under a bf16 matmul sits at 690 of 700 W with "power cap" set, clocks ~1460 MHz:
  // tests/data/telemetry/nvidia_smi_h200_*); one whose limit was lowered is not. amd-smi has no
  // default (it is only in sysfs): its cap (static limit.socket_power) against the most it may be
  // set to (limit.max_power) and the node's other GPUs.
  std::optional<double> power_limit_w, power_default_limit_w, power_max_limit_w;
  std::string uuid;    // nvidia-smi's GPU-... (a compute process names its GPU by it)
  std::string bus_id;  // the PCI address, normalised ("0000:8a:00": a kernel line names the GPU by it)
  std::optional<bool> pages_pending;  // memory pages pending retirement (retired_pages.pending)
  // amd-smi bad-pages: pages retired, and pages that could not be (un_res).
  std::optional<double> pages_retired, pages_unreservable;
  std::optional<double> remap_pending, remap_failure;  // row remapping: pending (a reset applies it), failed
};

// A PCI address as nvidia-smi ("00000000:8A:00.0"), amd-smi ("0000:05:00.0", or "05:00.0" in its
// xgmi table) or the kernel ("0000:8a:00") writes it, as "dddd:bb:dd" (domain, bus and device,
// lower case; the domain 0000 when none is written): the one form they are compared in. The
// domain is kept (an MI300A node's four GPUs are 0000..0003:01:00); the function is dropped (a
// partitioned GPU's functions .0-.7 are one physical GPU). Empty when it is not an address.
std::string normalize_bus_id(std::string_view pci);

// The PCIe generation of a link's transfer rate in GT/s (2.5 -> 1, 5 -> 2, 8 -> 3, 16 -> 4,
// 32 -> 5, 64 -> 6); nullopt for another rate.
std::optional<double> pcie_gen_of_rate(double gts);

}  // namespace cvs
