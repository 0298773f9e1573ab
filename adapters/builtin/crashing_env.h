// An Env over another that kills its own process (SIGKILL) when the Nth file is created: the
// built-in adapter's "crash mid-save" fault, leaving a partial save on the real disk.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "base/env_wrapper.h"

namespace ckptspec {

class CrashingEnv : public EnvWrapper {
 public:
  // Crashes at the `crash_at`-th NewWritableFile call (1 = the first).
  CrashingEnv(Env* base, int crash_at) : EnvWrapper(base), crash_at_(crash_at) {}

  Status NewWritableFile(const std::string& path, std::unique_ptr<WritableFile>* out) override;

 private:
  const int crash_at_;
  std::atomic<int> created_{0};
};

}  // namespace ckptspec
