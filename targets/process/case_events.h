// What the processes behind a target did during one property case that no engine call could
// return to the property: recorded by the adapter harness (ProcessEngine), read by the property
// runner after the case (runner/runner.h), which turns them into the case's verdict.
#pragma once

#include "model/status.h"

namespace ckptspec {

struct CaseEvents {
  // The first request of the case that got no reply before its deadline (the kTimedOut fault).
  // The runner fails the case with it, and does not run the cases that shrinking proposes after
  // it: each would cost the whole timeout again.
  Status timed_out;
  // The first fault found when a group of the case was given back as its engine was destroyed,
  // outside any call: processes left running after shutdown or reset (kLeftBehind), or a reset
  // the adapter refused or did not answer.
  Status release_fault;
};

}  // namespace ckptspec
