#include "cvs/config/config.hpp"
#include "cvs/base/sha256.hpp"
#include "cvs/base/text.hpp"

#include <pwd.h>
#include <re2/re2.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "cvs/config/config_error.hpp"
#include "cvs/config/fabric_env.hpp"
#include "cvs/config/layout.hpp"
#include "cvs/config/placeholders.hpp"
#include "cvs/config/text_file.hpp"

namespace fs = std::filesystem;

namespace cvs {

std::string to_string(Mode m) {
  return m == Mode::Single ? "single" : "distributed";
}

const std::vector<std::string>& distributed_marker_env() {
  static const std::vector<std::string> v = {"NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME",
                                             "NCCL_IB_GID_INDEX"};
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

// paths: the five named paths of the spec, cvs-maxtext's compile_cache (their defaults) and any
// other, as written.
std::map<std::string, std::string> read_paths(JsonReader& rd) {
  Paths defaults;
  std::map<std::string, std::string> raw = {
      {"shared_fs", defaults.shared_fs}, {"models_dir", defaults.models_dir},
      {"log_dir", defaults.log_dir},     {"hf_token_file", defaults.hf_token_file},
      {"temp_dir", defaults.temp_dir},   {"compile_cache", defaults.compile_cache}};
  if (const auto* p = rd.object("paths")) {
    for (auto it = p->begin(); it != p->end(); ++it) {
      if (!it->is_string()) {
        rd.issues().add(pointer_join("/paths", it.key()), "path '" + it.key() + "' must be a string",
                        "quote the path");
        continue;
      }
      raw[it.key()] = it->get<std::string>();
    }
  }
  return raw;
}

void read_error_patterns(JsonReader& rd, SuiteConfig& c) {
  IssueList& issues = rd.issues();
  if (const auto* it = rd.find("error_patterns")) {
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

// sweeps: key -> overrides; runs: the keys to execute, in order.
void read_sweeps(JsonReader& rd, SuiteConfig& c) {
  IssueList& issues = rd.issues();
  const auto* it = rd.find("sweeps");
  if (!it || !it->is_object() || it->empty()) {
    issues.add("/sweeps", !it ? "required block 'sweeps' is missing" : "sweeps must be a non-empty object",
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
  const auto* r = rd.find("runs");
  if (!r || !r->is_array() || r->empty()) {
    issues.add("/runs", !r ? "required key 'runs' is missing" : "runs must be a non-empty list",
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
    if (!it || !it->is_object() || !it->contains(key)) {
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
void read_resolved_paths(OrderedJson& root, JsonReader& rd, const LoadOptions& options, SuiteConfig& c) {
  const auto raw_paths = read_paths(rd);
  Placeholders ph({{"user-id", options.user.empty() ? os_user() : options.user},
                   {"cvs_root", cvs_root().string()},
                   {"cvs_venv", cvs_venv().string()}},
                  raw_paths, rd.issues());
  std::map<std::string, std::string> resolved;
  for (const auto& [k, v] : raw_paths) resolved[k] = ph.path(k);
  resolve_all(root, "", ph);
  c.paths.shared_fs = resolved["shared_fs"];
  c.paths.models_dir = resolved["models_dir"];
  c.paths.log_dir = resolved["log_dir"];
  c.paths.hf_token_file = resolved["hf_token_file"];
  c.paths.temp_dir = resolved["temp_dir"];
  c.paths.compile_cache = resolved["compile_cache"];
  for (const auto& [k, v] : resolved)
    if (k != "shared_fs" && k != "models_dir" && k != "log_dir" && k != "hf_token_file" && k != "temp_dir" &&
        k != "compile_cache")
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

// The container's rules across its keys: what the runtime needs.
void validate_container(IssueList& issues, const Container& c) {
  if (c.runtime == "podman" && !c.args.gpus.empty() && c.args.gpus != "all" &&
      c.args.gpus.rfind("device=", 0) != 0)
    issues.add("/container/runtime/args/gpus",
               "podman passes NVIDIA GPUs through CDI (--device nvidia.com/gpu=...), which has no GPU "
               "count: \"" +
                   c.args.gpus + "\"",
               "write \"all\" or \"device=0,1,...\"");
  if (c.runtime != "local" && c.name.empty())
    issues.add("/container/name", "container name is empty",
               "set a unique container name, e.g. \"cvs-jaxmaxtext\"");
}

// Rules across blocks: Gloo's interface, the mode the env marks, every run's steps, the
// checkpoint sweep among the runs.
void validate_across_blocks(IssueList& issues, SuiteConfig& c) {
  validate_container(issues, c.container);
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
  JsonReader rd(issues, root, "", "the config root");
  read_resolved_paths(root, rd, options, c);
  rd.str("gpu_name", c.gpu_name, true);
  rd.integer("gpus_per_node", c.gpus_per_node, 1, true);
  rd.boolean("enforce_thresholds", c.enforce_thresholds);
  rd.str("threshold_json", c.threshold_json, true);
  locate_threshold_file(file, options, issues, c);
  if (!rd.block("container", c.container) && !root.contains("container"))
    issues.add("/container", "required block 'container' is missing",
               "add a container block with name, image, runtime and env");
  if (!rd.block("train_params", c.train_params) && !root.contains("train_params"))
    issues.add("/train_params", "required block 'train_params' is missing",
               "add train_params with maxtext_config");
  rd.block("scaling_baseline", c.scaling_baseline);
  rd.block("convergence", c.convergence);
  rd.block("loss_curve", c.loss_curve);
  rd.block("statistics", c.statistics);
  rd.block("telemetry", c.telemetry);
  rd.block("smoke", c.smoke);
  rd.block("checkpoint_resume", c.checkpoint_resume);
  c.error_patterns = default_error_patterns();
  read_error_patterns(rd, c);
  read_sweeps(rd, c);
  rd.finish();
  validate_across_blocks(issues, c);
  issues.throw_if_any();
  return c;
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

void write_config_with_steps(const std::filesystem::path& from, const std::filesystem::path& threshold_path,
                             long long factor, const std::filesystem::path& to) {
  const auto text = read_text_file(from);
  if (!text) throw ConfigError(from.string(), "", "cannot read the config file", "check the path");
  auto j = OrderedJson::parse(*text, nullptr, true, true);
  const auto scale = [&](OrderedJson& obj) {
    if (obj.is_object() && obj.contains("steps") && obj["steps"].is_number_integer())
      obj["steps"] = obj["steps"].get<long long>() * factor;
  };
  if (j.contains("train_params") && j["train_params"].contains("maxtext_config"))
    scale(j["train_params"]["maxtext_config"]);
  if (j.contains("sweeps") && j["sweeps"].is_object())
    for (auto& [key, sweep] : j["sweeps"].items()) scale(sweep);
  if (!threshold_path.empty()) j["threshold_json"] = std::filesystem::absolute(threshold_path).string();
  if (!to.parent_path().empty()) std::filesystem::create_directories(to.parent_path());
  write_file_whole(to, j.dump(2) + "\n");
}

}  // namespace cvs
