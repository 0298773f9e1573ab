#include "formats/quoted_name.h"

namespace ckptspec {

std::string QuotedName(std::string_view name) {
  constexpr size_t kMaxShown = 512;
  std::string out = "'";
  for (char ch : name.substr(0, kMaxShown)) {
    const auto u = static_cast<unsigned char>(ch);
    if (u >= 0x20 && u < 0x7f && ch != '\'' && ch != '\\') {
      out += ch;
    } else {
      const char* digits = "0123456789abcdef";
      out += "\\x";
      out += digits[u >> 4];
      out += digits[u & 15];
    }
  }
  if (name.size() > kMaxShown) out += "...";
  return out + "'";
}

}  // namespace ckptspec
