// An enum's words, written once as a table {value, word}: to_string reads it one way, the readers
// (results.json, certificate.json, the history) the other, and an error lists the words it knows.
//   constexpr EnumWord<TierKind> kTierWords[] = {{TierKind::Preflight, "preflight"}, ...};
//   word_of(kTierWords, k) -> "preflight";  value_of(kTierWords, "links") -> TierKind::Links
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace cvs {

template <class E>
using EnumWord = std::pair<E, const char*>;

// The word of `e` ("?" for a value the table lacks: a table kept beside its enum has them all).
template <class E, std::size_t N>
constexpr const char* word_of(const EnumWord<E> (&table)[N], E e) {
  for (const auto& [value, word] : table)
    if (value == e) return word;
  return "?";
}

// The value whose word is `word`, or nullopt.
template <class E, std::size_t N>
std::optional<E> value_of(const EnumWord<E> (&table)[N], std::string_view word) {
  for (const auto& [value, w] : table)
    if (word == w) return value;
  return std::nullopt;
}

// "a, b, c": the words, for an error that names what it knows.
template <class E, std::size_t N>
std::string words_of(const EnumWord<E> (&table)[N]) {
  std::string s;
  for (const auto& [value, word] : table) s += (s.empty() ? "" : ", ") + std::string(word);
  return s;
}

}  // namespace cvs
