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

}  // namespace cvs
