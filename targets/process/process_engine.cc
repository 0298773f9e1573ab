#include "targets/process/process_engine.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "model/box.h"
#include "base/env.h"
#include "targets/process/request_writer.h"
#include "targets/process/group_slot.h"

namespace ckptspec {
namespace {

using nlohmann::json;

// Largest object a load may hand back through a scratch file.
constexpr uint64_t kMaxObjectBytes = uint64_t{1} << 30;

// The scratch file name of a rank's entry: "r3.t7" (tensor 7 of rank 3), "r3.o0".
std::string EntryName(int rank, char kind, size_t index) {
  return "r" + std::to_string(rank) + "." + kind + std::to_string(index);
}

// The scratch file that holds a rank's entries of one request when the adapter declared packed
// (revision 4): "r3.save", "r3.poll", "r3.load".
std::string PackedName(int rank, const char* op) { return "r" + std::to_string(rank) + "." + op; }

// One rank's outgoing entry bytes (save, poll): a file each, or, packed, ranges of one file
// written by Finish. Entries are laid out in the order they are added, without gaps.
class OutgoingEntries {
 public:
  // `packed_op`: null for a file per entry, else the request's op naming the packed file.
  OutgoingEntries(ScratchDir* dir, int rank, const char* packed_op)
      : dir_(dir),
        rank_(rank),
        packed_name_(packed_op ? PackedName(rank, packed_op) : std::string()),
        packed_path_(packed_op ? dir->PathOf(packed_name_) : std::string()) {}

  // Adds entry `index` of `kind` ('t' or 'o'); *file and *range are what its wire entry names.
  Status Add(char kind, size_t index, const void* data, size_t size, std::string* file,
             std::optional<FileRange>* range) {
    if (packed_path_.empty()) {
      const std::string name = EntryName(rank_, kind, index);
      *file = dir_->PathOf(name);
      range->reset();
      return dir_->Write(name, data, size).WithContext("adapter harness");
    }
    *file = packed_path_;
    *range = FileRange{bytes_.size(), size};
    bytes_.append(static_cast<const char*>(data), size);
    any_ = true;
    return Status::OK();
  }

  // Writes the packed file, when entries were added to it.
  Status Finish() {
    if (!any_) return Status::OK();
    return dir_->Write(packed_name_, bytes_.data(), bytes_.size()).WithContext("adapter harness");
  }

 private:
  ScratchDir* dir_;
  int rank_;
  std::string packed_name_, packed_path_;
  std::string bytes_;
  bool any_ = false;
};

// The bytes of a tensor's local chunk.
uint64_t ExpectedBytes(const TensorSpec& spec) {
  return static_cast<uint64_t>(DTypeSize(spec.dtype)) *
         static_cast<uint64_t>(Volume(spec.local_shape));
}

}  // namespace

ProcessEngine::ProcessEngine(ProcessEngineOptions options)
    : options_(std::move(options)),
      capabilities_(options_.capabilities),
      slot_(RankGroupOptions{options_.command, 0, options_.timeout_s, options_.extra_env},
            options_.pool, options_.events) {}

ProcessEngine::~ProcessEngine() = default;  // the slot gives the group back (group_slot.h)

Status ProcessEngine::ReleaseGroup() {
  pending_.reset();  // a fresh group has no pending save
  return slot_.Release();
}

Status ProcessEngine::Probe(const std::string& command, double timeout_s, HelloReply* hello) {
  RequestIds ids;
  RankGroup group(RankGroupOptions{command, 1, timeout_s}, &ids);
  CKPTSPEC_RETURN_IF_ERROR(group.Start(hello));
  return group.Shutdown();
}

Status ProcessEngine::EnsureGroup(int world_size) {
  if (slot_.alive() && slot_.group()->world_size() == world_size) return Status::OK();
  if (options_.directory.empty() || options_.work_dir.empty()) {
    return Status::FailedPrecondition("adapter harness: no checkpoint or work directory was given");
  }
  Status pending;
  if (slot_.alive()) pending = Finalize();
  const Status released = ReleaseGroup();
  if (pending.ok()) pending = released;
  if (!pending.ok()) return pending;
  if (!scratch_) {
    CKPTSPEC_RETURN_IF_ERROR(
        CreateDirs(Env::Posix(), options_.work_dir).WithContext("adapter harness"));
    CKPTSPEC_RETURN_IF_ERROR(
        ScratchSpace::Open(options_.work_dir, &scratch_).WithContext("adapter harness"));
  }
  CKPTSPEC_RETURN_IF_ERROR(slot_.Ensure(world_size));
  capabilities_ = slot_.group()->hello().capabilities;
  return Status::OK();
}

Status ProcessEngine::NewCallDir(std::unique_ptr<ScratchDir>* dir) {
  return scratch_->NewCallDir(dir).WithContext("adapter harness");
}

Status ProcessEngine::Save(int64_t iteration, SaveInput input, const SaveOptions& options) {
  const std::vector<ShardedStateDict>& every_rank = input.every_rank();
  if (every_rank.empty()) return Status::InvalidArgument("save: no ranks");
  const int n = static_cast<int>(every_rank.size());
  bool complete;
  CKPTSPEC_RETURN_IF_ERROR(Poll(&complete));  // the pending save gets the latest values first
  CKPTSPEC_RETURN_IF_ERROR(EnsureGroup(n));
  std::unique_ptr<ScratchDir> scratch;
  CKPTSPEC_RETURN_IF_ERROR(NewCallDir(&scratch));
  std::vector<SaveCall> calls(n);
  const bool packed = slot_.group()->hello().packed;
  for (int r = 0; r < n; ++r) {
    const ShardedStateDict& dict = every_rank[r];
    SaveCall& call = calls[r];
    call.directory = options_.directory;
    call.iteration = iteration;
    call.options = options;
    call.common = dict.common;
    OutgoingEntries out(scratch.get(), r, packed ? "save" : nullptr);
    call.tensors.resize(dict.tensors.size());
    for (size_t i = 0; i < dict.tensors.size(); ++i) {
      const auto& data = dict.tensors[i].data;
      WireTensor& w = call.tensors[i];
      w.spec = dict.tensors[i].spec;
      CKPTSPEC_RETURN_IF_ERROR(out.Add('t', i, data.data(), data.size(), &w.file, &w.range));
      call.placements.push_back(input.placement(r, i));
    }
    call.objects.resize(dict.objects.size());
    for (size_t i = 0; i < dict.objects.size(); ++i) {
      const auto& data = dict.objects[i].data;
      WireObject& w = call.objects[i];
      w.spec = dict.objects[i].spec;
      CKPTSPEC_RETURN_IF_ERROR(out.Add('o', i, data.data(), data.size(), &w.file, &w.range));
    }
    CKPTSPEC_RETURN_IF_ERROR(out.Finish());
  }
  std::vector<json> replies;
  CKPTSPEC_RETURN_IF_ERROR(slot_.NoteTimeout(slot_.group()->CallWithLines(
      "save", [&](size_t r, int64_t id) { return SaveRequestLine(calls[r], id); }, &replies)));
  CKPTSPEC_RETURN_IF_ERROR(RanksErrors(replies));
  if (options.async && capabilities_.async) {
    PendingSave pending{input.shared(), {}};
    if (slot_.group()
            ->hello()
            .poll) {  // what the adapter holds matters only when Poll sends changes
      for (const ShardedStateDict& dict : every_rank) {
        pending.held.emplace_back();
        for (const ShardedTensor& t : dict.tensors) {
          pending.held.back().push_back(ContentDigest(t.data.data(), t.data.size()));
        }
      }
    }
    pending_ = std::move(pending);
  }
  return Status::OK();
}

Status ProcessEngine::Poll(bool* complete) {
  *complete = true;
  if (!pending_) return Status::OK();
  if (!slot_.alive()) {
    pending_.reset();  // the group's fault was that call's error; its save is gone with it
    return Status::OK();
  }
  if (!slot_.group()->hello().poll) {
    *complete = false;  // not asked: the next Finalize, Save or Load completes it
    return Status::OK();
  }
  // The caller updates the buffers in place and keeps the structure (SaveInput); entries beyond
  // what was saved are not the save's and are not sent.
  const std::vector<ShardedStateDict>& live = *pending_->live;
  const int n = slot_.group()->world_size();
  std::unique_ptr<ScratchDir> scratch;
  CKPTSPEC_RETURN_IF_ERROR(NewCallDir(&scratch));
  std::vector<json> requests(n, json::object());
  for (int r = 0; r < n; ++r) {
    PollCall call;
    OutgoingEntries out(scratch.get(), r, slot_.group()->hello().packed ? "poll" : nullptr);
    const size_t tensors =
        r < static_cast<int>(live.size()) && r < static_cast<int>(pending_->held.size())
            ? std::min(live[r].tensors.size(), pending_->held[r].size())
            : 0;
    for (size_t i = 0; i < tensors; ++i) {
      const std::vector<uint8_t>& data = live[r].tensors[i].data;
      const uint64_t digest = ContentDigest(data.data(), data.size());
      if (digest == pending_->held[r][i]) continue;
      PollUpdate& u = call.updates.emplace_back();
      u.index = static_cast<int64_t>(i);
      CKPTSPEC_RETURN_IF_ERROR(out.Add('t', i, data.data(), data.size(), &u.file, &u.range));
      pending_->held[r][i] = digest;
    }
    CKPTSPEC_RETURN_IF_ERROR(out.Finish());
    PollCallToJson(call, &requests[r]);
  }
  std::vector<json> replies;
  CKPTSPEC_RETURN_IF_ERROR(
      slot_.NoteTimeout(slot_.group()->Call("poll", std::move(requests), &replies)));
  const Status errors = RanksErrors(replies);
  if (!errors.ok()) {
    pending_.reset();  // the save ended with that error: reported here, once
    return errors;
  }
  bool all = true, any = false;
  for (int r = 0; r < n; ++r) {
    PollReply reply;
    const Status s = PollReplyFromJson(replies[r], &reply);
    if (!s.ok()) return slot_.group()->Fault(r, AdapterFault::kMalformedReply, s.message());
    all = all && reply.complete;
    any = any || reply.complete;
  }
  if (any && !all) {
    return slot_.group()->Fault(0, AdapterFault::kMalformedReply,
                                "the ranks disagree on whether the async save is complete");
  }
  *complete = all;
  if (all) pending_.reset();
  return Status::OK();
}

Status ProcessEngine::Finalize() {
  bool complete;
  CKPTSPEC_RETURN_IF_ERROR(Poll(&complete));  // the latest values first; it may complete it
  pending_.reset();
  if (!slot_.alive()) return Status::OK();
  std::vector<json> requests(slot_.group()->world_size(), json::object()), replies;
  CKPTSPEC_RETURN_IF_ERROR(
      slot_.NoteTimeout(slot_.group()->Call("finalize", std::move(requests), &replies)));
  return RanksErrors(replies);
}

Status ProcessEngine::Load(LoadRequest request, LoadResult* result) {
  *result = LoadResult();
  if (request.templates.empty()) return Status::InvalidArgument("load: no ranks");
  const int n = static_cast<int>(request.templates.size());
  bool complete;
  CKPTSPEC_RETURN_IF_ERROR(Poll(&complete));  // the pending save gets the latest values first
  CKPTSPEC_RETURN_IF_ERROR(EnsureGroup(n));
  std::unique_ptr<ScratchDir> scratch;
  CKPTSPEC_RETURN_IF_ERROR(NewCallDir(&scratch));
  std::vector<LoadCall> calls(n);
  for (int r = 0; r < n; ++r) {
    LoadCall& call = calls[r];
    call.directory = options_.directory;
    call.iteration = request.iteration;
    call.strict = request.strict;
    call.allow_shape_mismatch = request.allow_shape_mismatch;
    const ShardedStateDict& t = request.templates[r];
    // Packed (revision 4): the tensors' ranges of one file, in template order; objects, whose
    // length is not known before, keep a file each.
    const std::string packed_path =
        slot_.group()->hello().packed ? scratch->PathOf(PackedName(r, "load")) : std::string();
    uint64_t packed_end = 0;
    for (size_t i = 0; i < t.tensors.size(); ++i) {
      WireTensor& w = call.tensors.emplace_back();
      w.spec = t.tensors[i].spec;
      if (packed_path.empty()) {
        w.file = scratch->PathOf(EntryName(r, 't', i));
        continue;
      }
      w.file = packed_path;
      w.range = FileRange{packed_end, ExpectedBytes(w.spec)};
      packed_end = w.range->end();
    }
    for (size_t i = 0; i < t.objects.size(); ++i) {
      call.objects.push_back(
          {t.objects[i].spec, scratch->PathOf(EntryName(r, 'o', i)), std::nullopt});
    }
  }
  std::vector<json> replies;
  CKPTSPEC_RETURN_IF_ERROR(slot_.NoteTimeout(slot_.group()->CallWithLines(
      "load", [&](size_t r, int64_t id) { return LoadRequestLine(calls[r], id); }, &replies)));
  CKPTSPEC_RETURN_IF_ERROR(RanksErrors(replies));
  std::vector<LoadReply> loaded(n);
  for (int r = 0; r < n; ++r) {
    const Status s = LoadReplyFromJson(replies[r], &loaded[r]);
    if (!s.ok()) return slot_.group()->Fault(r, AdapterFault::kMalformedReply, s.message());
    if (loaded[r].iteration != loaded[0].iteration) {
      return slot_.group()->Fault(r, AdapterFault::kMalformedReply,
                                  "loaded iteration " + std::to_string(loaded[r].iteration) +
                                      ", rank 0 loaded iteration " +
                                      std::to_string(loaded[0].iteration));
    }
  }
  result->iteration = loaded[0].iteration;
  result->state = std::move(request.templates);
  const bool returns =
      request.strict == StrictMode::kReturnUnexpected || request.strict == StrictMode::kReturnAll;
  bool any_unexpected = false;
  for (const LoadReply& l : loaded) any_unexpected = any_unexpected || !l.unexpected.empty();
  if (returns || any_unexpected) result->unexpected.resize(n);
  for (int r = 0; r < n; ++r) {
    CKPTSPEC_RETURN_IF_ERROR(
        ReadLoadedEntries(r, calls[r], loaded[r], *scratch, &result->state[r]));
    result->state[r].common = std::move(loaded[r].common);
    if (!result->unexpected.empty()) result->unexpected[r] = std::move(loaded[r].unexpected);
    for (std::string& w : loaded[r].warnings) result->warnings.push_back(std::move(w));
  }
  result->missing = std::move(loaded[0].missing);
  return Status::OK();
}

Status ProcessEngine::ReadLoadedEntries(int rank, const LoadCall& call, const LoadReply& reply,
                                        const ScratchDir& dir, ShardedStateDict* state) {
  const std::set<std::string> dropped(reply.dropped.begin(), reply.dropped.end());
  // Reads entry file `name`, of at most `max_size` bytes, into *bytes; a fault names `what`.
  const auto read = [&](const std::string& name, uint64_t max_size, const std::string& what,
                        std::string* bytes) -> Status {
    std::string detail;
    switch (dir.Read(name, max_size, bytes, &detail)) {
      case ScratchDir::ReadResult::kOk:
        return Status::OK();
      case ScratchDir::ReadResult::kMissing:
        return slot_.group()->Fault(rank, AdapterFault::kWrongSize,
                                    "loaded " + what + " but wrote no file");
      case ScratchDir::ReadResult::kUnsafe:
        return slot_.group()->Fault(rank, AdapterFault::kUnsafeFile,
                                    "left " + detail + " at " + dir.PathOf(name) + " for " + what +
                                        " instead of a regular file; not read");
      case ScratchDir::ReadResult::kTooLarge:
        return slot_.group()->Fault(rank, AdapterFault::kWrongSize,
                                    "wrote " + detail + " for " + what + ", at most " +
                                        std::to_string(max_size) + " expected");
      case ScratchDir::ReadResult::kError:
        break;
    }
    return Status::IOError("adapter harness: " + detail);
  };
  // The packed file (revision 4), read whole at the first kept tensor that lies in it.
  const std::string packed_name = PackedName(rank, "load");
  std::optional<std::string> packed;
  std::vector<ShardedTensor> tensors;
  for (size_t i = 0; i < state->tensors.size(); ++i) {
    ShardedTensor& t = state->tensors[i];
    if (dropped.count(t.spec.key)) continue;
    const uint64_t expected = ExpectedBytes(t.spec);
    const std::string what =
        "tensor '" + t.spec.key + "' (template entry " + std::to_string(i) + ")";
    const std::optional<FileRange>& range = call.tensors[i].range;
    if (range) {
      if (!packed) {
        const uint64_t size = call.tensors.back().range->end();  // laid out in order by Load
        CKPTSPEC_RETURN_IF_ERROR(
            read(packed_name, size, what + " in the packed file", &packed.emplace()));
      }
      if (range->end() > packed->size()) {
        return slot_.group()->Fault(rank, AdapterFault::kWrongSize,
                                    "wrote " + std::to_string(packed->size()) + " bytes to " +
                                        dir.PathOf(packed_name) + ", where " + what + " lies at [" +
                                        std::to_string(range->offset) + ", " +
                                        std::to_string(range->end()) + ")");
      }
      t.data.assign(packed->begin() + static_cast<ptrdiff_t>(range->offset),
                    packed->begin() + static_cast<ptrdiff_t>(range->end()));
      tensors.push_back(std::move(t));
      continue;
    }
    std::string bytes;
    CKPTSPEC_RETURN_IF_ERROR(read(EntryName(rank, 't', i), expected, what, &bytes));
    if (bytes.size() != expected) {
      return slot_.group()->Fault(rank, AdapterFault::kWrongSize,
                                  "wrote " + std::to_string(bytes.size()) + " bytes for " + what +
                                      ", expected " + std::to_string(expected));
    }
    t.data.assign(bytes.begin(), bytes.end());
    tensors.push_back(std::move(t));
  }
  std::vector<ShardedObject> objects;
  for (size_t i = 0; i < state->objects.size(); ++i) {
    ShardedObject& o = state->objects[i];
    if (dropped.count(o.spec.key)) continue;
    CKPTSPEC_RETURN_IF_ERROR(read(EntryName(rank, 'o', i), kMaxObjectBytes,
                                  "object '" + o.spec.UniqueKey() + "'", &o.data));
    objects.push_back(std::move(o));
  }
  state->tensors = std::move(tensors);
  state->objects = std::move(objects);
  return Status::OK();
}

}  // namespace ckptspec
