// Loads a whole checkpoint directory from a bundle (fuzz/bundle.h): the files are written into an
// in-memory Env, then
//  1. `verify` (targets/reference/verify.h) checks the tracker's iteration, or every iteration;
//  2. the reference engine loads the tracker's iteration, with templates either from its
//     metadata (every tensor whole, every object, on one rank: a resharding read of everything) or
//     from the canonical framework of a seed run (fuzz/seed_runs.h: ResumeRun, the framework's
//     rebuild of training state included), under the bundle's strict mode.
// Contract (P16): every input gives OK or an error Status; never a crash, a hang, a leak or
// undefined behaviour. And the two readers agree: when verify finds nothing wrong with the
// tracker's iteration, loading everything its metadata lists succeeds.
// Metadata whose tensors would need more than kMaxTemplateBytes of templates is verified but not
// loaded (the fuzzer's memory, not the format, sets that limit).
// The structure-aware mutator lives in checkpoint_dir_mutator.cc (libFuzzer builds only).
#include <algorithm>
#include <cstdio>
#include <string>

#include "fuzz/bundle.h"
#include "fuzz/fuzz_target.h"
#include "fuzz/seed_runs.h"
#include "harness/harness.h"
#include "base/mem_env.h"
#include "targets/reference/reference_target.h"
#include "targets/reference/verify.h"

namespace ckptspec {
namespace {

constexpr const char* kRoot = "/ckpt";
constexpr int64_t kMaxTemplateBytes = int64_t{16} << 20;

// One rank requesting every tensor whole and every object the metadata lists (of the rank-local
// ones, rank 0's); false when the templates would exceed kMaxTemplateBytes.
bool TemplatesFromMetadata(const CheckpointMetadata& md, ShardedStateDict* out) {
  int64_t bytes = 0;
  for (const TensorEntry& t : md.tensors) {
    int64_t volume = 0;
    if (!CheckedVolume(t.global_shape, &volume)) return false;
    const int64_t size = volume * static_cast<int64_t>(DTypeSize(t.dtype));
    if (volume > kMaxTemplateBytes || size > kMaxTemplateBytes - bytes) return false;
    bytes += size;
    ShardedTensor tensor;
    tensor.spec.key = t.key;
    tensor.spec.dtype = t.dtype;
    tensor.spec.global_shape = t.global_shape;
    tensor.spec.global_offset.assign(t.global_shape.size(), 0);
    tensor.spec.local_shape = t.global_shape;
    tensor.spec.axis_fragmentations.assign(t.global_shape.size(), 1);
    tensor.data.assign(static_cast<size_t>(size), 0);
    out->tensors.push_back(std::move(tensor));
  }
  for (const ObjectEntry& o : md.objects) {
    ShardedObject object;
    object.spec = o.Spec();
    if (IsRankLocal(object.spec) && o.rank != 0) continue;  // rank 0 reads its own only
    out->objects.push_back(std::move(object));
  }
  return true;
}

void LoadWithFramework(Target& target, const Bundle& bundle) {
  const SeedRun& seed = SeedRuns()[bundle.run % SeedRuns().size()];
  ResumeOptions options;
  options.strict = static_cast<StrictMode>(BundleStrictMode(bundle));
  std::vector<TrainingState> states;
  // The fuzzer checks that reading ends without a crash or UB; any verdict is a valid outcome.
  ResumeRun(target, seed.run, options, &states).IgnoreError();
}

void LoadFromMetadata(ReferenceEngine& engine, const Bundle& bundle, const VerifyReport& report) {
  int64_t iteration = 0;
  if (!engine.LatestIteration(&iteration).ok()) return;
  CheckpointMetadata md;
  if (!engine.ReadMetadata(iteration, &md).ok()) return;
  LoadRequest request;
  request.iteration = iteration;
  request.strict = static_cast<StrictMode>(BundleStrictMode(bundle));
  request.allow_shape_mismatch = BundleAllowShapeMismatch(bundle);
  request.templates.resize(1);
  if (!TemplatesFromMetadata(md, &request.templates[0])) return;
  LoadResult result;
  const Status loaded = engine.Load(std::move(request), &result);
  const bool verified = report.ok() && !report.iterations.empty() &&
                        std::find(report.iterations.begin(), report.iterations.end(), iteration) !=
                            report.iterations.end();
  if (verified && !loaded.ok()) {
    std::fprintf(stderr, "verify found iteration %lld sound; loading it failed: %s\n",
                 static_cast<long long>(iteration), loaded.ToString().c_str());
  }
  CKPTSPEC_FUZZ_CHECK(!verified || loaded.ok(),
                      "a checkpoint verify finds sound loads (every tensor and object)");
}

}  // namespace
}  // namespace ckptspec

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ckptspec;
  Bundle bundle;
  if (!ParseBundle(data, size, &bundle)) return 0;
  MemEnv env;
  if (!MaterializeBundle(bundle, &env, kRoot).ok()) return 0;
  VerifyReport report;
  // The fuzzer checks that reading ends without a crash or UB; any verdict is a valid outcome.
  VerifyCheckpoint(&env, kRoot, BundleVerifyAll(bundle), &report).IgnoreError();

  ReferenceOptions engine;
  engine.env = &env;
  engine.root = kRoot;
  engine.async_execution = AsyncExecution::kDeferred;
  ReferenceTarget target("reference", std::move(engine));
  if (BundleFrameworkTemplates(bundle)) {
    LoadWithFramework(target, bundle);
  } else {
    LoadFromMetadata(target.reference_engine(), bundle, report);
  }
  return 0;
}
