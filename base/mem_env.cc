#include "base/mem_env.h"

namespace ckptspec {

MemEnv::MemEnv() : MemEnv(std::make_unique<InMemoryEnv>()) {}
MemEnv::MemEnv(std::unique_ptr<InMemoryEnv> store)
    : FaultInjectionEnv(store.get()), store_(std::move(store)) {}
MemEnv::~MemEnv() = default;

Status MemEnv::GetFileStoredSize(const std::string& path, uint64_t* size) {
  return GetFileSize(path, size);
}

void MemEnv::SimulatePowerLoss() {
  store_->SimulatePowerLoss();
  Restart();
}

Status MemEnv::CorruptStoredByte(const std::string& path, uint64_t offset, uint8_t xor_mask) {
  return store_->CorruptStoredByte(path, offset, xor_mask);
}

Status MemEnv::TruncateStored(const std::string& path, uint64_t size) {
  return store_->TruncateStored(path, size);
}

uint64_t MemEnv::LiveBytes() const { return store_->LiveBytes(); }

}  // namespace ckptspec
