// The named verdicts the process harness gives an adapter rank that misbehaves (docs/PROTOCOL.md,
// "Verdicts"). An error the adapter reports itself ({"ok": false, ...}) is not a fault.
#pragma once

#include <string>

#include "model/status.h"

namespace ckptspec {

enum class AdapterFault {
  kCrashed,         // died of a signal
  kExited,          // exited (or closed its stdout) before replying
  kTimedOut,        // no complete reply before the deadline
  kGarbage,         // a reply line that is not a JSON object, or unsolicited output
  kMalformedReply,  // a JSON reply lacking a member, or with one of the wrong type or value
  kWrongRank,       // a reply whose "rank" is not the process's RANK
  kWrongRequest,    // a reply whose "id" is not the pending request's
  kWrongSize,       // a loaded tensor file of the wrong length, or a loaded entry with no file
  kUnsafeFile,      // a loaded entry's file is not a regular file of the scratch directory (a
                    // symbolic link, a FIFO, a device, a directory)
  kStartFailed,     // the process could not be started
  kLeftBehind,      // processes of the adapter still ran after its ranks were shut down
};

// "crashed", "exited", "timed out", "garbage", "malformed reply", "wrong rank", "wrong request",
// "wrong size", "unsafe file", "start failed", "left processes behind".
const char* AdapterFaultName(AdapterFault fault);

// The Status of a fault: "adapter rank R: <name>: <detail>" ("adapter: <name>: <detail>" for a
// rank < 0, a fault of the whole group); IOError for crashed, exited, timed out, start failed and
// left processes behind, Corruption for the others.
Status AdapterFaultStatus(int rank, AdapterFault fault, const std::string& detail);

}  // namespace ckptspec
