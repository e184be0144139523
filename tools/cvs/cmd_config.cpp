#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "commands.hpp"
#include "cvs/config.hpp"
#include "cvs/config_error.hpp"
#include "cvs/thresholds.hpp"

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
  const char* root = std::getenv("CVS_ROOT");
  return fs::path(root ? root : CVS_SOURCE_DIR) / "configs";
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
  // mi3xx configs ship thresholds per platform: copy every candidate for this config.
  const std::string suffix = stem.substr(stem.find('_'));
  for (const auto& e : fs::directory_iterator(thresholds_dir)) {
    const auto fn = e.path().filename().string();
    if (fn == thr.substr(0, thr.find(' ')) || fn == stem + "_threshold.json" ||
        (fn.size() > suffix.size() && fn.find(suffix + "_threshold.json") != std::string::npos))
      files.push_back(e.path());
  }
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

int cmd_config(const Args& args) {
  if (args.size() == 2 && args[0] == "validate") return validate(args[1]);
  if (!args.empty() && args[0] == "list") return list();
  if ((args.size() == 2 || args.size() == 3) && args[0] == "copy")
    return copy(args[1], args.size() == 3 ? fs::path(args[2]) : fs::current_path());
  std::cerr << "usage: cvs config validate FILE | cvs config list | cvs config copy NAME [DIR]\n";
  return kExitUsage;
}

}  // namespace cvs::cli
