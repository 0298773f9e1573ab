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
};

// "none", "crash-save", "exit-save", "hang-save", "garbage", "wrong-rank", "wrong-request",
// "malformed", "wrong-size".
const char* InjectedFaultName(InjectedFault fault);
bool ParseInjectedFault(const std::string& name, InjectedFault* out);
// Every name, comma-separated (for --help and errors).
std::string InjectedFaultNames();

}  // namespace ckptspec
