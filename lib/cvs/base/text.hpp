// Plain text helpers shared by the layers above: HTML escaping (the reports, the trend page) and
// replacing every occurrence of a string.
#pragma once

#include <string>

namespace cvs {

// & < > " ' as entities: safe in element text and in quoted attributes.
std::string html_escape(const std::string& s);

// Every occurrence of `from` (not empty) in `s` replaced by `to`, left to right, never rescanning
// a replacement.
void replace_all(std::string& s, const std::string& from, const std::string& to);

}  // namespace cvs
