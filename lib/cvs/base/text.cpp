#include "cvs/base/text.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace cvs {

std::string escape_chars(std::string_view s, std::initializer_list<CharEscape> table) {
  std::string o;
  o.reserve(s.size());
  for (const char c : s) {
    const auto* e = std::find_if(table.begin(), table.end(), [c](const CharEscape& x) { return x.c == c; });
    if (e == table.end())
      o += c;
    else
      o += e->as;
  }
  return o;
}

std::string html_escape(const std::string& s) {
  return escape_chars(s, {{'&', "&amp;"}, {'<', "&lt;"}, {'>', "&gt;"}, {'"', "&quot;"}, {'\'', "&#39;"}});
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
}

void write_file_whole(const std::filesystem::path& path, std::string_view text) {
  const std::filesystem::path part = path.string() + ".part";
  {
    std::ofstream out(part, std::ios::binary);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) throw std::runtime_error("cannot write " + part.string() + ": " + std::strerror(errno));
  }
  std::error_code ec;
  std::filesystem::rename(part, path, ec);
  if (ec) throw std::runtime_error("cannot write " + path.string() + ": " + ec.message());
}

std::string_view trim(std::string_view s) {
  constexpr std::string_view kBlank = " \t\r\n";
  const auto first = s.find_first_not_of(kBlank);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kBlank) - first + 1);
}

std::string without_line_ends(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

std::string last_line(std::string s) {
  s = without_line_ends(std::move(s));
  if (const auto nl = s.rfind('\n'); nl != std::string::npos) s.erase(0, nl + 1);
  return s;
}

std::string nearest_word(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = word.size() / 3 + 1;
  for (const auto& c : candidates) {
    std::vector<std::size_t> row(c.size() + 1);
    for (std::size_t j = 0; j <= c.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= word.size(); ++i) {
      std::size_t diag = row[0];
      row[0] = i;
      for (std::size_t j = 1; j <= c.size(); ++j) {
        const std::size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (word[i - 1] == c[j - 1] ? 0 : 1)});
        diag = up;
      }
    }
    if (row[c.size()] < best_d) {
      best_d = row[c.size()];
      best = c;
    }
  }
  return best;
}

}  // namespace cvs
