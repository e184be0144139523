#include "cvs/history/db.hpp"

#include "cvs/base/text.hpp"

#include <libpq-fe.h>
#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace cvs::history {

std::string Value::str() const {
  if (kind == Kind::Text) return text;
  if (kind == Kind::Number) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", number);
    return buf;
  }
  return "";
}

double Value::num() const {
  if (kind == Kind::Number) return number;
  if (kind == Kind::Text && !text.empty()) return std::strtod(text.c_str(), nullptr);
  return std::nan("");
}

namespace {

// ---- SQLite ----------------------------------------------------------------------------------

class SqliteDb : public Db {
 public:
  explicit SqliteDb(const std::string& path) : path_(path) {
    std::error_code ec;
    const auto dir = std::filesystem::path(path).parent_path();
    if (!dir.empty()) std::filesystem::create_directories(dir, ec);
    if (sqlite3_open_v2(path.c_str(), &db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        nullptr) != SQLITE_OK) {
      const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      db_ = nullptr;
      throw StoreError("cannot open the SQLite store " + path + ": " + why);
    }
    sqlite3_busy_timeout(db_, 30000);  // a second writer waits for the first, up to 30 s
    wal();
    exec("PRAGMA foreign_keys=ON", {});
  }
  ~SqliteDb() override { sqlite3_close(db_); }

  // Readers never wait for a writer. Switching a new file to WAL needs its exclusive lock, and
  // SQLite answers BUSY there without calling the busy handler (two writers opening a new store at
  // once: "database is locked"): that one statement is retried for the busy timeout.
  void wal() {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (true) {
      char* err = nullptr;
      const int rc = sqlite3_exec(db_, "PRAGMA journal_mode=WAL", nullptr, nullptr, &err);
      const std::string why = err ? err : "";
      sqlite3_free(err);
      if (rc == SQLITE_OK) return;
      if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || std::chrono::steady_clock::now() > until)
        throw StoreError(path_ + ": " + why + " (in: PRAGMA journal_mode=WAL)");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  void begin() override { exec("BEGIN IMMEDIATE", {}); }
  bool has_table(const std::string& name) override {
    return !query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", {Value::of(name)}).empty();
  }
  std::string engine() const override { return "sqlite"; }
  std::string where() const override { return path_; }

 protected:
  void run(const std::string& sql, const std::vector<Value>& params, std::vector<Row>* rows) override {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
      throw StoreError(path_ + ": " + sqlite3_errmsg(db_) + " (in: " + sql.substr(0, 80) + ")");
    for (std::size_t i = 0; i < params.size(); ++i) {
      const int k = static_cast<int>(i) + 1;
      const auto& p = params[i];
      if (p.kind == Value::Kind::Text)
        sqlite3_bind_text(st, k, p.text.c_str(), static_cast<int>(p.text.size()), SQLITE_TRANSIENT);
      else if (p.kind == Value::Kind::Number && std::isfinite(p.number))
        sqlite3_bind_double(st, k, p.number);
      else
        sqlite3_bind_null(st, k);
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
      if (rows) {
        Row r;
        for (int c = 0; c < sqlite3_column_count(st); ++c) {
          switch (sqlite3_column_type(st, c)) {
            case SQLITE_NULL:
              r.push_back(Value::null());
              break;
            case SQLITE_INTEGER:
            case SQLITE_FLOAT:
              r.push_back(Value::of(sqlite3_column_double(st, c)));
              break;
            default:
              r.push_back(Value::of(std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, c)))));
          }
        }
        rows->push_back(std::move(r));
      }
    const std::string why = rc == SQLITE_DONE ? "" : sqlite3_errmsg(db_);
    sqlite3_finalize(st);
    if (!why.empty()) throw StoreError(path_ + ": " + why + " (in: " + sql.substr(0, 80) + ")");
  }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

// ---- PostgreSQL ------------------------------------------------------------------------------

// `?` placeholders numbered $1, $2, ... (the SQL here has no `?` in literals).
std::string numbered(const std::string& sql) {
  std::string out;
  int n = 0;
  for (char c : sql) {
    if (c == '?')
      out += "$" + std::to_string(++n);
    else
      out += c;
  }
  return out;
}

// The server, never the password: user@host:port/dbname.
std::string describe(PGconn* c) {
  return std::string(PQuser(c)) + "@" + PQhost(c) + ":" + PQport(c) + "/" + PQdb(c);
}

class PgDb : public Db {
 public:
  explicit PgDb(const std::string& conninfo) {
    conn_ = PQconnectdb(conninfo.c_str());
    if (!conn_ || PQstatus(conn_) != CONNECTION_OK) {
      const std::string why = without_line_ends(conn_ ? PQerrorMessage(conn_) : "out of memory");
      PQfinish(conn_);
      conn_ = nullptr;
      // The conninfo may hold a password: never in a message.
      throw StoreError("cannot connect to the PostgreSQL store: " + why);
    }
    where_ = describe(conn_);
    exec("SET client_min_messages TO WARNING", {});
  }
  ~PgDb() override { PQfinish(conn_); }

  void begin() override { exec("BEGIN", {}); }
  void lock_schema() override { exec("SELECT pg_advisory_xact_lock(7405114)", {}); }
  bool has_table(const std::string& name) override {
    return !query("SELECT to_regclass(?)::text", {Value::of(name)})[0][0].is_null();
  }
  std::string engine() const override { return "postgresql"; }
  std::string where() const override { return where_; }

 protected:
  void run(const std::string& sql, const std::vector<Value>& params, std::vector<Row>* rows) override {
    std::vector<std::string> text(params.size());
    std::vector<const char*> values(params.size(), nullptr);
    for (std::size_t i = 0; i < params.size(); ++i)
      if (!params[i].is_null() && (params[i].kind == Value::Kind::Text || std::isfinite(params[i].number))) {
        text[i] = params[i].str();
        values[i] = text[i].c_str();
      }
    PGresult* r = PQexecParams(conn_, numbered(sql).c_str(), static_cast<int>(params.size()), nullptr,
                               values.data(), nullptr, nullptr, 0);
    const auto st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      const std::string why = without_line_ends(PQresultErrorMessage(r));
      PQclear(r);
      throw StoreError(where_ + ": " + why + " (in: " + sql.substr(0, 80) + ")");
    }
    if (rows)
      for (int i = 0; i < PQntuples(r); ++i) {
        Row row;
        for (int c = 0; c < PQnfields(r); ++c) {
          if (PQgetisnull(r, i, c)) {
            row.push_back(Value::null());
            continue;
          }
          const Oid t = PQftype(r, c);
          const bool numeric = t == 20 || t == 21 || t == 23 || t == 700 || t == 701 ||
                               t == 1700;  // int8/2/4, float4/8, numeric
          if (numeric)
            row.push_back(Value::of(std::strtod(PQgetvalue(r, i, c), nullptr)));
          else
            row.push_back(Value::of(std::string(PQgetvalue(r, i, c))));
        }
        rows->push_back(std::move(row));
      }
    PQclear(r);
  }

 private:
  PGconn* conn_ = nullptr;
  std::string where_;
};

}  // namespace

std::unique_ptr<Db> open_sqlite(const std::string& path) {
  return std::make_unique<SqliteDb>(path);
}

std::unique_ptr<Db> open_postgresql(const std::string& conninfo) {
  return std::make_unique<PgDb>(conninfo);
}

}  // namespace cvs::history
