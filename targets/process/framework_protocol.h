// The framework adapter's messages (docs/PROTOCOL.md, "Framework adapters") as structs and their
// JSON form, for both sides: the harness (process_framework.h) writes requests and reads
// replies; the built-in adapter's framework mode (adapters/builtin/) reads requests and writes
// replies. Replies come from untrusted processes: every *FromJson never throws and refuses a
// missing, mistyped or out-of-range member with an InvalidArgument naming it ("observe.observation
// .model.w: expected 16 hex digits, got 3"); unknown members of a request or reply are ignored
// (later revisions may add some), those of the job and the observation are not.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "model/framework_job.h"
#include "model/observation.h"
#include "model/sharded.h"
#include "model/status.h"
#include "targets/tested_framework.h"

namespace ckptspec {

struct TrainCall {
  int64_t steps = 0;
  bool fault = false;
};

struct FrameworkSaveCall {
  std::string directory;
  bool async = false;
};

struct FrameworkLoadCall {
  std::string directory;
  FrameworkLoad load;
};

// One rank's reply to save: the saved iteration and, where the adapter reports it, its signature.
struct FrameworkSaveReply {
  int64_t iteration = 0;
  std::optional<RankSignature> signature;
};

void BuildCallToJson(const FrameworkJob& job, nlohmann::json* request);
Status BuildCallFromJson(const nlohmann::json& request, FrameworkJob* out);
void TrainCallToJson(const TrainCall& call, nlohmann::json* request);
Status TrainCallFromJson(const nlohmann::json& request, TrainCall* out);
void TrainReplyToJson(const TrainResult& result, nlohmann::json* reply);
Status TrainReplyFromJson(const nlohmann::json& reply, TrainResult* out);
void FrameworkSaveCallToJson(const FrameworkSaveCall& call, nlohmann::json* request);
Status FrameworkSaveCallFromJson(const nlohmann::json& request, FrameworkSaveCall* out);
void FrameworkSaveReplyToJson(const FrameworkSaveReply& save, nlohmann::json* reply);
// `rank`: the replying rank, which the signature must name.
Status FrameworkSaveReplyFromJson(const nlohmann::json& reply, int64_t rank,
                                  FrameworkSaveReply* out);
void FrameworkLoadCallToJson(const FrameworkLoadCall& call, nlohmann::json* request);
Status FrameworkLoadCallFromJson(const nlohmann::json& request, FrameworkLoadCall* out);
void FrameworkLoadReplyToJson(int64_t iteration, nlohmann::json* reply);
Status FrameworkLoadReplyFromJson(const nlohmann::json& reply, int64_t* iteration);
void ObserveReplyToJson(const RankObservation& observation, nlohmann::json* reply);
Status ObserveReplyFromJson(const nlohmann::json& reply, RankObservation* out);

}  // namespace ckptspec
