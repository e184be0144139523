// Reading a whole file as text, the one way every loader does it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace cvs {

// The file's bytes, or nullopt when it cannot be opened.
std::optional<std::string> read_text_file(const std::filesystem::path& path);

}  // namespace cvs
