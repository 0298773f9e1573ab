#include "cli/out_of_memory.h"

#include <sys/resource.h>

namespace ckptspec {

std::string OutOfMemoryMessage(const std::string& verb) {
  std::string message = "ckptspec " + verb + ": out of memory";
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    message +=
        " (its address space is limited to " + std::to_string(limit.rlim_cur >> 20) + " MiB)";
  }
  return message;
}

}  // namespace ckptspec
