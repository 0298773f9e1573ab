#include "adapters/builtin/adapter_fault_flags.h"

namespace ckptspec {
namespace {

constexpr InjectedFault kAll[] = {
    InjectedFault::kNone,         InjectedFault::kCrashSave,   InjectedFault::kExitSave,
    InjectedFault::kHangSave,     InjectedFault::kGarbage,     InjectedFault::kWrongRank,
    InjectedFault::kWrongRequest, InjectedFault::kMalformed,   InjectedFault::kWrongSize,
    InjectedFault::kLinkOut,      InjectedFault::kMoveScratch, InjectedFault::kFifoLoad,
    InjectedFault::kLinkLoad,     InjectedFault::kDaemonSave,  InjectedFault::kFloodStderr,
    InjectedFault::kDeepReply,
};

}  // namespace

const char* InjectedFaultName(InjectedFault fault) {
  switch (fault) {
    case InjectedFault::kNone:
      return "none";
    case InjectedFault::kCrashSave:
      return "crash-save";
    case InjectedFault::kExitSave:
      return "exit-save";
    case InjectedFault::kHangSave:
      return "hang-save";
    case InjectedFault::kGarbage:
      return "garbage";
    case InjectedFault::kWrongRank:
      return "wrong-rank";
    case InjectedFault::kWrongRequest:
      return "wrong-request";
    case InjectedFault::kMalformed:
      return "malformed";
    case InjectedFault::kWrongSize:
      return "wrong-size";
    case InjectedFault::kLinkOut:
      return "link-out";
    case InjectedFault::kMoveScratch:
      return "move-scratch";
    case InjectedFault::kFifoLoad:
      return "fifo-load";
    case InjectedFault::kLinkLoad:
      return "link-load";
    case InjectedFault::kDaemonSave:
      return "daemon-save";
    case InjectedFault::kFloodStderr:
      return "flood-stderr";
    case InjectedFault::kDeepReply:
      return "deep-reply";
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
  for (InjectedFault f : kAll)
    names += std::string(names.empty() ? "" : ", ") + InjectedFaultName(f);
  return names;
}

}  // namespace ckptspec
