#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "commands.hpp"
#include "cvs/compare.hpp"

namespace cvs::cli {

// `cvs compare OLD/results.json NEW/results.json [--tolerance-pct P] [--json]`: exit 1 on a regression.
int cmd_compare(const Args& args) {
  std::vector<std::string> files;
  double tol = 5.0;
  bool json = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--tolerance-pct" && i + 1 < args.size())
      tol = std::stod(args[++i]);
    else if (args[i] == "--json")
      json = true;
    else
      files.push_back(args[i]);
  }
  if (files.size() != 2 || tol < 0) {
    std::cerr
        << "usage: cvs compare OLD/results.json NEW/results.json [--tolerance-pct P (default 5)] [--json]\n";
    return kExitUsage;
  }
  nlohmann::ordered_json docs[2];
  for (int i = 0; i < 2; ++i) {
    std::ifstream in(files[i]);
    if (!in) {
      std::cerr << "cvs compare: cannot read " << files[i] << "\n";
      return kExitUsage;
    }
    docs[i] = nlohmann::ordered_json::parse(in);
  }
  const auto c = compare_results(docs[0], docs[1], tol);
  if (json) {
    std::cout << to_json(c, tol).dump(2) << "\n";
  } else {
    std::printf("%-34s %-44s %14s %14s %9s  %s\n", "SWEEP", "METRIC", "OLD", "NEW", "DELTA%", "");
    for (const auto& d : c.deltas)
      std::printf("%-34s %-44s %14.6g %14.6g %+9.2f  %s\n", d.sweep.c_str(), ("training." + d.metric).c_str(),
                  d.old_value, d.new_value, std::isfinite(d.delta_pct) ? d.delta_pct : 0.0,
                  d.regression ? "REGRESSION" : "");
    for (const auto& n : c.notes) std::printf("note: %s\n", n.c_str());
    std::printf("%s (tolerance %.3g%%)\n", c.any_regression() ? "REGRESSION" : "no regression", tol);
  }
  return c.any_regression() ? kExitFail : kExitOk;
}

}  // namespace cvs::cli
