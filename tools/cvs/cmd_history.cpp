#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli_parse.hpp"
#include "commands.hpp"
#include "cvs/base/text.hpp"
#include "cvs/certify/certificate_entry.hpp"
#include "cvs/config/json_fields.hpp"
#include "cvs/history/openmetrics.hpp"
#include "cvs/history/store.hpp"
#include "cvs/history/trend.hpp"
#include "cvs/trend_page.hpp"

namespace cvs::cli {
namespace fs = std::filesystem;
namespace {

using J = nlohmann::ordered_json;

// The JSON rows of `sessions --json` and `node --json`: one field list each (the outcome beside it).
constexpr auto kSessionRowFields = std::make_tuple(
    field("id", &history::SessionRow::id), field("kind", &history::SessionRow::kind),
    field("suite", &history::SessionRow::suite), field("started_at", &history::SessionRow::started_at),
    field("config", &history::SessionRow::config_file),
    field("config_sha256", &history::SessionRow::config_sha256),
    field("cluster", &history::SessionRow::cluster), field("nodes", &history::SessionRow::nodes));
constexpr auto kLedgerRowFields = std::make_tuple(
    field("session", &history::LedgerRow::session_id), field("started_at", &history::LedgerRow::started_at),
    field("kind", &history::LedgerRow::kind), field("config", &history::LedgerRow::config_file),
    field("suspect", &history::LedgerRow::suspect), field("evidence", &history::LedgerRow::evidence),
    field("figure", &history::LedgerRow::figure));
constexpr auto kLemonFields =
    std::make_tuple(field("node", &history::Lemon::node), field("suspect_in", &history::Lemon::suspect_in),
                    field("of_last", &history::Lemon::of_last), field("evidence", &history::Lemon::evidence),
                    field("trend_pct", &history::Lemon::trend_pct));

// `--json` rows: each row's fields, and its outcome's words under `key`.
template <class Row, class Fields>
int print_json_rows(const std::vector<Row>& rows, const Fields& fields, const char* key,
                    history::RunOutcome Row::*outcome) {
  J a = J::array();
  for (const auto& r : rows) {
    J& j = a.emplace_back(J::object());
    write_fields(j, r, fields);
    j[key] = history::outcome_text(r.*outcome);
  }
  std::cout << a.dump(2) << "\n";
  return kExitOk;
}

int print_sessions(history::Store& s, const std::string& config, const std::string& cluster,
                   const std::string& since, bool json) {
  const auto rows = s.sessions(config, cluster, since);
  if (json) return print_json_rows(rows, kSessionRowFields, "status", &history::SessionRow::status);
  std::cout << fmt::format("{:<21} {:<12} {:<24} {:<7} {:>5}  {}\n", "STARTED", "KIND", "SUITE", "STATUS",
                           "NODES", "CONFIG @ CLUSTER");
  for (const auto& r : rows)
    std::cout << fmt::format("{:<21} {:<12} {:<24} {:<7} {:>5}  {} @ {}\n", r.started_at, r.kind, r.suite,
                             history::outcome_text(r.status), r.nodes, r.config_file, r.cluster);
  std::cout << rows.size() << " session(s) in " << s.where() << "\n";
  return kExitOk;
}

int print_ledger(history::Store& s, const std::string& node, bool json) {
  const auto rows = s.ledger(node);
  if (rows.empty()) {
    std::cerr << "cvs history node: no session in " << s.where() << " names node '" << node << "'\n";
    return kExitUsage;
  }
  if (json) return print_json_rows(rows, kLedgerRowFields, "outcome", &history::LedgerRow::outcome);
  std::cout << fmt::format("{:<21} {:<12} {:<10} {:<8} {}\n", "STARTED", "KIND", "OUTCOME", "SUSPECT",
                           "EVIDENCE");
  for (const auto& r : rows)
    std::cout << fmt::format("{:<21} {:<12} {:<10} {:<8} {}\n", r.started_at, r.kind,
                             history::outcome_text(r.outcome), r.suspect ? "yes" : "",
                             r.evidence.substr(0, 160));
  return kExitOk;
}

int print_lemons(history::Store& s, int k, int n, double fall, bool json) {
  const auto rows = s.lemons(k, n, fall);
  if (json) {
    J a = J::array();
    for (const auto& l : rows) write_fields(a.emplace_back(J::object()), l, kLemonFields);
    std::cout << a.dump(2) << "\n";
    return kExitOk;
  }
  for (const auto& l : rows)
    std::cout << fmt::format(
        "{}\tsuspect or failed in {} of its last {} session(s){}; latest: {}\n", l.node, l.suspect_in,
        l.of_last, l.trend_pct ? fmt::format("; its tokens/s fell {:.0f} %", -*l.trend_pct) : "", l.evidence);
  std::cout << rows.size() << " lemon(s) (suspect in >= " << k << " of the last " << n << ", or falling > "
            << fall << " %)\n";
  return kExitOk;
}

int print_trend(history::Store& s, const std::string& config, const std::string& metric,
                const std::string& sweep, const std::string& out, bool json) {
  const auto pts = s.trend(config, metric, sweep);
  if (pts.empty()) {
    std::cerr << "cvs history trend: no session of config '" << config << "' with " << metric << " in "
              << s.where() << "\n";
    return kExitUsage;
  }
  const auto cps = history::change_points(pts, metric);
  if (!out.empty()) {  // a page already there is someone's: never overwritten
    if (fs::exists(out)) throw BadInput("cvs history trend: " + out + " exists: name a new file (--out)");
    write_file_whole(out, report::render_trend_html(config, metric, pts, cps));
    std::cerr << "cvs history trend: wrote " << out << "\n";
  }
  if (json) {
    J a = J::array();
    for (const auto& c : cps) {
      J changed = J::array();
      for (const auto& [f, before, after] : c.changed)
        changed.push_back({{"field", f}, {"from", before}, {"to", after}});
      a.push_back({{"session", pts[c.index].session_id},
                   {"started_at", pts[c.index].started_at},
                   {"before", c.before},
                   {"after", c.after},
                   {"change_pct", c.change_pct},
                   {"changed", changed},
                   {"words", c.words}});
    }
    std::cout << J{{"sessions", pts.size()}, {"change_points", a}}.dump(2) << "\n";
    return kExitOk;
  }
  for (const auto& p : pts)
    std::cout << fmt::format("{:<21} {:<28} {:.6g}{}\n", p.started_at, p.sweep, p.estimate,
                             p.lo && p.hi ? fmt::format(" [{:.6g}, {:.6g}]", *p.lo, *p.hi) : "");
  for (const auto& c : cps) std::cout << "change point: " << c.words << "\n";
  if (cps.empty()) std::cout << "no change point in " << pts.size() << " session(s)\n";
  return kExitOk;
}

int ingest(history::Store& s, const std::vector<std::string>& paths) {
  int fresh = 0, again = 0;
  for (const auto& p : paths) {
    const auto e = certify::entry_of_folder(p);
    const bool rec = s.record(e);
    (rec ? fresh : again)++;
    std::cout << (rec ? "recorded " : "already recorded ") << e.kind << " " << e.started_at << " " << p
              << "\n";
  }
  std::cout << fresh << " recorded, " << again << " already there, in " << s.where() << "\n";
  return kExitOk;
}

int export_store(history::Store& s, const std::string& file, const std::string& url) {
  std::string text;
  for (const auto& e : s.latest_sessions()) {
    auto t = history::openmetrics_text(e);
    if (!url.empty()) history::push_to_gateway(url, e, t);
    t.resize(t.size() - std::string("# EOF\n").size());
    text += t;
  }
  if (!file.empty()) {  // rewritten whole each time (a textfile collector reads it)
    write_file_whole(file, text + "# EOF\n");
    std::cout << "wrote " << file << "\n";
  }
  return kExitOk;
}

}  // namespace

// `cvs history [--history SPEC] sessions|node|lemons|trend|ingest|export ...`
int cmd_history(const Args& args) {
  CLI::App app{"cvs history: the results store (every session, fleet run and calibration)", "cvs history"};
  std::string spec, config, cluster, since, node, metric, sweep, out, openmetrics, push;
  bool json = false;
  int k = 2, n = 5;
  double fall = 10;
  std::vector<std::string> paths;
  app.add_option("--history", spec,
                 "the store: a SQLite file, postgresql://..., (default: $CVS_HISTORY, else "
                 "~/.local/state/cvs-maxtext/history.sqlite)");
  app.require_subcommand(1);
  auto* ss = app.add_subcommand("sessions", "the sessions recorded (filters: --config, --cluster, --since)");
  ss->add_option("--config", config, "a config file, its name or its stem");
  ss->add_option("--cluster", cluster, "a cluster file or its stem");
  ss->add_option("--since", since, "an ISO date (2026-11-02)");
  ss->add_flag("--json", json);
  auto* nd = app.add_subcommand(
      "node", "a node's ledger: every session it was in, its outcomes, why it was a suspect");
  nd->add_option("name", node)->required();
  nd->add_flag("--json", json);
  auto* lm = app.add_subcommand(
      "lemons", "nodes suspect (or failed) in >= k of their last n sessions, or whose tokens/s falls");
  lm->add_option("--k", k, "sessions (default 2)")->check(CLI::Range(1, 1000));
  lm->add_option("--n", n, "of the last n (default 5)")->check(CLI::Range(1, 1000));
  lm->add_option("--fall-pct", fall,
                 "a fall of the node's figure from its first to its last session (default 10)");
  lm->add_flag("--json", json);
  auto* tr = app.add_subcommand("trend",
                                "a metric per session of a config, its change points and what changed there");
  tr->add_option("--config", config, "a config file, its name or its stem")->required();
  tr->add_option("--metric", metric, "a metric (tokens_per_sec_per_gpu)")->required();
  tr->add_option("--sweep", sweep, "one sweep key (default: every sweep)");
  tr->add_option("--out", out, "an HTML page of the trend");
  tr->add_flag("--json", json);
  auto* in = app.add_subcommand(
      "ingest",
      "record existing result folders (a session, a fleet run, a certification, a calibration file)");
  in->add_option("paths", paths)->required()->check(CLI::ExistingPath);
  auto* ex = app.add_subcommand("export", "the newest session of each config and cluster as OpenMetrics");
  ex->add_option("--openmetrics", openmetrics, "write to FILE");
  ex->add_option("--pushgateway", push, "push to a Prometheus Pushgateway (http://host:port)");
  if (auto rc = parse_cli(app, args)) return *rc;
  auto store = history::Store::open(spec);
  if (!store) {
    std::cerr << "cvs history: the history is off (--history none / CVS_HISTORY=none)\n";
    return kExitUsage;
  }
  if (ss->parsed()) return print_sessions(*store, config, cluster, since, json);
  if (nd->parsed()) return print_ledger(*store, node, json);
  if (lm->parsed()) return print_lemons(*store, k, n, fall, json);
  if (tr->parsed()) return print_trend(*store, config, metric, sweep, out, json);
  if (in->parsed()) return ingest(*store, paths);
  return export_store(*store, openmetrics, push);
}

}  // namespace cvs::cli
