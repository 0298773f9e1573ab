// MemEnv: an in-memory Env with deterministic fault injection, modelled on LevelDB's
// fault_injection_test.cc. It is a FaultInjectionEnv (fault_injection_env.h: operation counting,
// crashes, failing calls, read faults) over an InMemoryEnv of its own (in_memory_env.h: the
// durability model, what survives a power loss, and the stored-byte edits).
//
// A crash and the restart after it: CrashAtOp(k) makes operation k and every later one fail with
// IOError ("crashed"); nothing they would do happens. SimulatePowerLoss() then drops unsynced data
// (InMemoryEnv::SimulatePowerLoss) and lets calls succeed again (FaultInjectionEnv::Restart): files
// opened before the crash stay dead. Restart() alone is a crash the data outlived, as when only the
// process died.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/fault_injection_env.h"
#include "base/in_memory_env.h"

namespace ckptspec {

class MemEnv : public FaultInjectionEnv {
 public:
  MemEnv();
  ~MemEnv() override;

  // Env's default: the store has no sparse files, and the call is one GetFileSize operation.
  Status GetFileStoredSize(const std::string& path, uint64_t* size) override;

  void SimulatePowerLoss();
  // InMemoryEnv's: change what is stored (live and durable); no operation is counted.
  Status CorruptStoredByte(const std::string& path, uint64_t offset, uint8_t xor_mask);
  Status TruncateStored(const std::string& path, uint64_t size);
  // Total bytes held in files reachable from the live tree.
  uint64_t LiveBytes() const;

 private:
  // Builds the store before the FaultInjectionEnv base that wraps it.
  explicit MemEnv(std::unique_ptr<InMemoryEnv> store);

  std::unique_ptr<InMemoryEnv> store_;
};

}  // namespace ckptspec
