#include "cli/numeric_flag.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <type_traits>

namespace ckptspec {
namespace {

template <typename T>
std::string NumberText(T value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

// The whole text as an integer: an optional sign, then decimal digits. *too_large when the
// digits exceed 64 bits (the text is a whole number, but of no type here).
bool ParseWholeNumber(const std::string& text, __int128* out, bool* too_large) {
  *too_large = false;
  size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) i = 1;
  if (i == text.size()) return false;
  unsigned __int128 magnitude = 0;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    magnitude = magnitude * 10 + static_cast<unsigned>(text[i] - '0');
    if (magnitude > std::numeric_limits<uint64_t>::max()) *too_large = true;
    if (*too_large) magnitude = 0;  // keep scanning for a non-digit, without overflowing
  }
  const __int128 value = static_cast<__int128>(magnitude);
  *out = negative ? -value : value;
  return true;
}

// The whole text as a finite real number (strtod's decimal forms; no leading space, no nan, no
// inf, no hexadecimal). *too_large when it is a real number beyond double's range (1e400).
bool ParseRealNumber(const std::string& text, double* out, bool* too_large) {
  *too_large = false;
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.' &&
        c != 'e' && c != 'E') {
      return false;  // nan, inf, hexadecimal, trailing garbage
    }
  }
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return false;
  if (!std::isfinite(value)) {
    *too_large = true;
    return true;
  }
  *out = value;
  return true;
}

}  // namespace

template <typename T>
std::string DescribeRange(NumberRange<T> range) {
  return NumberText(range.min) + " to " + NumberText(range.max);
}

template <typename T>
Status ParseNumber(const std::string& flag, const std::string& text, NumberRange<T> range, T* out) {
  const std::string accepted = " (accepted: " + DescribeRange(range) + ")";
  const std::string named = flag + " '" + text + "'";
  bool too_large = false;
  if constexpr (std::is_floating_point_v<T>) {
    double value = 0;
    if (!ParseRealNumber(text, &value, &too_large)) {
      return Status::InvalidArgument(named + " is not a number" + accepted);
    }
    if (too_large || value < range.min || value > range.max) {
      return Status::InvalidArgument(named + " is out of range" + accepted);
    }
    *out = static_cast<T>(value);
  } else {
    __int128 value = 0;
    if (!ParseWholeNumber(text, &value, &too_large)) {
      return Status::InvalidArgument(named + " is not a whole number" + accepted);
    }
    if (too_large || value < static_cast<__int128>(range.min) ||
        value > static_cast<__int128>(range.max)) {
      return Status::InvalidArgument(named + " is out of range" + accepted);
    }
    *out = static_cast<T>(value);
  }
  return Status::OK();
}

template <typename T>
CLI::Option* AddNumberFlag(CLI::App* cmd, const std::string& name, T* value, NumberRange<T> range,
                           const std::string& help) {
  CLI::Option* option = cmd->add_option_function<std::string>(
      name,
      [name, range, value](const std::string& text) {
        const Status s = ParseNumber(name, text, range, value);
        if (!s.ok()) throw CLI::ValidationError(s.message());
      },
      help + " (" + DescribeRange(range) + ")");
  option->type_name(std::is_floating_point_v<T> ? "NUMBER" : "INT");
  option->default_str(NumberText(*value));
  return option;
}

#define CKPTSPEC_NUMERIC_FLAG_TYPE(T)                                                         \
  template std::string DescribeRange<T>(NumberRange<T>);                                      \
  template Status ParseNumber<T>(const std::string&, const std::string&, NumberRange<T>, T*); \
  template CLI::Option* AddNumberFlag<T>(CLI::App*, const std::string&, T*, NumberRange<T>,   \
                                         const std::string&);
CKPTSPEC_NUMERIC_FLAG_TYPE(int)
CKPTSPEC_NUMERIC_FLAG_TYPE(int64_t)
CKPTSPEC_NUMERIC_FLAG_TYPE(uint64_t)
CKPTSPEC_NUMERIC_FLAG_TYPE(double)
#undef CKPTSPEC_NUMERIC_FLAG_TYPE

}  // namespace ckptspec
