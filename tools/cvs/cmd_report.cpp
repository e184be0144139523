#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli_parse.hpp"
#include "commands.hpp"
#include "cvs/html_report.hpp"
#include "cvs/results/results_file.hpp"

namespace cvs::cli {

// `cvs report RESULTS.json [--out FILE]`: re-renders the HTML report of a session.
int cmd_report(const Args& args) {
  CLI::App app{"cvs report: render the HTML report of a session from its results.json", "cvs report"};
  std::string file, out;
  app.add_option("results", file, "a session's results.json")->required()->check(CLI::ExistingFile);
  app.add_option("--out", out, "the HTML file to write (default: standard output)");
  if (auto rc = parse_cli(app, args)) return *rc;
  const auto results = read_results(file);
  const std::string html = report::render_html(results);
  if (!out.empty()) {
    std::ofstream(out) << html;
    std::cout << "wrote " << out << "\n";
  } else {
    std::cout << html;
  }
  return kExitOk;
}

}  // namespace cvs::cli
