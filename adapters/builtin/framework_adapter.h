// The built-in adapter's framework mode (docs/PROTOCOL.md, "Framework adapters"; main.cc
// --framework): rank 0 serves every rank's request of one call with the spec's own framework
// (harness/spec_job.h) saving and loading through a reference target on the real disk -- or,
// with a mutant's parts, through that mutant's framework layer, plan cache and engine. This puts
// the framework protocol's whole path (the harness's ProcessFramework, the messages, the verdicts,
// live groups) under test without Python, and shows what the framework properties make of a
// mutant served through it.
//
// Contracts:
//  - Serve takes one request per rank (parsed; null for a line that did not parse) and returns one
//    reply per rank; never throws. Requests must agree on "op" and "id" (call_requests.h); an
//    error is every rank's error reply.
//  - One reference target per checkpoint directory, kept across calls (its plan cache, a pending
//    async save), as a training process keeps its checkpointer; reset forgets the job and the
//    target, as a new process would.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/spec_job.h"
#include "targets/reference/reference_target.h"

namespace ckptspec {

struct FrameworkAdapterOptions {
  int world_size = 1;
  bool reset = true;  // declare the reset capability
  // Null: the reference's parts; else a mutant's, made again for every new target: each target
  // is a new process of the job, the adapter's n-th target (from 0) its process n.
  MakeParts parts;
};

class FrameworkAdapter {
 public:
  explicit FrameworkAdapter(FrameworkAdapterOptions options);
  std::vector<nlohmann::json> Serve(const std::vector<nlohmann::json>& requests);

 private:
  Status Serve(const std::string& op, const nlohmann::json& request,
               std::vector<nlohmann::json>* replies);
  // The target whose storage is `directory` (a new one, finalizing the old, when it changed).
  Status TargetFor(const std::string& directory, Target** target);

  FrameworkAdapterOptions options_;
  SpecJob job_;
  std::string directory_;
  std::unique_ptr<ReferenceTarget> target_;
  int targets_made_ = 0;  // the process ordinal of the next target
};

}  // namespace ckptspec
