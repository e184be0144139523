// One field list per record: each key of a file this tool writes named once, beside the member it
// is, and that list drives both the writer (write_fields) and the one reader (read_fields, through
// JsonIn: a missing or mistyped key is a ConfigError with the file, its JSON pointer and the fix).
//
//   constexpr auto kFields = std::make_tuple(field("steps_run", &EarlyStop::steps_run),
//                                            optional_field("reason", &EarlyStop::reason));
//   write_fields(j, record, kFields);   read_fields(in, record, kFields);
//
// A required field must be in the file; an optional one keeps the struct's default when it is not
// (files written before the field existed). Members: std::string, bool, double, any integer,
// std::vector<std::string>, a JSON value (kept as it was), std::optional of a double, a long long
// or a string: none is written null by `field`, left out by `optional_field`, and read from a key
// absent or null by either.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "cvs/config/json_in.hpp"

namespace cvs {

template <class T, class M>
struct JsonField {
  const char* key;
  M T::*member;
  bool required;
};

template <class T, class M>
constexpr JsonField<T, M> field(const char* key, M T::*member) {
  return {key, member, true};
}
template <class T, class M>
constexpr JsonField<T, M> optional_field(const char* key, M T::*member) {
  return {key, member, false};
}

// An enum member written as its word in `table` (base/enum_names.hpp); optional: absent keeps the
// struct's default; a word not in the table is a ConfigError naming the words there are.
template <class T, class E, std::size_t N>
struct JsonEnumField {
  const char* key;
  E T::*member;
  const EnumWord<E> (*table)[N];
  bool required;
};
template <class T, class E, std::size_t N>
constexpr JsonEnumField<T, E, N> optional_enum_field(const char* key, E T::*member,
                                                     const EnumWord<E> (&table)[N]) {
  return {key, member, &table, false};
}

namespace json_fields_detail {

template <class M>
void read_one(const JsonIn& in, const char* k, bool required, M& v) {
  if (!required && !in.has(k)) return;  // an older file: the struct's default
  if constexpr (std::is_same_v<M, std::string>) {
    v = in.req_str(k);
  } else if constexpr (std::is_same_v<M, bool>) {
    v = in.req_bool(k);
  } else if constexpr (std::is_integral_v<M>) {
    v = in.req_int<M>(k);
  } else if constexpr (std::is_floating_point_v<M>) {
    v = in.req_num(k);
  } else if constexpr (std::is_same_v<M, std::vector<std::string>>) {
    v = in.strings(k);
  } else if constexpr (std::is_same_v<M, std::optional<double>>) {
    v = in.nullable_num(k);
  } else if constexpr (std::is_same_v<M, std::optional<long long>>) {
    v = in.nullable_int(k);
  } else if constexpr (std::is_same_v<M, std::optional<std::string>>) {
    v = in.opt_str(k);
  } else if constexpr (std::is_same_v<M, std::optional<bool>>) {
    v = in.at(k).is_null() ? std::nullopt : std::optional<bool>(in.req_bool(k));
  } else {
    static_assert(std::is_same_v<M, nlohmann::ordered_json>, "a member type json_fields.hpp reads");
    v = in.at(k);
  }
}

template <class M>
struct is_optional : std::false_type {};
template <class X>
struct is_optional<std::optional<X>> : std::true_type {};

template <class T, class M>
void write_one(nlohmann::ordered_json& j, const JsonField<T, M>& f, const T& record) {
  const M& v = record.*(f.member);
  if constexpr (is_optional<M>::value) {
    if (v)
      j[f.key] = *v;
    else if (f.required)
      j[f.key] = nullptr;  // an optional field with no value is left out
  } else {
    j[f.key] = v;
  }
}

template <class T, class M>
void read_field(const JsonIn& in, const JsonField<T, M>& f, T& record) {
  read_one(in, f.key, f.required, record.*(f.member));
}

template <class T, class E, std::size_t N>
void read_field(const JsonIn& in, const JsonEnumField<T, E, N>& f, T& record) {
  if (!f.required && !in.has(f.key)) return;
  record.*(f.member) = in.one_of(f.key, *f.table);
}

template <class T, class E, std::size_t N>
void write_one(nlohmann::ordered_json& j, const JsonEnumField<T, E, N>& f, const T& record) {
  j[f.key] = word_of(*f.table, record.*(f.member));
}

}  // namespace json_fields_detail

// Each field of `record` into the object `j`, in the list's order.
template <class T, class... F>
void write_fields(nlohmann::ordered_json& j, const T& record, const std::tuple<F...>& fields) {
  std::apply([&](const auto&... f) { (json_fields_detail::write_one(j, f, record), ...); }, fields);
}

// Each field of `record` from `in` (the object a JsonIn reads).
template <class T, class... F>
void read_fields(const JsonIn& in, T& record, const std::tuple<F...>& fields) {
  std::apply([&](const auto&... f) { (json_fields_detail::read_field(in, f, record), ...); }, fields);
}

}  // namespace cvs
