// The faults the built-in adapter can be told to commit (--fault KIND --fault-rank R), one per
// harness verdict (targets/process/adapter_fault.h), so that ctest shows every verdict is given.
#pragma once

#include <string>

namespace ckptspec {

enum class InjectedFault {
  kNone,
  kCrashSave,     // rank R dies of SIGKILL mid-save: rank 0 at the engine's 2nd file creation
                  // (a partial save on disk), another rank right after relaying its request
  kExitSave,      // rank R exits with status 3 on receiving a save
  kHangSave,      // rank R never replies to a save (the save itself runs)
  kGarbage,       // rank R answers a save with a line that is not JSON
  kWrongRank,     // rank R answers a save as rank (R + 1) % WORLD_SIZE
  kWrongRequest,  // rank R answers a save with another request id
  kMalformed,     // rank R answers a save without "ok"
  kWrongSize,     // rank R's first loaded tensor file is one byte off
  // Hostile adapters: attacks on the harness itself, which must neither follow nor be hurt by them.
  kLinkOut,      // at each save, rank R puts a symbolic link to --fault-path in the checkpoint
                 // directory (the harness's cleanup must remove the link, not what it points to)
  kMoveScratch,  // after its first save, rank R moves the harness's work directory aside and puts
                 // a link to --fault-path in its place (the harness must not write through it)
  kFifoLoad,     // rank R replaces its first loaded tensor file by a FIFO
  kLinkLoad,     // rank R replaces its first loaded tensor file by a link to --fault-path
  kDaemonSave,   // at a save, rank R starts a detached process (own session) that outlives it
  kFloodStderr,  // at each save, rank R writes 64 MiB to its stderr
  kDeepReply,    // rank R answers a load with a "common" nesting 200,000 objects deep
};

// "none", "crash-save", "exit-save", "hang-save", "garbage", "wrong-rank", "wrong-request",
// "malformed", "wrong-size", "link-out", "move-scratch", "fifo-load", "link-load", "daemon-save",
// "flood-stderr", "deep-reply".
const char* InjectedFaultName(InjectedFault fault);
bool ParseInjectedFault(const std::string& name, InjectedFault* out);
// Every name, comma-separated (for --help and errors).
std::string InjectedFaultNames();

}  // namespace ckptspec
