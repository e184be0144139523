// The suite config: typed structs with the spec's defaults, and the loader that fills them.
// Spec: shared/spec/cvs-jaxmaxtext-config-reference.rst (every block and default below).
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cvs/config/blocks.hpp"
#include "cvs/config/config_error.hpp"
#include "cvs/config/sweep.hpp"

namespace cvs {

enum class Mode { Single, Distributed };
std::string to_string(Mode m);

struct Sweep {
  std::string key;
  SweepKey parsed;
  OrderedJson overrides = OrderedJson::object();  // the sweep's own {} (comments dropped)
};

struct SuiteConfig {
  std::filesystem::path file;  // the config file it was loaded from
  std::string sha256;          // of the effective config: the file, or the file with the cluster's overrides
  std::string gpu_name;
  int gpus_per_node = 0;
  bool enforce_thresholds = false;
  std::string threshold_json;            // as written (resolved placeholders)
  std::filesystem::path threshold_path;  // where it was found
  Paths paths;
  Container container;
  TrainParams train_params;
  ScalingBaseline scaling_baseline;
  Convergence convergence;
  LossCurve loss_curve;
  Statistics statistics;
  TelemetryGates telemetry;
  Smoke smoke;
  CheckpointResume checkpoint_resume;
  std::vector<ErrorPattern> error_patterns;  // spec defaults when the block is absent
  bool error_patterns_defaulted = true;
  std::vector<Sweep> sweeps;
  std::vector<std::string> runs;
  Mode mode = Mode::Single;

  const Sweep& sweep(const std::string& key) const;
  // model label for run names / report: train_params.model_id or maxtext_config.model_name
  std::string model_label() const;
  // steps for a sweep: its own override, else maxtext_config.steps
  long long steps_for(const std::string& sweep_key) const;
};

// NCCL/Gloo device-selection vars; any of them in container.env marks the config distributed.
const std::vector<std::string>& distributed_marker_env();

struct LoadOptions {
  std::string user;  // value of {user-id}; empty = the OS user of this process
  bool require_threshold_file = true;
};

// Loads and validates a suite config. Throws ConfigError with every problem of the file.
SuiteConfig load_config(const std::filesystem::path& file, const LoadOptions& options = {});

// A copy of the config file `from` at `to` with every step count multiplied by `factor`
// (train_params.maxtext_config.steps and each sweep's own `steps`: the same sweeps, longer) and its
// threshold file named by the absolute path it resolved to (`threshold_path`; the copy lives
// elsewhere). cvs calibrate runs a repeat again longer with it.
void write_config_with_steps(const std::filesystem::path& from, const std::filesystem::path& threshold_path,
                             long long factor, const std::filesystem::path& to);
// Same, from JSON text already read (file is used for messages and relative paths).
SuiteConfig load_config_text(const std::string& text, const std::filesystem::path& file,
                             const LoadOptions& options = {});

// Problems that are not load errors but stop a launch: an image still tagged <changeme>, an
// empty image for a container runtime. Each names the file and pointer.
std::vector<ConfigIssue> preflight(const SuiteConfig& cfg);

// The OS user name of this process (for {user-id}).
std::string os_user();

}  // namespace cvs
