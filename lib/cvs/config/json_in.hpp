// JsonIn: the strict reader of a file this tool wrote (results.json, and the records inside it).
// The first wrong type or missing required key ends the read with a ConfigError naming the file,
// the JSON pointer and the fix the caller gives ("pass a results.json that a cvs suite wrote").
// The user's files (config, cluster, thresholds) go through JsonReader, which collects every issue.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cvs/base/enum_names.hpp"

namespace cvs {

class JsonIn {
 public:
  using J = nlohmann::ordered_json;
  // j must outlive the reader and every reader made from it; file and fix too.
  JsonIn(const J& j, std::string pointer, const std::string& file, const char* fix);

  bool has(const char* k) const { return j_.contains(k); }
  const J* find(const char* k) const;
  const J& at(const char* k) const;  // required
  std::string at_ptr(const char* k) const;
  const std::string& file() const { return file_; }
  const std::string& pointer() const { return ptr_; }

  JsonIn object(const char* k) const;                  // the object at k (required)
  JsonIn element(const char* k, std::size_t i) const;  // the i-th object of the array at k

  std::string str(const char* k, std::string dflt = "") const;
  bool boolean(const char* k, bool dflt = false) const;
  double num(const char* k, double dflt = 0) const;  // null reads as NaN (a figure not finite)
  template <class Int>
  Int integer(const char* k, Int dflt = 0) const {
    const J* v = find(k);
    if (!v) return dflt;
    if (!v->is_number_integer()) fail(at_ptr(k), "is " + type_name(*v) + ", not an integer");
    return v->get<Int>();
  }
  // Required keys: missing is an error at the key's pointer.
  std::string req_str(const char* k) const { return (void)at(k), str(k); }
  double req_num(const char* k) const { return (void)at(k), num(k); }
  bool req_bool(const char* k) const { return (void)at(k), boolean(k); }
  template <class Int>
  Int req_int(const char* k) const {
    return (void)at(k), integer<Int>(k);
  }
  std::vector<std::string> strings(const char* k) const;  // a required array of strings
  // A required string that names one of `table`'s values (base/enum_names.hpp).
  template <class E, std::size_t N>
  E one_of(const char* k, const EnumWord<E> (&table)[N]) const {
    const std::string s = req_str(k);
    if (auto e = value_of(table, s)) return *e;
    fail(at_ptr(k), "is '" + s + "', not one of " + words_of(table));
  }
  std::optional<double> opt_num(const char* k) const;
  std::optional<double> nullable_num(const char* k) const;  // absent or null: nullopt
  std::optional<long long> nullable_int(const char* k) const;
  std::optional<std::string> opt_str(const char* k) const;
  const J& array(const char* k) const;  // absent: an empty array
  double number(const J& v, const std::string& ptr) const;
  [[noreturn]] void fail(const std::string& ptr, const std::string& what) const;

 private:
  static std::string type_name(const J& v);

  const J& j_;
  std::string ptr_;
  const std::string& file_;
  const char* fix_;
};

}  // namespace cvs
