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

#include "cvs/config/config_error.hpp"
#include "cvs/config/sweep.hpp"

namespace cvs {

using OrderedJson = nlohmann::ordered_json;
using EnvList = std::vector<std::pair<std::string, std::string>>;  // ordered NAME=value pairs

enum class Mode { Single, Distributed };
std::string to_string(Mode m);

struct Paths {
  std::string shared_fs = "/home/{user-id}";
  std::string models_dir = "{shared_fs}/cache/maxtext";
  std::string log_dir = "{shared_fs}/LOGS/jaxmaxtext";
  std::string hf_token_file = "{shared_fs}/.hf_token";
  std::string temp_dir = "/tmp/{user-id}/jaxmaxtext";
  std::map<std::string, std::string> extra;  // any other named path, usable as {paths.NAME}
};

struct RuntimeArgs {
  std::string network;                    // --network
  std::string ipc;                        // --ipc
  bool privileged = false;                // --privileged
  std::string shm_size;                   // --shm-size
  std::vector<std::string> ulimit;        // --ulimit (each)
  std::vector<std::string> volumes;       // -v (each)
  std::vector<std::string> devices;       // --device (each)
  std::vector<std::string> group_add;     // --group-add (each)
  std::vector<std::string> cap_add;       // --cap-add (each)
  std::vector<std::string> security_opt;  // --security-opt (each)
  std::string gpus;                       // --gpus (NVIDIA container toolkit), e.g. "all"
};

struct Container {
  std::string lifetime = "per_run";
  std::string name;
  std::string image;
  std::string runtime = "docker";  // docker | podman | local
  RuntimeArgs args;
  EnvList env;
};

struct TrainParams {
  std::string hf_model_id;
  std::vector<std::string> train_script_paths;
  std::string python = "python3";  // interpreter that runs the train script
  std::string model_id;            // defaults to maxtext_config.model_name
  std::string maxtext_branch;
  std::string maxtext_root = "/workspace/maxtext";
  std::string maxtext_install_cmd;
  OrderedJson maxtext_config = OrderedJson::object();
  std::vector<std::pair<std::string, std::string>> xla_flags;
};

struct ScalingBaseline {
  double tokens_per_sec_total = 0.0;
  int num_nodes = 1;
};

struct Convergence {
  std::string target_metric = "auto";  // auto | train_loss | eval_loss
  double target_value = 0.0;
};

struct LossCurve {
  int sample_every = 10;
  std::vector<long long> milestone_steps = {100, 500, 1000, 5000};
  double max_slope = 0.0;
  bool enforce = true;
};

// How speed metrics are decided on intervals (not a spec block: cvs-maxtext's own).
// fail: an INCONCLUSIVE gate fails its test; pass: it is reported and passes; extend: speed
// sweeps run with a step cap, stop once every gate is decisive (early_stop.hpp), and what is
// still INCONCLUSIVE at the cap fails.
enum class OnInconclusive { Fail, Pass, Extend };
std::string to_string(OnInconclusive o);
struct Statistics {
  double confidence = 0.95;  // two-sided, of the steady-state intervals
  OnInconclusive on_inconclusive = OnInconclusive::Fail;
  long long extend_max_steps = 0;   // extend: the step cap; 0 = 4 x the sweep's steps
  long long min_steady_steps = 10;  // extend: steady-state steps before the first look
  // cvs calibrate: the least slack between a calibrated centre and its gate (calibration.hpp).
  // GPU nodes vary a few % run to run; a shared CPU machine +-30 %.
  double calibration_min_slack_pct = 15.0;
};

struct Smoke {
  bool enabled = true;
  int steps = 5;
  OrderedJson per_device_batch_size = 1;
  long long max_target_length = 2048;
};

struct CheckpointResume {
  bool enabled = false;
  std::string sweep;  // "" = first enabled run
  int steps_before_ckpt = 6;
  int steps_after_resume = 6;
  int checkpoint_period = 5;
  double loss_tolerance = 0.1;
  double max_save_seconds = 0.0;
  double max_load_seconds = 0.0;
  bool delete_ckpt_dir = true;
  OrderedJson smoke_model_overrides = OrderedJson::object();
};

struct ErrorPattern {
  std::string name;
  std::string regex;
};

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

// Environment variables the launcher owns; setting them in container.env is an error.
const std::vector<std::string>& launcher_owned_env();
// NCCL/Gloo device-selection vars; any of them in container.env marks the config distributed.
const std::vector<std::string>& distributed_marker_env();
// The built-in error_patterns used when the block is absent.
const std::vector<ErrorPattern>& default_error_patterns();

struct LoadOptions {
  std::string user;  // value of {user-id}; empty = the OS user of this process
  bool require_threshold_file = true;
};

// Loads and validates a suite config. Throws ConfigError with every problem of the file.
SuiteConfig load_config(const std::filesystem::path& file, const LoadOptions& options = {});
// Same, from JSON text already read (file is used for messages and relative paths).
SuiteConfig load_config_text(const std::string& text, const std::filesystem::path& file,
                             const LoadOptions& options = {});

// Where the shipped configs, thresholds and the venv live: $CVS_ROOT, else the source tree this
// was built from ({cvs_root} in configs).
std::filesystem::path cvs_root();

// Problems that are not load errors but stop a launch: an image still tagged <changeme>, an
// empty image for a container runtime. Each names the file and pointer.
std::vector<ConfigIssue> preflight(const SuiteConfig& cfg);

// The OS user name of this process (for {user-id}).
std::string os_user();

}  // namespace cvs
