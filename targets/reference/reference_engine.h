// The reference engine: a real sharded checkpointer on an Env (docs/DESIGN.md §6, docs/FORMAT.md).
//
// Save (sync, or the background part of an async save):
//  1. Check every entry (ValidateTensorSpec / ValidateObjectSpec, data sizes) and, when
//     SaveOptions::validate, the global sharding (P4, P5, P11) — skipped only when a cached plan
//     for the same structure is reused, as Megatron does.
//  2. Plan: only main replicas are written, each by the rank holding it (save_plan.h). With
//     assume_constant_structure the plan comes from the PlanCache when the structure fingerprint
//     is unchanged, and is made afresh (and cached) otherwise.
//  3. Commit protocol: remove leftovers of interrupted saves; write every shard file, metadata.json
//     and metadata.xxh3 into iter_N.tmp/, fsync each file and the directory; rename it to iter_N/
//     and fsync the root; then replace the tracker atomically (write .tmp, fsync, rename, fsync
//     the root). A crash at any operation leaves the tracker on a complete checkpoint (P13).
//     Saving an iteration the tracker already names is refused (FailedPrecondition): replacing it
//     would open a window where the tracker names nothing.
//  4. Retention (keep_last > 0): the newest keep_last iteration directories stay, and so does the
//     one the tracker names, always; others are renamed to iter_N.deleting (durably) and removed.
//
// Async: Save with SaveOptions::async copies every rank's data before it returns (P14) and plans
// at once. With AsyncExecution::kThread the write runs on a background thread at once; with
// kDeferred it runs inside the next Finalize/Save/Load call, so tests decide when. Finalize()
// waits and returns the save's status; Save and Load finalize first and return a pending save's
// error instead of proceeding (B19: an async error is never dropped). The tracker names the
// iteration only after its files are complete.
//
// Load: see reference_load.cc: chunks resolved by box intersection (resharding), objects by
// unique key, every StrictMode, checksums verified on every read, global-shape mismatch an
// error unless allowed. LoadToDestinations is the same load writing tensor data through a
// DestinationProvider (targets/device/ uses it to load straight into CUDA device memory).
//
// Thread-safety: one caller at a time (the background writer is internal).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "targets/env/env.h"
#include "targets/reference/format.h"
#include "targets/reference/resource_limits.h"
#include "targets/reference/save_plan.h"
#include "targets/reference/tensor_destination.h"
#include "targets/target.h"

namespace ckptspec {

enum class AsyncExecution { kThread, kDeferred };

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
};

class ReferenceEngine : public Engine {
 public:
  explicit ReferenceEngine(ReferenceOptions options);
  // Waits for a pending async save; its status is lost here, so call Finalize() first.
  ~ReferenceEngine() override;

  Capabilities capabilities() const override;
  Status Save(int64_t iteration, const std::vector<ShardedStateDict>& every_rank,
              const SaveOptions& options) override;
  Status Finalize() override;
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
  bool has_pending_save() const { return pending_ != nullptr; }
  const PlanCache& plan_cache() const { return *plan_cache_; }
  const std::string& root() const { return options_.root; }
  Env* env() const { return options_.env; }

 private:
  struct PendingSave;
  Status PrepareSave(const std::vector<ShardedStateDict>& every_rank, const SaveOptions& options,
                     SavePlan* plan);
  Status WriteCheckpoint(int64_t iteration, const std::vector<ShardedStateDict>& every_rank,
                         const SaveOptions& options, const SavePlan& plan);
  Status EnsureRoot();
  Status RemoveLeftovers();
  Status ApplyRetention();
  Status LoadImpl(LoadRequest& request, DestinationProvider* provider, LoadResult* result);
  Status LoadGuarded(LoadRequest& request, DestinationProvider* provider, LoadResult* result);
  // Writes the index of a finished staging directory in the configured layout.
  Status WriteIndex(const std::string& staging, const CheckpointMetadata& m);
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
  std::unique_ptr<PendingSave> pending_;
};

// Every check a save input must pass before anything is written: per-entry integrity, data sizes
// (DTypeSize * local volume), and with `global` the validators over the whole signature (P4, P5,
// P11). Errors name the rank and the key.
Status ValidateSaveInput(const std::vector<ShardedStateDict>& every_rank, bool global);

}  // namespace ckptspec
