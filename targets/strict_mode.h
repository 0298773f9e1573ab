// Megatron's StrictHandling (docs/SEMANTICS.md §4): what a load does with the keys its templates
// and the checkpoint do not share. "Unexpected" keys are the base keys (tensor and object keys) a
// rank requests that the checkpoint lacks; "missing" keys are the checkpoint's keys that no rank
// requests. The comparison is by base key, so an object whose key exists but whose offset does
// not is an error in every mode (Megatron behaves the same).
//
// StrictRuleOf is the one statement of what each mode does: the reference's load follows it and
// P15 checks every target against it.
#pragma once

#include <string>

namespace ckptspec {

enum class StrictMode {
  kAssumeOkUnexpected,  // Megatron's default
  kLogUnexpected,
  kLogAll,
  kRaiseUnexpected,
  kRaiseAll,
  kReturnUnexpected,
  kReturnAll,
  kIgnoreAll,
};
inline constexpr int kNumStrictModes = 8;
// "assume_ok_unexpected", "log_unexpected", ... (Megatron's spelling).
const char* StrictModeName(StrictMode mode);
bool ParseStrictMode(const std::string& name, StrictMode* out);

// What a mode does with the unexpected keys.
enum class UnexpectedKeys {
  kLoadFails,      // no pre-check: loading fails at the first one, with an error naming it
  kRaise,          // a pre-check error naming every one, before anything loads
  kWarnAndDrop,    // a warning names each one (LoadResult::warnings); the rest loads
  kReturnAndDrop,  // reported per rank (LoadResult::unexpected); the rest loads
  kDrop,           // dropped silently; the rest loads
};
// What a mode does with the missing keys.
enum class MissingKeys {
  kNotComputed,  // not looked for
  kRaise,        // a pre-check error naming every one
  kWarn,         // a warning names each one
  kReturn,       // reported (LoadResult::missing)
};

struct StrictRule {
  UnexpectedKeys unexpected;
  MissingKeys missing;
};

//   mode                  unexpected       missing
//   assume_ok_unexpected  kLoadFails       kNotComputed
//   log_unexpected        kWarnAndDrop     kNotComputed
//   log_all               kWarnAndDrop     kWarn
//   raise_unexpected      kRaise           kNotComputed
//   raise_all             kRaise           kRaise
//   return_unexpected     kReturnAndDrop   kNotComputed
//   return_all            kReturnAndDrop   kReturn
//   ignore_all            kDrop            kNotComputed
StrictRule StrictRuleOf(StrictMode mode);

}  // namespace ckptspec
