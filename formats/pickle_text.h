// Which bytes Python's unpickler takes as a str: BINUNICODE's (and SHORT_BINUNICODE's,
// BINUNICODE8's) must be UTF-8 as CPython decodes it with "surrogatepass": no overlong form, no
// code point beyond U+10FFFF, a lone surrogate (U+D800 to U+DFFF, as three bytes) allowed. The
// bytes of a str are then its one canonical encoding, so two str are equal exactly when their
// bytes are.
#pragma once

#include <string_view>

namespace ckptspec {

bool IsPythonUtf8(std::string_view bytes);

bool IsAscii(std::string_view bytes);

}  // namespace ckptspec
