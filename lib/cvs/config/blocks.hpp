// The suite config's blocks: a struct per block with the spec's defaults, each read by its own
// from_json through a JsonReader (which names each key once and reports the block's other keys).
// Rules within one block live in its from_json; rules across blocks in config.cpp's validation
// pass. Spec: shared/spec/cvs-jaxmaxtext-config-reference.rst.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cvs/config/json_reader.hpp"

namespace cvs {

using OrderedJson = nlohmann::ordered_json;
using EnvList = std::vector<std::pair<std::string, std::string>>;  // ordered NAME=value pairs

struct Paths {
  std::string shared_fs = "/home/{user-id}";
  std::string models_dir = "{shared_fs}/cache/maxtext";
  std::string log_dir = "{shared_fs}/LOGS/jaxmaxtext";
  std::string hf_token_file = "{shared_fs}/.hf_token";
  std::string temp_dir = "/tmp/{user-id}/jaxmaxtext";
  // cvs-maxtext's own: JAX's persistent compilation cache, shared by every run of a node (the
  // suite's sweeps, certify's tiers, the next night's run): MaxText's jax_cache_dir, mounted into
  // containers; "" leaves MaxText's own default (~/jax_cache, lost with a per-run container).
  // Runs starting at once on it are safe: an entry read before it is whole fails to decompress,
  // which JAX takes as a miss (a warning and a compile).
  std::string compile_cache = "{shared_fs}/cache/jax_compile";
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
void from_json(JsonReader& r, RuntimeArgs& out);  // container.runtime.args

struct Container {
  std::string lifetime = "per_run";  // the one lifetime: a container per run
  std::string name;
  std::string image;
  std::string runtime = "docker";  // docker | podman | local
  RuntimeArgs args;
  EnvList env;
};
void from_json(JsonReader& r, Container& out);

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
  // cvs-maxtext's own: a warm trainer per node imports the train script once a session and each
  // training is forked from it (exec/agent/warm_trainer.py); not under Slurm (a step per run).
  bool warm_start = true;
};
void from_json(JsonReader& r, TrainParams& out);

struct ScalingBaseline {
  double tokens_per_sec_total = 0.0;
  int num_nodes = 1;
};
void from_json(JsonReader& r, ScalingBaseline& out);

struct Convergence {
  std::string target_metric = "auto";  // auto | train_loss | eval_loss
  double target_value = 0.0;
};
void from_json(JsonReader& r, Convergence& out);

struct LossCurve {
  int sample_every = 10;
  std::vector<long long> milestone_steps = {100, 500, 1000, 5000};
  double max_slope = 0.0;
  bool enforce = true;
};
void from_json(JsonReader& r, LossCurve& out);

// How speed metrics are decided on intervals (not a spec block: cvs-maxtext's own).
// fail: an INCONCLUSIVE gate fails its test; pass: it is reported and passes; extend: speed
// sweeps run with a step cap, stop once every gate is decisive (early_stop.hpp), and what is
// still INCONCLUSIVE at the cap fails.
enum class OnInconclusive { Fail, Pass, Extend };
const std::vector<std::pair<std::string, OnInconclusive>>& on_inconclusive_words();
std::string to_string(OnInconclusive o);
struct Statistics {
  double confidence = 0.95;  // two-sided, of the steady-state intervals
  OnInconclusive on_inconclusive = OnInconclusive::Fail;
  long long extend_max_steps = 0;   // extend: the step cap; 0 = 4 x the sweep's steps
  long long min_steady_steps = 25;  // extend: the first look waits for 2 x this many steps (kMinSteadySteps)
  // extend: a look stops a run only once its tokens_per_sec_per_gpu interval's half-width is at
  // most this % of its estimate too (and its speed gates decisive), up to the cap; with no speed
  // gate, this alone stops it. 0: off. cvs certify sets it for the nodes tier from
  // --detect-slowdown-pct (what the fleet scoring must be able to see).
  double stop_half_width_pct = 0;
  // cvs calibrate: the least slack between a calibrated centre and its gate (calibration.hpp).
  // GPU nodes vary a few % run to run; a shared CPU machine +-30 %.
  double calibration_min_slack_pct = 5.0;
  // A step over this many times the median of the steps around it, with no eval, checkpoint save
  // or profiler window in the log to explain it, is a stall (statistics/metrics.hpp Stall): named,
  // left out of the speed figures, counted in stalled_steps, stall_seconds and time_lost_pct.
  double stall_factor = 5.0;
  // extend: the most steps a sweep of `steps` configured steps may run (extend_max_steps, or 4x):
  // the one rule the early stopper and certify's plan both read.
  long long extend_cap(long long steps) const { return extend_max_steps > 0 ? extend_max_steps : 4 * steps; }
};
void from_json(JsonReader& r, Statistics& out);

// Telemetry during every run (not a spec block: cvs-maxtext's own; logs/telemetry.hpp,
// results/telemetry_record.hpp). The defaults never fail a healthy run: only a kernel log line of
// a GPU fault, a machine check or a NIC link down, and an uncorrected ECC error, fail one.
struct TelemetryGates {
  bool enabled = true;                // sample every node during every run
  double interval_s = 0;              // 0: the poll interval
  bool kernel_log = true;             // a failing kernel signature during the run fails the training stage
  double max_ecc_uncorrected = 0;     // uncorrected ECC errors a GPU may gain during the run
  double max_throttled_fraction = 1;  // share of samples a GPU may spend slowed (power, thermal); 1: off
  double min_cpu_share = 0;           // CPUs the training's processes must get on average; 0: off
  // Another process on a GPU (another job, a stale or zombie one, a co-scheduled tenant): false
  // fails the node in test_setup and the training stage when the sampler sees one during the run;
  // true records the process (and its words) instead. The free-memory check below still applies.
  bool allow_shared_gpu = false;
  // test_setup: each GPU must have at least this fraction of its memory free before the training
  // (less: another job holds it, whether or not its process can be listed); 0: off.
  double min_free_memory_fraction = 0.8;
};
void from_json(JsonReader& r, TelemetryGates& out);

struct Smoke {
  bool enabled = true;
  int steps = 5;
  OrderedJson per_device_batch_size = 1;
  long long max_target_length = 2048;
};
void from_json(JsonReader& r, Smoke& out);

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
void from_json(JsonReader& r, CheckpointResume& out);

struct ErrorPattern {
  std::string name;
  std::string regex;
};

// Environment variables the launcher owns; setting them in container.env is an error.
const std::vector<std::string>& launcher_owned_env();
// The built-in error_patterns used when the block is absent.
const std::vector<ErrorPattern>& default_error_patterns();
// run_name and base_output_directory in a MaxText override object (at ptr): the driver sets them.
void check_injected_keys(const OrderedJson& obj, const std::string& ptr, IssueList& issues);

}  // namespace cvs
