#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli_parse.hpp"
#include "commands.hpp"
#include "cvs/base/text.hpp"
#include "cvs/certificate_report.hpp"
#include "cvs/certify/certificate.hpp"
#include "cvs/html_report.hpp"
#include "cvs/reporters.hpp"
#include "cvs/results/results_file.hpp"

namespace cvs::cli {

namespace {

// A certification's page from its certificate.json (cvs certify), and the outputs asked for
// (--summary-md, --openmetrics, --pushgateway) through the reporters.
int render_certificate(const std::string& file, const std::string& out, const report::ReporterOptions& o) {
  const Certificate c = read_certificate(file);  // ConfigError: file, pointer, fix; exit 2
  const auto html = report::render_certificate_html(c);
  if (out.empty()) {
    std::cout << html;
  } else if (std::filesystem::exists(out)) {
    std::cerr << "error: " << out << " exists: a report is never overwritten (pass a new --out)\n";
    return kExitUsage;
  } else {
    write_file_whole(out, html);
  }
  const Cluster none;  // the certificate's own files are not re-written here
  const report::CertificationReport made{c, none};
  for (const auto& line :
       report::run_reporters(report::reporters(o),
                             {.folder = std::filesystem::path(file).parent_path(), .certification = &made}))
    std::cerr << "cvs report: " << line << "\n";
  return kExitOk;
}

}  // namespace

// `cvs report RESULTS.json [--out FILE] [--openmetrics FILE] [--pushgateway URL] [--summary-md FILE]`:
// re-renders the HTML report of a session (and its other outputs, through the session's reporters).
int cmd_report(const Args& args) {
  CLI::App app{"cvs report: render the HTML report of a session from its results.json", "cvs report"};
  std::string file, out;
  report::ReporterOptions o;
  o.session_files = false;
  o.record_history = false;
  app.add_option("results", file, "a session's results.json (or a certification's certificate.json)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--out", out, "the HTML file to write (default: standard output)");
  report::add_output_options(app, o);
  if (auto rc = parse_cli(app, args)) return *rc;
  if (std::filesystem::path(file).filename() == "certificate.json") return render_certificate(file, out, o);
  const auto results = read_results(file);
  if (out.empty()) {
    std::cout << report::render_html(results);
  } else {
    o.html = out;
  }
  for (const auto& line : report::run_reporters(
           report::reporters(o), {.folder = std::filesystem::path(file).parent_path(), .results = &results}))
    std::cerr << "cvs report: " << line << "\n";
  return kExitOk;
}

}  // namespace cvs::cli
