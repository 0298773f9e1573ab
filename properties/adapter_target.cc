#include "properties/adapter_target.h"

#include <stdlib.h>

#include <memory>

#include "targets/env/env.h"
#include "targets/process/process_target.h"

namespace ckptspec {
namespace {

Status MakeTempDir(std::string* out) {
  const char* tmp = getenv("TMPDIR");
  std::string pattern = JoinPath(tmp && *tmp ? tmp : "/tmp", "ckptspec-adapter-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    return Status::IOError("cannot create a temporary directory like " + pattern);
  }
  *out = pattern;
  return Status::OK();
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
  // `temp_dir` holds options.directory and options.work_dir; removed at the end ("" : none).
  AdapterUnderTest(std::string name, std::string temp_dir, ProcessEngineOptions options)
      : name_(std::move(name)), temp_dir_(std::move(temp_dir)), options_(std::move(options)) {
    StartProcess();
  }
  ~AdapterUnderTest() override {
    target_.reset();
    if (!temp_dir_.empty()) (void)RemoveRecursively(Env::Posix(), temp_dir_);
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
  std::string temp_dir_;
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
  std::string probe_dir;
  CKPTSPEC_RETURN_IF_ERROR(MakeTempDir(&probe_dir));
  HelloReply hello;
  const Status probed = ProcessEngine::Probe(options.command, probe_dir, options.timeout_s, &hello);
  (void)RemoveRecursively(Env::Posix(), probe_dir);
  CKPTSPEC_RETURN_IF_ERROR(probed.WithContext("adapter '" + options.command + "'"));

  TargetFactory factory;
  factory.name = options.name.empty() ? DefaultName(options.command) : options.name;
  factory.capabilities = hello.capabilities;
  factory.fault_injection = false;
  const std::string name = factory.name;
  const AdapterOptions copy = options;
  const Capabilities declared = hello.capabilities;
  factory.make = [name, copy, declared](const TargetOptions&) -> std::unique_ptr<TargetUnderTest> {
    std::string dir;
    ProcessEngineOptions engine;
    engine.command = copy.command;
    engine.timeout_s = copy.timeout_s;
    engine.capabilities = declared;
    // A temporary directory that cannot be made leaves the paths empty: every engine call then
    // fails (ProcessEngine refuses to run without them).
    if (MakeTempDir(&dir).ok()) {
      engine.directory = JoinPath(dir, "ckpt");
      engine.work_dir = JoinPath(dir, "work");
    } else {
      dir.clear();
    }
    return std::make_unique<AdapterUnderTest>(name, dir, std::move(engine));
  };
  *out = std::move(factory);
  return Status::OK();
}

}  // namespace ckptspec
