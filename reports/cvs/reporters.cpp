#include "cvs/reporters.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <functional>

#include "cvs/base/text.hpp"
#include "cvs/certificate_report.hpp"
#include "cvs/certify/certificate_entry.hpp"
#include "cvs/fleet_report.hpp"
#include "cvs/history/openmetrics.hpp"
#include "cvs/html_report.hpp"
#include "cvs/junit.hpp"

namespace cvs::report {
namespace {

// A message on one line (libpq's run over several): each run of whitespace one space.
std::string one_line(const std::string& s) {
  std::string o;
  for (const char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!o.empty() && o.back() != ' ') o += ' ';
    } else {
      o += c;
    }
  }
  while (!o.empty() && o.back() == ' ') o.pop_back();
  return o;
}

// The entry for the history and the metrics exports: given, read from a fleet run's files (the
// fleet reporters run first), or built from the session's results; built once per context.
const history::SessionEntry& entry_of(const ReportContext& c) {
  if (c.entry) return *c.entry;
  if (!c.built_entry) {
    if (c.certification)
      c.built_entry = certify::entry_of_certificate(c.certification->certificate, c.folder);
    else if (c.fleet)
      c.built_entry = history::entry_of_fleet(c.folder);
    else if (c.results)
      c.built_entry = history::entry_of_session(*c.results, c.folder.string());
    else
      throw std::runtime_error("nothing to report");
  }
  return *c.built_entry;
}

// A reporter that is its name, whether its failure is the run's, and what it writes.
class Output final : public Reporter {
 public:
  using Write = std::function<std::string(const ReportContext&)>;
  Output(std::string name, bool essential, Write write)
      : name_(std::move(name)), essential_(essential), write_(std::move(write)) {}
  std::string name() const override { return name_; }
  bool essential() const override { return essential_; }
  std::string write(const ReportContext& c) override { return write_(c); }

 private:
  std::string name_;
  bool essential_;
  Write write_;
};

std::unique_ptr<Reporter> output(std::string name, bool essential, Output::Write write) {
  return std::make_unique<Output>(std::move(name), essential, std::move(write));
}

// `text` written whole to `p`; where it went.
std::string written(const std::filesystem::path& p, const std::string& text) {
  write_file_whole(p, text);
  return p.string();
}

std::string results_json(const ReportContext& c) {
  return c.results ? written(c.folder / "results.json", to_json(*c.results).dump(2) + "\n") : "";
}

// The session's JUnit file, from its typed stages (junit.hpp).
std::string session_junit(const ReportContext& c, const std::filesystem::path& file) {
  return c.results ? written(file, render_session_junit(*c.results)) : "";
}

// The fleet's files that act: what the next job reads (suspects, the healthy cluster file).
std::string fleet_files(const ReportContext& c) {
  if (!c.fleet) return "";
  const auto& f = *c.fleet;
  write_fleet_outputs(c.folder, f.score, hosts_by_name(f.cluster), f.policy);
  write_cluster_file_of(c.folder / "healthy_cluster.json", f.cluster, f.score.healthy());
  return (c.folder / "fleet.json").string();
}

std::string fleet_page(const ReportContext& c) {
  if (!c.fleet) return "";
  const auto& f = *c.fleet;
  return written(c.folder / "fleet.html",
                 render_fleet_html(f.score, f.nodes, f.policy, "jaxmaxtext_fleet", f.pairs));
}

// A certification's files beside its certificate.json (certificate_report.hpp).
std::string certificate_files(const ReportContext& c) {
  if (!c.certification) return "";
  write_certificate_files(c.folder, c.certification->certificate, c.certification->cluster);
  return (c.folder / "certificate.html").string() + " (and certificate.json, junit.xml, slurm_exclude.txt" +
         (c.certification->certificate.certified.empty() ? "" : ", healthy_cluster.json") + ")";
}

std::string history_record(const ReportContext& c, const std::string& spec) {
  auto store = history::Store::open(spec);
  if (!store) return "";  // --history none
  const bool fresh = store->record(entry_of(c));
  return store->where() + (fresh ? "" : " (already recorded)");
}

}  // namespace

std::vector<std::unique_ptr<Reporter>> reporters(const ReporterOptions& o) {
  std::vector<std::unique_ptr<Reporter>> v;
  if (o.session_files) v.push_back(output("results", true, results_json));
  if (o.session_files || !o.html.empty())
    v.push_back(output("report", true, [html = o.html](const ReportContext& c) {
      return c.results ? written(html.empty() ? c.folder / "report.html" : std::filesystem::path(html),
                                 render_html(*c.results))
                       : "";
    }));
  if (!o.junit.empty())
    v.push_back(
        output("junit", false, [f = o.junit](const ReportContext& c) { return session_junit(c, f); }));
  if (o.fleet_files) {
    v.push_back(output("fleet", true, fleet_files));
    v.push_back(output("junit", true, [](const ReportContext& c) {
      return c.fleet ? written(c.folder / "junit.xml",
                               render_fleet_junit(c.fleet->score, c.fleet->nodes, "jaxmaxtext_fleet"))
                     : "";
    }));
    v.push_back(output("report", true, fleet_page));
  }
  if (o.certify_files) v.push_back(output("certificate", true, certificate_files));
  for (const auto& opt : output_options())
    if (const auto it = o.outputs.find(opt.flag); it != o.outputs.end() && !it->second.empty())
      v.push_back(opt.make(it->second));
  if (o.record_history)
    v.push_back(output("history", false,
                       [spec = o.history](const ReportContext& c) { return history_record(c, spec); }));
  return v;
}

// The outputs asked for by an option; each factory is its reporter file's.
std::unique_ptr<Reporter> make_markdown_summary(const std::string& file);  // markdown_summary.cpp

const std::vector<OutputOption>& output_options() {
  static const std::vector<OutputOption> v = {
      {"--openmetrics",
       "write the figures in the OpenMetrics text format to FILE (node_exporter's textfile collector)",
       [](const std::string& f) {
         // Written whole (aside, then renamed): node_exporter's textfile collector never reads half a file.
         return output("metrics", false, [f](const ReportContext& c) {
           return written(f, history::openmetrics_text(entry_of(c)));
         });
       }},
      {"--pushgateway", "push the figures to a Prometheus Pushgateway (http://host:port)",
       [](const std::string& url) {
         return output("pushed", false, [url](const ReportContext& c) {
           const auto& e = entry_of(c);
           history::push_to_gateway(url, e, history::openmetrics_text(e));
           return url;
         });
       }},
      {"--summary-md",
       "a Markdown summary to FILE (verdict, failing gates with their intervals and words, links): a CI job "
       "summary",
       make_markdown_summary},
  };
  return v;
}

void add_output_options(CLI::App& app, ReporterOptions& o) {
  for (const auto& opt : output_options()) app.add_option(opt.flag, o.outputs[opt.flag], opt.help);
}

std::vector<std::string> run_reporters(const std::vector<std::unique_ptr<Reporter>>& list,
                                       const ReportContext& ctx) {
  std::vector<std::string> lines;
  const auto line = [](const Reporter& r, const std::string& what) {
    std::string n = r.name();
    n.resize(std::max<std::size_t>(n.size(), 7), ' ');
    return n + " " + what;
  };
  for (const auto& r : list) {
    if (r->essential()) {
      if (auto where = r->write(ctx); !where.empty()) lines.push_back(line(*r, where));
      continue;
    }
    try {
      if (auto where = r->write(ctx); !where.empty()) lines.push_back(line(*r, where));
    } catch (const std::exception& e) {
      lines.push_back(line(*r, "not written: " + one_line(e.what()) +
                                   " (the verdict, the exit code and the results folder are as they were)"));
    }
  }
  return lines;
}

}  // namespace cvs::report
