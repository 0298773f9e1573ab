// Verifies and diffs a PyTorch DCP or Megatron torch_dist directory from a bundle (fuzz/bundle.h;
// the options byte is unused): the files are written into an in-memory Env, then
//  1. `verify --data --checksums` (ondisk/dcp_verify.h) checks it;
//  2. `diff` opens it (ondisk/checkpoint_contents.h) and compares it with itself.
// Contract: every input gives OK or an error Status; never a crash, a hang, a leak or undefined
// behaviour (chunk geometry that disagrees with its tensor is the space this explores: seeds carry
// every kind the readers refuse). And the two verbs agree: diff opens nothing verify refuses or
// finds inconsistent in the index (tiling, storage entries, file extents), and a directory
// verify finds sound diffs equal to itself.
#include <memory>
#include <string>

#include "fuzz/bundle.h"
#include "fuzz/fuzz_target.h"
#include "ondisk/checkpoint_contents.h"
#include "ondisk/checkpoint_diff.h"
#include "ondisk/dcp_verify.h"
#include "base/mem_env.h"

namespace {

// Whether verify's report holds a finding of the index checks (formats/dcp_checks.h), which diff
// refuses; torch_dist's own findings (the common state) are about data diff compares instead.
bool IndexCheckFound(const ckptspec::DcpVerifyReport& report) {
  for (const std::string& f : report.index.findings) {
    for (const char* check : {"tiling: ", "storage: ", "files: "}) {
      if (f.rfind(check, 0) == 0) return true;
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ckptspec;
  constexpr const char* kRoot = "/ckpt";
  Bundle bundle;
  if (!ParseBundle(data, size, &bundle)) return 0;
  MemEnv env;
  if (!MaterializeBundle(bundle, &env, kRoot).ok()) return 0;
  DetectedCheckpoint detected;
  if (!DetectCheckpoint(&env, kRoot, &detected).ok()) return 0;
  if (detected.kind == CheckpointKind::kReference) return 0;  // checkpoint_dir_fuzzer's
  DcpVerifyOptions options;
  options.data = true;
  options.checksums = true;
  DcpVerifyReport report;
  const Status verified = VerifyDcpCheckpoint(&env, detected, options, &report);
  std::unique_ptr<CheckpointContents> a, b;
  const Status opened = CheckpointContents::Open(&env, kRoot, ResourceLimits(), &a);
  CKPTSPEC_FUZZ_CHECK(verified.ok() || !opened.ok(), "diff opened an index verify refuses");
  CKPTSPEC_FUZZ_CHECK(!verified.ok() || !IndexCheckFound(report) || !opened.ok(),
                      "diff opened an index verify finds inconsistent");
  if (!opened.ok() || !CheckpointContents::Open(&env, kRoot, ResourceLimits(), &b).ok()) return 0;
  DiffReport diff;
  const Status compared = DiffCheckpoints(*a, *b, DiffOptions(), &diff);
  CKPTSPEC_FUZZ_CHECK(!report.ok() || (compared.ok() && diff.same()),
                      "a checkpoint verify finds sound differs from itself");
  return 0;
}
