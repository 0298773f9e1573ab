// ReferenceEngine: save path, commit protocol, async saves and retention.
#include "targets/reference/reference_engine.h"

#include <new>
#include <algorithm>
#include <atomic>
#include <future>
#include <map>

namespace ckptspec {

namespace {

// The save step running on this thread, and its engine (ReferenceEngine::save_context()).
struct RunningSave {
  const ReferenceEngine* engine = nullptr;
  const SaveContext* context = nullptr;
};
thread_local RunningSave running_save;

// Makes `context` the running save of `engine` on this thread for the scope's life.
class ScopedSaveContext {
 public:
  ScopedSaveContext(const ReferenceEngine* engine, const SaveContext* context)
      : previous_(running_save) {
    running_save = RunningSave{engine, context};
  }
  ~ScopedSaveContext() { running_save = previous_; }
  ScopedSaveContext(const ScopedSaveContext&) = delete;
  ScopedSaveContext& operator=(const ScopedSaveContext&) = delete;

 private:
  RunningSave previous_;
};

}  // namespace

struct ReferenceEngine::PendingSave {
  int64_t iteration = 0;
  std::vector<ShardedStateDict> staged;  // a private copy: the caller's buffers never reach it
  SaveOptions options;
  SaveContext writer;  // the context of its write's steps
  SavePlan plan;
  std::thread thread;
  Status status;
  bool ran = false;
  std::atomic<bool> written{false};  // the background write has set `status`
  std::promise<void> ended;          // kThread: set once the write has ended
  std::shared_future<void> ended_future = ended.get_future().share();
  std::vector<DecodedIndex> committed;  // WriteCheckpoint's, kept by CompleteOldest
};

ReferenceEngine::ReferenceEngine(ReferenceOptions options) : options_(std::move(options)) {
  plan_cache_ =
      options_.plan_cache ? std::move(options_.plan_cache) : std::make_unique<PlanCache>();
  // Everything below the root is reached without following links (env.h: NewConfinedView).
  if (options_.env != nullptr && !options_.root.empty() &&
      options_.env->NewConfinedView(options_.root, &confined_env_).ok()) {
    options_.env = confined_env_.get();
  }
}

// A destructor has nowhere to report: a pending save's error is for an explicit Finalize (the
// engine contract); this one only lets every save in flight finish.
ReferenceEngine::~ReferenceEngine() {
  while (!in_flight_.empty()) CompleteOldest().IgnoreError();
}

Capabilities ReferenceEngine::capabilities() const {
  Capabilities c;
  c.resharding = c.objects = c.async = c.checksums = c.plan_cache = c.deterministic =
      c.strict_modes = c.overlapping_async = true;
  return c;
}

Status ReferenceEngine::ValidateSave(const std::vector<ShardedStateDict>& every_rank, bool global) {
  return ValidateSaveInput(every_rank, global);
}

Status ReferenceEngine::PlanSave(const std::vector<ShardedStateDict>& every_rank,
                                 const SaveOptions& options, const SavePlan* cached,
                                 uint64_t fingerprint, SavePlan* plan) {
  if (cached != nullptr) {
    *plan = *cached;
    return Status::OK();
  }
  *plan = MakeSavePlan(every_rank, fingerprint);
  if (options.assume_constant_structure) plan_cache_->Store(*plan);
  return Status::OK();
}

Status ReferenceEngine::StageAsyncSave(const SaveInput& input, const SaveOptions& /*options*/,
                                       std::vector<ShardedStateDict>* staged) {
  *staged = input.every_rank();  // deep copy of every byte, host and device alike
  return Status::OK();
}

const SaveContext& ReferenceEngine::save_context() const {
  static const SaveContext kNoSave;
  return running_save.engine == this ? *running_save.context : kNoSave;
}

void ReferenceEngine::AsyncSaveScheduled(int64_t /*iteration*/, const SaveOptions& /*options*/) {}

Status ReferenceEngine::Save(int64_t iteration, SaveInput input, const SaveOptions& options) {
  // A sync save commits after every save in flight; an async one needs a free place among them.
  if (!options.async) CKPTSPEC_RETURN_IF_ERROR(Finalize());
  const size_t bound = static_cast<size_t>(std::max(1, options_.max_async_in_flight));
  while (in_flight_.size() >= bound) CKPTSPEC_RETURN_IF_ERROR(CompleteOldest());
  SaveContext context;
  context.iteration = iteration;
  context.async = options.async;
  context.options = options;
  const ScopedSaveContext scoped(this, &context);
  const std::vector<ShardedStateDict>& every_rank = input.every_rank();
  if (iteration < 0 || iteration > kMaxIteration) {
    return Status::InvalidArgument("iteration " + std::to_string(iteration) + " out of range");
  }
  if (options_.env == nullptr || options_.root.empty()) {
    return Status::InvalidArgument("reference engine needs an Env and a root directory");
  }
  const uint64_t fingerprint = StructureFingerprint(every_rank);
  const SavePlan* cached =
      options.assume_constant_structure ? plan_cache_->Lookup(fingerprint) : nullptr;
  // A reused plan was validated when it was made for this same structure (Megatron's
  // validated_cache_reuse); per-entry checks still run, they guard the writer.
  CKPTSPEC_RETURN_IF_ERROR(ValidateSave(every_rank, options.validate && cached == nullptr));
  SavePlan plan;
  CKPTSPEC_RETURN_IF_ERROR(PlanSave(every_rank, options, cached, fingerprint, &plan));
  if (!options.async) {
    std::vector<DecodedIndex> committed;
    const Status written = WriteCheckpoint(iteration, every_rank, options, plan, &committed);
    for (DecodedIndex& index : committed) DecodedIndexCache::Shared().Keep(std::move(index));
    return written;
  }

  // Refused when called, as a sync save is, not when the write reaches it (which checks again).
  CKPTSPEC_RETURN_IF_ERROR(GuardOverwrite(iteration));
  auto pending = std::make_unique<PendingSave>();
  pending->iteration = iteration;
  CKPTSPEC_RETURN_IF_ERROR(StageAsyncSave(input, options, &pending->staged));
  pending->options = options;
  pending->writer = context;
  pending->writer.side = SaveContext::Side::kWriter;
  pending->plan = std::move(plan);
  PendingSave* p = pending.get();
  // Writes run one at a time in schedule order: this one starts once the one before it has ended.
  std::shared_future<void> before;
  if (!in_flight_.empty()) before = in_flight_.back()->ended_future;
  in_flight_.push_back(std::move(pending));
  if (options_.async_execution == AsyncExecution::kThread) {
    p->thread = std::thread([this, p, before] {
      if (before.valid()) before.wait();
      try {
        RunWrite(p);
      } catch (const std::bad_alloc&) {  // an exception leaving a thread would end the process
        p->status = Status::OutOfMemory("writing iteration " + std::to_string(p->iteration) +
                                        ": out of memory");
      }
      p->ran = true;
      p->written.store(true, std::memory_order_release);
      p->ended.set_value();
    });
  }
  AsyncSaveScheduled(iteration, options);
  return Status::OK();
}

void ReferenceEngine::RunWrite(PendingSave* p) {
  const ScopedSaveContext scoped(this, &p->writer);
  p->status = WriteCheckpoint(p->iteration, p->staged, p->options, p->plan, &p->committed);
}

Status ReferenceEngine::Poll(bool* complete) {
  Status status;
  while (!in_flight_.empty() && status.ok()) {
    const PendingSave& oldest = *in_flight_.front();
    const bool deferred = !oldest.thread.joinable();
    if (!deferred && !oldest.written.load(std::memory_order_acquire)) break;  // still writing
    status = CompleteOldest();
    if (deferred) break;  // one deferred write per Poll
  }
  *complete = in_flight_.empty();
  return status;
}

Status ReferenceEngine::ReportAsyncSave(int64_t iteration, Status status) {
  if (status.ok()) return status;
  return status.WithContext("async save of iteration " + std::to_string(iteration));
}

Status ReferenceEngine::Finalize() {
  while (!in_flight_.empty()) CKPTSPEC_RETURN_IF_ERROR(CompleteOldest());
  return Status::OK();
}

Status ReferenceEngine::CompleteOldest() {
  std::unique_ptr<PendingSave> p = std::move(in_flight_.front());
  in_flight_.pop_front();
  if (p->thread.joinable()) {
    p->thread.join();
  } else if (!p->ran) {
    RunWrite(p.get());
    p->ran = true;
  }
  for (DecodedIndex& index : p->committed) DecodedIndexCache::Shared().Keep(std::move(index));
  SaveContext reporting = p->writer;
  reporting.side = SaveContext::Side::kCaller;
  const ScopedSaveContext scoped(this, &reporting);
  return ReportAsyncSave(p->iteration, std::move(p->status));
}

Status ReferenceEngine::EnsureRoot() {
  Env* env = options_.env;
  if (env->FileExists(options_.root).ok()) return Status::OK();
  CKPTSPEC_RETURN_IF_ERROR(CreateDirs(env, options_.root));
  return env->SyncDir(ParentDir(options_.root));
}

Status ReferenceEngine::RemoveLeftovers() {
  Env* env = options_.env;
  std::vector<std::string> names;
  CKPTSPEC_RETURN_IF_ERROR(env->GetChildren(options_.root, &names));
  bool removed = false;
  for (const std::string& name : names) {
    const size_t dot = name.find('.');
    if (dot == std::string::npos) continue;
    int64_t it;
    const std::string suffix = name.substr(dot);
    if (!ParseIterationDirName(name.substr(0, dot), &it)) continue;
    if (suffix != ".tmp" && suffix != ".deleting") continue;
    CKPTSPEC_RETURN_IF_ERROR(env->RemoveTree(JoinPath(options_.root, name)));
    removed = true;
  }
  if (removed) CKPTSPEC_RETURN_IF_ERROR(env->SyncDir(options_.root));
  return Status::OK();
}

Status ReferenceEngine::GuardOverwrite(int64_t iteration) {
  if (save_context().side == SaveContext::Side::kCaller && !in_flight_.empty()) {
    if (in_flight_.back()->iteration != iteration) return Status::OK();
    return Status::FailedPrecondition(
        JoinPath(options_.root, IterationDirName(iteration)) +
        " is being saved by the newest async save in flight, which the tracker will name; "
        "refusing to overwrite it");
  }
  int64_t latest;
  if (LatestIteration(&latest).ok() && latest == iteration) {
    return Status::FailedPrecondition(JoinPath(options_.root, IterationDirName(iteration)) +
                                      " is the latest complete checkpoint (the tracker "
                                      "names it); refusing to overwrite it");
  }
  return Status::OK();
}

Status ReferenceEngine::BeginCheckpoint(int64_t iteration, std::string* staging) {
  CKPTSPEC_RETURN_IF_ERROR(EnsureRoot());
  CKPTSPEC_RETURN_IF_ERROR(RemoveLeftovers());
  *staging = JoinPath(options_.root, StagingDirName(iteration));
  return options_.env->CreateDir(*staging);
}

Status ReferenceEngine::WriteShardFiles(const std::string& staging,
                                        const std::vector<ShardedStateDict>& every_rank,
                                        const SavePlan& plan, CheckpointMetadata* out) {
  Env* env = options_.env;
  CheckpointMetadata& m = *out;
  std::map<std::string, size_t> tensor_index;
  size_t i = 0;
  while (i < plan.items.size()) {
    const int64_t rank = plan.items[i].rank;
    std::string name = ShardFileName(rank);
    if (options_.index_layout == IndexLayout::kPerWriter) {
      CKPTSPEC_RETURN_IF_ERROR(env->CreateDir(JoinPath(staging, WriterDirName(rank))));
      name = WriterDirName(rank) + "/" + kWriterShardFileName;
    }
    const std::string path = JoinPath(staging, name);
    const int64_t file_index = static_cast<int64_t>(m.files.size());
    std::unique_ptr<WritableFile> file;
    CKPTSPEC_RETURN_IF_ERROR(env->NewWritableFile(path, &file));
    uint64_t offset = 0;
    for (; i < plan.items.size() && plan.items[i].rank == rank; ++i) {
      const WriteItem& item = plan.items[i];
      const ShardedStateDict& dict = every_rank[rank];
      const void* data;
      size_t size;
      if (item.is_object) {
        data = dict.objects[item.index].data.data();
        size = dict.objects[item.index].data.size();
      } else {
        data = dict.tensors[item.index].data.data();
        size = dict.tensors[item.index].data.size();
      }
      CKPTSPEC_RETURN_IF_ERROR(file->Append(data, size));
      const Extent extent{file_index, offset, size, Checksum(data, size)};
      offset += size;
      if (item.is_object) {
        const ObjectSpec& spec = dict.objects[item.index].spec;
        m.objects.push_back(
            ObjectEntry{spec.key, spec.global_shape, spec.global_offset, rank, extent});
        continue;
      }
      const TensorSpec& spec = dict.tensors[item.index].spec;
      auto [it, inserted] = tensor_index.emplace(spec.key, m.tensors.size());
      if (inserted) {
        m.tensors.push_back(TensorEntry{spec.key, spec.dtype, spec.global_shape, {}});
      } else if (m.tensors[it->second].dtype != spec.dtype ||
                 m.tensors[it->second].global_shape != spec.global_shape) {
        return Status::InvalidArgument("tensor '" + spec.key + "': rank " + std::to_string(rank) +
                                       " has dtype " + DTypeName(spec.dtype) +
                                       " and global shape " + DimsToString(spec.global_shape) +
                                       ", another rank " + DTypeName(m.tensors[it->second].dtype) +
                                       " and " + DimsToString(m.tensors[it->second].global_shape));
      }
      m.tensors[it->second].chunks.push_back(ChunkEntry{item.box, rank, extent});
    }
    CKPTSPEC_RETURN_IF_ERROR(file->Sync());
    CKPTSPEC_RETURN_IF_ERROR(file->Close());
    m.files.push_back(FileEntry{name, offset});
  }
  return Status::OK();
}

Status ReferenceEngine::CommitCheckpoint(int64_t iteration, const std::string& staging) {
  Env* env = options_.env;
  const std::string& root = options_.root;
  const std::string final_dir = JoinPath(root, IterationDirName(iteration));
  if (env->FileExists(final_dir).ok()) {
    // A complete checkpoint of this iteration that the tracker does not name (e.g. a run that
    // resumed from an earlier iteration): move it aside durably, then replace it.
    const std::string aside = JoinPath(root, DeletingDirName(iteration));
    CKPTSPEC_RETURN_IF_ERROR(env->RenameFile(final_dir, aside));
    CKPTSPEC_RETURN_IF_ERROR(env->SyncDir(root));
    CKPTSPEC_RETURN_IF_ERROR(env->RemoveTree(aside));
  }
  CKPTSPEC_RETURN_IF_ERROR(env->RenameFile(staging, final_dir));
  return env->SyncDir(root);
}

Status ReferenceEngine::UpdateTracker(int64_t iteration) {
  return ReplaceFileAtomically(options_.env, JoinPath(options_.root, kTrackerFileName),
                               EncodeTracker(iteration));
}

Status ReferenceEngine::WriteCheckpoint(int64_t iteration,
                                        const std::vector<ShardedStateDict>& every_rank,
                                        const SaveOptions& options, const SavePlan& plan,
                                        std::vector<DecodedIndex>* committed) {
  CKPTSPEC_RETURN_IF_ERROR(ResolvePlan(plan, every_rank));
  CKPTSPEC_RETURN_IF_ERROR(GuardOverwrite(iteration));
  std::string staging;
  CKPTSPEC_RETURN_IF_ERROR(BeginCheckpoint(iteration, &staging));
  CheckpointMetadata m;
  m.iteration = iteration;
  m.world_size = static_cast<int64_t>(every_rank.size());
  m.layout = options.layout;
  m.common = every_rank.front().common;
  CKPTSPEC_RETURN_IF_ERROR(WriteShardFiles(staging, every_rank, plan, &m));
  written_indexes_.clear();
  CKPTSPEC_RETURN_IF_ERROR(WriteIndex(staging, m));
  CKPTSPEC_RETURN_IF_ERROR(options_.env->SyncDir(staging));
  CKPTSPEC_RETURN_IF_ERROR(CommitCheckpoint(iteration, staging));
  // Whatever a later step does, these texts are at these paths unless something rewrites them;
  // a read compares the text before it takes the decoded form.
  const std::string final_dir = JoinPath(options_.root, IterationDirName(iteration));
  for (DecodedIndex& index : written_indexes_) {
    index.path = JoinPath(final_dir, index.path);
    committed->push_back(std::move(index));
  }
  written_indexes_.clear();
  CKPTSPEC_RETURN_IF_ERROR(UpdateTracker(iteration));
  return ApplyRetention();
}

namespace {

// The part of `m` that lives in file `file` (its index in m.files), as a writer's own index whose
// one file is its shard; an empty index (no file) when file < 0.
CheckpointMetadata WriterPart(const CheckpointMetadata& m, int64_t file) {
  CheckpointMetadata part;
  part.format_version = kPerWriterIndexFormatVersion;
  part.iteration = m.iteration;
  part.world_size = m.world_size;
  part.layout = m.layout;
  part.common = m.common;
  if (file < 0) return part;
  part.files.push_back(FileEntry{kWriterShardFileName, m.files[static_cast<size_t>(file)].size});
  for (const TensorEntry& t : m.tensors) {
    TensorEntry mine{t.key, t.dtype, t.global_shape, {}};
    for (const ChunkEntry& c : t.chunks) {
      if (c.extent.file != file) continue;
      mine.chunks.push_back(c);
      mine.chunks.back().extent.file = 0;
    }
    if (!mine.chunks.empty()) part.tensors.push_back(std::move(mine));
  }
  for (const ObjectEntry& o : m.objects) {
    if (o.extent.file != file) continue;
    part.objects.push_back(o);
    part.objects.back().extent.file = 0;
  }
  return part;
}

}  // namespace

Status ReferenceEngine::WriteIndexFiles(const std::string& staging, const std::string& subdir,
                                        const char* name, const char* checksum_name,
                                        const CheckpointMetadata& m) {
  Env* env = options_.env;
  const std::string dir = JoinPath(staging, subdir);
  std::string text = EncodeMetadata(m);
  CKPTSPEC_RETURN_IF_ERROR(WriteFileSynced(env, JoinPath(dir, name), text));
  CKPTSPEC_RETURN_IF_ERROR(WriteFileSynced(env, JoinPath(dir, checksum_name),
                                           ChecksumHex(Checksum(text.data(), text.size())) + "\n"));
  DecodedIndex written;
  written.limits = options_.limits.json();
  if (text.size() <= DecodedIndexCache::kMaxTextBytes &&
      DecodedFormOf(m, text.size(), written.limits, &written.metadata)) {
    written.path = JoinPath(subdir, name);
    written.text = std::move(text);
    written_indexes_.push_back(std::move(written));
  }
  return Status::OK();
}

Status ReferenceEngine::WriteIndex(const std::string& staging, const CheckpointMetadata& m) {
  Env* env = options_.env;
  if (options_.index_layout == IndexLayout::kSingle) {
    return WriteIndexFiles(staging, "", kMetadataFileName, kMetadataChecksumFileName, m);
  }
  // Files are "writer_NNNNN/shard.bin", one per writing rank, in rank order. Rank 0 always has a
  // writer directory (possibly without a shard), so a checkpoint that wrote nothing still has one.
  bool rank0 = false;
  for (size_t f = 0; f < m.files.size(); ++f) {
    const std::string writer = m.files[f].name.substr(0, m.files[f].name.find('/'));
    int64_t rank = -1;
    ParseWriterDirName(writer, &rank);
    rank0 = rank0 || rank == 0;
    CKPTSPEC_RETURN_IF_ERROR(WriteIndexFiles(staging, writer, kWriterIndexFileName,
                                             kWriterIndexChecksumFileName,
                                             WriterPart(m, static_cast<int64_t>(f))));
    CKPTSPEC_RETURN_IF_ERROR(env->SyncDir(JoinPath(staging, writer)));
  }
  if (rank0) return Status::OK();
  const std::string writer = WriterDirName(0);
  CKPTSPEC_RETURN_IF_ERROR(env->CreateDir(JoinPath(staging, writer)));
  CKPTSPEC_RETURN_IF_ERROR(WriteIndexFiles(staging, writer, kWriterIndexFileName,
                                           kWriterIndexChecksumFileName, WriterPart(m, -1)));
  return env->SyncDir(JoinPath(staging, writer));
}

Status ReferenceEngine::LatestIteration(int64_t* iteration) {
  const std::string path = JoinPath(options_.root, kTrackerFileName);
  std::string text;
  CKPTSPEC_RETURN_IF_ERROR(ReadFileToString(options_.env, path, kMaxTrackerBytes, &text));
  return DecodeTracker(text, path, iteration);
}

Status ReferenceEngine::ListIterations(std::vector<int64_t>* iterations) {
  iterations->clear();
  std::vector<std::string> names;
  CKPTSPEC_RETURN_IF_ERROR(options_.env->GetChildren(options_.root, &names));
  for (const std::string& name : names) {
    int64_t it;
    if (ParseIterationDirName(name, &it)) iterations->push_back(it);
  }
  std::sort(iterations->begin(), iterations->end());
  return Status::OK();
}

Status ReferenceEngine::ApplyRetention() {
  if (options_.keep_last <= 0) return Status::OK();
  int64_t latest;
  CKPTSPEC_RETURN_IF_ERROR(LatestIteration(&latest));
  std::vector<int64_t> iterations;
  CKPTSPEC_RETURN_IF_ERROR(ListIterations(&iterations));
  std::reverse(iterations.begin(), iterations.end());  // newest first
  std::vector<int64_t> victims;
  for (size_t i = static_cast<size_t>(options_.keep_last); i < iterations.size(); ++i) {
    if (iterations[i] != latest) victims.push_back(iterations[i]);
  }
  if (victims.empty()) return Status::OK();
  Env* env = options_.env;
  for (int64_t it : victims) {
    CKPTSPEC_RETURN_IF_ERROR(env->RenameFile(JoinPath(options_.root, IterationDirName(it)),
                                             JoinPath(options_.root, DeletingDirName(it))));
  }
  CKPTSPEC_RETURN_IF_ERROR(env->SyncDir(options_.root));
  for (int64_t it : victims) {
    CKPTSPEC_RETURN_IF_ERROR(env->RemoveTree(JoinPath(options_.root, DeletingDirName(it))));
  }
  return env->SyncDir(options_.root);
}

}  // namespace ckptspec
