#include "adapters/builtin/crashing_env.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>

namespace ckptspec {

Status CrashingEnv::NewWritableFile(const std::string& path, std::unique_ptr<WritableFile>* out) {
  if (++created_ == crash_at_) {
    std::fprintf(stderr, "fault crash-save: killing myself before creating %s\n", path.c_str());
    std::fflush(stderr);
    kill(getpid(), SIGKILL);
  }
  return base()->NewWritableFile(path, out);
}

}  // namespace ckptspec
