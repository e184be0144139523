#include "cvs/config/config.hpp"
#include "cvs/base/sha256.hpp"
#include "cvs/exec/rdma.hpp"

#include <pwd.h>
#include <re2/re2.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "cvs/config/config_error.hpp"
#include "cvs/config/json_reader.hpp"
#include "cvs/config/placeholders.hpp"
#include "cvs/config/text_file.hpp"

namespace fs = std::filesystem;

namespace cvs {

std::string to_string(Mode m) {
  return m == Mode::Single ? "single" : "distributed";
}

std::string to_string(OnInconclusive o) {
  switch (o) {
    case OnInconclusive::Fail:
      return "fail";
    case OnInconclusive::Pass:
      return "pass";
    case OnInconclusive::Extend:
      return "extend";
  }
  return "?";
}

const std::vector<std::string>& launcher_owned_env() {
  static const std::vector<std::string> v = {
      "JAX_COORDINATOR_IP", "NNODES",          "NODE_RANK",  "JAX_PROCESS_INDEX", "HF_TOKEN", "HF_HOME",
      "HF_TOKEN_PATH",      "LD_LIBRARY_PATH", "PYTHONPATH", "XLA_FLAGS"};
  return v;
}

const std::vector<std::string>& distributed_marker_env() {
  static const std::vector<std::string> v = {"NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME",
                                             "NCCL_IB_GID_INDEX"};
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

std::string os_user() {
  if (const passwd* pw = getpwuid(geteuid()); pw && pw->pw_name) return pw->pw_name;
  if (const char* u = std::getenv("USER")) return u;
  return "unknown";
}

const Sweep& SuiteConfig::sweep(const std::string& key) const {
  for (const auto& s : sweeps)
    if (s.key == key) return s;
  throw ConfigError(file.string(), "/sweeps", "no sweep '" + key + "'",
                    "add it to sweeps or remove it from runs");
}

std::string SuiteConfig::model_label() const {
  if (!train_params.model_id.empty()) return train_params.model_id;
  auto it = train_params.maxtext_config.find("model_name");
  if (it != train_params.maxtext_config.end() && it->is_string()) return it->get<std::string>();
  return "model";
}

long long SuiteConfig::steps_for(const std::string& sweep_key) const {
  const auto& s = sweep(sweep_key);
  if (auto it = s.overrides.find("steps"); it != s.overrides.end() && it->is_number_integer())
    return it->get<long long>();
  if (auto it = train_params.maxtext_config.find("steps");
      it != train_params.maxtext_config.end() && it->is_number_integer())
    return it->get<long long>();
  return 0;
}

namespace {

constexpr const char* kChangeme = "<changeme>";

bool is_comment_key(const std::string& k) {
  return !k.empty() && k[0] == '_';
}

// Drops '_' comment keys everywhere except inside maxtext_config, where they are errors
// (every key there is written to the MaxText YAML and MaxText rejects unknown keys).
void strip_comments(OrderedJson& j, const std::string& ptr, IssueList& issues) {
  if (j.is_object()) {
    const bool in_maxtext = ptr == "/train_params/maxtext_config";
    std::vector<std::string> drop;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (is_comment_key(it.key())) {
        if (in_maxtext)
          issues.add(
              pointer_join(ptr, it.key()),
              "comment key '" + it.key() +
                  "' inside maxtext_config would be written to the MaxText YAML, "
                  "which rejects unknown keys",
              "move the comment next to maxtext_config, e.g. as \"_maxtext_config_comment\" in train_params");
        drop.push_back(it.key());
      }
    }
    for (const auto& k : drop) j.erase(k);
    for (auto it = j.begin(); it != j.end(); ++it)
      strip_comments(it.value(), pointer_join(ptr, it.key()), issues);
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) strip_comments(j[i], pointer_join(ptr, i), issues);
  }
}

void find_changeme(const OrderedJson& j, const std::string& ptr, IssueList& issues) {
  if (j.is_string()) {
    const auto s = j.get<std::string>();
    if (s.find(kChangeme) == std::string::npos || ptr == "/container/image") return;
    std::string fix = "replace the whole value with your cluster's setting";
    if (ptr.rfind("/container/env/", 0) == 0) {
      const std::string var = ptr.substr(std::string("/container/env/").size());
      if (var == "NCCL_IB_HCA")
        fix = "list your RDMA HCAs (see `ibv_devices`), e.g. \"rdma0,rdma1\"";
      else if (var == "NCCL_SOCKET_IFNAME" || var == "GLOO_SOCKET_IFNAME")
        fix = "name the host interface (see `ip -br link`), e.g. \"eno0\"";
      else if (var == "NCCL_IB_GID_INDEX")
        fix = "set the RoCE GID index of your fabric, e.g. \"3\"";
    } else if (ptr == "/threshold_json") {
      fix = "point it at the mi300x_* or mi325x_* _threshold.json for your GPU, without the <changeme> tag";
    }
    issues.add(ptr, "value still contains <changeme>: \"" + s + "\"", fix);
  } else if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      find_changeme(it.value(), pointer_join(ptr, it.key()), issues);
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) find_changeme(j[i], pointer_join(ptr, i), issues);
  }
}

std::string scalar_to_string(const OrderedJson& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.dump();
}

void check_injected_keys(const OrderedJson& obj, const std::string& ptr, IssueList& issues) {
  for (const char* k : {"run_name", "base_output_directory"}) {
    if (obj.contains(k))
      issues.add(pointer_join(ptr, k), std::string("'") + k + "' is injected by the driver for every run",
                 "remove it; CVS sets it per sweep under paths.log_dir");
  }
}

void read_paths(const OrderedJson& root, JsonReader& rd, IssueList& issues,
                std::map<std::string, std::string>& raw) {
  Paths defaults;
  raw = {{"shared_fs", defaults.shared_fs},
         {"models_dir", defaults.models_dir},
         {"log_dir", defaults.log_dir},
         {"hf_token_file", defaults.hf_token_file},
         {"temp_dir", defaults.temp_dir}};
  if (const auto* p = rd.object(root, "paths", "")) {
    for (auto it = p->begin(); it != p->end(); ++it) {
      if (!it->is_string()) {
        issues.add(pointer_join("/paths", it.key()), "path '" + it.key() + "' must be a string",
                   "quote the path");
        continue;
      }
      raw[it.key()] = it->get<std::string>();
    }
  }
}

void read_container(const OrderedJson& root, JsonReader& rd, IssueList& issues, Container& c) {
  const auto* ct = rd.object(root, "container", "");
  if (!ct) {
    if (!root.contains("container"))
      issues.add("/container", "required block 'container' is missing",
                 "add a container block with name, image, runtime and env");
    return;
  }
  const std::string P = "/container";
  rd.unknown_keys(*ct, P, {"lifetime", "name", "image", "runtime", "env"}, "container");
  rd.str(*ct, "lifetime", P, c.lifetime);
  if (c.lifetime != "per_run")
    issues.add(P + "/lifetime", "lifetime '" + c.lifetime + "' is not supported", "use \"per_run\"");
  rd.str(*ct, "name", P, c.name);
  rd.str(*ct, "image", P, c.image);
  if (auto it = ct->find("runtime"); it != ct->end()) {
    if (it->is_string()) {
      c.runtime = it->get<std::string>();
    } else if (it->is_object()) {
      rd.unknown_keys(*it, P + "/runtime", {"name", "args"}, "container.runtime");
      rd.str(*it, "name", P + "/runtime", c.runtime);
      if (const auto* a = rd.object(*it, "args", P + "/runtime")) {
        const std::string A = P + "/runtime/args";
        rd.unknown_keys(*a, A,
                        {"network", "ipc", "privileged", "shm-size", "ulimit", "volumes", "devices",
                         "group-add", "cap-add", "security-opt", "gpus"},
                        "container.runtime.args");
        rd.str(*a, "network", A, c.args.network);
        rd.str(*a, "ipc", A, c.args.ipc);
        rd.boolean(*a, "privileged", A, c.args.privileged);
        rd.str(*a, "shm-size", A, c.args.shm_size);
        rd.str_list(*a, "ulimit", A, c.args.ulimit);
        rd.str_list(*a, "volumes", A, c.args.volumes);
        rd.str_list(*a, "devices", A, c.args.devices);
        rd.str_list(*a, "group-add", A, c.args.group_add);
        rd.str_list(*a, "cap-add", A, c.args.cap_add);
        rd.str_list(*a, "security-opt", A, c.args.security_opt);
        rd.str(*a, "gpus", A, c.args.gpus);
      }
    } else {
      issues.add(P + "/runtime", "runtime must be an object {name, args} or a runtime name",
                 "write \"runtime\": {\"name\": \"docker\", \"args\": {...}}");
    }
  }
  if (c.runtime != "docker" && c.runtime != "podman" && c.runtime != "local")
    issues.add(P + "/runtime/name", "unknown runtime '" + c.runtime + "'", "use docker, podman or local");
  if (c.runtime == "podman" && !c.args.gpus.empty() && c.args.gpus != "all" &&
      c.args.gpus.rfind("device=", 0) != 0)
    issues.add(P + "/runtime/args/gpus",
               "podman passes NVIDIA GPUs through CDI (--device nvidia.com/gpu=...), which has no GPU "
               "count: \"" +
                   c.args.gpus + "\"",
               "write \"all\" or \"device=0,1,...\"");
  if (c.runtime != "local" && c.name.empty())
    issues.add(P + "/name", "container name is empty",
               "set a unique container name, e.g. \"cvs-jaxmaxtext\"");
  if (const auto* env = rd.object(*ct, "env", P)) {
    for (auto it = env->begin(); it != env->end(); ++it) {
      const std::string ptr = pointer_join(P + "/env", it.key());
      const auto& owned = launcher_owned_env();
      if (std::find(owned.begin(), owned.end(), it.key()) != owned.end()) {
        issues.add(ptr, it.key() + " is set by the launcher per node and must not be in container.env",
                   it.key() == "XLA_FLAGS" ? "move the flags into train_params.xla_flags as {flag: value}"
                                           : "remove it; CVS injects it at launch");
        continue;
      }
      if (!(it->is_string() || it->is_number() || it->is_boolean())) {
        issues.add(ptr, "env value must be a string, found " + json_type_name(*it), "quote the value");
        continue;
      }
      c.env.emplace_back(it.key(), scalar_to_string(*it));
    }
  }
}

void read_train_params(const OrderedJson& root, JsonReader& rd, IssueList& issues, TrainParams& t) {
  const auto* tp = rd.object(root, "train_params", "");
  const std::string P = "/train_params";
  if (!tp) {
    if (!root.contains("train_params"))
      issues.add(P, "required block 'train_params' is missing", "add train_params with maxtext_config");
    return;
  }
  rd.unknown_keys(*tp, P,
                  {"hf_model_id", "train_script_paths", "python", "model_id", "maxtext_branch",
                   "maxtext_root", "maxtext_install_cmd", "maxtext_config", "xla_flags"},
                  "train_params");
  rd.str(*tp, "hf_model_id", P, t.hf_model_id);
  rd.str_list(*tp, "train_script_paths", P, t.train_script_paths);
  rd.str(*tp, "python", P, t.python);
  rd.str(*tp, "model_id", P, t.model_id);
  rd.str(*tp, "maxtext_branch", P, t.maxtext_branch);
  rd.str(*tp, "maxtext_root", P, t.maxtext_root);
  rd.str(*tp, "maxtext_install_cmd", P, t.maxtext_install_cmd);
  if (t.train_script_paths.empty())
    issues.add(P + "/train_script_paths", "no train script candidates",
               "list the in-container MaxText entrypoints newest first, e.g. "
               "[\"/workspace/maxtext/src/maxtext/trainers/pre_train/train.py\"]");
  if (const auto* mc = rd.object(*tp, "maxtext_config", P)) {
    t.maxtext_config = *mc;
    check_injected_keys(*mc, P + "/maxtext_config", issues);
  } else if (!tp->contains("maxtext_config")) {
    issues.add(P + "/maxtext_config", "required block 'maxtext_config' is missing",
               "add the MaxText keys (base_config, model_name, steps, ...)");
  }
  if (const auto* xf = rd.object(*tp, "xla_flags", P)) {
    for (auto it = xf->begin(); it != xf->end(); ++it) {
      const std::string ptr = pointer_join(P + "/xla_flags", it.key());
      if (it.key().rfind("--", 0) == 0) {
        issues.add(ptr, "flag name '" + it.key() + "' starts with --",
                   "write the flag without the leading --");
        continue;
      }
      if (!(it->is_string() || it->is_number() || it->is_boolean())) {
        issues.add(ptr, "flag value must be a scalar, found " + json_type_name(*it),
                   "write the value as a string");
        continue;
      }
      t.xla_flags.emplace_back(it.key(), scalar_to_string(*it));
    }
  }
}

void read_statistics(const OrderedJson& root, JsonReader& rd, IssueList& issues, SuiteConfig& c) {
  const auto* b = rd.object(root, "statistics", "");
  if (!b) return;
  const std::string P = "/statistics";
  rd.unknown_keys(
      *b, P,
      {"confidence", "on_inconclusive", "extend_max_steps", "min_steady_steps", "calibration_min_slack_pct"},
      "statistics");
  rd.number(*b, "calibration_min_slack_pct", P, c.statistics.calibration_min_slack_pct, 0.0);
  rd.integer(*b, "extend_max_steps", P, c.statistics.extend_max_steps, 0);
  rd.integer(*b, "min_steady_steps", P, c.statistics.min_steady_steps, 4);
  double conf = c.statistics.confidence;
  rd.number(*b, "confidence", P, conf);
  if (!(conf >= 0.5 && conf < 1.0))
    issues.add(P + "/confidence", "confidence " + std::to_string(conf) + " is outside [0.5, 1)",
               "use a two-sided confidence such as 0.95 or 0.99");
  else
    c.statistics.confidence = conf;
  std::string on = to_string(c.statistics.on_inconclusive);
  rd.str(*b, "on_inconclusive", P, on);
  if (on == "fail")
    c.statistics.on_inconclusive = OnInconclusive::Fail;
  else if (on == "pass")
    c.statistics.on_inconclusive = OnInconclusive::Pass;
  else if (on == "extend")
    c.statistics.on_inconclusive = OnInconclusive::Extend;
  else
    issues.add(P + "/on_inconclusive", "on_inconclusive '" + on + "' is not fail, pass or extend",
               "use fail (an INCONCLUSIVE gate fails the test), pass (reported, passes) or extend (run "
               "speed sweeps until decisive, up to extend_max_steps)");
}

void read_scaling_baseline(const OrderedJson& root, JsonReader& rd, IssueList& /*issues*/, SuiteConfig& c) {
  if (const auto* b = rd.object(root, "scaling_baseline", "")) {
    const std::string P = "/scaling_baseline";
    rd.unknown_keys(*b, P, {"tokens_per_sec_total", "num_nodes"}, "scaling_baseline");
    rd.number(*b, "tokens_per_sec_total", P, c.scaling_baseline.tokens_per_sec_total, 0.0);
    rd.integer(*b, "num_nodes", P, c.scaling_baseline.num_nodes, 1);
  }
}

void read_convergence(const OrderedJson& root, JsonReader& rd, IssueList& issues, SuiteConfig& c) {
  if (const auto* b = rd.object(root, "convergence", "")) {
    const std::string P = "/convergence";
    rd.unknown_keys(*b, P, {"target_metric", "target_value"}, "convergence");
    rd.str(*b, "target_metric", P, c.convergence.target_metric);
    const auto& tm = c.convergence.target_metric;
    if (tm != "auto" && tm != "train_loss" && tm != "eval_loss")
      issues.add(P + "/target_metric", "target_metric '" + tm + "' is not auto, train_loss or eval_loss",
                 "use auto (eval loss when eval runs, else training loss)");
    rd.number(*b, "target_value", P, c.convergence.target_value);
  }
}

void read_loss_curve(const OrderedJson& root, JsonReader& rd, IssueList& issues, SuiteConfig& c) {
  if (const auto* b = rd.object(root, "loss_curve", "")) {
    const std::string P = "/loss_curve";
    rd.unknown_keys(*b, P, {"sample_every", "milestone_steps", "max_slope", "enforce"}, "loss_curve");
    rd.integer(*b, "sample_every", P, c.loss_curve.sample_every, 1);
    if (auto it = b->find("milestone_steps"); it != b->end()) {
      if (!it->is_array()) {
        issues.add(P + "/milestone_steps", "milestone_steps must be a list of step numbers",
                   "write e.g. [100, 500]");
      } else {
        c.loss_curve.milestone_steps.clear();
        for (std::size_t i = 0; i < it->size(); ++i) {
          if (!(*it)[i].is_number_integer() || (*it)[i].get<long long>() < 0)
            issues.add(pointer_join(P + "/milestone_steps", i), "milestone must be a non-negative integer",
                       "write a step number");
          else
            c.loss_curve.milestone_steps.push_back((*it)[i].get<long long>());
        }
      }
    }
    rd.number(*b, "max_slope", P, c.loss_curve.max_slope);
    rd.boolean(*b, "enforce", P, c.loss_curve.enforce);
  }
}

void read_smoke(const OrderedJson& root, JsonReader& rd, IssueList& issues, SuiteConfig& c) {
  if (const auto* b = rd.object(root, "smoke", "")) {
    const std::string P = "/smoke";
    rd.unknown_keys(*b, P, {"enabled", "steps", "per_device_batch_size", "max_target_length"}, "smoke");
    rd.boolean(*b, "enabled", P, c.smoke.enabled);
    rd.integer(*b, "steps", P, c.smoke.steps, 1);
    if (auto it = b->find("per_device_batch_size"); it != b->end()) {
      if (!it->is_number() || it->get<double>() <= 0)
        issues.add(P + "/per_device_batch_size", "per_device_batch_size must be a positive number", "e.g. 1");
      else
        c.smoke.per_device_batch_size = *it;
    }
    rd.integer(*b, "max_target_length", P, c.smoke.max_target_length, 1);
  }
}

void read_checkpoint_resume(const OrderedJson& root, JsonReader& rd, IssueList& issues, SuiteConfig& c) {
  if (const auto* b = rd.object(root, "checkpoint_resume", "")) {
    const std::string P = "/checkpoint_resume";
    auto& cr = c.checkpoint_resume;
    rd.unknown_keys(
        *b, P,
        {"enabled", "sweep", "steps_before_ckpt", "steps_after_resume", "checkpoint_period", "loss_tolerance",
         "max_save_seconds", "max_load_seconds", "delete_ckpt_dir", "smoke_model_overrides"},
        "checkpoint_resume");
    rd.boolean(*b, "enabled", P, cr.enabled);
    rd.str(*b, "sweep", P, cr.sweep);
    rd.integer(*b, "steps_before_ckpt", P, cr.steps_before_ckpt, 1);
    rd.integer(*b, "steps_after_resume", P, cr.steps_after_resume, 1);
    rd.integer(*b, "checkpoint_period", P, cr.checkpoint_period, 1);
    rd.number(*b, "loss_tolerance", P, cr.loss_tolerance, 0.0);
    rd.number(*b, "max_save_seconds", P, cr.max_save_seconds, 0.0);
    rd.number(*b, "max_load_seconds", P, cr.max_load_seconds, 0.0);
    rd.boolean(*b, "delete_ckpt_dir", P, cr.delete_ckpt_dir);
    if (const auto* o = rd.object(*b, "smoke_model_overrides", P)) {
      cr.smoke_model_overrides = *o;
      check_injected_keys(*o, P + "/smoke_model_overrides", issues);
    }
    if (cr.checkpoint_period > cr.steps_before_ckpt)
      issues.add(P + "/checkpoint_period",
                 "checkpoint_period " + std::to_string(cr.checkpoint_period) + " > steps_before_ckpt " +
                     std::to_string(cr.steps_before_ckpt) + ": phase 1 would save nothing",
                 "set checkpoint_period <= steps_before_ckpt");
  }
}

void read_error_patterns(const OrderedJson& root, JsonReader& /*rd*/, IssueList& issues, SuiteConfig& c) {
  if (auto it = root.find("error_patterns"); it != root.end()) {
    if (!it->is_object()) {
      issues.add("/error_patterns", "error_patterns must be an object {name: regex}",
                 "write it as {\"NCCL ERROR\": \"NCCL ERROR|NCCL timeout\"}, or remove it for the defaults");
    } else {
      c.error_patterns.clear();
      c.error_patterns_defaulted = false;
      for (auto p = it->begin(); p != it->end(); ++p) {
        const std::string ptr = pointer_join("/error_patterns", p.key());
        if (!p->is_string()) {
          issues.add(ptr, "pattern must be a regex string", "quote the regex");
          continue;
        }
        RE2 re(p->get<std::string>(), RE2::Quiet);
        if (!re.ok()) {
          issues.add(ptr, "invalid regex \"" + p->get<std::string>() + "\": " + re.error(),
                     "fix the regex (RE2 syntax: no look-around or back-references)");
          continue;
        }
        c.error_patterns.push_back({p.key(), p->get<std::string>()});
      }
      if (c.error_patterns.empty())
        issues.add("/error_patterns", "error_patterns is empty: no error would ever be detected",
                   "remove the block to use the built-in defaults, or list at least one pattern");
    }
  }
}

// The blocks after the container and train_params, each by its own reader.
void read_blocks(const OrderedJson& root, JsonReader& rd, IssueList& issues, SuiteConfig& c) {
  read_scaling_baseline(root, rd, issues, c);
  read_convergence(root, rd, issues, c);
  read_loss_curve(root, rd, issues, c);
  read_smoke(root, rd, issues, c);
  read_checkpoint_resume(root, rd, issues, c);
  read_error_patterns(root, rd, issues, c);
}

void read_sweeps(const OrderedJson& root, IssueList& issues, SuiteConfig& c) {
  auto it = root.find("sweeps");
  if (it == root.end() || !it->is_object() || it->empty()) {
    issues.add("/sweeps",
               it == root.end() ? "required block 'sweeps' is missing" : "sweeps must be a non-empty object",
               "add \"sweeps\": {\"BS=1,PRECISION=BF16,SL=2048\": {}}");
  } else {
    for (auto s = it->begin(); s != it->end(); ++s) {
      const std::string ptr = pointer_join("/sweeps", s.key());
      Sweep sw;
      sw.key = s.key();
      try {
        sw.parsed = parse_sweep_key(s.key(), c.file.string(), ptr);
        (void)key_overrides(sw.parsed, c.gpu_name, c.file.string(), ptr);
      } catch (const ConfigError& e) {
        issues.append(e);
        continue;
      }
      if (!s->is_object()) {
        issues.add(ptr, "sweep overrides must be an object", "write {} or {\"steps\": 300}");
        continue;
      }
      sw.overrides = *s;
      check_injected_keys(*s, ptr, issues);
      c.sweeps.push_back(std::move(sw));
    }
  }
  auto r = root.find("runs");
  if (r == root.end() || !r->is_array() || r->empty()) {
    issues.add("/runs", r == root.end() ? "required key 'runs' is missing" : "runs must be a non-empty list",
               "list the sweep keys to execute, e.g. [\"BS=1,PRECISION=BF16,SL=2048\"]");
    return;
  }
  std::set<std::string> seen;
  for (std::size_t i = 0; i < r->size(); ++i) {
    const auto& e = (*r)[i];
    const std::string ptr = pointer_join("/runs", i);
    if (!e.is_string()) {
      issues.add(ptr, "run entry must be a sweep key string", "quote the key");
      continue;
    }
    const auto key = e.get<std::string>();
    if (!seen.insert(key).second) {
      issues.add(ptr, "run '" + key + "' is listed twice", "list each sweep key once");
      continue;
    }
    if (!it->is_object() || !it->contains(key)) {
      issues.add(ptr, "run '" + key + "' is not a key of sweeps", "add it to sweeps or fix the spelling");
      continue;
    }
    c.runs.push_back(key);
  }
}

}  // namespace

namespace {

// The config's JSON (nlohmann's message says the line and column of a syntax error).
OrderedJson parse_config_json(const std::string& text, const fs::path& file) {
  OrderedJson root;
  try {
    root = OrderedJson::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(
        file.string(), "", std::string("invalid JSON: ") + e.what(),
        "fix the JSON syntax (trailing commas and comments are not allowed; use \"_comment\" keys)");
  }
  if (!root.is_object())
    throw ConfigError(file.string(), "", "the config must be a JSON object", "wrap it in { }");
  return root;
}

// paths: read, placeholders resolved (in paths and everywhere else in the document).
void read_resolved_paths(OrderedJson& root, JsonReader& rd, IssueList& issues, const LoadOptions& options,
                         SuiteConfig& c) {
  std::map<std::string, std::string> raw_paths;
  read_paths(root, rd, issues, raw_paths);
  Placeholders ph(options.user.empty() ? os_user() : options.user, cvs_root().string(), raw_paths, issues);
  std::map<std::string, std::string> resolved;
  for (const auto& [k, v] : raw_paths) resolved[k] = ph.path(k);
  resolve_all(root, "", ph);
  c.paths.shared_fs = resolved["shared_fs"];
  c.paths.models_dir = resolved["models_dir"];
  c.paths.log_dir = resolved["log_dir"];
  c.paths.hf_token_file = resolved["hf_token_file"];
  c.paths.temp_dir = resolved["temp_dir"];
  for (const auto& [k, v] : resolved)
    if (k != "shared_fs" && k != "models_dir" && k != "log_dir" && k != "hf_token_file" && k != "temp_dir")
      c.paths.extra[k] = v;
}

// threshold_json next to the config, or in ../thresholds/.
void locate_threshold_file(const fs::path& file, const LoadOptions& options, IssueList& issues,
                           SuiteConfig& c) {
  if (c.threshold_json.empty() || c.threshold_json.find(kChangeme) != std::string::npos) return;
  fs::path t(c.threshold_json);
  std::vector<fs::path> candidates;
  if (t.is_absolute()) {
    candidates.push_back(t);
  } else {
    const fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
    candidates.push_back(dir / t);
    candidates.push_back(dir / ".." / "thresholds" / t);
  }
  for (const auto& cand : candidates)
    if (fs::is_regular_file(cand)) {
      c.threshold_path = fs::weakly_canonical(cand);
      break;
    }
  if (!c.threshold_path.empty() || !options.require_threshold_file) return;
  std::string looked;
  for (const auto& cand : candidates) looked += (looked.empty() ? "" : ", ") + cand.string();
  issues.add("/threshold_json",
             "threshold file '" + c.threshold_json + "' not found (looked in " + looked + ")",
             "create it next to the config (or in thresholds/), or fix the file name");
}

// Rules across blocks: Gloo's interface, the mode the env marks, every run's steps, the
// checkpoint sweep among the runs.
void validate_across_blocks(IssueList& issues, SuiteConfig& c) {
  for (const auto& [k, v] : c.container.env)
    if (k == "GLOO_SOCKET_IFNAME" && v.find(kChangeme) == std::string::npos)
      if (auto why = gloo_ifname_problem(v); !why.empty())
        issues.add("/container/env/GLOO_SOCKET_IFNAME",
                   "GLOO_SOCKET_IFNAME must name exactly one interface: " + why,
                   "name the one host interface Gloo binds, e.g. \"ens10f0\" (see `ip -br link`)");
  for (const auto& [k, v] : c.container.env)
    if (std::find(distributed_marker_env().begin(), distributed_marker_env().end(), k) !=
        distributed_marker_env().end())
      c.mode = Mode::Distributed;
  // Every run needs a step count: completion detection and the poll budget derive from it.
  for (const auto& run : c.runs) {
    const auto sit =
        std::find_if(c.sweeps.begin(), c.sweeps.end(), [&](const Sweep& s) { return s.key == run; });
    if (sit == c.sweeps.end()) continue;
    const auto& o = sit->overrides;
    const auto& mc = c.train_params.maxtext_config;
    const OrderedJson* steps =
        o.contains("steps") ? &o["steps"] : (mc.contains("steps") ? &mc["steps"] : nullptr);
    const std::string ptr = o.contains("steps") ? pointer_join(pointer_join("/sweeps", run), "steps")
                                                : "/train_params/maxtext_config/steps";
    if (!steps)
      issues.add(ptr, "no 'steps' for run '" + run + "'",
                 "set maxtext_config.steps (or the sweep's own \"steps\"); completion detection needs it");
    else if (!steps->is_number_integer() || steps->get<long long>() < 1)
      issues.add(ptr, "steps must be a positive integer, found " + steps->dump(), "e.g. \"steps\": 30");
  }
  auto& cr = c.checkpoint_resume;
  if (cr.enabled && !cr.sweep.empty() && std::find(c.runs.begin(), c.runs.end(), cr.sweep) == c.runs.end())
    issues.add("/checkpoint_resume/sweep", "sweep '" + cr.sweep + "' is not one of runs",
               "name a key listed in runs, or \"\" for the first run");
}

}  // namespace

SuiteConfig load_config_text(const std::string& text, const fs::path& file, const LoadOptions& options) {
  IssueList issues(file.string());
  OrderedJson root = parse_config_json(text, file);
  strip_comments(root, "", issues);
  find_changeme(root, "", issues);

  SuiteConfig c;
  c.file = file;
  c.sha256 = sha256_hex(text);
  JsonReader rd(issues);
  rd.unknown_keys(root, "",
                  {"gpu_name", "gpus_per_node", "threshold_json", "enforce_thresholds", "paths", "container",
                   "train_params", "scaling_baseline", "convergence", "loss_curve", "statistics", "smoke",
                   "checkpoint_resume", "error_patterns", "sweeps", "runs"},
                  "the config root");
  read_resolved_paths(root, rd, issues, options, c);
  rd.str(root, "gpu_name", "", c.gpu_name, true);
  rd.integer(root, "gpus_per_node", "", c.gpus_per_node, 1, true);
  rd.boolean(root, "enforce_thresholds", "", c.enforce_thresholds);
  rd.str(root, "threshold_json", "", c.threshold_json, true);
  locate_threshold_file(file, options, issues, c);
  read_container(root, rd, issues, c.container);
  read_train_params(root, rd, issues, c.train_params);
  c.error_patterns = default_error_patterns();
  read_blocks(root, rd, issues, c);
  read_statistics(root, rd, issues, c);
  read_sweeps(root, issues, c);
  validate_across_blocks(issues, c);
  issues.throw_if_any();
  return c;
}

fs::path cvs_root() {
  const char* root = std::getenv("CVS_ROOT");
  return root ? fs::path(root) : fs::path(CVS_SOURCE_DIR);
}

SuiteConfig load_config(const fs::path& file, const LoadOptions& options) {
  const auto text = read_text_file(file);
  if (!text)
    throw ConfigError(file.string(), "", "cannot read the config file",
                      "check the path; `cvs config list` shows the shipped configs");
  return load_config_text(*text, file, options);
}

std::vector<ConfigIssue> preflight(const SuiteConfig& cfg) {
  std::vector<ConfigIssue> out;
  const auto& c = cfg.container;
  if (c.runtime == "local") return out;
  if (c.image.find(kChangeme) != std::string::npos)
    out.push_back({cfg.file.string(), "/container/image",
                   "container.image still contains <changeme>: \"" + c.image + "\"",
                   "set the image tag your cluster has, e.g. \"rocm/jax-training:maxtext-v26.4\""});
  else if (c.image.empty())
    out.push_back({cfg.file.string(), "/container/image", "container.image is empty",
                   "set the MaxText/JAX image present on all nodes"});
  else if (c.image.find(' ') != std::string::npos)
    out.push_back({cfg.file.string(), "/container/image",
                   "container.image \"" + c.image + "\" contains a space",
                   "write a single image reference, e.g. \"rocm/jax-training:maxtext-v26.4\""});
  return out;
}

}  // namespace cvs
