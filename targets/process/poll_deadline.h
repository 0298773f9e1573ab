// Deadlines for the harness's poll(2) loops, on the steady clock.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>

namespace ckptspec {

using PollClock = std::chrono::steady_clock;

// The point `seconds` from now.
inline PollClock::time_point DeadlineAfter(double seconds) {
  return PollClock::now() +
         std::chrono::duration_cast<PollClock::duration>(std::chrono::duration<double>(seconds));
}

// poll's timeout until `deadline`: whole milliseconds rounded up, 0 once it has passed.
inline int MillisecondsUntil(PollClock::time_point deadline) {
  const double ms = std::chrono::duration<double, std::milli>(deadline - PollClock::now()).count();
  return ms <= 0 ? 0 : static_cast<int>(std::ceil(std::min(ms, 1e9)));
}

}  // namespace ckptspec
