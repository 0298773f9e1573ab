// The most ranks a generated layout may have in the run in progress. Properties ask for worlds of
// up to 8 or 16 ranks; a target that cannot serve that many (a pool of ranks an outside launcher
// started: docs/SCALE.md) caps them for as long as a ScopedWorldCap lives, and every generator
// of layouts and runs (layout_gen.h, run_gen.h) draws within the cap. Without a cap nothing
// changes: the same seed draws the same cases.
//
// Contracts: the cap is per thread; scopes nest (the innermost wins, the outer one comes back at
// its end); a cap < 1 is no cap.
#pragma once

#include <algorithm>
#include <cstddef>

namespace ckptspec::gen {

// The current cap; 0 when there is none.
int CurrentWorldCap();
// `max_world` within the current cap.
int CappedWorld(int max_world);
// What each of `modules` modules may have when each may have `max_world`: `max_world` without a
// cap, else an equal share of the capped world (at least 1).
int CappedWorldPerModule(int max_world, size_t modules);

class ScopedWorldCap {
 public:
  explicit ScopedWorldCap(int cap);
  ~ScopedWorldCap();
  ScopedWorldCap(const ScopedWorldCap&) = delete;
  ScopedWorldCap& operator=(const ScopedWorldCap&) = delete;

 private:
  int previous_;
};

}  // namespace ckptspec::gen
