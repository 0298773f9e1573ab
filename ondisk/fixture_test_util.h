// The real DCP and torch_dist fixtures of corpus/dcp/ (tools/write_dcp_fixtures.py; what each
// holds and which defect each corrupt one carries: corpus/dcp/MANIFEST.json), and scratch copies
// of them for tests that damage a file.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "ondisk/dcp_verify.h"
#include "base/env.h"

#ifndef CKPTSPEC_SOURCE_DIR
#error "CKPTSPEC_SOURCE_DIR must name the source tree (set by ondisk/CMakeLists.txt)"
#endif

namespace ckptspec {
namespace testing_util {

inline std::string Fixture(const std::string& name) {
  return std::string(CKPTSPEC_SOURCE_DIR) + "/corpus/dcp/" + name;
}

// A confined view of `root`, as the commands open checkpoints.
inline std::unique_ptr<Env> ViewOf(const std::string& root) {
  std::unique_ptr<Env> view;
  EXPECT_TRUE(Env::Posix()->NewConfinedView(root, &view).ok());
  return view;
}

// `ckptspec verify` of the DCP or torch_dist checkpoint at `root`; with `data`, its data read and
// checksummed too.
inline Status VerifyDcp(const std::string& root, DcpVerifyReport* report, bool data = true,
                        const ResourceLimits& limits = ResourceLimits()) {
  std::unique_ptr<Env> view = ViewOf(root);
  DetectedCheckpoint detected;
  CKPTSPEC_RETURN_IF_ERROR(DetectCheckpoint(view.get(), root, &detected));
  DcpVerifyOptions options;
  options.data = data;
  options.checksums = data;
  options.limits = limits;
  return VerifyDcpCheckpoint(view.get(), detected, options, report);
}

// A fresh copy of fixture `name` under a temporary directory, removed with the object.
class ScratchCopy {
 public:
  explicit ScratchCopy(const std::string& name) {
    std::string templ = (std::filesystem::temp_directory_path() / "ckptspec_dcp_XXXXXX").string();
    base_ = ::mkdtemp(templ.data());
    dir_ = base_ + "/" + name;
    std::filesystem::copy(Fixture(name), dir_, std::filesystem::copy_options::recursive);
  }
  ~ScratchCopy() {
    std::error_code ignored;  // best effort: a leftover temporary directory harms nothing
    std::filesystem::remove_all(base_, ignored);
  }
  const std::string& dir() const { return dir_; }
  const std::string& base() const { return base_; }

 private:
  std::string base_, dir_;
};

}  // namespace testing_util
}  // namespace ckptspec
