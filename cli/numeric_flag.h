// Range-checked numeric flags, for every verb: each numeric flag is declared once, with its
// accepted range, and that declaration drives both parsing and --help.
//
// Contracts:
//  - ParseNumber accepts the whole text or nothing. Integers: an optional sign and decimal digits
//    (no spaces, no fraction, no exponent). Reals: a finite decimal number as strtod reads it
//    (an exponent is fine; nan, inf and hexadecimal are not). A value outside [min, max], or one
//    that does not fit its type, is never clamped or wrapped.
//  - Errors are InvalidArgument naming the flag, the value and the accepted range:
//      --seed '99999999999999999999' is out of range (accepted: 0 to 18446744073709551615)
//      --tp 'x2' is not a whole number (accepted: 1 to 2147483648)
//  - AddNumberFlag registers `name` on `cmd` bound to *value, with a CLI11 check that runs
//    ParseNumber on the text before CLI11 converts it: a bad value makes parsing throw
//    CLI::ValidationError with that message (the ckptspec command prints it and exits 2). The
//    help text gains the range and the current value of *value as the default.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "model/status.h"

namespace ckptspec {

// Inclusive bounds of a numeric flag's accepted values.
template <typename T>
struct NumberRange {
  T min;
  T max;
};

// Defined for int, int64_t, uint64_t and double.
template <typename T>
Status ParseNumber(const std::string& flag, const std::string& text, NumberRange<T> range, T* out);

template <typename T>
CLI::Option* AddNumberFlag(CLI::App* cmd, const std::string& name, T* value, NumberRange<T> range,
                           const std::string& help);

// "0 to 18446744073709551615": how a range is written in errors and help.
template <typename T>
std::string DescribeRange(NumberRange<T> range);

}  // namespace ckptspec
