#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "cli_parse.hpp"
#include "commands.hpp"
#include "cvs/config/config.hpp"
#include "cvs/config/config_error.hpp"
#include "cvs/config/layout.hpp"
#include "cvs/config/mesh.hpp"
#include "cvs/config/thresholds.hpp"

namespace cvs::cli {
namespace {

int validate(const std::string& file) {
  std::vector<ConfigIssue> all;
  std::optional<SuiteConfig> cfg;
  try {
    cfg = load_config(file);
  } catch (const ConfigError& e) {
    all = e.issues();
  }
  if (cfg && !cfg->threshold_path.empty()) {
    try {
      auto tf = load_thresholds(cfg->threshold_path);
      for (std::size_t i = 0; i < cfg->runs.size(); ++i)
        if (!tf.cell(cfg->runs[i]))
          std::cout << "warning: " << cfg->threshold_path.string() << ": no cell for run '" << cfg->runs[i]
                    << "': its metrics will be RECORD only\n";
    } catch (const ConfigError& e) {
      all.insert(all.end(), e.issues().begin(), e.issues().end());
    }
  }
  // A single-node config's mesh must fit its gpus_per_node (a distributed one's needs the node
  // count: checked when a suite starts on its cluster).
  if (cfg && cfg->mode == Mode::Single) try {
      require_meshes_fit(*cfg, 1);
    } catch (const ConfigError& e) {
      all.insert(all.end(), e.issues().begin(), e.issues().end());
    }
  if (cfg)
    for (const auto& p : preflight(*cfg))
      std::cout << "preflight: " << p.to_string()
                << " (not a load error; the container launch fails until fixed)\n";
  for (const auto& i : all) std::cout << "error: " << i.to_string() << "\n";
  if (!all.empty()) {
    std::cout << file << ": " << all.size() << " error(s)\n";
    return kExitUsage;
  }
  std::cout << file << ": OK (" << to_string(cfg->mode) << ", " << cfg->runs.size() << " run(s), thresholds "
            << cfg->threshold_path.string() << ")\n";
  return kExitOk;
}

namespace fs = std::filesystem;

fs::path configs_dir() {
  return cvs_root() / "configs";
}

OrderedJson read_json(const fs::path& p) {
  std::ifstream in(p);
  return OrderedJson::parse(in, nullptr, true, true);
}

// GPU, mode and precisions straight from the file (tagged configs do not load yet).
int list() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(configs_dir()))
    if (e.path().extension() == ".json" && e.path().stem().string().find("_threshold") == std::string::npos)
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::printf("%-52s %-8s %-12s %-10s %s\n", "CONFIG", "GPU", "MODE", "PRECISION", "THRESHOLDS");
  for (const auto& f : files) {
    OrderedJson j;
    try {
      j = read_json(f);
    } catch (const std::exception&) {
      std::printf("%-52s (invalid JSON)\n", f.filename().c_str());
      continue;
    }
    std::string mode = "single";
    if (j.contains("container") && j["container"].contains("env"))
      for (const auto& m : distributed_marker_env())
        if (j["container"]["env"].contains(m)) mode = "distributed";
    std::set<std::string> prec;
    if (j.contains("sweeps"))
      for (auto it = j["sweeps"].begin(); it != j["sweeps"].end(); ++it) {
        if (it.key().find("PRECISION=FP8") != std::string::npos) prec.insert("FP8");
        if (it.key().find("PRECISION=BF16") != std::string::npos) prec.insert("BF16");
      }
    std::string p;
    for (const char* k : {"BF16", "FP8"})
      if (prec.count(k)) p += (p.empty() ? "" : ",") + std::string(k);
    std::printf("%-52s %-8s %-12s %-10s %s\n", f.filename().c_str(),
                j.value("gpu_name", std::string("?")).c_str(), mode.c_str(), p.c_str(),
                j.value("threshold_json", std::string()).c_str());
  }
  return kExitOk;
}

// Writes the config and its threshold file(s) side by side in dir; never overwrites.
int copy(const std::string& name, const fs::path& dir) {
  fs::path src = configs_dir() / name;
  if (src.extension() != ".json") src += ".json";
  if (!fs::exists(src)) {
    std::cerr << "cvs config copy: no config " << src << " (see `cvs config list`)\n";
    return kExitUsage;
  }
  std::vector<fs::path> files = {src};
  const auto j = read_json(src);
  std::string thr = j.value("threshold_json", std::string());
  const auto stem = src.stem().string();
  const auto thresholds_dir = configs_dir().parent_path() / "thresholds";
  // Only the threshold files this config can use: its own, the one threshold_json names, and for
  // an mi3xx_* config its platforms' (mi300x_*, mi325x_*) - never another GPU's file of the model.
  std::vector<std::string> usable = {stem + "_threshold.json", thr.substr(0, thr.find(' '))};
  if (stem.rfind("mi3xx_", 0) == 0)
    for (const char* platform : {"mi300x_", "mi325x_"})
      usable.push_back(platform + stem.substr(6) + "_threshold.json");
  for (const auto& fn : usable)
    if (!fn.empty() && fs::exists(thresholds_dir / fn) &&
        std::find(files.begin(), files.end(), thresholds_dir / fn) == files.end())
      files.push_back(thresholds_dir / fn);
  fs::create_directories(dir);
  for (const auto& f : files)
    if (fs::exists(dir / f.filename())) {
      std::cerr << "cvs config copy: " << (dir / f.filename()) << " exists; not overwriting anything\n";
      return kExitUsage;
    }
  for (const auto& f : files) {
    fs::copy_file(f, dir / f.filename());
    std::cout << "wrote " << (dir / f.filename()).string() << "\n";
  }
  if (thr.find("<changeme>") != std::string::npos)
    std::cout << "next: set threshold_json to the threshold file of your GPU (it still says <changeme>)\n";
  return kExitOk;
}

}  // namespace

// The spec's names: `training/jaxmaxtext` is the category, `training/jaxmaxtext/<name>` a config.
constexpr const char* kCategory = "training/jaxmaxtext";

int cmd_config(const Args& args) {
  CLI::App app{"cvs config: check, list and copy suite configs; print their error patterns", "cvs config"};
  app.require_subcommand(1);
  std::string file, category, name, dir;
  auto* v =
      app.add_subcommand("validate", "check a config and its threshold file; every error with its pointer");
  v->add_option("file", file, "the config: a file, or a shipped config's name (cvs config list)")->required();
  auto* l = app.add_subcommand("list", "the shipped configs with GPU, mode and precisions");
  l->add_option("category", category, std::string("only ") + kCategory + " (the spec's name) is shipped");
  auto* c = app.add_subcommand(
      "copy", "copy a shipped config and the threshold file(s) it can use (never overwrites)");
  c->add_option("name", name, std::string("a config name, also as ") + kCategory + "/<name>")->required();
  c->add_option("dir", dir, "where to (default: here)");
  auto* pt =
      app.add_subcommand("patterns", "the error patterns a config scans logs for: NAME<TAB>REGEX a line");
  pt->add_option("file", file, "the config (default: the built-in patterns)");
  if (auto rc = parse_cli(app, args)) return *rc;
  if (v->parsed()) return validate(config_argument(file));  // a path, or a name `cvs config list` prints
  if (pt->parsed()) {
    const auto patterns =
        file.empty() ? default_error_patterns()
                     : load_config(file, {.user = "", .require_threshold_file = false}).error_patterns;
    for (const auto& p : patterns) std::cout << p.name << '\t' << p.regex << '\n';
    return kExitOk;
  }
  if (l->parsed()) {
    while (!category.empty() && category.back() == '/') category.pop_back();
    if (!category.empty() && category != kCategory) {
      std::cerr << "cvs config list: no category '" << category << "'; the shipped configs are " << kCategory
                << "\n";
      return kExitUsage;
    }
    return list();
  }
  const std::string prefix = std::string(kCategory) + "/";
  if (name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
  return copy(name, dir.empty() ? fs::current_path() : fs::path(dir));
}

}  // namespace cvs::cli
