// Plain text helpers shared by the layers above: HTML escaping (the reports, the trend page) and
// replacing every occurrence of a string.
#pragma once

#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace cvs {

// One character and the text that stands for it in an escaped string.
struct CharEscape {
  char c;
  std::string_view as;
};
// `s` with each character the table names replaced by its text (the others as they are): the one
// loop behind HTML entities, JSON pointer tokens, OpenMetrics label values and Markdown cells.
std::string escape_chars(std::string_view s, std::initializer_list<CharEscape> table);

// & < > " ' as entities: safe in element text and in quoted attributes.
std::string html_escape(const std::string& s);

// Every occurrence of `from` (not empty) in `s` replaced by `to`, left to right, never rescanning
// a replacement.
void replace_all(std::string& s, const std::string& from, const std::string& to);

// `s` without the blanks (space, tab, \r, \n) it starts and ends with: a field of a tool's output.
std::string_view trim(std::string_view s);

// `s` without the line ends (\n, \r) it ends with: a tool's output or an error message as one line.
std::string without_line_ends(std::string s);

// The last line of `s`, its line ends dropped first ("" for an empty text): what a failed
// command's output ends with.
std::string last_line(std::string s);

// Of `candidates`, the one nearest `word` by edit distance (for "did you mean"): empty when none is
// within a third of the word's length.
std::string nearest_word(const std::string& word, const std::vector<std::string>& candidates);

// Writes `text` to `path` whole: into `path`.part, flushed and checked (a full disk shows at the
// flush), then renamed over it, so a reader never sees half a file. Throws std::runtime_error
// naming the file and the system's reason.
void write_file_whole(const std::filesystem::path& path, std::string_view text);

}  // namespace cvs
