#include "cvs/config/blocks.hpp"

#include <algorithm>

namespace cvs {

const std::vector<std::string>& launcher_owned_env() {
  static const std::vector<std::string> v = {
      "JAX_COORDINATOR_IP", "NNODES",          "NODE_RANK",  "JAX_PROCESS_INDEX", "HF_TOKEN", "HF_HOME",
      "HF_TOKEN_PATH",      "LD_LIBRARY_PATH", "PYTHONPATH", "XLA_FLAGS"};
  return v;
}

const std::vector<ErrorPattern>& default_error_patterns() {
  static const std::vector<ErrorPattern> v = {
      {"NCCL ERROR",
       R"(NCCL ERROR|NCCL timeout|ncclSystemError|ncclInternalError|ncclRemoteError|ncclUnhandledCudaError|RCCL error)"},
      {"GPU HW fault",
       R"(Memory access fault by GPU|HW Exception by GPU|GPU Hang|hipErrorIllegalAddress|hipErrorLaunchFailure|an illegal memory access was encountered|CUDA_ERROR_ILLEGAL_ADDRESS|Xid \d+)"},
      {"Assertion/JAX traceback",
       R"(Traceback \(most recent call last\)|AssertionError|XlaRuntimeError|jaxlib\.[A-Za-z_.]*Error|JaxRuntimeError)"},
      {"ROCm init error",
       R"(Unable to initialize backend '(rocm|cuda|gpu)'|hipErrorNoDevice|No ROCm-capable device|rocm_init|Failed to initialize (ROCm|HIP|CUDA))"},
      {"Python fatal error", R"(Fatal Python error)"},
      // Healthy multi-process runs log "Coordination service is enabled" and similar at INFO: only
      // absl E/F lines from the coordination service and its known failure texts count.
      {"TF coordination error",
       R"((?m)^[EF]\d{4} [0-9:.]+ +\d+ coordination_service|Terminating process because|DEADLINE_EXCEEDED|Barrier timed out|missing heartbeats|Failed to connect to coordination service|has been set to ERROR|error polling to propagate)"},
      {"RESOURCE_EXHAUSTED/OOM",
       R"(RESOURCE_EXHAUSTED|[Oo]ut of memory|OutOfMemory|OOM killer|Killed process)"},
      {"Segfault", R"(Segmentation fault|SIGSEGV|core dumped|Fatal signal)"},
  };
  return v;
}

const std::vector<std::pair<std::string, OnInconclusive>>& on_inconclusive_words() {
  static const std::vector<std::pair<std::string, OnInconclusive>> v = {
      {"fail", OnInconclusive::Fail}, {"pass", OnInconclusive::Pass}, {"extend", OnInconclusive::Extend}};
  return v;
}

std::string to_string(OnInconclusive o) {
  for (const auto& [word, value] : on_inconclusive_words())
    if (value == o) return word;
  return "?";
}

void check_injected_keys(const OrderedJson& obj, const std::string& ptr, IssueList& issues) {
  for (const char* k : {"run_name", "base_output_directory"}) {
    if (obj.contains(k))
      issues.add(pointer_join(ptr, k), std::string("'") + k + "' is injected by the driver for every run",
                 "remove it; CVS sets it per sweep under paths.log_dir");
  }
}

namespace {

std::string scalar_to_string(const OrderedJson& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.dump();
}

}  // namespace

namespace {

// container.env: NAME -> scalar, in order; the launcher's own variables refused.
void read_env(JsonReader& r, EnvList& out) {
  const auto* env = r.object("env");
  if (!env) return;
  for (auto it = env->begin(); it != env->end(); ++it) {
    const std::string ptr = pointer_join(r.at("env"), it.key());
    const auto& owned = launcher_owned_env();
    if (std::find(owned.begin(), owned.end(), it.key()) != owned.end()) {
      r.issues().add(ptr, it.key() + " is set by the launcher per node and must not be in container.env",
                     it.key() == "XLA_FLAGS" ? "move the flags into train_params.xla_flags as {flag: value}"
                                             : "remove it; CVS injects it at launch");
      continue;
    }
    if (!(it->is_string() || it->is_number() || it->is_boolean())) {
      r.issues().add(ptr, "env value must be a string, found " + json_type_name(*it), "quote the value");
      continue;
    }
    out.emplace_back(it.key(), scalar_to_string(*it));
  }
}

// train_params.xla_flags: flag (without --) -> scalar, in order.
void read_xla_flags(JsonReader& r, std::vector<std::pair<std::string, std::string>>& out) {
  const auto* xf = r.object("xla_flags");
  if (!xf) return;
  for (auto it = xf->begin(); it != xf->end(); ++it) {
    const std::string ptr = pointer_join(r.at("xla_flags"), it.key());
    if (it.key().rfind("--", 0) == 0) {
      r.issues().add(ptr, "flag name '" + it.key() + "' starts with --",
                     "write the flag without the leading --");
      continue;
    }
    if (!(it->is_string() || it->is_number() || it->is_boolean())) {
      r.issues().add(ptr, "flag value must be a scalar, found " + json_type_name(*it),
                     "write the value as a string");
      continue;
    }
    out.emplace_back(it.key(), scalar_to_string(*it));
  }
}

}  // namespace

void from_json(JsonReader& r, RuntimeArgs& a) {
  r.strs({{"network", a.network}, {"ipc", a.ipc}, {"shm-size", a.shm_size}, {"gpus", a.gpus}});
  r.boolean("privileged", a.privileged);
  r.str_lists({{"ulimit", a.ulimit}, {"volumes", a.volumes}, {"devices", a.devices}});
  r.str_lists({{"group-add", a.group_add}, {"cap-add", a.cap_add}, {"security-opt", a.security_opt}});
}

void from_json(JsonReader& r, Container& c) {
  r.choice("lifetime", c.lifetime, {"per_run"}, "use \"per_run\"");
  r.strs({{"name", c.name}, {"image", c.image}});
  const std::vector<std::string> runtimes = {"docker", "podman", "local"};
  const std::string runtime_fix = "use " + join_or(runtimes);
  if (const auto* rt = r.find("runtime"); rt && rt->is_object()) {
    r.nested("runtime", [&](JsonReader& n) {
      n.choice("name", c.runtime, runtimes, runtime_fix);
      n.block("args", c.args);
    });
  } else if (rt && rt->is_string()) {
    r.choice("runtime", c.runtime, runtimes, runtime_fix);
  } else if (rt) {
    r.issues().add(r.at("runtime"), "runtime must be an object {name, args} or a runtime name",
                   "write \"runtime\": {\"name\": \"docker\", \"args\": {...}}");
  }
  read_env(r, c.env);
}

void from_json(JsonReader& r, TrainParams& t) {
  r.strs({{"hf_model_id", t.hf_model_id}, {"python", t.python}, {"model_id", t.model_id}});
  r.strs({{"maxtext_branch", t.maxtext_branch}, {"maxtext_root", t.maxtext_root}});
  r.str("maxtext_install_cmd", t.maxtext_install_cmd);
  r.str_list("train_script_paths", t.train_script_paths);
  r.boolean("warm_start", t.warm_start);
  if (t.train_script_paths.empty())
    r.issues().add(r.at("train_script_paths"), "no train script candidates",
                   "list the in-container MaxText entrypoints newest first, e.g. "
                   "[\"/workspace/maxtext/src/maxtext/trainers/pre_train/train.py\"]");
  const bool has_maxtext_config = r.find("maxtext_config") != nullptr;
  if (const auto* mc = r.object("maxtext_config")) {
    t.maxtext_config = *mc;
    check_injected_keys(*mc, r.at("maxtext_config"), r.issues());
  } else if (!has_maxtext_config) {
    r.issues().add(r.at("maxtext_config"), "required block 'maxtext_config' is missing",
                   "add the MaxText keys (base_config, model_name, steps, ...)");
  }
  read_xla_flags(r, t.xla_flags);
}

void from_json(JsonReader& r, ScalingBaseline& b) {
  r.number("tokens_per_sec_total", b.tokens_per_sec_total, 0.0);
  r.integer("num_nodes", b.num_nodes, 1);
}

void from_json(JsonReader& r, Convergence& c) {
  r.choice("target_metric", c.target_metric, {"auto", "train_loss", "eval_loss"},
           "use auto (eval loss when eval runs, else training loss)");
  r.number("target_value", c.target_value);
}

void from_json(JsonReader& r, LossCurve& l) {
  r.integer("sample_every", l.sample_every, 1);
  if (const auto* ms = r.find("milestone_steps")) {
    if (!ms->is_array()) {
      r.issues().add(r.at("milestone_steps"), "milestone_steps must be a list of step numbers",
                     "write e.g. [100, 500]");
    } else {
      l.milestone_steps.clear();
      for (std::size_t i = 0; i < ms->size(); ++i) {
        if (!(*ms)[i].is_number_integer() || (*ms)[i].get<long long>() < 0)
          r.issues().add(pointer_join(r.at("milestone_steps"), i), "milestone must be a non-negative integer",
                         "write a step number");
        else
          l.milestone_steps.push_back((*ms)[i].get<long long>());
      }
    }
  }
  r.number("max_slope", l.max_slope);
  r.boolean("enforce", l.enforce);
}

void from_json(JsonReader& r, Statistics& s) {
  double conf = s.confidence;
  r.number("confidence", conf);
  if (!(conf >= 0.5 && conf < 1.0))
    r.issues().add(r.at("confidence"), "confidence " + std::to_string(conf) + " is outside [0.5, 1)",
                   "use a two-sided confidence such as 0.95 or 0.99");
  else
    s.confidence = conf;
  r.choice("on_inconclusive", s.on_inconclusive, on_inconclusive_words(),
           "use fail (an INCONCLUSIVE gate fails the test), pass (reported, passes) or extend (run "
           "speed sweeps until decisive, up to extend_max_steps)");
  r.integer("extend_max_steps", s.extend_max_steps, 0);
  r.integer("min_steady_steps", s.min_steady_steps,
            25);  // no interval below 25 steady steps (step_stats.hpp)
  r.number("calibration_min_slack_pct", s.calibration_min_slack_pct, 0.0);
  double stall = s.stall_factor;
  r.number("stall_factor", stall, 0.0);
  if (!(stall > 1.5))
    r.issues().add(r.at("stall_factor"), "stall_factor " + std::to_string(stall) + " is not above 1.5",
                   "give how many times a normal step's time makes a stall (default 5); a smaller factor "
                   "would take an eval or a noisy step for one");
  else
    s.stall_factor = stall;
  double half = s.stop_half_width_pct;
  r.number("stop_half_width_pct", half, 0.0);
  if (!(half < 100))
    r.issues().add(
        r.at("stop_half_width_pct"), "stop_half_width_pct " + std::to_string(half) + " is not below 100",
        "give the widest interval a run may stop with, as % of its estimate (e.g. 3), or 0 for none");
  else if (half > 0 && s.on_inconclusive != OnInconclusive::Extend)
    r.issues().add(r.at("stop_half_width_pct"),
                   "stop_half_width_pct " + std::to_string(half) +
                       " needs on_inconclusive extend: only a run that extends looks at its interval",
                   "set statistics.on_inconclusive to \"extend\" (with extend_max_steps), or drop "
                   "stop_half_width_pct");
  else
    s.stop_half_width_pct = half;
}

void from_json(JsonReader& r, TelemetryGates& t) {
  r.boolean("enabled", t.enabled);
  r.number("interval_s", t.interval_s, 0.0);
  r.boolean("kernel_log", t.kernel_log);
  r.number("max_ecc_uncorrected", t.max_ecc_uncorrected, 0.0);
  r.number("max_throttled_fraction", t.max_throttled_fraction, 0.0);
  r.number("min_cpu_share", t.min_cpu_share, 0.0);
  r.boolean("allow_shared_gpu", t.allow_shared_gpu);
  r.number("min_free_memory_fraction", t.min_free_memory_fraction, 0.0);
  if (t.min_free_memory_fraction > 1)
    r.issues().add(r.at("min_free_memory_fraction"),
                   "min_free_memory_fraction is a fraction of each GPU's memory",
                   "use a value from 0 (off) to 1, e.g. 0.8");
}

void from_json(JsonReader& r, Smoke& s) {
  r.boolean("enabled", s.enabled);
  r.integer("steps", s.steps, 1);
  if (const auto* bs = r.find("per_device_batch_size")) {
    if (!bs->is_number() || bs->get<double>() <= 0)
      r.issues().add(r.at("per_device_batch_size"), "per_device_batch_size must be a positive number",
                     "e.g. 1");
    else
      s.per_device_batch_size = *bs;
  }
  r.integer("max_target_length", s.max_target_length, 1);
}

void from_json(JsonReader& r, CheckpointResume& cr) {
  r.boolean("enabled", cr.enabled);
  r.str("sweep", cr.sweep);
  r.integer("steps_before_ckpt", cr.steps_before_ckpt, 1);
  r.integer("steps_after_resume", cr.steps_after_resume, 1);
  r.integer("checkpoint_period", cr.checkpoint_period, 1);
  r.number("loss_tolerance", cr.loss_tolerance, 0.0);
  r.number("max_save_seconds", cr.max_save_seconds, 0.0);
  r.number("max_load_seconds", cr.max_load_seconds, 0.0);
  r.boolean("delete_ckpt_dir", cr.delete_ckpt_dir);
  if (const auto* o = r.object("smoke_model_overrides")) {
    cr.smoke_model_overrides = *o;
    check_injected_keys(*o, r.at("smoke_model_overrides"), r.issues());
  }
  if (cr.checkpoint_period > cr.steps_before_ckpt)
    r.issues().add(r.at("checkpoint_period"),
                   "checkpoint_period " + std::to_string(cr.checkpoint_period) + " > steps_before_ckpt " +
                       std::to_string(cr.steps_before_ckpt) + ": phase 1 would save nothing",
                   "set checkpoint_period <= steps_before_ckpt");
}

}  // namespace cvs
