#include <iostream>

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
      std::cout << "preflight: " << p.to_string() << " (not a load error; the container launch fails until fixed)\n";
  for (const auto& i : all) std::cout << "error: " << i.to_string() << "\n";
  if (!all.empty()) {
    std::cout << file << ": " << all.size() << " error(s)\n";
    return kExitUsage;
  }
  std::cout << file << ": OK (" << to_string(cfg->mode) << ", " << cfg->runs.size() << " run(s), thresholds "
            << cfg->threshold_path.string() << ")\n";
  return kExitOk;
}

}  // namespace

int cmd_config(const Args& args) {
  if (args.size() == 2 && args[0] == "validate") return validate(args[1]);
  std::cerr << "usage: cvs config validate FILE\n";
  return kExitUsage;
}

}  // namespace cvs::cli
