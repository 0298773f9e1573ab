// Which bytes Python's unpickler takes as a str: BINUNICODE's (and SHORT_BINUNICODE's,
// BINUNICODE8's) must be UTF-8 as CPython decodes it with "surrogatepass": no overlong form, no
// code point beyond U+10FFFF, a lone surrogate (U+D800 to U+DFFF, as three bytes) allowed. The
// bytes of a str are then its one canonical encoding, so two str are equal exactly when their
// bytes are.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace ckptspec {

// The first byte of `bytes` at or beyond 0x80 (8 at a time), or bytes.size().
inline size_t AsciiPrefix(std::string_view bytes) {
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes.data() + i, 8);
    if (word & 0x8080808080808080ULL) break;
  }
  while (i < bytes.size() && static_cast<unsigned char>(bytes[i]) < 0x80) ++i;
  return i;
}

bool IsUtf8Tail(std::string_view bytes);  // the check past the ASCII prefix

inline bool IsPythonUtf8(std::string_view bytes) {
  const size_t ascii = AsciiPrefix(bytes);
  return ascii == bytes.size() || IsUtf8Tail(bytes.substr(ascii));
}

inline bool IsAscii(std::string_view bytes) { return AsciiPrefix(bytes) == bytes.size(); }

}  // namespace ckptspec
