#include "cvs/history/store.hpp"
#include "cvs/catalog/metric_catalog.hpp"

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "cvs/base/sha256.hpp"
#include "cvs/config/config_error.hpp"
#include "cvs/config/thresholds.hpp"
#include "cvs/fleet/fleet.hpp"
#include "cvs/results/results_file.hpp"

namespace fs = std::filesystem;
using J = nlohmann::ordered_json;

namespace cvs::history {
namespace {

// The speed figure a fleet node and a rung are remembered by.
const std::string kTokS(to_string(Metric::TokensPerSecPerGpu));

const char* const kSchema[] = {
    "CREATE TABLE IF NOT EXISTS cvs_schema (version INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, kind TEXT NOT NULL, suite TEXT NOT NULL, "
    "started_at TEXT NOT NULL, finished_at TEXT, status TEXT NOT NULL, config_file TEXT, config_sha256 TEXT, "
    "cluster TEXT, nodes INTEGER, source TEXT)",
    "CREATE TABLE IF NOT EXISTS provenance (session_id TEXT NOT NULL REFERENCES sessions(id), field TEXT NOT "
    "NULL, value TEXT, PRIMARY KEY (session_id, field))",
    "CREATE TABLE IF NOT EXISTS metrics (session_id TEXT NOT NULL REFERENCES sessions(id), sweep TEXT NOT "
    "NULL, "
    "metric TEXT NOT NULL, value DOUBLE PRECISION, estimate DOUBLE PRECISION, lo DOUBLE PRECISION, hi DOUBLE "
    "PRECISION, outcome TEXT, PRIMARY KEY (session_id, sweep, metric))",
    "CREATE TABLE IF NOT EXISTS nodes (session_id TEXT NOT NULL REFERENCES sessions(id), node TEXT NOT NULL, "
    "outcome TEXT, suspect INTEGER NOT NULL, evidence TEXT, figure DOUBLE PRECISION, PRIMARY KEY "
    "(session_id, "
    "node))",
    "CREATE INDEX IF NOT EXISTS nodes_by_node ON nodes (node)",
    "CREATE INDEX IF NOT EXISTS sessions_by_config ON sessions (config_file, started_at)",
};

std::string text_of(const nlohmann::ordered_json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string stem_of(const std::string& path) {
  return fs::path(path).stem().string();
}

// A config filter matches the file, its name or its stem.
bool config_matches(const std::string& file, const std::string& filter) {
  return filter.empty() || file == filter || fs::path(file).filename() == filter || stem_of(file) == filter;
}

}  // namespace

std::string outcome_text(const RunOutcome& o) {
  return o ? to_string(*o) : "NO RESULTS";
}

RunOutcome outcome_of_text(const std::string& s) {
  return outcome_from_string(s);  // "NO RESULTS", "" (older stores' ungated metrics): none
}

std::optional<double> stored_figure(double v) {
  return std::isfinite(v) ? std::optional(v) : std::nullopt;
}

std::string session_id(const SessionEntry& e) {
  std::vector<std::string> nodes;
  for (const auto& n : e.node_entries) nodes.push_back(n.node);
  std::sort(nodes.begin(), nodes.end());
  std::string key = e.kind + "|" + e.suite + "|" + e.started_at + "|" + e.config_sha256 + "|" + e.cluster;
  for (const auto& n : nodes) key += "|" + n;
  if (!e.revision.empty()) key += "|" + e.revision;
  return sha256_hex(key).substr(0, 32);
}

SessionEntry entry_of_session(const Results& r, const std::string& source) {
  SessionEntry e;
  e.kind = "suite";
  e.suite = r.suite;
  e.started_at = r.started_at;
  e.finished_at = r.finished_at;
  e.status = r.status();
  e.config_file = r.config.file;
  e.config_sha256 = r.config.sha256;
  e.cluster = r.cluster.file.empty() ? "localhost" : r.cluster.file;
  e.nodes = static_cast<int>(r.cluster.nodes.size());
  e.source = source;
  if (r.provenance_fields)
    for (auto it = r.provenance_fields->begin(); it != r.provenance_fields->end(); ++it)
      e.provenance.emplace_back(it.key(), text_of(it.value()));
  for (const auto& [key, sw] : r.sweeps) {
    std::map<std::string, const EvaluationRecord*> ev;
    for (const auto& x : sw.evaluations) ev[x.metric.substr(x.metric.rfind('.') + 1)] = &x;
    for (const auto& [name, v] : sw.metrics) {
      MetricEntry m{key, name, stored_figure(v), {}, {}, {}, std::nullopt};
      if (const auto* iv = sw.steady_state ? sw.steady_state->interval(name) : nullptr) {
        m.estimate = stored_figure(iv->estimate);
        m.lo = stored_figure(iv->lo);
        m.hi = stored_figure(iv->hi);
      }
      if (auto it = ev.find(name); it != ev.end()) m.outcome = it->second->outcome;
      e.metrics.push_back(std::move(m));
    }
  }
  for (const auto& n : r.cluster.nodes) e.node_entries.push_back({n.name, e.status, false, "", std::nullopt});
  e.id = session_id(e);
  return e;
}

SessionEntry entry_of_fleet(const fs::path& folder) {
  if (!fs::exists(folder / "fleet.json")) throw StoreError(folder.string() + ": no fleet.json");
  const FleetFile f = read_fleet_file(folder / "fleet.json");  // its one reader (fleet/fleet.hpp)
  SessionEntry e;
  e.kind = "fleet";
  e.suite = "jaxmaxtext_fleet";
  e.source = folder.string();
  std::set<std::string> names;
  for (const auto& n : f.score.nodes) {
    NodeEntry ne;
    ne.node = n.name;
    ne.suspect = n.suspect;
    ne.evidence = fleet_reasons(n);
    names.insert(ne.node);
    const auto res = folder / "nodes" / ne.node / "report" / "results.json";
    if (fs::exists(res)) {
      try {
        const auto r = read_results(res);
        ne.outcome = r.status();
        if (e.started_at.empty() || r.started_at < e.started_at) e.started_at = r.started_at;
        if (r.finished_at > e.finished_at) e.finished_at = r.finished_at;
        if (e.config_file.empty()) {
          e.config_file = r.config.file;
          e.config_sha256 = r.config.sha256;
        }
        for (const auto& [key, sw] : r.sweeps)
          if (const auto* iv = sw.steady_state ? sw.steady_state->interval(kTokS) : nullptr)
            ne.figure = stored_figure(iv->estimate);
      } catch (const std::exception&) {
        ne.outcome = std::nullopt;  // no results to read
      }
    }
    e.node_entries.push_back(std::move(ne));
  }
  if (e.started_at.empty()) e.started_at = fs::path(folder).filename().string();
  for (const auto& n : names) e.cluster += (e.cluster.empty() ? "" : ",") + n;
  e.nodes = static_cast<int>(names.size());
  e.status = f.score.suspects().empty() ? Outcome::Pass : Outcome::Fail;
  e.id = session_id(e);
  return e;
}

SessionEntry entry_of_calibration(const fs::path& file, const std::vector<Results>& repeats) {
  ThresholdFile tf;
  try {
    tf = load_thresholds(file);  // the one reader of a calibration (config/calibration_file.hpp)
  } catch (const ConfigError& e) {
    throw StoreError(file.string() + ": not a calibration file: " + e.what());
  }
  if (!tf.calibration) throw StoreError(file.string() + ": not a calibration file (no _calibration)");
  const auto& cal = *tf.calibration;
  SessionEntry e;
  e.kind = "calibration";
  e.suite = "cvs calibrate";
  e.source = file.string();
  e.status = Outcome::Pass;
  e.started_at = repeats.empty() ? cal.date : repeats.front().started_at;
  e.finished_at = repeats.empty() ? e.started_at : repeats.back().finished_at;
  if (!repeats.empty()) {
    e.config_file = repeats.front().config.file;
    e.config_sha256 = repeats.front().config.sha256;
    e.cluster = repeats.front().cluster.file.empty() ? "localhost" : repeats.front().cluster.file;
    e.nodes = static_cast<int>(repeats.front().cluster.nodes.size());
  }
  for (auto it = cal.provenance.begin(); it != cal.provenance.end(); ++it)
    e.provenance.emplace_back(it.key(), text_of(it.value()));
  for (const auto& [sweep, metrics] : cal.statistics)
    for (const auto& [metric, st] : metrics) {
      MetricEntry me{sweep, metric, {}, {}, {}, {}, std::nullopt};  // a calibration decides no gate
      me.estimate = me.value = st.median;
      if (const auto* cell = tf.cell(sweep))
        for (const auto& spec : *cell)
          if (spec.metric == metric) me.lo = me.hi = spec.value;  // the gate
      e.metrics.push_back(std::move(me));
    }
  e.id = session_id(e);
  return e;
}

SessionEntry entry_of_folder(const fs::path& path) {
  if (fs::is_regular_file(path)) {
    // By what the file holds, not its name: a calibration has "_calibration"; anything else is
    // read as a session's results.json, whose reader names the JSON pointer of what is wrong.
    std::ifstream in(path);
    const auto j = nlohmann::ordered_json::parse(in, nullptr, false);
    if (j.is_object() && j.contains("_calibration")) return entry_of_calibration(path, {});
    return entry_of_session(read_results(path), path.parent_path().string());
  }
  if (fs::exists(path / "fleet.json")) return entry_of_fleet(path);
  if (fs::exists(path / "results.json"))
    return entry_of_session(read_results(path / "results.json"), path.string());
  throw StoreError(
      path.string() +
      ": neither a session (results.json), a fleet run (fleet.json), a certification (certificate.json) "
      "nor a calibration file");
}

fs::path default_store_path() {
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x)
    return fs::path(x) / "cvs-maxtext" / "history.sqlite";
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : "/tmp") / ".local" / "state" / "cvs-maxtext" / "history.sqlite";
}

namespace {
bool is_postgresql(const std::string& spec) {
  return spec.rfind("postgresql://", 0) == 0 || spec.rfind("postgres://", 0) == 0 ||
         spec.rfind("host=", 0) == 0 || spec.rfind("dbname=", 0) == 0;
}
}  // namespace

std::string resolve_store_spec(const std::string& given) {
  std::string spec = given;
  if (spec.empty())
    if (const char* env = std::getenv("CVS_HISTORY"); env && *env) spec = env;
  if (spec == "none" || is_postgresql(spec)) return spec;
  if (spec.empty()) return default_store_path().string();
  if (spec.rfind("sqlite:", 0) == 0) spec = spec.substr(7);
  return fs::absolute(spec).lexically_normal().string();
}

std::string redacted_store_spec(const std::string& spec) {
  if (!is_postgresql(spec)) return spec;
  static const std::regex url_password(R"(^(postgres(?:ql)?://[^:/@]*:)[^@]*@)");
  static const std::regex key_password(R"((^|\s)password\s*=\s*('[^']*'|\S+))");
  std::string out = std::regex_replace(spec, url_password, "$1***@");
  return std::regex_replace(out, key_password, "$1password=***");
}

std::unique_ptr<Store> Store::open(const std::string& given) {
  const std::string spec = resolve_store_spec(given);
  if (spec == "none") return nullptr;
  if (is_postgresql(spec)) return std::make_unique<Store>(open_postgresql(spec));
  return std::make_unique<Store>(open_sqlite(spec));
}

Store::Store(std::unique_ptr<Db> db) : db_(std::move(db)) {
  migrate();
}

void Store::migrate() {
  db_->begin();
  try {
    db_->lock_schema();
    // A store at this version takes no DDL: CREATE ... IF NOT EXISTS still locks the tables in
    // PostgreSQL, and would deadlock against another connection recording a session.
    int have = 0;
    if (db_->has_table("cvs_schema")) {
      const auto v = db_->query("SELECT MAX(version) FROM cvs_schema");
      have = v.empty() || v[0][0].is_null() ? 0 : static_cast<int>(v[0][0].num());
    }
    if (have == kSchemaVersion) {
      db_->commit();
      return;
    }
    if (have > kSchemaVersion)
      throw StoreError(where() + " has schema version " + std::to_string(have) + ", newer than this cvs's " +
                       std::to_string(kSchemaVersion) +
                       ": use a newer cvs-maxtext, or another store (--history)");
    // Migrations from older versions go here, one step per version; 0 is a new store.
    for (const char* sql : kSchema) db_->exec(sql);
    if (have < kSchemaVersion) {
      db_->exec("DELETE FROM cvs_schema");
      db_->exec("INSERT INTO cvs_schema (version) VALUES (?)",
                {Value::of(static_cast<double>(kSchemaVersion))});
    }
    db_->commit();
  } catch (...) {
    try {
      db_->rollback();
    } catch (...) {
    }
    throw;
  }
}

bool Store::record(const SessionEntry& e) {
  db_->begin();
  try {
    if (!db_->query("SELECT 1 FROM sessions WHERE id = ?", {Value::of(e.id)}).empty()) {
      db_->rollback();
      return false;
    }
    db_->exec(
        "INSERT INTO sessions (id, kind, suite, started_at, finished_at, status, config_file, config_sha256, "
        "cluster, nodes, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
        {Value::of(e.id), Value::of(e.kind), Value::of(e.suite), Value::of(e.started_at),
         Value::of(e.finished_at), Value::of(std::string(to_string(e.status))), Value::of(e.config_file),
         Value::of(e.config_sha256), Value::of(e.cluster), Value::of(static_cast<double>(e.nodes)),
         Value::of(e.source)});
    for (const auto& [k, v] : e.provenance)
      db_->exec("INSERT INTO provenance (session_id, field, value) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                {Value::of(e.id), Value::of(k), Value::of(v)});
    for (const auto& m : e.metrics)
      db_->exec(
          "INSERT INTO metrics (session_id, sweep, metric, value, estimate, lo, hi, outcome) VALUES (?, ?, "
          "?, ?, ?, "
          "?, ?, ?) ON CONFLICT DO NOTHING",
          {Value::of(e.id), Value::of(m.sweep), Value::of(m.metric), Value::of(m.value),
           Value::of(m.estimate), Value::of(m.lo), Value::of(m.hi),
           m.outcome ? Value::of(std::string(to_string(*m.outcome))) : Value()});
    for (const auto& n : e.node_entries)
      db_->exec(
          "INSERT INTO nodes (session_id, node, outcome, suspect, evidence, figure) VALUES (?, ?, ?, ?, ?, "
          "?) ON "
          "CONFLICT DO NOTHING",
          {Value::of(e.id), Value::of(n.node), Value::of(outcome_text(n.outcome)),
           Value::of(n.suspect ? 1.0 : 0.0), Value::of(n.evidence), Value::of(n.figure)});
    // For the crash test (HistoryStore.AWriterKilledInsideItsTransactionLeavesTheStoreAsItWas):
    // with CVS_HISTORY_TEST_HOLD=FILE the writer says it is inside its transaction (FILE) and
    // waits there to be killed.
    if (const char* hold = std::getenv("CVS_HISTORY_TEST_HOLD"); hold && *hold) {
      std::ofstream(hold) << "inside\n";
      ::sleep(60);
    }
    db_->commit();
    return true;
  } catch (...) {
    try {
      db_->rollback();
    } catch (...) {
    }
    throw;
  }
}

std::vector<SessionRow> Store::sessions(const std::string& config, const std::string& cluster,
                                        const std::string& since) const {
  std::vector<SessionRow> out;
  for (const auto& r : db_->query("SELECT id, kind, suite, started_at, status, config_file, config_sha256, "
                                  "cluster, nodes FROM sessions "
                                  "WHERE started_at >= ? ORDER BY started_at, id",
                                  {Value::of(since)})) {
    SessionRow s{r[0].str(),
                 r[1].str(),
                 r[2].str(),
                 r[3].str(),
                 outcome_of_text(r[4].str()),
                 r[5].str(),
                 r[6].str(),
                 r[7].str(),
                 static_cast<int>(r[8].num())};
    if (!config_matches(s.config_file, config)) continue;
    if (!cluster.empty() && s.cluster != cluster && stem_of(s.cluster) != cluster) continue;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<LedgerRow> Store::ledger(const std::string& node) const {
  std::vector<LedgerRow> out;
  for (const auto& r :
       db_->query("SELECT s.id, s.started_at, s.kind, s.config_file, n.outcome, n.suspect, n.evidence, "
                  "n.figure FROM nodes n "
                  "JOIN sessions s ON s.id = n.session_id WHERE n.node = ? ORDER BY s.started_at, s.id",
                  {Value::of(node)}))
    out.push_back({r[0].str(), r[1].str(), r[2].str(), r[3].str(), outcome_of_text(r[4].str()),
                   r[5].num() != 0, r[6].str(), r[7].is_null() ? std::nullopt : std::optional(r[7].num())});
  return out;
}

std::vector<Lemon> Store::lemons(int k, int n, double fall_pct) const {
  std::map<std::string, std::vector<LedgerRow>> by_node;
  for (const auto& r : db_->query("SELECT DISTINCT node FROM nodes ORDER BY node"))
    by_node[r[0].str()] = ledger(r[0].str());
  std::vector<Lemon> out;
  for (const auto& [node, rows] : by_node) {
    Lemon l;
    l.node = node;
    const std::size_t from =
        rows.size() > static_cast<std::size_t>(n) ? rows.size() - static_cast<std::size_t>(n) : 0;
    for (std::size_t i = from; i < rows.size(); ++i) {
      ++l.of_last;
      if (rows[i].suspect || rows[i].outcome == Outcome::Fail || rows[i].outcome == Outcome::Error) {
        ++l.suspect_in;
        l.evidence = rows[i].started_at + ": " +
                     (rows[i].evidence.empty() ? outcome_text(rows[i].outcome) : rows[i].evidence);
      }
    }
    std::vector<double> fig;
    for (const auto& r : rows)
      if (r.figure) fig.push_back(*r.figure);
    if (fig.size() >= 3 && fig.front() > 0) {
      const double change = 100 * (fig.back() - fig.front()) / fig.front();
      if (change < -fall_pct) l.trend_pct = change;
    }
    if (l.suspect_in >= k || l.trend_pct) out.push_back(std::move(l));
  }
  return out;
}

std::vector<TrendPoint> Store::trend(const std::string& config, const std::string& metric,
                                     const std::string& sweep) const {
  std::vector<TrendPoint> out;
  for (const auto& r : db_->query("SELECT s.id, s.started_at, m.sweep, m.value, m.estimate, m.lo, m.hi, "
                                  "s.config_file FROM metrics m JOIN "
                                  "sessions s ON s.id = m.session_id WHERE m.metric = ? AND s.kind = 'suite' "
                                  "ORDER BY s.started_at, s.id",
                                  {Value::of(metric)})) {
    if (!config_matches(r[7].str(), config) || (!sweep.empty() && r[2].str() != sweep)) continue;
    TrendPoint p;
    p.session_id = r[0].str();
    p.started_at = r[1].str();
    p.sweep = r[2].str();
    p.estimate = !r[4].is_null() ? r[4].num() : r[3].num();
    if (!r[5].is_null()) p.lo = r[5].num();
    if (!r[6].is_null()) p.hi = r[6].num();
    if (!std::isfinite(p.estimate)) continue;
    for (const auto& pr :
         db_->query("SELECT field, value FROM provenance WHERE session_id = ? ORDER BY field",
                    {Value::of(p.session_id)}))
      p.provenance.emplace_back(pr[0].str(), pr[1].str());
    out.push_back(std::move(p));
  }
  return out;
}

std::optional<Store::CertificationTimes> Store::certification_times(const std::string& config_sha256,
                                                                    int hosts) const {
  std::optional<CertificationTimes> best;
  bool best_clean = false;
  for (const auto& r : db_->query("SELECT id, started_at, status, nodes FROM sessions WHERE kind = 'certify' "
                                  "AND config_sha256 = ? ORDER BY started_at, id",
                                  {Value::of(config_sha256)})) {
    if (static_cast<int>(r[3].num()) != hosts) continue;
    CertificationTimes t{r[0].str(), r[1].str(), r[2].str(), hosts, {}};
    for (const auto& m : db_->query("SELECT sweep, metric, value FROM metrics WHERE session_id = ? AND sweep "
                                    "LIKE 'tier-%'",
                                    {Value::of(t.id)}))
      if (!m[2].is_null()) t.tiers[m[0].str().substr(5)][m[1].str()] = m[2].num();
    if (t.tiers.empty()) continue;  // recorded before tiers' times were
    bool clean = t.verdict == "PASS";
    if (clean)
      for (const auto& n : db_->query("SELECT outcome FROM nodes WHERE session_id = ?", {Value::of(t.id)}))
        clean = clean && n[0].str() == "PASS";
    if (!best || clean || !best_clean) {  // the newest clean one, else the newest
      best = std::move(t);
      best_clean = clean;
    }
  }
  return best;
}

std::vector<SessionEntry> Store::latest_sessions() const {
  std::map<std::pair<std::string, std::string>, SessionEntry> newest;
  for (const auto& r :
       db_->query("SELECT id, kind, suite, started_at, status, config_file, cluster, nodes FROM "
                  "sessions WHERE kind = 'suite' ORDER BY started_at, id")) {
    SessionEntry e;
    e.id = r[0].str();
    e.kind = r[1].str();
    e.suite = r[2].str();
    e.started_at = r[3].str();
    e.status = outcome_of_text(r[4].str()).value_or(Outcome::Error);
    e.config_file = r[5].str();
    e.cluster = r[6].str();
    e.nodes = static_cast<int>(r[7].num());
    newest[{e.config_file, e.cluster}] = std::move(e);
  }
  std::vector<SessionEntry> out;
  for (auto& [key, e] : newest) {
    for (const auto& m : db_->query("SELECT sweep, metric, value, estimate, lo, hi, outcome FROM metrics "
                                    "WHERE session_id = ? ORDER BY sweep, metric",
                                    {Value::of(e.id)}))
      e.metrics.push_back({m[0].str(), m[1].str(), m[2].is_null() ? std::nullopt : std::optional(m[2].num()),
                           m[3].is_null() ? std::nullopt : std::optional(m[3].num()),
                           m[4].is_null() ? std::nullopt : std::optional(m[4].num()),
                           m[5].is_null() ? std::nullopt : std::optional(m[5].num()),
                           m[6].is_null() ? std::nullopt : outcome_of_text(m[6].str())});
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace cvs::history
