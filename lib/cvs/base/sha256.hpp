// SHA-256 of a byte string, as lowercase hex (OpenSSL's EVP digest, in-process).
#pragma once

#include <string>
#include <string_view>

namespace cvs {

std::string sha256_hex(std::string_view bytes);

}  // namespace cvs
