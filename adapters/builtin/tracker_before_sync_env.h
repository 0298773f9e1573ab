// The built-in adapter's crash-consistency mutant (--tracker-before-sync): an Env over the real
// disk that skips every fsync of a file or directory inside an iteration directory (a path with
// an "iter_" component: the staging iter_N.tmp/ and the committed iter_N/) until the tracker has
// been renamed into place and its directory synced, then syncs everything (sync(2)). The tracker
// is thus durable before the data it names: a power loss in between leaves it naming a checkpoint
// whose files are empty or missing. The reference engine calls exactly the syncs its commit
// protocol needs; this Env moves the data's behind the tracker's, as a checkpointer that calls
// os.sync() once at the end would. P13's disk form must catch it.
#pragma once

#include <memory>
#include <string>

#include "base/env_wrapper.h"

namespace ckptspec {

class TrackerBeforeSyncEnv : public EnvWrapper {
 public:
  // `tracker_name`: the tracker's file name (the rename onto it is the trigger).
  TrackerBeforeSyncEnv(Env* base, std::string tracker_name)
      : EnvWrapper(base), tracker_name_(std::move(tracker_name)) {}

  Status NewWritableFile(const std::string& path, std::unique_ptr<WritableFile>* out) override;
  Status RenameFile(const std::string& src, const std::string& dst) override;
  Status SyncDir(const std::string& dir) override;

  // Whether `path` lies in an iteration directory (a component starting with "iter_").
  static bool InIterationDir(const std::string& path);

 private:
  const std::string tracker_name_;
};

}  // namespace ckptspec
