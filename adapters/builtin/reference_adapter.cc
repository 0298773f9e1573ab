#include "adapters/builtin/reference_adapter.h"

#include <algorithm>
#include <memory>
#include <set>
#include <utility>

#include "adapters/builtin/call_requests.h"
#include "model/box.h"
#include "targets/process/protocol.h"
#include "targets/process/scratch_file.h"

namespace ckptspec {
namespace {

using nlohmann::json;

constexpr uint64_t kMaxEntryBytes = uint64_t{1} << 34;

std::set<std::string> Keys(const ShardedStateDict& dict) {
  std::set<std::string> keys;
  for (const ShardedTensor& t : dict.tensors) keys.insert(t.spec.key);
  for (const ShardedObject& o : dict.objects) keys.insert(o.spec.key);
  return keys;
}

}  // namespace

ReferenceAdapter::ReferenceAdapter(ReferenceAdapterOptions options)
    : options_(std::move(options)) {}

std::vector<json> ReferenceAdapter::Serve(const std::vector<json>& requests) {
  const int n = static_cast<int>(requests.size());
  std::vector<json> replies(n);
  for (int r = 0; r < n; ++r) replies[r] = ReplyTo(requests[r], r);
  std::string op;
  Status s = CheckAgreement(requests, &op);
  if (s.ok()) {
    if (op == "hello") {
      s = Hello(requests, &replies);
    } else if (op == "save") {
      s = Save(requests);
    } else if (op == "finalize") {
      s = engine_ ? engine_->Finalize() : Status::OK();
      live_.reset();
    } else if (op == "poll" && options_.poll) {
      s = Poll(requests, &replies);
    } else if (op == "load") {
      s = Load(requests, &replies);
      live_.reset();  // the load completed the pending save first
    } else if (op == "reset" && options_.reset) {
      engine_.reset();
      live_.reset();
      directory_.clear();
    } else if (op != "shutdown") {
      s = Status::NotSupported("unknown op \"" + op + "\"");
    }
  }
  if (!s.ok()) FailAll(requests, s, &replies);
  return replies;
}

Status ReferenceAdapter::Hello(const std::vector<json>& requests, std::vector<json>* replies) {
  CKPTSPEC_RETURN_IF_ERROR(CheckHello(requests, options_.world_size));
  HelloReply hello;
  hello.adapter = "ckptspec-reference";
  hello.capabilities = ReferenceEngine(ReferenceOptions()).capabilities();
  hello.reset = options_.reset;
  hello.poll = options_.poll;
  hello.packed = options_.packed;
  for (json& reply : *replies) HelloReplyToJson(hello, &reply);
  return Status::OK();
}

Status ReferenceAdapter::EngineFor(const std::string& directory, ReferenceEngine** engine) {
  if (!engine_ || directory != directory_) {
    if (engine_) CKPTSPEC_RETURN_IF_ERROR(engine_->Finalize());
    ReferenceOptions options;
    options.env = options_.env;
    options.root = directory;
    options.async_execution = options_.async_execution;
    engine_ = options_.make_engine ? options_.make_engine(std::move(options))
                                   : std::make_unique<ReferenceEngine>(std::move(options));
    directory_ = directory;
  }
  *engine = engine_.get();
  return Status::OK();
}

Status ReferenceAdapter::Save(const std::vector<json>& requests) {
  auto live = std::make_shared<std::vector<ShardedStateDict>>(requests.size());
  std::vector<ShardedStateDict>& dicts = *live;
  std::vector<std::vector<Placement>> placements(requests.size());
  SaveCall first;
  for (size_t r = 0; r < requests.size(); ++r) {
    SaveCall call;
    CKPTSPEC_RETURN_IF_ERROR(
        SaveCallFromJson(requests[r], &call).WithContext("rank " + std::to_string(r)));
    ShardedStateDict& dict = dicts[r];
    EntryReader reader(kMaxEntryBytes);
    for (const WireTensor& w : call.tensors) {
      std::string bytes;
      CKPTSPEC_RETURN_IF_ERROR(reader.Read(w.file, w.range, &bytes));
      dict.tensors.push_back({w.spec, std::vector<uint8_t>(bytes.begin(), bytes.end())});
    }
    for (const WireObject& w : call.objects) {
      ShardedObject o{w.spec, std::string()};
      CKPTSPEC_RETURN_IF_ERROR(reader.Read(w.file, w.range, &o.data));
      dict.objects.push_back(std::move(o));
    }
    dict.common = std::move(call.common);
    placements[r] = call.placements;
    if (r == 0) {
      first = std::move(call);
    } else if (call.directory != first.directory || call.iteration != first.iteration) {
      return Status::InvalidArgument("rank " + std::to_string(r) + " saves iteration " +
                                     std::to_string(call.iteration) + " to '" + call.directory +
                                     "', rank 0 iteration " + std::to_string(first.iteration) +
                                     " to '" + first.directory + "'");
    }
  }
  ReferenceEngine* engine;
  CKPTSPEC_RETURN_IF_ERROR(EngineFor(first.directory, &engine));
  live_.reset();  // the save completes a pending one first
  CKPTSPEC_RETURN_IF_ERROR(
      engine->Save(first.iteration, SaveInput(live, std::move(placements)), first.options));
  if (first.options.async) live_ = std::move(live);
  return Status::OK();
}

Status ReferenceAdapter::UpdateInPlace(size_t rank, const PollUpdate& update, EntryReader* reader) {
  const std::string what = "poll update of tensor " + std::to_string(update.index);
  if (!live_ || rank >= live_->size() ||
      static_cast<size_t>(update.index) >= (*live_)[rank].tensors.size()) {
    return Status::InvalidArgument(what + ": the pending async save has no such tensor");
  }
  std::vector<uint8_t>& buffer = (*live_)[rank].tensors[update.index].data;
  std::string bytes;
  CKPTSPEC_RETURN_IF_ERROR(reader->Read(update.file, update.range, &bytes).WithContext(what));
  if (bytes.size() != buffer.size()) {
    return Status::InvalidArgument(what + ": " + std::to_string(bytes.size()) +
                                   " bytes, the tensor has " + std::to_string(buffer.size()));
  }
  std::copy(bytes.begin(), bytes.end(), buffer.begin());  // in place, as training writes
  return Status::OK();
}

Status ReferenceAdapter::Poll(const std::vector<json>& requests, std::vector<json>* replies) {
  for (size_t r = 0; r < requests.size(); ++r) {
    PollCall call;
    const std::string where = "rank " + std::to_string(r);
    CKPTSPEC_RETURN_IF_ERROR(PollCallFromJson(requests[r], &call).WithContext(where));
    EntryReader reader(kMaxEntryBytes);
    for (const PollUpdate& u : call.updates) {
      const Status updated = UpdateInPlace(r, u, &reader);
      if (!updated.ok()) {
        // The save ends with this reply's error (docs/PROTOCOL.md, poll): it is completed here.
        if (engine_) engine_->Finalize().IgnoreError();
        live_.reset();
        return updated.WithContext(where);
      }
    }
  }
  PollReply reply;
  if (engine_) {
    const Status s = engine_->Poll(&reply.complete);
    if (!s.ok() || reply.complete) live_.reset();
    CKPTSPEC_RETURN_IF_ERROR(s);
  }
  for (json& out : *replies) PollReplyToJson(reply, &out);
  return Status::OK();
}

Status ReferenceAdapter::Load(const std::vector<json>& requests, std::vector<json>* replies) {
  const size_t n = requests.size();
  std::vector<LoadCall> calls(n);
  LoadRequest request;
  request.templates.resize(n);
  for (size_t r = 0; r < n; ++r) {
    CKPTSPEC_RETURN_IF_ERROR(
        LoadCallFromJson(requests[r], &calls[r]).WithContext("rank " + std::to_string(r)));
    if (calls[r].directory != calls[0].directory || calls[r].iteration != calls[0].iteration ||
        calls[r].strict != calls[0].strict ||
        calls[r].allow_shape_mismatch != calls[0].allow_shape_mismatch) {
      return Status::InvalidArgument("rank " + std::to_string(r) +
                                     "'s load (directory, iteration, strict, allow_shape_mismatch) "
                                     "differs from rank 0's");
    }
    for (const WireTensor& w : calls[r].tensors) {
      ShardedTensor t{w.spec, {}};
      t.data.assign(static_cast<size_t>(DTypeSize(w.spec.dtype) * Volume(w.spec.local_shape)), 0);
      request.templates[r].tensors.push_back(std::move(t));
    }
    for (const WireObject& w : calls[r].objects)
      request.templates[r].objects.push_back({w.spec, {}});
  }
  request.iteration = calls[0].iteration;
  request.strict = calls[0].strict;
  request.allow_shape_mismatch = calls[0].allow_shape_mismatch;
  std::vector<std::set<std::string>> requested(n);
  for (size_t r = 0; r < n; ++r) requested[r] = Keys(request.templates[r]);
  ReferenceEngine* engine;
  CKPTSPEC_RETURN_IF_ERROR(EngineFor(calls[0].directory, &engine));
  LoadResult result;
  CKPTSPEC_RETURN_IF_ERROR(engine->Load(std::move(request), &result));
  for (size_t r = 0; r < n; ++r) {
    const ShardedStateDict& state = result.state[r];
    // Entries keep their template order, minus dropped keys: match them up by position.
    size_t t = 0, o = 0;
    bool falsify = static_cast<int>(r) == options_.wrong_size_rank;
    EntryWriter writer(kMaxEntryBytes);
    for (const WireTensor& w : calls[r].tensors) {
      if (t < state.tensors.size() && state.tensors[t].spec == w.spec) {
        const auto& data = state.tensors[t++].data;
        static const uint8_t kExtra = 0;
        // The fault: one byte short, or one byte where none belongs.
        const Status written = !falsify ? writer.Write(w.file, w.range, data.data(), data.size())
                               : data.empty()
                                   ? writer.Write(w.file, w.range, &kExtra, 1)
                                   : writer.Write(w.file, w.range, data.data(), data.size() - 1);
        falsify = false;
        CKPTSPEC_RETURN_IF_ERROR(written);
      }
    }
    for (const WireObject& w : calls[r].objects) {
      if (o < state.objects.size() && state.objects[o].spec == w.spec) {
        const std::string& data = state.objects[o++].data;
        CKPTSPEC_RETURN_IF_ERROR(writer.Write(w.file, w.range, data.data(), data.size()));
      }
    }
    CKPTSPEC_RETURN_IF_ERROR(writer.Finish());
    LoadReply reply;
    reply.iteration = result.iteration;
    reply.common = state.common;
    const std::set<std::string> kept = Keys(state);
    for (const std::string& k : requested[r]) {
      if (!kept.count(k)) reply.dropped.push_back(k);
    }
    if (r < result.unexpected.size()) reply.unexpected = result.unexpected[r];
    reply.missing = result.missing;
    if (r == 0) reply.warnings = result.warnings;
    LoadReplyToJson(reply, &(*replies)[r]);
  }
  return Status::OK();
}

}  // namespace ckptspec
