#include "targets/process/rank_endpoint.h"

namespace ckptspec {

std::pair<AdapterFault, std::string> ProcessRank::Ended(const std::string& during) {
  if (!process_.WaitFor(2.0)) {
    return {AdapterFault::kExited, "closed its stdout or stdin while running, during " + during};
  }
  return {process_.died_of_signal() ? AdapterFault::kCrashed : AdapterFault::kExited,
          process_.ExitDescription() + " during " + during};
}

}  // namespace ckptspec
