// Floating-point values compared by their bits: a NaN equals the same NaN (so a value equals its
// own copy), and 0.0 differs from -0.0.
#pragma once

#include <cstring>
#include <optional>

namespace ckptspec {

inline bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

inline bool SameBits(const std::optional<double>& a, const std::optional<double>& b) {
  return a.has_value() == b.has_value() && (!a || SameBits(*a, *b));
}

}  // namespace ckptspec
