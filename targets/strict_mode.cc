#include "targets/strict_mode.h"

namespace ckptspec {
namespace {

struct ModeRow {
  const char* name;
  StrictRule rule;
};

// Indexed by StrictMode; the table of strict_mode.h.
constexpr ModeRow kModes[kNumStrictModes] = {
    {"assume_ok_unexpected", {UnexpectedKeys::kLoadFails, MissingKeys::kNotComputed}},
    {"log_unexpected", {UnexpectedKeys::kWarnAndDrop, MissingKeys::kNotComputed}},
    {"log_all", {UnexpectedKeys::kWarnAndDrop, MissingKeys::kWarn}},
    {"raise_unexpected", {UnexpectedKeys::kRaise, MissingKeys::kNotComputed}},
    {"raise_all", {UnexpectedKeys::kRaise, MissingKeys::kRaise}},
    {"return_unexpected", {UnexpectedKeys::kReturnAndDrop, MissingKeys::kNotComputed}},
    {"return_all", {UnexpectedKeys::kReturnAndDrop, MissingKeys::kReturn}},
    {"ignore_all", {UnexpectedKeys::kDrop, MissingKeys::kNotComputed}},
};

}  // namespace

const char* StrictModeName(StrictMode mode) { return kModes[static_cast<int>(mode)].name; }

bool ParseStrictMode(const std::string& name, StrictMode* out) {
  for (int i = 0; i < kNumStrictModes; ++i) {
    if (name == kModes[i].name) {
      *out = static_cast<StrictMode>(i);
      return true;
    }
  }
  return false;
}

StrictRule StrictRuleOf(StrictMode mode) { return kModes[static_cast<int>(mode)].rule; }

}  // namespace ckptspec
