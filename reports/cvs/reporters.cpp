#include "cvs/reporters.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>

#include "cvs/base/text.hpp"
#include "cvs/certificate_report.hpp"
#include "cvs/fleet_report.hpp"
#include "cvs/history/openmetrics.hpp"
#include "cvs/html_report.hpp"
#include "cvs/junit_errors.hpp"

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
      c.built_entry = history::entry_of_certificate(c.certification->certificate, c.folder);
    else if (c.fleet)
      c.built_entry = history::entry_of_fleet(c.folder);
    else if (c.results)
      c.built_entry = history::entry_of_session(*c.results, c.folder.string());
    else
      throw std::runtime_error("nothing to report");
  }
  return *c.built_entry;
}

class JsonReporter : public Reporter {
 public:
  std::string name() const override { return "results"; }
  bool essential() const override { return true; }
  std::string write(const ReportContext& c) override {
    if (!c.results) return "";
    const auto p = c.folder / "results.json";
    write_file_whole(p, to_json(*c.results).dump(2) + "\n");
    return p.string();
  }
};

class HtmlReporter : public Reporter {
 public:
  explicit HtmlReporter(std::string out) : out_(std::move(out)) {}
  std::string name() const override { return "report"; }
  bool essential() const override { return true; }
  std::string write(const ReportContext& c) override {
    if (!c.results) return "";
    const std::filesystem::path p = out_.empty() ? c.folder / "report.html" : std::filesystem::path(out_);
    write_file_whole(p, render_html(*c.results));
    return p.string();
  }

 private:
  std::string out_;
};

// gtest writes only <failure>: the stages that ended ERROR get <error> in the JUnit file.
class JunitReporter : public Reporter {
 public:
  explicit JunitReporter(std::filesystem::path file) : file_(std::move(file)) {}
  std::string name() const override { return "junit"; }
  std::string write(const ReportContext& c) override {
    if (!c.results) return "";
    if (!rewrite_junit_errors(file_))
      throw std::runtime_error("could not mark the ERROR stages in " + file_.string());
    return file_.string();
  }

 private:
  std::filesystem::path file_;
};

// The fleet's files that act: what the next job reads (suspects, the healthy cluster file).
class FleetFilesReporter : public Reporter {
 public:
  std::string name() const override { return "fleet"; }
  bool essential() const override { return true; }
  std::string write(const ReportContext& c) override {
    if (!c.fleet) return "";
    const auto& f = *c.fleet;
    write_fleet_outputs(c.folder, f.score, hosts_by_name(f.cluster), f.policy);
    write_cluster_file_of(c.folder / "healthy_cluster.json", f.cluster, f.score.healthy());
    return (c.folder / "fleet.json").string();
  }
};

class FleetJunitReporter : public Reporter {
 public:
  std::string name() const override { return "junit"; }
  bool essential() const override { return true; }
  std::string write(const ReportContext& c) override {
    if (!c.fleet) return "";
    const auto p = c.folder / "junit.xml";
    write_file_whole(p, render_fleet_junit(c.fleet->score, "jaxmaxtext_fleet"));
    return p.string();
  }
};

class FleetHtmlReporter : public Reporter {
 public:
  std::string name() const override { return "report"; }
  bool essential() const override { return true; }
  std::string write(const ReportContext& c) override {
    if (!c.fleet) return "";
    const auto& f = *c.fleet;
    const auto p = c.folder / "fleet.html";
    write_file_whole(p, render_fleet_html(f.score, f.nodes, f.policy, "jaxmaxtext_fleet", f.pairs));
    return p.string();
  }
};

// A certification's files beside its certificate.json (certificate_report.hpp).
class CertificateFilesReporter : public Reporter {
 public:
  std::string name() const override { return "certificate"; }
  bool essential() const override { return true; }
  std::string write(const ReportContext& c) override {
    if (!c.certification) return "";
    write_certificate_files(c.folder, c.certification->certificate, c.certification->cluster);
    return (c.folder / "certificate.html").string() + " (and certificate.json, junit.xml, slurm_exclude.txt" +
           (c.certification->certificate.certified.empty() ? "" : ", healthy_cluster.json") + ")";
  }
};

class OpenMetricsReporter : public Reporter {
 public:
  explicit OpenMetricsReporter(std::string file) : file_(std::move(file)) {}
  std::string name() const override { return "metrics"; }
  std::string write(const ReportContext& c) override {
    // Written whole (aside, then renamed): node_exporter's textfile collector never reads half a file.
    write_file_whole(file_, history::openmetrics_text(entry_of(c)));
    return file_;
  }

 private:
  std::string file_;
};

class PushgatewayReporter : public Reporter {
 public:
  explicit PushgatewayReporter(std::string url) : url_(std::move(url)) {}
  std::string name() const override { return "pushed"; }
  std::string write(const ReportContext& c) override {
    const auto& e = entry_of(c);
    history::push_to_gateway(url_, e, history::openmetrics_text(e));
    return url_;
  }

 private:
  std::string url_;
};

class HistoryReporter : public Reporter {
 public:
  explicit HistoryReporter(std::string spec) : spec_(std::move(spec)) {}
  std::string name() const override { return "history"; }
  std::string write(const ReportContext& c) override {
    auto store = history::Store::open(spec_);
    if (!store) return "";  // --history none
    const bool fresh = store->record(entry_of(c));
    return store->where() + (fresh ? "" : " (already recorded)");
  }

 private:
  std::string spec_;
};

}  // namespace

std::vector<std::unique_ptr<Reporter>> reporters(const ReporterOptions& o) {
  std::vector<std::unique_ptr<Reporter>> v;
  if (o.session_files) v.push_back(std::make_unique<JsonReporter>());
  if (o.session_files || !o.html.empty()) v.push_back(std::make_unique<HtmlReporter>(o.html));
  if (!o.junit.empty()) v.push_back(std::make_unique<JunitReporter>(o.junit));
  if (o.fleet_files) {
    v.push_back(std::make_unique<FleetFilesReporter>());
    v.push_back(std::make_unique<FleetJunitReporter>());
    v.push_back(std::make_unique<FleetHtmlReporter>());
  }
  if (o.certify_files) v.push_back(std::make_unique<CertificateFilesReporter>());
  for (const auto& opt : output_options())
    if (const auto it = o.outputs.find(opt.flag); it != o.outputs.end() && !it->second.empty())
      v.push_back(opt.make(it->second));
  if (o.record_history) v.push_back(std::make_unique<HistoryReporter>(o.history));
  return v;
}

// The outputs asked for by an option; each factory is its reporter file's.
std::unique_ptr<Reporter> make_markdown_summary(const std::string& file);  // markdown_summary.cpp

const std::vector<OutputOption>& output_options() {
  static const std::vector<OutputOption> v = {
      {"--openmetrics",
       "write the figures in the OpenMetrics text format to FILE (node_exporter's textfile collector)",
       [](const std::string& f) -> std::unique_ptr<Reporter> {
         return std::make_unique<OpenMetricsReporter>(f);
       }},
      {"--pushgateway", "push the figures to a Prometheus Pushgateway (http://host:port)",
       [](const std::string& u) -> std::unique_ptr<Reporter> {
         return std::make_unique<PushgatewayReporter>(u);
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
