// The results store's two engines behind one small interface: SQLite (a file, nothing to start:
// the default) and PostgreSQL (a server for a team), through their C libraries (Debian's
// libsqlite3 and libpq). SQL is written once with `?` placeholders; the PostgreSQL engine numbers
// them ($1, $2, ...). Every value travels as a parameter, never spliced into the SQL text.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace cvs::history {

// What the store could not do (open, read, write): the session goes on without it.
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A parameter or a column value: text, a number, or NULL.
struct Value {
  enum class Kind { Null, Text, Number } kind = Kind::Null;
  std::string text;
  double number = 0;
  static Value null() { return {}; }
  static Value of(std::string s) { return {Kind::Text, std::move(s), 0}; }
  static Value of(double d) { return {Kind::Number, {}, d}; }
  static Value of(std::optional<double> d) { return d ? of(*d) : null(); }
  bool is_null() const { return kind == Kind::Null; }
  std::string str() const;  // "" for NULL
  double num() const;       // NaN for NULL; a text parsed as a number
};
using Row = std::vector<Value>;

class Db {
 public:
  virtual ~Db() = default;
  void exec(const std::string& sql, const std::vector<Value>& params = {}) { run(sql, params, nullptr); }
  std::vector<Row> query(const std::string& sql, const std::vector<Value>& params = {}) {
    std::vector<Row> rows;
    run(sql, params, &rows);
    return rows;
  }
  // A write transaction: BEGIN IMMEDIATE in SQLite (a second writer waits, up to the busy
  // timeout, instead of failing at its first write), BEGIN in PostgreSQL.
  virtual void begin() = 0;
  // Inside a transaction: hold off every other connection's schema change until commit. SQLite's
  // BEGIN IMMEDIATE already does; PostgreSQL takes a transaction-scoped advisory lock (two
  // writers creating the tables at once otherwise deadlock on the catalog).
  virtual void lock_schema() {}
  virtual bool has_table(const std::string& name) = 0;
  void commit() { exec("COMMIT"); }
  void rollback() { exec("ROLLBACK"); }
  virtual std::string engine() const = 0;  // "sqlite" or "postgresql"
  virtual std::string where() const = 0;   // the file, or the server (never the password)

 protected:
  // The engine's one statement: `sql` with `params` bound, its rows into `rows` when given.
  virtual void run(const std::string& sql, const std::vector<Value>& params, std::vector<Row>* rows) = 0;
};

// A SQLite database file (created with its folder when missing).
std::unique_ptr<Db> open_sqlite(const std::string& path);
// A PostgreSQL connection string or URL (postgresql://user@host:port/db).
std::unique_ptr<Db> open_postgresql(const std::string& conninfo);

}  // namespace cvs::history
