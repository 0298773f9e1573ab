#include "targets/process/adapter_fault.h"

namespace ckptspec {
namespace {

bool IsProcessFault(AdapterFault fault) {
  return fault == AdapterFault::kCrashed || fault == AdapterFault::kExited ||
         fault == AdapterFault::kTimedOut || fault == AdapterFault::kStartFailed ||
         fault == AdapterFault::kLeftBehind;
}

}  // namespace

const char* AdapterFaultName(AdapterFault fault) {
  switch (fault) {
    case AdapterFault::kCrashed:
      return "crashed";
    case AdapterFault::kExited:
      return "exited";
    case AdapterFault::kTimedOut:
      return "timed out";
    case AdapterFault::kGarbage:
      return "garbage";
    case AdapterFault::kMalformedReply:
      return "malformed reply";
    case AdapterFault::kWrongRank:
      return "wrong rank";
    case AdapterFault::kWrongRequest:
      return "wrong request";
    case AdapterFault::kWrongSize:
      return "wrong size";
    case AdapterFault::kUnsafeFile:
      return "unsafe file";
    case AdapterFault::kStartFailed:
      return "start failed";
    case AdapterFault::kLeftBehind:
      return "left processes behind";
  }
  return "unknown fault";
}

Status AdapterFaultStatus(int rank, AdapterFault fault, const std::string& detail) {
  std::string message =
      (rank >= 0 ? "adapter rank " + std::to_string(rank) : std::string("adapter")) + ": " +
      AdapterFaultName(fault) + ": " + detail;
  return IsProcessFault(fault) ? Status::IOError(std::move(message))
                               : Status::Corruption(std::move(message));
}

}  // namespace ckptspec
