// A framework under test: a whole training job driven through operations, as a framework adapter
// serves them (docs/PROTOCOL.md, "Framework adapters"), or the spec's own framework in process
// (harness/spec_framework.h). The framework properties (properties/framework/) run on it.
//
// Contracts (every implementation):
//  - Every call returns a Status; nothing throws. A failed call leaves the job as the framework
//    left it (a property usually ends the case there).
//  - Build is the first call after construction or NewProcess; Train, Save, Load and Observe
//    need a built job; Load resumes the job the last Build made from the storage.
//  - The storage (the checkpoint directory) lives as long as the object: NewProcess ends the
//    training process (the job is forgotten, a pending async save is left to the process's end)
//    and starts a fresh one over the same storage.
//  - Observe changes nothing; its result has one RankObservation per rank of the job, in rank
//    order.
#pragma once

#include <cstdint>
#include <optional>

#include "model/framework_job.h"
#include "model/load_semantics.h"
#include "model/observation.h"
#include "model/sharded.h"
#include "model/status.h"
#include "targets/strict_mode.h"

namespace ckptspec {

struct TrainResult {
  int64_t iteration = 0;
  bool checkpoint_and_exit = false;  // a fault made the rerun machine ask for a fault save
};

struct FrameworkSaveResult {
  int64_t iteration = 0;
  // Every rank's signature (what it handed its checkpointer), where the framework reports one.
  std::optional<GlobalSignature> signature;
};

struct FrameworkLoad {
  std::optional<int64_t> iteration;  // nullopt: the tracker's
  LoadFlags flags;
  StrictMode strict = StrictMode::kAssumeOkUnexpected;
};

class FrameworkUnderTest {
 public:
  FrameworkUnderTest() = default;
  FrameworkUnderTest(const FrameworkUnderTest&) = delete;  // a polymorphic base: never copied
  FrameworkUnderTest& operator=(const FrameworkUnderTest&) = delete;
  virtual ~FrameworkUnderTest() = default;

  virtual Status Build(const FrameworkJob& job) = 0;
  // `steps` iterations; with `fault`, then one iteration that hits a persistent fault (the
  // rerun machine asks for a checkpoint and exit; docs/PROTOCOL.md, train).
  virtual Status Train(int64_t steps, bool fault, TrainResult* result) = 0;
  virtual Status Save(bool async, FrameworkSaveResult* result) = 0;
  virtual Status Finalize() = 0;
  // *iteration: the loop's iteration after the load.
  virtual Status Load(const FrameworkLoad& load, int64_t* iteration) = 0;
  virtual Status Observe(Observation* out) = 0;
  virtual void NewProcess() = 0;
};

}  // namespace ckptspec
