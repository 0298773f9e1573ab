// Helpers for property bodies (used inside RapidCheck properties only).
#pragma once

#include <ostream>
#include <string>

#include <rapidcheck.h>

#include "model/status.h"
#include "targets/target.h"

// Fails the RapidCheck case with the expression and the Status's message when it is not OK.
#define CKPTSPEC_RC_ASSERT_OK(expr)                                               \
  do {                                                                            \
    const ::ckptspec::Status ckptspec_rc_status_ = (expr);                        \
    if (!ckptspec_rc_status_.ok()) {                                              \
      RC_FAIL(std::string(#expr) + " failed: " + ckptspec_rc_status_.ToString()); \
    }                                                                             \
  } while (0)

// Fails with `what` when the difference string is not empty.
#define CKPTSPEC_RC_ASSERT_SAME(difference, what)                                          \
  do {                                                                                     \
    const std::string ckptspec_rc_diff_ = (difference);                                    \
    if (!ckptspec_rc_diff_.empty()) RC_FAIL(std::string(what) + ": " + ckptspec_rc_diff_); \
  } while (0)

namespace ckptspec {

// How RapidCheck prints a generated strict mode in a counterexample (by its Megatron name).
inline void showValue(StrictMode mode, std::ostream& os) { os << StrictModeName(mode); }

}  // namespace ckptspec
