// A node's telemetry over one run, summarised for results.json, the gates, the words that explain
// a verdict, and the report's strip charts (what the sampler's lines say: logs/telemetry.hpp).
// The record and its JSON here; made from the sampler's lines by summarize_telemetry
// (telemetry_summary.cpp); what it says in words and which gates it fails: telemetry_diagnosis.hpp.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cvs/config/blocks.hpp"
#include "cvs/config/json_in.hpp"
#include "cvs/logs/telemetry.hpp"

namespace cvs {

// A figure over the run's samples.
struct Spread {
  double min = 0, median = 0, max = 0;
};

struct GpuTelemetry {
  int index = 0;
  std::map<std::string, Spread> figures;  // power_w, sm_clock_mhz, mem_clock_mhz, temp_c, temp_hotspot_c, ...
  std::size_t samples = 0;
  // Of the samples with a slowing reason: thermal, hardware slowdown, power brake, sync boost, and
  // the power cap only where the enforced limit is below the default (a GPU under full load sits
  // at its default power limit by design: that is power_capped_fraction, not a slowdown).
  double throttled_fraction = 0;
  std::map<std::string, double> throttle_reasons;              // reason -> fraction of the samples
  double power_capped_fraction = 0;                            // held at its (default) power limit
  std::optional<double> power_limit_w, power_default_limit_w;  // the lowest enforced limit seen; the default
  std::optional<double> power_max_limit_w;  // the most it may be set to (amd-smi's limit.max_power)
  std::optional<double> ecc_corrected_delta, ecc_uncorrected_delta;            // last - first sample
  std::map<std::string, double> ecc_corrected_blocks, ecc_uncorrected_blocks;  // block -> its rise
  // The link's error counters over the run (amd-smi: replays, L0-to-recovery transitions, NAKs).
  std::optional<double> pcie_replays_delta, pcie_recoveries_delta, pcie_naks_delta;
  // The link under load (a healthy GPU drops to gen 1 when idle: idle samples are never evidence)
  // and what it is capable of.
  std::optional<double> pcie_width_min, pcie_width_max, pcie_gen_min, pcie_gen_max;
  std::string bus_id;          // normalised ("0000:8a:00"): a kernel line names the GPU by it
  std::string name;            // what the tool calls it ("AMD Instinct MI300X"); "" when unsaid
  bool pages_pending = false;  // memory pages pending retirement
  // amd-smi bad-pages: retired pages (the most seen, and the rise over the run), pages that could
  // not be retired.
  std::optional<double> pages_retired, pages_retired_delta, pages_unreservable;
  std::optional<double> remap_pending, remap_failure;  // row remapping pending / failed (the most seen)
  std::vector<double> sm_clock_mhz, power_w, temp_c;   // per sample (the chart)
};

struct KernelEvent {
  double t = 0;  // seconds since the node's boot
  std::string text, pattern, meaning;
  bool fails = false;
  std::optional<long long> gpu;  // the GPU whose PCI bus id the line names
  std::string bus_id;            // that address, normalised
  bool context = false;          // another GPU's fault in the same incident explains it (logs/telemetry.hpp)
  int incident = 0;
  int repeats = 1;
};

// A process that is not this session's on a GPU during the run.
struct SharedGpu {
  GpuProcess process;         // its GPU, pid, name and the most memory it held
  double fraction = 0;        // of the training's samples it was listed in
  bool unseen = false;        // a pid of another PID namespace (the training's own pids are seen)
  std::string words() const;  // "GPU 0 shared with pid 484 (python3, 1002 MiB) in 100 % of samples"
};

struct NodeTelemetry {
  std::string node;
  std::string tool, tool_version;
  std::size_t samples = 0;
  double seconds = 0;
  int cores = 0;
  std::optional<Spread> cpu_share;  // CPUs the training's processes used (CPU seconds / wall seconds)
  std::optional<Spread> psi_cpu, psi_memory, psi_io;  // share of the time some task stalled on it
  std::optional<double> mem_available_min_gb;
  std::vector<double> t, cpu_share_series, psi_cpu_series;  // per interval between samples (the chart)
  std::vector<GpuTelemetry> gpus;
  std::vector<KernelEvent> kernel;
  std::vector<SharedGpu> shared_gpu;        // every foreign compute process seen during the training
  std::size_t samples_before_training = 0;  // import and compile: left out of the figures
  std::vector<std::string> notes;           // what could not be read, once each
};

// results.json's "telemetry" of a node's run (schema 2) and back; reading is lenient (an older or
// partial record reads as what it has).
nlohmann::ordered_json to_json(const NodeTelemetry& t);
NodeTelemetry telemetry_from_json(const nlohmann::ordered_json& j);
// The same, inside a file being read (results.json): errors carry that file and the pointer.
NodeTelemetry telemetry_from_json(const JsonIn& in);

// The summary of what a node's sampler sent during one run.
NodeTelemetry summarize_telemetry(const std::string& node, const TelemetryParser& p);

}  // namespace cvs
