#include "targets/process/process_framework.h"

#include <utility>

#include "model/signature_json.h"
#include "targets/process/framework_protocol.h"

namespace ckptspec {

using nlohmann::json;

ProcessFramework::ProcessFramework(ProcessFrameworkOptions options)
    : options_(std::move(options)),
      slot_(RankGroupOptions{options_.command, 0, options_.timeout_s, {}}, options_.pool,
            options_.events) {}

Status ProcessFramework::NeedsJob(const char* op) const {
  if (!built_ || !slot_.alive()) {
    return Status::FailedPrecondition(std::string("adapter harness: ") + op +
                                      " without a built job");
  }
  return Status::OK();
}

Status ProcessFramework::Malformed(int rank, const std::string& detail) {
  return slot_.group()->Fault(rank, AdapterFault::kMalformedReply, detail);
}

Status ProcessFramework::CallAll(const std::string& op, const json& members,
                                 std::vector<json>* replies) {
  std::vector<json> requests(static_cast<size_t>(slot_.group()->world_size()), members);
  return slot_.Call(op, std::move(requests), replies);
}

Status ProcessFramework::Build(const FrameworkJob& job) {
  if (built_) return Status::FailedPrecondition("adapter harness: build of a built job");
  CKPTSPEC_RETURN_IF_ERROR(slot_.Ensure(static_cast<int>(job.world_size())));
  if (!slot_.group()->hello().framework) {
    return Status::FailedPrecondition("adapter harness: the adapter is no framework adapter");
  }
  json request = json::object();
  BuildCallToJson(job, &request);
  std::vector<json> replies;
  CKPTSPEC_RETURN_IF_ERROR(CallAll("build", request, &replies));
  built_ = true;
  return Status::OK();
}

Status ProcessFramework::Train(int64_t steps, bool fault, TrainResult* result) {
  CKPTSPEC_RETURN_IF_ERROR(NeedsJob("train"));
  json request = json::object();
  TrainCallToJson(TrainCall{steps, fault}, &request);
  std::vector<json> replies;
  CKPTSPEC_RETURN_IF_ERROR(CallAll("train", request, &replies));
  for (size_t r = 0; r < replies.size(); ++r) {
    TrainResult got;
    const Status s = TrainReplyFromJson(replies[r], &got);
    if (!s.ok()) return Malformed(static_cast<int>(r), s.message());
    if (r > 0 && (got.iteration != result->iteration ||
                  got.checkpoint_and_exit != result->checkpoint_and_exit)) {
      return Malformed(static_cast<int>(r),
                       "train: rank 0 and this rank disagree on the "
                       "iteration or on checkpoint_and_exit");
    }
    *result = got;
  }
  return Status::OK();
}

Status ProcessFramework::Save(bool async, FrameworkSaveResult* result) {
  CKPTSPEC_RETURN_IF_ERROR(NeedsJob("save"));
  json request = json::object();
  FrameworkSaveCallToJson(FrameworkSaveCall{options_.directory, async}, &request);
  std::vector<json> replies;
  CKPTSPEC_RETURN_IF_ERROR(CallAll("save", request, &replies));
  *result = FrameworkSaveResult();
  GlobalSignature signature;
  for (size_t r = 0; r < replies.size(); ++r) {
    FrameworkSaveReply got;
    const Status s = FrameworkSaveReplyFromJson(replies[r], static_cast<int64_t>(r), &got);
    if (!s.ok()) return Malformed(static_cast<int>(r), s.message());
    if (r > 0 && got.iteration != result->iteration) {
      return Malformed(static_cast<int>(r), "save: rank 0 saved iteration " +
                                                std::to_string(result->iteration) + ", this rank " +
                                                std::to_string(got.iteration));
    }
    result->iteration = got.iteration;
    if (got.signature) signature.ranks.push_back(std::move(*got.signature));
  }
  if (!signature.ranks.empty()) {
    if (signature.ranks.size() != replies.size()) {
      return Malformed(0, "save: some ranks reported a signature and others did not");
    }
    result->signature = std::move(signature);
  }
  return Status::OK();
}

Status ProcessFramework::Finalize() {
  if (!built_ || !slot_.alive()) return Status::OK();
  std::vector<json> replies;
  return CallAll("finalize", json::object(), &replies);
}

Status ProcessFramework::Load(const FrameworkLoad& load, int64_t* iteration) {
  CKPTSPEC_RETURN_IF_ERROR(NeedsJob("load"));
  json request = json::object();
  FrameworkLoadCallToJson(FrameworkLoadCall{options_.directory, load}, &request);
  std::vector<json> replies;
  CKPTSPEC_RETURN_IF_ERROR(CallAll("load", request, &replies));
  for (size_t r = 0; r < replies.size(); ++r) {
    int64_t got = 0;
    const Status s = FrameworkLoadReplyFromJson(replies[r], &got);
    if (!s.ok()) return Malformed(static_cast<int>(r), s.message());
    if (r > 0 && got != *iteration) {
      return Malformed(static_cast<int>(r), "load: rank 0 resumed at iteration " +
                                                std::to_string(*iteration) + ", this rank at " +
                                                std::to_string(got));
    }
    *iteration = got;
  }
  return Status::OK();
}

Status ProcessFramework::Observe(Observation* out) {
  CKPTSPEC_RETURN_IF_ERROR(NeedsJob("observe"));
  std::vector<json> replies;
  CKPTSPEC_RETURN_IF_ERROR(CallAll("observe", json::object(), &replies));
  out->assign(replies.size(), RankObservation());
  for (size_t r = 0; r < replies.size(); ++r) {
    const Status s = ObserveReplyFromJson(replies[r], &(*out)[r]);
    if (!s.ok()) return Malformed(static_cast<int>(r), s.message());
  }
  return Status::OK();
}

void ProcessFramework::NewProcess() {
  built_ = false;
  const Status released = slot_.Release();
  // A fault of giving the group back is the case's (events.release_fault), as at the end.
  if (!released.ok() && options_.events != nullptr && options_.events->release_fault.ok()) {
    options_.events->release_fault = released;
  }
}

}  // namespace ckptspec
