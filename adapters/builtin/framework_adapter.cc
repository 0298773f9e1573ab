#include "adapters/builtin/framework_adapter.h"

#include <utility>

#include "adapters/builtin/call_requests.h"
#include "harness/spec_framework.h"
#include "base/env.h"
#include "targets/process/framework_protocol.h"
#include "targets/process/protocol.h"
#include "targets/reference/reference_factory.h"

namespace ckptspec {

using nlohmann::json;

FrameworkAdapter::FrameworkAdapter(FrameworkAdapterOptions options)
    : options_(std::move(options)) {}

std::vector<json> FrameworkAdapter::Serve(const std::vector<json>& requests) {
  const int n = static_cast<int>(requests.size());
  std::vector<json> replies(n);
  for (int r = 0; r < n; ++r) replies[r] = ReplyTo(requests[r], r);
  std::string op;
  Status s = CheckAgreement(requests, &op);
  if (s.ok() && op == "hello") s = CheckHello(requests, options_.world_size);
  // Every rank asks the same of the spec's job, which holds every rank: rank 0's request serves.
  if (s.ok()) s = Serve(op, requests[0], &replies);
  if (!s.ok()) FailAll(requests, s, &replies);
  return replies;
}

Status FrameworkAdapter::TargetFor(const std::string& directory, Target** target) {
  if (!target_ || directory != directory_) {
    if (target_) CKPTSPEC_RETURN_IF_ERROR(target_->engine().Finalize());
    TargetOptions deferred;  // async saves complete at finalize, save or load
    ReplacedParts parts = options_.parts ? options_.parts(targets_made_) : ReplacedParts();
    ++targets_made_;
    target_ = std::make_unique<ReferenceTarget>(
        "reference", ReferenceOptionsFor(Env::Posix(), directory, deferred), std::move(parts));
    directory_ = directory;
  }
  *target = target_.get();
  return Status::OK();
}

Status FrameworkAdapter::Serve(const std::string& op, const json& request,
                               std::vector<json>* replies) {
  if (op == "hello") {
    HelloReply hello;
    hello.adapter = "ckptspec-reference-framework";
    hello.capabilities.resharding = true;
    hello.capabilities.plan_cache = true;
    hello.capabilities.strict_modes = true;
    hello.capabilities.async = true;
    hello.reset = options_.reset;
    FrameworkSupport support = SpecFrameworkSupport();
    support.library = "the specification's own framework over the reference checkpointer" +
                      std::string(options_.parts ? " (a mutant's parts)" : "");
    hello.framework = std::move(support);
    for (json& reply : *replies) HelloReplyToJson(hello, &reply);
    return Status::OK();
  }
  if (op == "build") {
    FrameworkJob job;
    CKPTSPEC_RETURN_IF_ERROR(BuildCallFromJson(request, &job));
    if (job.world_size() != options_.world_size) {
      return Status::InvalidArgument("build: a job of " + std::to_string(job.world_size()) +
                                     " ranks sent to " + std::to_string(options_.world_size));
    }
    return job_.Build(job);
  }
  if (op == "train") {
    TrainCall call;
    CKPTSPEC_RETURN_IF_ERROR(TrainCallFromJson(request, &call));
    TrainResult result;
    CKPTSPEC_RETURN_IF_ERROR(job_.Train(call.steps, call.fault, &result));
    for (json& reply : *replies) TrainReplyToJson(result, &reply);
    return Status::OK();
  }
  if (op == "save") {
    FrameworkSaveCall call;
    CKPTSPEC_RETURN_IF_ERROR(FrameworkSaveCallFromJson(request, &call));
    Target* target = nullptr;
    CKPTSPEC_RETURN_IF_ERROR(TargetFor(call.directory, &target));
    FrameworkSaveResult result;
    CKPTSPEC_RETURN_IF_ERROR(job_.Save(*target, call.async, &result));
    for (size_t r = 0; r < replies->size(); ++r) {
      FrameworkSaveReply reply;
      reply.iteration = result.iteration;
      if (result.signature) reply.signature = result.signature->ranks[r];
      FrameworkSaveReplyToJson(reply, &(*replies)[r]);
    }
    return Status::OK();
  }
  if (op == "finalize") return target_ ? target_->engine().Finalize() : Status::OK();
  if (op == "load") {
    FrameworkLoadCall call;
    CKPTSPEC_RETURN_IF_ERROR(FrameworkLoadCallFromJson(request, &call));
    Target* target = nullptr;
    CKPTSPEC_RETURN_IF_ERROR(TargetFor(call.directory, &target));
    int64_t iteration = 0;
    CKPTSPEC_RETURN_IF_ERROR(job_.Load(*target, call.load, &iteration));
    for (json& reply : *replies) FrameworkLoadReplyToJson(iteration, &reply);
    return Status::OK();
  }
  if (op == "observe") {
    Observation observation;
    CKPTSPEC_RETURN_IF_ERROR(job_.Observe(&observation));
    for (size_t r = 0; r < replies->size(); ++r) ObserveReplyToJson(observation[r], &(*replies)[r]);
    return Status::OK();
  }
  if (op == "reset" && options_.reset) {
    job_ = SpecJob();
    target_.reset();  // a pending async save is completed by the engine's end
    directory_.clear();
    return Status::OK();
  }
  if (op == "shutdown") return Status::OK();
  return Status::NotSupported("unknown op \"" + op + "\"");
}

}  // namespace ckptspec
