#include "targets/process/framework_protocol.h"

#include <utility>

#include "model/framework_support.h"
#include "model/json_fields.h"
#include "model/signature_json.h"

namespace ckptspec {
namespace {

using nlohmann::json;

// Runs read on the message as a JsonField, the error prefixed by the op: "train.steps: ...".
template <typename Reader>
Status ReadMessage(const json& message, const char* op, Reader read) {
  const Status s = read(JsonField(message));
  if (s.ok()) return s;
  return Status::InvalidArgument(std::string(op) + "." + s.message());
}

}  // namespace

void BuildCallToJson(const FrameworkJob& job, json* request) {
  (*request)["job"] = FrameworkJobToJson(job);
}

Status BuildCallFromJson(const json& request, FrameworkJob* out) {
  return ReadMessage(request, "build", [&](const JsonField& f) {
    return FrameworkJobFromJson(f.Member("job"), out);
  });
}

void TrainCallToJson(const TrainCall& call, json* request) {
  (*request)["steps"] = call.steps;
  (*request)["fault"] = call.fault;
}

Status TrainCallFromJson(const json& request, TrainCall* out) {
  return ReadMessage(request, "train", [&](const JsonField& f) {
    CKPTSPEC_RETURN_IF_ERROR(f.Member("steps").GetInt64(0, int64_t{1} << 20, &out->steps));
    out->fault = false;
    return f.OptionalMember("fault").GetBool(&out->fault);
  });
}

void TrainReplyToJson(const TrainResult& result, json* reply) {
  (*reply)["iteration"] = result.iteration;
  (*reply)["checkpoint_and_exit"] = result.checkpoint_and_exit;
}

Status TrainReplyFromJson(const json& reply, TrainResult* out) {
  return ReadMessage(reply, "train", [&](const JsonField& f) {
    CKPTSPEC_RETURN_IF_ERROR(f.Member("iteration").GetNonNegativeInt64(&out->iteration));
    return f.Member("checkpoint_and_exit").GetBool(&out->checkpoint_and_exit);
  });
}

void FrameworkSaveCallToJson(const FrameworkSaveCall& call, json* request) {
  (*request)["directory"] = call.directory;
  (*request)["async"] = call.async;
}

Status FrameworkSaveCallFromJson(const json& request, FrameworkSaveCall* out) {
  return ReadMessage(request, "save", [&](const JsonField& f) {
    CKPTSPEC_RETURN_IF_ERROR(f.Member("directory").GetString(&out->directory));
    out->async = false;
    return f.OptionalMember("async").GetBool(&out->async);
  });
}

void FrameworkSaveReplyToJson(const FrameworkSaveReply& save, json* reply) {
  (*reply)["iteration"] = save.iteration;
  if (save.signature) {
    GlobalSignature one;
    one.ranks.push_back(*save.signature);
    (*reply)["signature"] = SignatureToJson(one)["ranks"][0];
  }
}

Status FrameworkSaveReplyFromJson(const json& reply, int64_t rank, FrameworkSaveReply* out) {
  CKPTSPEC_RETURN_IF_ERROR(ReadMessage(reply, "save", [&](const JsonField& f) {
    return f.Member("iteration").GetNonNegativeInt64(&out->iteration);
  }));
  out->signature.reset();
  const auto it = reply.find("signature");
  if (it == reply.end()) return Status::OK();
  // The rank entry read as the one rank of a signature: every check of signature_json.h.
  json document{
      {"format", kSignatureFormat}, {"version", kSignatureVersion}, {"ranks", json::array({*it})}};
  if (it->is_object()) document["ranks"][0]["rank"] = 0;  // the reader numbers ranks from 0
  GlobalSignature signature;
  const Status s = SignatureFromJson(document, &signature);
  if (!s.ok()) return Status::InvalidArgument("save.signature: " + s.message());
  const json& named = (*it)["rank"];
  if (!named.is_number_integer() || named.get<int64_t>() != rank) {
    return Status::InvalidArgument("save.signature.rank: expected " + std::to_string(rank) +
                                   ", the replying rank, got " + JsonPreview(named));
  }
  signature.ranks[0].rank = rank;
  out->signature = std::move(signature.ranks[0]);
  return Status::OK();
}

void FrameworkLoadCallToJson(const FrameworkLoadCall& call, json* request) {
  (*request)["directory"] = call.directory;
  (*request)["iteration"] = call.load.iteration ? json(*call.load.iteration) : json(nullptr);
  (*request)["flags"] = LoadFlagsToJson(call.load.flags);
  (*request)["strict"] = StrictModeName(call.load.strict);
}

Status FrameworkLoadCallFromJson(const json& request, FrameworkLoadCall* out) {
  return ReadMessage(request, "load", [&](const JsonField& f) {
    CKPTSPEC_RETURN_IF_ERROR(f.Member("directory").GetString(&out->directory));
    out->load = FrameworkLoad();
    const JsonField iteration = f.OptionalMember("iteration");
    if (iteration.present() && !iteration.value().is_null()) {
      int64_t value = 0;
      CKPTSPEC_RETURN_IF_ERROR(iteration.GetNonNegativeInt64(&value));
      out->load.iteration = value;
    }
    CKPTSPEC_RETURN_IF_ERROR(LoadFlagsFromJson(f.OptionalMember("flags"), &out->load.flags));
    return f.OptionalMember("strict").GetEnum(ParseStrictMode, &out->load.strict);
  });
}

void FrameworkLoadReplyToJson(int64_t iteration, json* reply) { (*reply)["iteration"] = iteration; }

Status FrameworkLoadReplyFromJson(const json& reply, int64_t* iteration) {
  return ReadMessage(reply, "load", [&](const JsonField& f) {
    return f.Member("iteration").GetNonNegativeInt64(iteration);
  });
}

void ObserveReplyToJson(const RankObservation& observation, json* reply) {
  (*reply)["observation"] = RankObservationToJson(observation);
}

Status ObserveReplyFromJson(const json& reply, RankObservation* out) {
  return ReadMessage(reply, "observe", [&](const JsonField& f) {
    return RankObservationFromJson(f.Member("observation"), out);
  });
}

}  // namespace ckptspec
