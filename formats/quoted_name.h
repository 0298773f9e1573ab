// How messages show a name read from an untrusted file (a tensor key, a file name, a global).
#pragma once

#include <string>
#include <string_view>

namespace ckptspec {

// The name in single quotes, its first 512 bytes, with every byte outside printable ASCII (and
// the quote and backslash) written as \xHH, and "..." when cut: "'w'", "'a\x0ab'".
std::string QuotedName(std::string_view name);

}  // namespace ckptspec
