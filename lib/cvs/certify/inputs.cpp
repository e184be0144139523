#include "cvs/certify/inputs.hpp"
#include "cvs/config/mesh.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>

#include "cvs/base/format.hpp"
#include "cvs/base/sha256.hpp"
#include "cvs/base/utc_time.hpp"
#include "cvs/certify/suite_runs.hpp"
#include "cvs/config/config_error.hpp"
#include "cvs/config/thresholds.hpp"
#include "cvs/history/store.hpp"

namespace fs = std::filesystem;
using J = nlohmann::ordered_json;

namespace cvs::certify {
namespace {

constexpr const char* kCmdLine = "(command line)";

std::string file_sha(const fs::path& p) {
  if (p.empty()) return "";
  std::ifstream in(p, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return sha256_hex(bytes);
}

J read_json(const fs::path& p, const std::string& what) {
  std::ifstream in(p);
  if (!in) throw ConfigError(p.string(), "", what + " cannot be read", "pass an existing file");
  try {
    return J::parse(in);
  } catch (const std::exception& e) {
    throw ConfigError(p.string(), "", what + " does not parse: " + e.what(), "fix the JSON");
  }
}

// The store a resumed certification records in: the one it started in. Another --history is refused
// (the certification and its runs would be split over two stores); a recorded PostgreSQL store
// whose password was redacted takes it from --history or $CVS_HISTORY naming the same store.
std::string resumed_store(const std::string& given, const std::string& recorded, const fs::path& file) {
  const std::string now = history::resolve_store_spec(given);
  if (recorded.empty() || history::redacted_store_spec(now) == recorded) return now;
  if (!given.empty())
    throw ConfigError(file.string(), "/inputs/history",
                      "this certification records in " + recorded + "; --history names " +
                          history::redacted_store_spec(now) +
                          " (its runs and it would be split over two stores)",
                      "drop --history: a resumed certification keeps its store; or start a new certification "
                      "(--output) to record in another");
  if (recorded.find("***") != std::string::npos)
    throw ConfigError(file.string(), "/inputs/history",
                      "this certification records in " + recorded + ", whose password is not kept",
                      "pass --history with that store's full address, or set CVS_HISTORY to it");
  return recorded;
}

// --resume: the certificate in the folder, and the options it was started with.
Certificate read_prior(Options& o) {
  const fs::path file = o.resume / "certificate.json";
  if (!fs::exists(file))
    throw ConfigError(file.string(), "", "no certificate to resume in " + o.resume.string(),
                      "pass the folder an earlier cvs certify wrote (its --output)");
  // ConfigError (the file, the JSON pointer, the fix) from the reader: exit 2 at the edge.
  const Certificate c = read_certificate(file);
  auto keep = [](fs::path& opt, const std::string& was) {
    if (opt.empty() && !was.empty()) opt = was;
  };
  keep(o.cluster, c.inputs.cluster_file);
  keep(o.config, c.inputs.config_file);
  keep(o.distributed_config, c.inputs.distributed_config_file);
  keep(o.baseline, c.inputs.baseline_file);
  // The same node set and thresholds: the policy it was started with.
  o.min_nodes = c.inputs.min_nodes;
  o.drain = c.inputs.drain;
  o.fixed_steps = !c.inputs.early_stop;
  o.per_doubling_pct = c.inputs.scaling_per_doubling_pct;
  o.policy.max_z = c.inputs.max_z;
  o.policy.min_deviation = c.inputs.min_deviation;
  o.policy.min_fleet = c.inputs.min_fleet;
  o.detect_slowdown_pct = c.inputs.detect_slowdown_pct;
  o.suite_args = c.inputs.suite_args;
  o.history = resumed_store(o.history, c.inputs.history, file);
  return c;
}

void same_file(const Options& o, const char* key, const std::string& was_sha, const fs::path& now) {
  const auto sha = file_sha(now);
  if (sha == was_sha) return;
  throw ConfigError((o.resume / "certificate.json").string(), std::string("/inputs/") + key,
                    "this certification was started with another file (" + now.string() + " has sha256 " +
                        (sha.empty() ? "none" : sha.substr(0, 12)) + ", it had " +
                        (was_sha.empty() ? "none" : was_sha.substr(0, 12)) + ")",
                    "resume with the files it was started with, or start a new certification (--output)");
}

SuiteConfig load_mode(const fs::path& file, const Cluster& cluster, Mode want, const char* flag) {
  if (file.empty())
    throw ConfigError(kCmdLine, "", std::string(flag) + " is required",
                      std::string("pass ") + flag + " FILE");
  auto cfg = load_config_for_cluster(file, cluster);
  if (cfg.mode != want)
    throw ConfigError(
        file.string(), "/mode",
        std::string(flag) + " takes a " + (want == Mode::Single ? "single-node" : "distributed") + " config",
        want == Mode::Single ? "pass e.g. configs/cpu_jaxmaxtext_tiny_single.json"
                             : "pass e.g. configs/cpu_jaxmaxtext_tiny_distributed.json");
  if (want == Mode::Single) require_meshes_fit(cfg, 1);  // every node's run, before any starts
  return cfg;
}

// A calibration holds for the sweeps it measured: each must be one the single config runs.
void check_baseline(Options& o, const SuiteConfig& single) {
  if (o.baseline.empty()) return;
  o.policy.baseline = read_fleet_baseline(o.baseline);
  for (const auto& [figure, st] : o.policy.baseline) {
    const std::string& sweep = figure.sweep;
    if (std::find(single.runs.begin(), single.runs.end(), sweep) == single.runs.end())
      throw ConfigError(
          o.baseline.string(), "/_calibration/statistics/" + sweep,
          "calibrated for sweep '" + sweep + "', which " + o.config.string() + " does not run",
          "calibrate this config (cvs calibrate --config " + o.config.string() + "), or drop --baseline");
  }
}

// The config as every run of the certification reads it: its threshold file by absolute path and
// every speed gate with on_inconclusive "extend" (stop once decisive, extend when not), and the
// precision its runs step to (the nodes tier's, from --detect-slowdown-pct; 0: the config's own).
fs::path write_run_config(const fs::path& from, const SuiteConfig& loaded, const fs::path& to,
                          bool fixed_steps, double stop_half_width_pct = 0) {
  auto j = read_json(from, "the config");
  if (!loaded.threshold_path.empty()) j["threshold_json"] = loaded.threshold_path.string();
  j["statistics"]["on_inconclusive"] = fixed_steps ? "fail" : "extend";
  if (stop_half_width_pct > 0) j["statistics"]["stop_half_width_pct"] = stop_half_width_pct;
  if (fixed_steps) j["statistics"].erase("stop_half_width_pct");  // no looks: every run its steps
  if (!fs::exists(to)) certify::write_json(to, j);
  return to;
}

// --detect-slowdown-pct, checked (the rule never flags a node less than min_deviation slow, a
// cluster of fewer than min_fleet nodes is never scored, and a precision needs runs that may
// extend): the half-width the nodes tier's runs step to, in % (0: none).
double detection_half_width_pct(const Options& o, double confidence, std::size_t nodes) {
  const double floor_pct = 100 * o.policy.min_deviation;
  if (o.detect_slowdown_pct == 0) return 0;
  if (o.fixed_steps)
    throw ConfigError(kCmdLine, "",
                      "--detect-slowdown-pct steps each run until it is precise enough, and --fixed-steps "
                      "runs every run its configured steps",
                      "drop one of the two");
  if (o.detect_slowdown_pct <= floor_pct)
    throw ConfigError(kCmdLine, "",
                      fmt::format("--detect-slowdown-pct {:g} is not above --min-deviation-pct {:g}: fleet "
                                  "scoring never flags a node less than {:g} % slow",
                                  o.detect_slowdown_pct, floor_pct, floor_pct),
                      fmt::format("pass more than {:g} (or lower --min-deviation-pct), or 0 to stop each run "
                                  "once its speed gates are decisive",
                                  floor_pct));
  if (!o.policy.scores_figure(nodes))
    throw ConfigError(
        kCmdLine, "",
        fmt::format("--detect-slowdown-pct steps for fleet scoring, and {} has {} node(s), fewer "
                    "than --min-fleet {}: no node is ever compared with the others",
                    o.cluster.string(), nodes, o.policy.min_fleet),
        "drop --detect-slowdown-pct (each node's own gates still decide), or certify at least " +
            std::to_string(o.policy.min_fleet) + " nodes");
  return 100 * interval_half_width_for(o.detect_slowdown_pct / 100, o.policy, confidence);
}

void new_certificate(const Options& o, Inputs& in) {
  auto& c = in.certificate;
  c.tool_version = o.tool_version;
  c.git_commit = o.git_commit;
  c.started_at = utc_now("%Y-%m-%dT%H:%M:%SZ");
  auto& i = c.inputs;
  i.cluster_file = o.cluster.string();
  i.cluster_sha256 = file_sha(o.cluster);
  i.config_file = o.config.string();
  i.config_sha256 = file_sha(o.config);
  i.distributed_config_file = o.distributed_config.string();
  i.distributed_config_sha256 = file_sha(o.distributed_config);
  i.baseline_file = o.baseline.string();
  i.baseline_sha256 = file_sha(o.baseline);
  if (!o.baseline.empty())
    if (const auto cal = load_thresholds(o.baseline).calibration) {
      i.baseline_provenance = to_json(*cal);  // the calibration's, as it was, less its statistics
      i.baseline_provenance.erase("statistics");
    }
  i.min_nodes = o.min_nodes;
  i.budget_minutes = o.budget_minutes;
  i.scaling_per_doubling_pct = o.per_doubling_pct;
  i.max_z = o.policy.max_z;
  i.min_deviation = o.policy.min_deviation;
  i.min_fleet = o.policy.min_fleet;
  i.drain = o.drain;
  i.early_stop = !o.fixed_steps;
  i.detect_slowdown_pct = o.detect_slowdown_pct;
  i.suite_args = o.suite_args;
  i.history = history::redacted_store_spec(o.history);
  std::vector<TierKind> kinds = {TierKind::Preflight, TierKind::Nodes};
  if (!o.distributed_config.empty()) kinds.insert(kinds.end(), {TierKind::Links, TierKind::Scale});
  for (auto k : kinds) {
    TierRecord t;
    t.kind = k;
    c.tiers.push_back(t);
  }
}

}  // namespace

bool user_filter(const Options& o) {
  return std::any_of(o.suite_args.begin(), o.suite_args.end(),
                     [](const std::string& a) { return a.rfind("--gtest_filter", 0) == 0; });
}

Inputs load_inputs(Options& o) {
  Inputs in;
  std::optional<Certificate> prior;
  if (!o.resume.empty())
    prior = read_prior(o);
  else
    o.history = history::resolve_store_spec(o.history);
  if (o.cluster.empty()) throw ConfigError(kCmdLine, "", "--cluster is required", "pass --cluster FILE");
  in.cluster = load_cluster(o.cluster);
  if (in.cluster.slurm.existing_job)
    throw ConfigError(o.cluster.string(), "/slurm/job_id", "cvs certify allocates its nodes itself",
                      "remove job_id and nodelist; set slurm.nodes (and extra_args such as --nodelist)");
  if (o.drain && !in.cluster.is_slurm())
    throw ConfigError(o.cluster.string(), "/scheduler",
                      "--drain drains Slurm nodes, and this cluster has no Slurm",
                      "drop --drain, or use a cluster file with \"scheduler\": \"slurm\"");
  const auto single = load_mode(o.config, in.cluster, Mode::Single, "--config");
  in.confidence = single.statistics.confidence;
  in.checkpoint_resume = single.checkpoint_resume.enabled;
  for (const auto& run : single.runs) {
    const long long steps = single.steps_for(run);
    in.single_steps.push_back(steps);
    // The cap of an extended run (fixtures/session.cpp's early stopper).
    in.single_caps.push_back(single.statistics.extend_cap(steps));
  }
  in.checkpoint_steps =
      single.checkpoint_resume.steps_before_ckpt + single.checkpoint_resume.steps_after_resume;
  in.gpus_per_node = std::max(1, single.gpus_per_node);
  std::optional<SuiteConfig> dist;
  if (!o.distributed_config.empty()) {
    dist = load_mode(o.distributed_config, in.cluster, Mode::Distributed, "--distributed-config");
    in.first_sweep = dist->runs.empty() ? "" : dist->runs.front();
    in.distributed_steps = in.first_sweep.empty() ? 0 : dist->steps_for(in.first_sweep);
  }
  check_baseline(o, single);
  in.stop_half_width_pct = detection_half_width_pct(o, in.confidence, in.cluster.nodes.size());
  if (o.min_nodes > in.cluster.nodes.size())
    throw ConfigError(kCmdLine, "",
                      "--min-nodes " + std::to_string(o.min_nodes) + " is more than the cluster's " +
                          std::to_string(in.cluster.nodes.size()) + " node(s)",
                      "pass at most the number of nodes in " + o.cluster.string());
  if (prior) {
    same_file(o, "cluster_sha256", prior->inputs.cluster_sha256, o.cluster);
    same_file(o, "config_sha256", prior->inputs.config_sha256, o.config);
    same_file(o, "distributed_config_sha256", prior->inputs.distributed_config_sha256, o.distributed_config);
    same_file(o, "baseline_sha256", prior->inputs.baseline_sha256, o.baseline);
    in.certificate = std::move(*prior);
  } else if (o.plan) {
    new_certificate(o, in);
    in.single_config = o.config;
    in.distributed_config = o.distributed_config;
    return in;  // nothing written
  } else {
    if (fs::exists(o.output))
      throw ConfigError(kCmdLine, "", o.output.string() + " exists: a certification folder is never reused",
                        "pass a new --output folder, or --resume " + o.output.string() + " to continue it");
    new_certificate(o, in);
  }
  fs::create_directories(o.output / "inputs");
  in.single_config = write_run_config(o.config, single, o.output / "inputs" / "single_config.json",
                                      o.fixed_steps, in.stop_half_width_pct);
  if (dist) {
    in.distributed_config = write_run_config(o.distributed_config, *dist,
                                             o.output / "inputs" / "distributed_config.json", o.fixed_steps);
  }
  return in;
}

fs::path distributed_config_with_steps(const Options& o, const Inputs& in, long long steps) {
  const fs::path p = o.output / "inputs" / ("distributed_config_" + std::to_string(steps) + "_steps.json");
  // Every step count scaled alike (config.hpp), so the first sweep's (distributed_steps) becomes `steps`.
  if (!fs::exists(p) && in.distributed_steps > 0)
    write_config_with_steps(in.distributed_config, "", steps / in.distributed_steps, p);
  return p;
}

}  // namespace cvs::certify
