#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "cvs/html_report.hpp"

namespace cvs::cli {

// `cvs report RESULTS.json [--out FILE]`: re-renders the HTML report of a session.
int cmd_report(const Args& args) {
  if (args.empty() || (args.size() != 1 && !(args.size() == 3 && args[1] == "--out"))) {
    std::cerr << "usage: cvs report RESULTS.json [--out report.html]\n";
    return kExitUsage;
  }
  std::ifstream in(args[0]);
  if (!in) {
    std::cerr << "cvs report: cannot read " << args[0] << "\n";
    return kExitUsage;
  }
  const auto results = nlohmann::ordered_json::parse(in);
  const std::string html = report::render_html(results);
  if (args.size() == 3) {
    std::ofstream(args[2]) << html;
    std::cout << "wrote " << args[2] << "\n";
  } else {
    std::cout << html;
  }
  return kExitOk;
}

}  // namespace cvs::cli
