#include "properties/adapter_target.h"

#include <stdlib.h>
#include <unistd.h>

#include <memory>
#include <vector>

#include "targets/env/env.h"
#include "targets/process/harness_registry.h"
#include "targets/process/process_target.h"

namespace ckptspec {
namespace {

// A fresh directory "ckptspec-adapter-<pid>-XXXXXX" (mode 0700) under `root`, registered for
// removal on a termination signal (targets/process/harness_registry.h).
Status MakeTempDir(const std::string& root, std::string* out) {
  std::string pattern = JoinPath(root, "ckptspec-adapter-" + std::to_string(getpid()) + "-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    return Status::IOError("cannot create a temporary directory like " + pattern);
  }
  *out = pattern;
  RegisterTempDir(pattern);
  return Status::OK();
}

// Removes a directory MakeTempDir made, never following a link the adapter left in it.
void RemoveTempDir(const std::string& dir) {
  (void)Env::Posix()->RemoveTree(dir);
  UnregisterTempDir(dir);
}

// Where checkpoints go: $TMPDIR, else /tmp.
std::string CheckpointRoot() {
  const char* tmp = getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

// Where the harness's scratch files go: $CKPTSPEC_SCRATCH_DIR when set; else /dev/shm when it is
// writable (entry bytes are written and read once per call: a memory file system spares the
// storage under test that traffic), else the checkpoint root.
std::string WorkRoot() {
  const char* chosen = getenv("CKPTSPEC_SCRATCH_DIR");
  if (chosen && *chosen) return chosen;
  return access("/dev/shm", W_OK | X_OK) == 0 ? std::string("/dev/shm") : CheckpointRoot();
}

std::string DefaultName(const std::string& command) {
  const size_t start = command.find_first_not_of(" \t");
  if (start == std::string::npos) return "adapter";
  const std::string first = command.substr(start, command.find_first_of(" \t", start) - start);
  const size_t slash = first.rfind('/');
  return "adapter:" + (slash == std::string::npos ? first : first.substr(slash + 1));
}

class AdapterUnderTest : public TargetUnderTest {
 public:
  // `temp_dirs` hold options.directory and options.work_dir; removed at the end.
  AdapterUnderTest(std::string name, std::vector<std::string> temp_dirs, ProcessEngineOptions options)
      : name_(std::move(name)), temp_dirs_(std::move(temp_dirs)), options_(std::move(options)) {
    StartProcess();
  }
  ~AdapterUnderTest() override {
    target_.reset();
    for (const std::string& dir : temp_dirs_) RemoveTempDir(dir);
  }
  Target& target() override { return *target_; }
  MemEnv* mem_env() override { return nullptr; }
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
  std::unique_ptr<ProcessTarget> target_;
};

}  // namespace

Status AdapterTargetFactory(const AdapterOptions& options, TargetFactory* out) {
  if (options.command.find_first_not_of(" \t") == std::string::npos) {
    return Status::InvalidArgument("--adapter: the command is empty");
  }
  if (!(options.timeout_s > 0)) {
    return Status::InvalidArgument("adapter timeout must be positive, got " + std::to_string(options.timeout_s));
  }
  HelloReply hello;
  CKPTSPEC_RETURN_IF_ERROR(ProcessEngine::Probe(options.command, options.timeout_s, &hello)
                               .WithContext("adapter '" + options.command + "'"));

  TargetFactory factory;
  factory.name = options.name.empty() ? DefaultName(options.command) : options.name;
  factory.capabilities = hello.capabilities;
  factory.fault_injection = false;
  const std::string name = factory.name;
  const AdapterOptions copy = options;
  const Capabilities declared = hello.capabilities;
  factory.make = [name, copy, declared](const TargetOptions& target_options) -> std::unique_ptr<TargetUnderTest> {
    std::string checkpoints, work;
    ProcessEngineOptions engine;
    engine.command = copy.command;
    engine.timeout_s = copy.timeout_s;
    engine.capabilities = declared;
    engine.events = target_options.events;
    std::vector<std::string> made;
    // A temporary directory that cannot be made leaves its path empty: every engine call then
    // fails (ProcessEngine refuses to run without both).
    if (MakeTempDir(CheckpointRoot(), &checkpoints).ok()) {
      made.push_back(checkpoints);
      engine.directory = JoinPath(checkpoints, "ckpt");
    }
    if (MakeTempDir(WorkRoot(), &work).ok()) {
      made.push_back(work);
      engine.work_dir = work;
    }
    return std::make_unique<AdapterUnderTest>(name, std::move(made), std::move(engine));
  };
  *out = std::move(factory);
  return Status::OK();
}

}  // namespace ckptspec
