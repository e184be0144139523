#include "cvs/config/json_in.hpp"

#include <cmath>

#include "cvs/config/config_error.hpp"
#include "cvs/config/json_reader.hpp"

namespace cvs {

JsonIn::JsonIn(const J& j, std::string pointer, const std::string& file, const char* fix)
    : j_(j), ptr_(std::move(pointer)), file_(file), fix_(fix) {
  if (!j_.is_object()) fail(ptr_, "is " + type_name(j_) + ", not an object");
}

std::string JsonIn::type_name(const J& v) {
  return json_type_name(v);
}

const JsonIn::J* JsonIn::find(const char* k) const {
  auto it = j_.find(k);
  return it == j_.end() ? nullptr : &*it;
}

const JsonIn::J& JsonIn::at(const char* k) const {
  auto it = j_.find(k);
  if (it == j_.end()) fail(at_ptr(k), "is missing");
  return *it;
}

std::string JsonIn::at_ptr(const char* k) const {
  return pointer_join(ptr_, k);
}

JsonIn JsonIn::object(const char* k) const {
  return JsonIn(at(k), at_ptr(k), file_, fix_);
}

JsonIn JsonIn::element(const char* k, std::size_t i) const {
  return JsonIn(array(k)[i], pointer_join(at_ptr(k), i), file_, fix_);
}

std::string JsonIn::str(const char* k, std::string dflt) const {
  const J* v = find(k);
  if (!v) return dflt;
  if (!v->is_string()) fail(at_ptr(k), "is " + type_name(*v) + ", not a string");
  return v->get<std::string>();
}

bool JsonIn::boolean(const char* k, bool dflt) const {
  const J* v = find(k);
  if (!v) return dflt;
  if (!v->is_boolean()) fail(at_ptr(k), "is " + type_name(*v) + ", not true/false");
  return v->get<bool>();
}

double JsonIn::num(const char* k, double dflt) const {
  const J* v = find(k);
  return v ? number(*v, at_ptr(k)) : dflt;
}

std::vector<std::string> JsonIn::strings(const char* k) const {
  const J& a = at(k);
  if (!a.is_array()) fail(at_ptr(k), "is " + type_name(a) + ", not an array of strings");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_string()) fail(pointer_join(at_ptr(k), i), "is " + type_name(a[i]) + ", not a string");
    out.push_back(a[i].get<std::string>());
  }
  return out;
}

std::optional<double> JsonIn::opt_num(const char* k) const {
  const J* v = find(k);
  if (!v) return std::nullopt;
  return number(*v, at_ptr(k));
}

std::optional<double> JsonIn::nullable_num(const char* k) const {
  const J* v = find(k);
  if (!v || v->is_null()) return std::nullopt;
  return number(*v, at_ptr(k));
}

std::optional<long long> JsonIn::nullable_int(const char* k) const {
  const J* v = find(k);
  if (!v || v->is_null()) return std::nullopt;
  return integer<long long>(k);
}

std::optional<std::string> JsonIn::opt_str(const char* k) const {
  if (!has(k)) return std::nullopt;
  return str(k);
}

const JsonIn::J& JsonIn::array(const char* k) const {
  static const J empty = J::array();
  const J* v = find(k);
  if (!v) return empty;
  if (!v->is_array()) fail(at_ptr(k), "is " + type_name(*v) + ", not an array");
  return *v;
}

double JsonIn::number(const J& v, const std::string& ptr) const {
  if (v.is_null()) return NAN;
  if (!v.is_number()) fail(ptr, "is " + type_name(v) + ", not a number");
  return v.get<double>();
}

void JsonIn::fail(const std::string& ptr, const std::string& what) const {
  throw ConfigError(file_, ptr, what, fix_);
}

}  // namespace cvs
