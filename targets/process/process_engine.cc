#include "targets/process/process_engine.h"

#include <set>
#include <utility>

#include "model/box.h"
#include "targets/env/env.h"
#include "targets/process/scratch_file.h"

namespace ckptspec {
namespace {

using nlohmann::json;

// Largest object a load may hand back through a scratch file.
constexpr uint64_t kMaxObjectBytes = uint64_t{1} << 30;

// OK when every rank replied ok; else the lowest failing rank's error.
Status FirstError(const std::vector<json>& replies) {
  for (size_t r = 0; r < replies.size(); ++r) {
    if (replies[r]["ok"].get<bool>()) continue;
    Status error;
    (void)ErrorFromJson(replies[r]["error"], &error);  // well-formed: RankGroup::Call checked it
    return error.WithContext("adapter rank " + std::to_string(r));
  }
  return Status::OK();
}

std::string RankDir(const std::string& scratch, int rank) {
  return JoinPath(scratch, "r" + std::to_string(rank));
}

// Removes a call's scratch directory when the call ends, however it ends.
struct ScratchGuard {
  std::string dir;
  ~ScratchGuard() {
    if (!dir.empty()) (void)RemoveRecursively(Env::Posix(), dir);
  }
};

}  // namespace

ProcessEngine::ProcessEngine(ProcessEngineOptions options)
    : options_(std::move(options)), capabilities_(options_.capabilities) {}

ProcessEngine::~ProcessEngine() {
  if (group_) group_->Shutdown();
}

Status ProcessEngine::Probe(const std::string& command, const std::string& work_dir,
                            double timeout_s, HelloReply* hello) {
  const std::string logs = JoinPath(work_dir, "logs");
  CKPTSPEC_RETURN_IF_ERROR(CreateDirs(Env::Posix(), logs));
  RequestIds ids;
  RankGroup group(RankGroupOptions{command, 1, logs, timeout_s}, &ids);
  CKPTSPEC_RETURN_IF_ERROR(group.Start(hello));
  group.Shutdown();
  return Status::OK();
}

Status ProcessEngine::EnsureGroup(int world_size) {
  if (group_ && group_->alive() && group_->world_size() == world_size) return Status::OK();
  if (options_.directory.empty() || options_.work_dir.empty()) {
    return Status::FailedPrecondition("adapter harness: no checkpoint or work directory was given");
  }
  Status pending;
  if (group_ && group_->alive()) {
    pending = Finalize();
    group_->Shutdown();
  }
  group_.reset();
  if (!pending.ok()) return pending;
  const std::string logs = JoinPath(options_.work_dir, "logs");
  CKPTSPEC_RETURN_IF_ERROR(CreateDirs(Env::Posix(), logs).WithContext("adapter harness"));
  group_ = std::make_unique<RankGroup>(
      RankGroupOptions{options_.command, world_size, logs, options_.timeout_s}, &ids_);
  HelloReply hello;
  const Status started = group_->Start(&hello);
  for (pid_t pid : group_->pids()) started_pids_.push_back(pid);
  CKPTSPEC_RETURN_IF_ERROR(started);
  capabilities_ = hello.capabilities;
  return Status::OK();
}

Status ProcessEngine::MakeScratch(int ranks, std::string* dir) {
  *dir = JoinPath(JoinPath(options_.work_dir, "scratch"), std::to_string(++scratch_count_));
  for (int r = 0; r < ranks; ++r) {
    CKPTSPEC_RETURN_IF_ERROR(CreateDirs(Env::Posix(), RankDir(*dir, r)).WithContext("adapter harness"));
  }
  return Status::OK();
}

Status ProcessEngine::Save(int64_t iteration, const std::vector<ShardedStateDict>& every_rank,
                           const SaveOptions& options) {
  if (every_rank.empty()) return Status::InvalidArgument("save: no ranks");
  const int n = static_cast<int>(every_rank.size());
  CKPTSPEC_RETURN_IF_ERROR(EnsureGroup(n));
  ScratchGuard scratch;
  CKPTSPEC_RETURN_IF_ERROR(MakeScratch(n, &scratch.dir));
  std::vector<json> requests(n, json::object());
  for (int r = 0; r < n; ++r) {
    const ShardedStateDict& dict = every_rank[r];
    SaveCall call;
    call.directory = options_.directory;
    call.iteration = iteration;
    call.options = options;
    call.common = dict.common;
    const std::string dir = RankDir(scratch.dir, r);
    for (size_t i = 0; i < dict.tensors.size(); ++i) {
      WireTensor w{dict.tensors[i].spec, JoinPath(dir, "t" + std::to_string(i))};
      const auto& data = dict.tensors[i].data;
      CKPTSPEC_RETURN_IF_ERROR(WriteScratchFile(w.file, data.data(), data.size()));
      call.tensors.push_back(std::move(w));
    }
    for (size_t i = 0; i < dict.objects.size(); ++i) {
      WireObject w{dict.objects[i].spec, JoinPath(dir, "o" + std::to_string(i))};
      const auto& data = dict.objects[i].data;
      CKPTSPEC_RETURN_IF_ERROR(WriteScratchFile(w.file, data.data(), data.size()));
      call.objects.push_back(std::move(w));
    }
    SaveCallToJson(call, &requests[r]);
  }
  std::vector<json> replies;
  CKPTSPEC_RETURN_IF_ERROR(group_->Call("save", std::move(requests), &replies));
  return FirstError(replies);
}

Status ProcessEngine::Finalize() {
  if (!group_ || !group_->alive()) return Status::OK();
  std::vector<json> requests(group_->world_size(), json::object()), replies;
  CKPTSPEC_RETURN_IF_ERROR(group_->Call("finalize", std::move(requests), &replies));
  return FirstError(replies);
}

Status ProcessEngine::Load(LoadRequest request, LoadResult* result) {
  *result = LoadResult();
  if (request.templates.empty()) return Status::InvalidArgument("load: no ranks");
  const int n = static_cast<int>(request.templates.size());
  CKPTSPEC_RETURN_IF_ERROR(EnsureGroup(n));
  ScratchGuard scratch;
  CKPTSPEC_RETURN_IF_ERROR(MakeScratch(n, &scratch.dir));
  std::vector<LoadCall> calls(n);
  std::vector<json> requests(n, json::object());
  for (int r = 0; r < n; ++r) {
    LoadCall& call = calls[r];
    call.directory = options_.directory;
    call.iteration = request.iteration;
    call.strict = request.strict;
    call.allow_shape_mismatch = request.allow_shape_mismatch;
    const std::string dir = RankDir(scratch.dir, r);
    const ShardedStateDict& t = request.templates[r];
    for (size_t i = 0; i < t.tensors.size(); ++i) {
      call.tensors.push_back({t.tensors[i].spec, JoinPath(dir, "t" + std::to_string(i))});
    }
    for (size_t i = 0; i < t.objects.size(); ++i) {
      call.objects.push_back({t.objects[i].spec, JoinPath(dir, "o" + std::to_string(i))});
    }
    LoadCallToJson(call, &requests[r]);
  }
  std::vector<json> replies;
  CKPTSPEC_RETURN_IF_ERROR(group_->Call("load", std::move(requests), &replies));
  CKPTSPEC_RETURN_IF_ERROR(FirstError(replies));
  std::vector<LoadReply> loaded(n);
  for (int r = 0; r < n; ++r) {
    const Status s = LoadReplyFromJson(replies[r], &loaded[r]);
    if (!s.ok()) return group_->Fault(r, AdapterFault::kMalformedReply, s.message());
    if (loaded[r].iteration != loaded[0].iteration) {
      return group_->Fault(r, AdapterFault::kMalformedReply,
                           "loaded iteration " + std::to_string(loaded[r].iteration) +
                               ", rank 0 loaded iteration " + std::to_string(loaded[0].iteration));
    }
  }
  result->iteration = loaded[0].iteration;
  result->state = std::move(request.templates);
  const bool returns = request.strict == StrictMode::kReturnUnexpected ||
                       request.strict == StrictMode::kReturnAll;
  bool any_unexpected = false;
  for (const LoadReply& l : loaded) any_unexpected = any_unexpected || !l.unexpected.empty();
  if (returns || any_unexpected) result->unexpected.resize(n);
  for (int r = 0; r < n; ++r) {
    CKPTSPEC_RETURN_IF_ERROR(ReadLoadedEntries(r, loaded[r], calls[r], &result->state[r]));
    result->state[r].common = std::move(loaded[r].common);
    if (!result->unexpected.empty()) result->unexpected[r] = std::move(loaded[r].unexpected);
    for (std::string& w : loaded[r].warnings) result->warnings.push_back(std::move(w));
  }
  result->missing = std::move(loaded[0].missing);
  return Status::OK();
}

Status ProcessEngine::ReadLoadedEntries(int rank, const LoadReply& reply, const LoadCall& call,
                                        ShardedStateDict* state) {
  const std::set<std::string> dropped(reply.dropped.begin(), reply.dropped.end());
  std::vector<ShardedTensor> tensors;
  for (size_t i = 0; i < state->tensors.size(); ++i) {
    ShardedTensor& t = state->tensors[i];
    if (dropped.count(t.spec.key)) continue;
    const uint64_t expected =
        static_cast<uint64_t>(DTypeSize(t.spec.dtype)) * static_cast<uint64_t>(Volume(t.spec.local_shape));
    std::string bytes;
    const Status s = ReadScratchFile(call.tensors[i].file, expected, &bytes);
    const std::string what = "tensor '" + t.spec.key + "' (template entry " + std::to_string(i) + ")";
    if (s.code() == Status::Code::kNotFound) {
      return group_->Fault(rank, AdapterFault::kWrongSize, "loaded " + what + " but wrote no file");
    }
    if (s.code() == Status::Code::kCorruption || (s.ok() && bytes.size() != expected)) {
      return group_->Fault(rank, AdapterFault::kWrongSize,
                           "wrote " + (s.ok() ? std::to_string(bytes.size()) : "more than " + std::to_string(expected)) +
                               " bytes for " + what + ", expected " + std::to_string(expected));
    }
    CKPTSPEC_RETURN_IF_ERROR(s.WithContext("adapter harness"));
    t.data.assign(bytes.begin(), bytes.end());
    tensors.push_back(std::move(t));
  }
  std::vector<ShardedObject> objects;
  for (size_t i = 0; i < state->objects.size(); ++i) {
    ShardedObject& o = state->objects[i];
    if (dropped.count(o.spec.key)) continue;
    const Status s = ReadScratchFile(call.objects[i].file, kMaxObjectBytes, &o.data);
    if (s.code() == Status::Code::kNotFound) {
      return group_->Fault(rank, AdapterFault::kWrongSize,
                           "loaded object '" + o.spec.UniqueKey() + "' but wrote no file");
    }
    CKPTSPEC_RETURN_IF_ERROR(s.WithContext("adapter harness"));
    objects.push_back(std::move(o));
  }
  state->tensors = std::move(tensors);
  state->objects = std::move(objects);
  return Status::OK();
}

}  // namespace ckptspec
