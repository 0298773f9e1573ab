#include "adapters/reference/adapter_fault_flags.h"

namespace ckptspec {
namespace {

constexpr InjectedFault kAll[] = {
    InjectedFault::kNone,      InjectedFault::kCrashSave,    InjectedFault::kExitSave,
    InjectedFault::kHangSave,  InjectedFault::kGarbage,      InjectedFault::kWrongRank,
    InjectedFault::kWrongRequest, InjectedFault::kMalformed, InjectedFault::kWrongSize,
};

}  // namespace

const char* InjectedFaultName(InjectedFault fault) {
  switch (fault) {
    case InjectedFault::kNone: return "none";
    case InjectedFault::kCrashSave: return "crash-save";
    case InjectedFault::kExitSave: return "exit-save";
    case InjectedFault::kHangSave: return "hang-save";
    case InjectedFault::kGarbage: return "garbage";
    case InjectedFault::kWrongRank: return "wrong-rank";
    case InjectedFault::kWrongRequest: return "wrong-request";
    case InjectedFault::kMalformed: return "malformed";
    case InjectedFault::kWrongSize: return "wrong-size";
  }
  return "?";
}

bool ParseInjectedFault(const std::string& name, InjectedFault* out) {
  for (InjectedFault f : kAll) {
    if (name == InjectedFaultName(f)) {
      *out = f;
      return true;
    }
  }
  return false;
}

std::string InjectedFaultNames() {
  std::string names;
  for (InjectedFault f : kAll) names += std::string(names.empty() ? "" : ", ") + InjectedFaultName(f);
  return names;
}

}  // namespace ckptspec
