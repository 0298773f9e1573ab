#include "targets/process/adapter_fault.h"

namespace ckptspec {
namespace {

bool IsProcessFault(AdapterFault fault) {
  return fault == AdapterFault::kCrashed || fault == AdapterFault::kExited ||
         fault == AdapterFault::kTimedOut || fault == AdapterFault::kStartFailed;
}

}  // namespace

const char* AdapterFaultName(AdapterFault fault) {
  switch (fault) {
    case AdapterFault::kCrashed: return "crashed";
    case AdapterFault::kExited: return "exited";
    case AdapterFault::kTimedOut: return "timed out";
    case AdapterFault::kGarbage: return "garbage";
    case AdapterFault::kMalformedReply: return "malformed reply";
    case AdapterFault::kWrongRank: return "wrong rank";
    case AdapterFault::kWrongRequest: return "wrong request";
    case AdapterFault::kWrongSize: return "wrong size";
    case AdapterFault::kStartFailed: return "start failed";
  }
  return "unknown fault";
}

Status AdapterFaultStatus(int rank, AdapterFault fault, const std::string& detail) {
  std::string message =
      "adapter rank " + std::to_string(rank) + ": " + AdapterFaultName(fault) + ": " + detail;
  return IsProcessFault(fault) ? Status::IOError(std::move(message))
                               : Status::Corruption(std::move(message));
}

}  // namespace ckptspec
