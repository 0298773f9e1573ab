#include "runner/adapter_target.h"

#include <stdlib.h>
#include <unistd.h>

#include <cctype>
#include <memory>
#include <sstream>
#include <vector>

#include "crash/fs_recorder.h"
#include "base/env.h"
#include "targets/process/coordinator.h"
#include "targets/process/cleanup_registry.h"
#include "targets/process/owned_temp_dir.h"
#include "targets/process/process_framework.h"
#include "targets/process/process_target.h"
#include "targets/process/rank_group_pool.h"

namespace ckptspec {
namespace {

// A fresh directory named after this process (mode 0700) under `root`, registered for removal on
// a termination signal (targets/process/cleanup_registry.h) and reclaimed by a later ckptspec
// if this one is killed outright (targets/process/owned_temp_dir.h).
Status MakeTempDir(const std::string& root, std::string* out) {
  CKPTSPEC_RETURN_IF_ERROR(MakeOwnedTempDir(root, out));
  RegisterTempDir(*out);
  return Status::OK();
}

// Removes a directory MakeTempDir made, never following a link the adapter left in it.
void RemoveTempDir(const std::string& dir) {
  (void)Env::Posix()->RemoveTree(dir);
  UnregisterTempDir(dir);
}

// Where checkpoints go: the shared directory when given, else $TMPDIR, else /tmp.
std::string CheckpointRoot(const std::string& shared_dir = "") {
  if (!shared_dir.empty()) return shared_dir;
  const char* tmp = getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

// Where the harness's scratch files go: the shared directory when given (ranks on other hosts
// read and write them); else $CKPTSPEC_SCRATCH_DIR when set; else /dev/shm when it is writable
// (entry bytes are written and read once per call: a memory file system spares the storage under
// test that traffic), else the checkpoint root.
std::string WorkRoot(const std::string& shared_dir = "") {
  if (!shared_dir.empty()) return shared_dir;
  const char* chosen = getenv("CKPTSPEC_SCRATCH_DIR");
  if (chosen && *chosen) return chosen;
  return access("/dev/shm", W_OK | X_OK) == 0 ? std::string("/dev/shm") : CheckpointRoot();
}

// The pool of ranks an outside launcher started (AdapterOptions::launched_ranks), once they all
// dialled in, and its first group's hello (the probe's).
Status LaunchedPool(const AdapterOptions& options, std::shared_ptr<RankGroupPool>* pool,
                    HelloReply* hello) {
  if (options.coordinator_file.empty()) {
    return Status::InvalidArgument(
        "launched ranks need a coordinator file (--adapter-coordinator-file) to find ckptspec");
  }
  Coordinator coordinator;
  CKPTSPEC_RETURN_IF_ERROR(coordinator.Listen(options.listen));
  CKPTSPEC_RETURN_IF_ERROR(coordinator.WriteFile(options.coordinator_file));
  fprintf(stderr, "ckptspec: waiting for %d launched ranks at %s (coordinator file %s)\n",
          options.launched_ranks, coordinator.address().c_str(), options.coordinator_file.c_str());
  std::vector<std::unique_ptr<SocketRank>> ranks;
  const Status accepted =
      coordinator.AcceptRanks(options.launched_ranks, options.connect_timeout_s, &ranks);
  unlink(options.coordinator_file.c_str());  // its token admits no one once the pool is formed
  CKPTSPEC_RETURN_IF_ERROR(accepted);
  *pool = RankGroupPool::Launched(RankGroupOptions{"", 0, options.timeout_s, {}, true},
                                  std::move(ranks));
  std::unique_ptr<RankGroup> group;
  CKPTSPEC_RETURN_IF_ERROR((*pool)->Acquire(options.launched_ranks, &group));
  *hello = group->hello();
  return (*pool)->Release(std::move(group));
}

// The storage recorder every rank process of one factory runs under (crash/fs_recorder.h): its
// control file lives in a temporary directory of its own, removed with it.
class SharedRecorder {
 public:
  static Status Make(std::shared_ptr<SharedRecorder>* out) {
    std::string dir;
    CKPTSPEC_RETURN_IF_ERROR(MakeTempDir(WorkRoot(), &dir));
    auto shared = std::shared_ptr<SharedRecorder>(new SharedRecorder(dir));
    CKPTSPEC_RETURN_IF_ERROR(FsRecorder::Create(dir, &shared->recorder_));
    *out = std::move(shared);
    return Status::OK();
  }
  ~SharedRecorder() {
    recorder_.reset();
    RemoveTempDir(dir_);
  }
  FsRecorder* recorder() const { return recorder_.get(); }

 private:
  explicit SharedRecorder(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
  std::unique_ptr<FsRecorder> recorder_;
};

// Whether `name` is fit to name a target in reports: 1 to 64 of [A-Za-z0-9._-].
bool IsPlainName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

// The base name of the command's first word that is not an interpreter or a launcher, without
// its extension: "python3 adapters/zarr/ckptspec_zarr_adapter.py" -> "ckptspec_zarr_adapter".
std::string CommandName(const std::string& command) {
  static const char* const kLaunchers[] = {"python", "python3", "sh",   "bash",
                                           "env",    "exec",    "nice", "uv"};
  std::istringstream words(command);
  std::string word, last;
  while (words >> word) {
    if (word.find('=') != std::string::npos && word.find('/') == std::string::npos)
      continue;                                     // VAR=value
    if (!word.empty() && word[0] == '-') continue;  // a launcher's flag
    const size_t slash = word.rfind('/');
    std::string base = slash == std::string::npos ? word : word.substr(slash + 1);
    bool launcher = false;
    for (const char* l : kLaunchers)
      launcher = launcher || base == l || base.rfind(std::string(l) + ".", 0) == 0;
    last = base;
    if (launcher) continue;
    const size_t dot = base.rfind('.');
    if (dot != std::string::npos && dot > 0) base = base.substr(0, dot);
    return base;
  }
  return last.empty() ? "adapter" : last;
}

std::string TargetName(const AdapterOptions& options, const HelloReply& hello) {
  if (!options.name.empty()) return options.name;
  if (IsPlainName(hello.adapter)) return kAdapterTargetPrefix + hello.adapter;
  return kAdapterTargetPrefix + CommandName(options.command);
}

class AdapterUnderTest : public TargetUnderTest {
 public:
  // `temp_dirs` hold options.directory and options.work_dir; removed at the end.
  // `options.pool` and `recorder`, when set, are shared with the factory and the other targets it
  // made.
  AdapterUnderTest(std::string name, std::vector<std::string> temp_dirs,
                   ProcessEngineOptions options, std::shared_ptr<SharedRecorder> recorder)
      : name_(std::move(name)),
        temp_dirs_(std::move(temp_dirs)),
        options_(std::move(options)),
        recorder_(std::move(recorder)) {
    StartProcess();
  }
  ~AdapterUnderTest() override {
    target_.reset();
    for (const std::string& dir : temp_dirs_) RemoveTempDir(dir);
  }
  Target& target() override { return *target_; }
  MemEnv* mem_env() override { return nullptr; }
  Env* storage_env() override { return Env::Posix(); }
  FsRecorder* storage_recorder() override { return recorder_ ? recorder_->recorder() : nullptr; }
  std::string root() const override { return options_.directory; }
  void NewProcess() override {
    target_.reset();
    StartProcess();
  }

 private:
  void StartProcess() { target_ = std::make_unique<ProcessTarget>(name_, options_); }

  std::string name_;
  std::vector<std::string> temp_dirs_;
  ProcessEngineOptions options_;
  std::shared_ptr<SharedRecorder> recorder_;
  std::unique_ptr<ProcessTarget> target_;
};

// A framework adapter's framework under test: a ProcessFramework over a checkpoint directory of
// its own, removed at the end (after the processes are given back).
class FrameworkAdapterUnderTest : public FrameworkUnderTest {
 public:
  FrameworkAdapterUnderTest(std::string temp_dir, ProcessFrameworkOptions options)
      : temp_dir_(std::move(temp_dir)),
        framework_(std::make_unique<ProcessFramework>(std::move(options))) {}
  ~FrameworkAdapterUnderTest() override {
    framework_.reset();
    if (!temp_dir_.empty()) RemoveTempDir(temp_dir_);
  }
  Status Build(const FrameworkJob& job) override { return framework_->Build(job); }
  Status Train(int64_t steps, bool fault, TrainResult* result) override {
    return framework_->Train(steps, fault, result);
  }
  Status Save(bool async, FrameworkSaveResult* result) override {
    return framework_->Save(async, result);
  }
  Status Finalize() override { return framework_->Finalize(); }
  Status Load(const FrameworkLoad& load, int64_t* iteration) override {
    return framework_->Load(load, iteration);
  }
  Status Observe(Observation* out) override { return framework_->Observe(out); }
  void NewProcess() override { framework_->NewProcess(); }

 private:
  std::string temp_dir_;
  std::unique_ptr<ProcessFramework> framework_;
};

}  // namespace

Status AdapterTargetFactory(const AdapterOptions& options, TargetFactory* out) {
  const bool launched = options.launched_ranks > 0;
  if (!launched && options.command.find_first_not_of(" \t") == std::string::npos) {
    return Status::InvalidArgument("--adapter: the command is empty");
  }
  if (!(options.timeout_s > 0)) {
    return Status::InvalidArgument("adapter timeout must be positive, got " +
                                   std::to_string(options.timeout_s));
  }
  const std::string checkpoint_root = CheckpointRoot(options.shared_dir);
  const std::string work_root = WorkRoot(options.shared_dir);
  // What a ckptspec killed outright left behind goes before this one adds its own.
  for (const std::string& root : {checkpoint_root, work_root}) {
    (void)ReclaimAbandonedTempDirs(root);
  }
  HelloReply hello;
  std::shared_ptr<RankGroupPool> pool;
  if (launched) {
    CKPTSPEC_RETURN_IF_ERROR(LaunchedPool(options, &pool, &hello).WithContext("launched ranks"));
  } else {
    CKPTSPEC_RETURN_IF_ERROR(ProcessEngine::Probe(options.command, options.timeout_s, &hello)
                                 .WithContext("adapter '" + options.command + "'"));
  }

  TargetFactory factory;
  factory.name = TargetName(options, hello);
  factory.capabilities = hello.capabilities;
  factory.fault_injection = false;
  factory.max_world_size = options.launched_ranks;
  const std::string name = factory.name;
  const AdapterOptions copy = options;
  const Capabilities declared = hello.capabilities;
  // Every rank runs under the storage recorder, passive until a property records a save.
  std::shared_ptr<SharedRecorder> recorder;
  std::vector<std::string> extra_env;
  if (!options.record_storage) {
    factory.disk_faults_missing = "the adapter runs without the storage recorder";
  } else if (launched) {
    factory.disk_faults_missing =
        "ranks an outside launcher started (the recorder's interposer runs only in processes "
        "ckptspec starts)";
  } else if (hello.framework) {
    factory.disk_faults_missing = "a framework adapter (its storage is its own)";
  } else {
    const Status made = SharedRecorder::Make(&recorder);
    if (made.ok()) {
      extra_env = recorder->recorder()->ChildEnvironment();
      factory.disk_faults = true;
    } else {
      factory.disk_faults_missing = made.ToString();
    }
  }
  if (!launched && hello.reset && !options.fresh_processes) {
    pool = std::make_shared<RankGroupPool>(
        RankGroupOptions{options.command, 0, options.timeout_s, extra_env},
        kAdapterTargetIdleBounds);
  }
  if (hello.framework) {
    factory.framework = hello.framework;
    factory.make_framework =
        [copy, pool, checkpoint_root](
            const TargetOptions& target_options) -> std::unique_ptr<FrameworkUnderTest> {
      ProcessFrameworkOptions framework;
      framework.command = copy.command;
      framework.timeout_s = copy.timeout_s;
      framework.events = target_options.events;
      framework.pool = pool;
      std::string checkpoints;
      // A directory that cannot be made leaves the path empty: every save and load then fails.
      if (MakeTempDir(checkpoint_root, &checkpoints).ok()) {
        framework.directory = JoinPath(checkpoints, "ckpt");
      }
      return std::make_unique<FrameworkAdapterUnderTest>(checkpoints, std::move(framework));
    };
    *out = std::move(factory);
    return Status::OK();
  }
  factory.make = [name, copy, declared, pool, recorder, extra_env, checkpoint_root, work_root](
                     const TargetOptions& target_options) -> std::unique_ptr<TargetUnderTest> {
    std::string checkpoints, work;
    ProcessEngineOptions engine;
    engine.command = copy.command;
    engine.timeout_s = copy.timeout_s;
    engine.capabilities = declared;
    engine.events = target_options.events;
    engine.pool = pool;
    engine.extra_env = extra_env;
    std::vector<std::string> made;
    // A temporary directory that cannot be made leaves its path empty: every engine call then
    // fails (ProcessEngine refuses to run without both).
    if (MakeTempDir(checkpoint_root, &checkpoints).ok()) {
      made.push_back(checkpoints);
      engine.directory = JoinPath(checkpoints, "ckpt");
    }
    if (MakeTempDir(work_root, &work).ok()) {
      made.push_back(work);
      engine.work_dir = work;
    }
    return std::make_unique<AdapterUnderTest>(name, std::move(made), std::move(engine), recorder);
  };
  *out = std::move(factory);
  return Status::OK();
}

}  // namespace ckptspec
