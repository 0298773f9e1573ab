// The reference engine: a real sharded checkpointer on an Env (docs/DESIGN.md §6, docs/FORMAT.md).
//
// Save (sync, or the background part of an async save), as a sequence of steps (the protected
// virtual methods below, each overridable by a mutant: docs/PLUGINS.md, "The engine's steps"):
//  1. ValidateSave: every entry (ValidateTensorSpec / ValidateObjectSpec, data sizes) and, when
//     SaveOptions::validate, the global sharding (P4, P5, P11) -- the global part is skipped only
//     when a cached plan for the same structure is reused, as Megatron does.
//  2. PlanSave: only main replicas are written, each by the rank holding it (save_plan.h). With
//     assume_constant_structure the plan comes from the PlanCache when the structure fingerprint
//     is unchanged, and is made afresh (and cached) otherwise.
//  3. StageAsyncSave (async saves only): a private copy of every rank's data, taken before Save
//     returns (P14); the write below reads only the copy.
//  4. The commit protocol: GuardOverwrite refuses an iteration the tracker names; BeginCheckpoint
//     removes leftovers of interrupted saves and creates iter_N.tmp/; WriteShardFiles writes
//     every shard file into it and WriteIndex metadata.json and metadata.xxh3 (or the per-writer
//     indexes), each file fsynced, then the directory; CommitCheckpoint renames it to iter_N/ and
//     fsyncs the root; UpdateTracker replaces the tracker atomically (write .tmp, fsync, rename,
//     fsync the root). A crash at any operation leaves the tracker on a complete checkpoint
//     (P13). Saving an iteration the tracker already names is refused (FailedPrecondition):
//     replacing it would open a window where the tracker names nothing. An async save of that
//     iteration is refused when Save is called (GuardOverwrite runs then too, after the pending
//     save before it completes), not later.
//  5. ApplyRetention (keep_last > 0): the newest keep_last iteration directories stay, and so does
//     the one the tracker names, always; others are renamed to iter_N.deleting (durably) and
//     removed. Only committed checkpoints count: a save still in flight has no iteration
//     directory until its write commits it.
//  6. AsyncSaveScheduled (async saves only): on the caller's thread once the save is staged,
//     planned and scheduled, just before Save returns.
// Every step can ask save_context() which save it runs for: its iteration and options, whether it
// is async, and on which side (the caller's, or the async save's write).
//
// Async: Save with SaveOptions::async stages (step 3) and plans before it returns. Up to
// ReferenceOptions::max_async_in_flight async saves are in flight at once; their writes (steps
// 4-5) run one at a time in the order the saves were scheduled, so they commit in that order
// (docs/SEMANTICS.md §3, "Several async saves in flight"). With AsyncExecution::kThread each write
// runs on a background thread as soon as the one before it has ended; with kDeferred the writes
// run inside the calls below, so tests decide when. A save completes when the call that finds its
// write ended (or runs it) returns what ReportAsyncSave makes of its status; saves complete in
// schedule order, each error at its own call (B19: an async error is never dropped):
//  - Poll completes, oldest first, every save whose write has ended, and stops at the first one
//    still writing (kThread) or after running and completing the oldest (kDeferred: one per Poll),
//    or at the first error, which it returns.
//  - Finalize completes them all, oldest first, and stops at the first error, which it returns;
//    the saves after it stay in flight for the next call.
//  - A sync Save, Load and LoadToDestinations finalize first and return an error instead of
//    proceeding; an async Save with max_async_in_flight saves in flight first completes the
//    oldest, and returns its error instead of scheduling.
// The tracker names an iteration only after its files are complete.
//
// Load: see reference_load.cc: ProbeIndexLayout finds the index layout; chunks are resolved by
// box intersection (resharding), objects by unique key, every StrictMode, checksums verified on
// every read, global-shape mismatch an error unless allowed; each tensor's bytes go to the
// destination OpenHostDestination gives. LoadToDestinations is the same load writing tensor data
// through a DestinationProvider (targets/device_load/ uses it to load straight into CUDA device
// memory).
//
// Thread-safety: one caller at a time (the background writer is internal; the steps of an async
// save's write run on it).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/env.h"
#include "targets/reference/decoded_index_cache.h"
#include "targets/reference/format.h"
#include "base/resource_limits.h"
#include "targets/reference/save_plan.h"
#include "targets/reference/tensor_destination.h"
#include "targets/target.h"

namespace ckptspec {

enum class AsyncExecution { kThread, kDeferred };

// What a save step runs for (ReferenceEngine::save_context()).
struct SaveContext {
  // The side of the save a step runs on.
  enum class Side {
    // Inside Save, before it returns: every step of a sync save, steps 1-3 and 6 of an async one;
    // also ReportAsyncSave, in the call that completes an async save.
    kCaller,
    // The write of an async save (steps 4-5): on the background thread under
    // AsyncExecution::kThread, inside the Poll/Finalize/Save/Load call that runs it under
    // kDeferred.
    kWriter,
  };
  int64_t iteration = -1;  // -1: no save step is running
  bool async = false;
  SaveOptions options;
  Side side = Side::kCaller;
};

struct ReferenceOptions {
  // Not owned; must outlive the engine. The engine works through env->NewConfinedView(root):
  // nothing below the root is read through a link, and only regular files are read.
  Env* env = nullptr;
  std::string root;   // the checkpoint directory (created on the first save)
  int keep_last = 0;  // retention: 0 keeps every checkpoint
  AsyncExecution async_execution = AsyncExecution::kThread;
  // The plan cache used with assume_constant_structure; null: the reference PlanCache.
  std::unique_ptr<PlanCache> plan_cache;
  // How saves index their data (format.h): one metadata.json (version 1), or an index per writing
  // rank (version 2). Loads read both, whatever this says.
  IndexLayout index_layout = IndexLayout::kSingle;
  // What reading accepts from the checkpoint (resource_limits.h): ReadMetadata refuses an index
  // deeper, larger or with more items than these, or one whose items would read more bytes than
  // max_read_ratio times what the checkpoint occupies on disk.
  ResourceLimits limits;
  // The most async saves in flight at once (values below 1 count as 1). With 1, every Save
  // completes the pending async save first.
  int max_async_in_flight = 1;
};

class ReferenceEngine : public Engine {
 public:
  explicit ReferenceEngine(ReferenceOptions options);
  // Completes every async save in flight; their statuses are lost here, so call Finalize() first.
  ~ReferenceEngine() override;

  Capabilities capabilities() const override;
  Status Save(int64_t iteration, SaveInput input, const SaveOptions& options) override;
  Status Finalize() override;
  Status Poll(bool* complete) override;
  Status Load(LoadRequest request, LoadResult* result) override;
  // Load, except that every loaded tensor's bytes go to the destination `provider` opens for it
  // (tensor_destination.h; host or device memory) instead of the template's buffer. Templates'
  // data buffers are not read or size-checked, and the result's tensors have empty data; the
  // rest of the result (iteration, objects, common, strict-mode fields) is as for Load.
  Status LoadToDestinations(LoadRequest request, DestinationProvider* provider, LoadResult* result);

  // The iteration the tracker names (NotFound without a tracker).
  Status LatestIteration(int64_t* iteration);
  // Reads and verifies the index of iter_N in whichever layout ProbeIndexLayout finds (checksums,
  // schema, file sizes on disk, no two items sharing a byte: extent_overlap.h, and the limits of
  // options.limits); a per-writer index is merged into one CheckpointMetadata whose file names
  // are relative to iter_N ("writer_00003/shard.bin").
  Status ReadMetadata(int64_t iteration, CheckpointMetadata* metadata);
  // The index layout of an iteration directory: metadata.json present is kSingle; otherwise at
  // least one writer_* directory is kPerWriter; neither is NotFound naming both. Virtual so that
  // a mutant can probe the way a buggy reader does (docs/BUGS.md B20).
  virtual Status ProbeIndexLayout(const std::string& dir, IndexLayout* layout);
  // Iterations with a complete directory under the root, ascending.
  Status ListIterations(std::vector<int64_t>* iterations);
  bool has_pending_save() const { return !in_flight_.empty(); }
  // The async saves scheduled and not yet completed.
  size_t saves_in_flight() const { return in_flight_.size(); }
  const PlanCache& plan_cache() const { return *plan_cache_; }
  const std::string& root() const { return options_.root; }
  // The Env the engine works on: options.env confined to the root.
  Env* env() const { return options_.env; }
  const ReferenceOptions& options() const { return options_; }

 protected:
  // The engine's steps (the order and the threads they run on: the comment at the top). Each
  // default is the reference's behaviour; a mutant overrides exactly the step its bug lives in
  // and may call the default. Paths are on env() (the root is root(); staging and iteration
  // directories are JoinPath(root(), StagingDirName(N)) / IterationDirName(N), format.h).
  // A step's error ends the save or load with that error (the checkpoint stays in iter_N.tmp/,
  // removed by the next save's BeginCheckpoint; the tracker is untouched).

  // Step 1. Every check the save input must pass before anything is written: the default is
  // ValidateSaveInput(every_rank, global). `global` is options.validate, except false when
  // PlanSave will reuse a cached plan.
  virtual Status ValidateSave(const std::vector<ShardedStateDict>& every_rank, bool global);
  // Step 2. The save plan for `every_rank`: `cached` is the plan cache's plan for this structure
  // (StructureFingerprint == fingerprint) under assume_constant_structure, else null. The default
  // reuses `cached`, or makes the plan (MakeSavePlan) and stores it in the cache under
  // assume_constant_structure. The plan must be resolvable against every_rank (ResolvePlan
  // checks it before any file is written).
  virtual Status PlanSave(const std::vector<ShardedStateDict>& every_rank,
                          const SaveOptions& options, const SavePlan* cached, uint64_t fingerprint,
                          SavePlan* plan);
  // Step 3, async saves only, on the caller's thread before Save returns: *staged gets what the
  // background write will write. The default deep-copies every byte of the input, whatever its
  // placement (the caller updates its buffers in place as soon as Save returns: P14).
  virtual Status StageAsyncSave(const SaveInput& input, const SaveOptions& options,
                                std::vector<ShardedStateDict>* staged);
  // Step 4a, first in every save's write, and on the caller's thread when an async save is
  // scheduled (before StageAsyncSave): FailedPrecondition naming the directory when the tracker
  // names `iteration` (replacing that checkpoint would open a window where the tracker names
  // nothing) -- on the caller's side with saves in flight, when the newest of them is of
  // `iteration` (the tracker names it once they have committed); OK otherwise, also without a
  // tracker.
  virtual Status GuardOverwrite(int64_t iteration);
  // Step 4b. Makes the root if needed, removes leftovers of interrupted saves (iter_N.tmp/,
  // iter_N.deleting/) and creates the empty staging directory `*staging` for `iteration`.
  virtual Status BeginCheckpoint(int64_t iteration, std::string* staging);
  // Step 4c. Writes the data of the plan's items into files under `staging` (one per writing
  // rank: shard_NNNNN.bin, or writer_NNNNN/shard.bin in the per-writer layout), each fsynced and
  // closed, and describes them in *m (files, tensors with their chunks, objects, with checksums);
  // m's iteration, world size, layout and common state are set by the caller. Errors: the ranks
  // disagree on a tensor's dtype or global shape (InvalidArgument), I/O.
  virtual Status WriteShardFiles(const std::string& staging,
                                 const std::vector<ShardedStateDict>& every_rank,
                                 const SavePlan& plan, CheckpointMetadata* m);
  // Step 4d. Writes the index of `m` into `staging` in the configured layout (each file fsynced;
  // the caller fsyncs `staging` after it).
  virtual Status WriteIndex(const std::string& staging, const CheckpointMetadata& m);
  // Step 4e. Makes `staging` the complete checkpoint iter_N/ of `iteration`: an existing iter_N/
  // that the tracker does not name is moved aside durably and removed; then the rename and an
  // fsync of the root.
  virtual Status CommitCheckpoint(int64_t iteration, const std::string& staging);
  // Step 4f. Points the tracker at `iteration` atomically (ReplaceFileAtomically).
  virtual Status UpdateTracker(int64_t iteration);
  // Step 5. Retention: see the comment at the top; a no-op when keep_last is 0.
  virtual Status ApplyRetention();
  // Step 6, async saves only: the async save of `iteration` with `options` is staged, planned
  // and scheduled (its write may already be running on the background thread); called on the
  // caller's thread just before Save returns OK. It cannot fail the save, which is scheduled
  // whatever it does. The default does nothing.
  virtual void AsyncSaveScheduled(int64_t iteration, const SaveOptions& options);
  // Finalize's last step: what Finalize (and so the next Save or Load) returns for the async save
  // of `iteration` whose write ended with `status`. The default returns `status`, with the
  // iteration named, so that no async error is lost (B19).
  virtual Status ReportAsyncSave(int64_t iteration, Status status);
  // Load step: where a host load (Load, not LoadToDestinations) puts the bytes of `tensor`, a
  // template of rank `rank` whose data is sized to its shard. The default is a
  // HostTensorDestination over tensor->data: the template's own buffer is filled in place. The
  // destination must hold tensor->data.size() bytes and live until *out is destroyed (after the
  // tensor is read).
  virtual Status OpenHostDestination(size_t rank, ShardedTensor* tensor,
                                     std::unique_ptr<TensorDestination>* out);

  // Inside a save step (and ReportAsyncSave), on the thread running it: the save it runs for.
  // Outside a save step, a context with iteration -1. The reference valid for the step's call.
  const SaveContext& save_context() const;

 private:
  struct PendingSave;
  // Runs the write of async save `p` (steps 4-5) with its writer context; sets p->status.
  void RunWrite(PendingSave* p);
  // Completes the oldest save in flight (waits for its write, or runs a deferred one) and returns
  // what ReportAsyncSave makes of its status.
  Status CompleteOldest();
  // Steps 4a-5 of a save. The indexes it wrote, at their committed paths, are appended to
  // *committed, for the thread that owns the engine to keep (DecodedIndexCache).
  Status WriteCheckpoint(int64_t iteration, const std::vector<ShardedStateDict>& every_rank,
                         const SaveOptions& options, const SavePlan& plan,
                         std::vector<DecodedIndex>* committed);
  // Writes the index of `m` and its checksum file into directory `subdir` of `staging`, and
  // notes it in written_indexes_ when DecodedFormOf gives its decoded form.
  Status WriteIndexFiles(const std::string& staging, const std::string& subdir, const char* name,
                         const char* checksum_name, const CheckpointMetadata& m);
  Status EnsureRoot();
  Status RemoveLeftovers();
  Status LoadImpl(LoadRequest& request, DestinationProvider* provider, LoadResult* result);
  Status LoadGuarded(LoadRequest& request, DestinationProvider* provider, LoadResult* result);
  // Reads one index file and its checksum file; `m` is decoded, not yet cross-checked. The
  // index's size is added to *index_bytes.
  Status ReadIndexFile(const std::string& dir, const char* name, const char* checksum_name,
                       CheckpointMetadata* m, uint64_t* index_bytes);
  Status ReadPerWriterIndex(const std::string& dir, CheckpointMetadata* merged,
                            uint64_t* index_bytes);

  std::unique_ptr<Env>
      confined_env_;  // options_.env confined to the root; options_.env points here
  ReferenceOptions options_;
  std::unique_ptr<PlanCache> plan_cache_;
  // The async saves in flight, oldest first: only the caller's thread touches the queue.
  std::deque<std::unique_ptr<PendingSave>> in_flight_;
  // The indexes the save in progress wrote (WriteIndex) in the form DecodedFormOf gives, each
  // path relative to its staging directory, until WriteCheckpoint hands them on with the
  // committed checkpoint's paths to be kept in DecodedIndexCache::Shared(); an index that form
  // cannot be given for is decoded when read.
  std::vector<DecodedIndex> written_indexes_;
};

// Every check a save input must pass before anything is written: per-entry integrity, data sizes
// (DTypeSize * local volume), and with `global` the validators over the whole signature (P4, P5,
// P11). Errors name the rank and the key.
Status ValidateSaveInput(const std::vector<ShardedStateDict>& every_rank, bool global);

}  // namespace ckptspec
