// P9, copy coherence: after any load, the copies of every trainable parameter agree with what was
// loaded. Without optimizer state (no_load_optim, finetune) the fp32 main copy and the CPU-offload
// copy equal the loaded model weights (the framework refreshes them: L4); with optimizer state
// they both equal the saved master value (one value fills both: L3). And the next step starts
// from the loaded weights: resume + train 1 equals the spec's expected resume + train 1.
// Catches: B03 (HybridDeviceOptimizer's CPU copies left at init after a model-only load), B12
// (fp32 masters refreshed for one precision only).
#include <cstring>
#include <sstream>

#include "generators/config_gen.h"
#include "generators/run_gen.h"
#include "model/describe.h"
#include "model/float_codec.h"
#include "properties/property.h"
#include "properties/property_util.h"
#include "properties/scenarios.h"

namespace ckptspec {
namespace {

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// The first trainable element whose main or offload copy differs from `reference(p, e)`, in
// words, or "".
template <typename Reference>
std::string CopyMismatch(const TrainingState& s, const char* against, Reference reference) {
  for (size_t p = 0; p < s.params.size(); ++p) {
    const ParamState& ps = s.params[p];
    if (ps.frozen) continue;
    for (const auto& [name, copy] :
         {std::make_pair("main", &ps.main), std::make_pair("offload", &ps.offload)}) {
      for (size_t e = 0; e < copy->size(); ++e) {
        const float want = reference(p, e);
        if (Bits((*copy)[e]) != Bits(want)) {
          std::ostringstream os;
          os << name << " copy of " << s.specs[p].name << " at index " << e << " is " << (*copy)[e]
             << ", " << against << " is " << want;
          return os.str();
        }
      }
    }
  }
  return "";
}

}  // namespace

void CheckCopyCoherence(const TargetFactory& factory) {
  RunSpec saved_run = *gen::RunUpTo(8);
  // Offload some or all parameters more often than the config generator does (B03's setting).
  const double offload = *rc::gen::elementOf(std::vector<double>{-1.0, 0.0, 0.5, 1.0});
  if (offload >= 0) {
    for (TrainingConfig& c : saved_run.configs) {
      c.optimizer.cpu_offload_fraction = offload;
      // HybridDeviceOptimizer is Megatron's: offload comes with Megatron's freezing family.
      if (offload > 0) c.optimizer.freeze_family = FreezeFamily::kMegatron;
    }
  }
  const int64_t k = *rc::gen::inRange<int64_t>(1, 3);  // trained: loaded weights differ from init
  const RunSpec run = *gen::ResumeRunFor(
      saved_run, 8, factory.capabilities.resharding && *rc::gen::inRange(0, 3) == 0);
  LoadFlags flags = *gen::LoadFlagsGen(false);
  // Model-only loads are the interesting case: half the time.
  if (*rc::gen::arbitrary<bool>()) {
    if (*rc::gen::arbitrary<bool>())
      flags.no_load_optim = true;
    else
      flags.finetune = true;
  }
  RC_LOG() << "scenario:\n  save: " << DescribeRun(saved_run) << "\n  train " << k
           << ", save, restart\n  resume: " << DescribeRun(run)
           << "\n  flags: " << DescribeLoadFlags(flags) << "\n  then train 1\n";
  const bool model_only = flags.finetune || flags.no_load_optim;
  bool any_offload = false, mixed = false;
  for (const TrainingConfig& c : run.configs) {
    any_offload |= c.optimizer.cpu_offload_fraction > 0;
    mixed |= c.model.params_dtype != DType::kFloat32;
  }
  RC_CLASSIFY(model_only, "model-only load");
  RC_CLASSIFY(any_offload, "cpu offload");
  RC_CLASSIFY(mixed, "16-bit model (fp32 main copies)");

  std::vector<TrainingState> states;
  CKPTSPEC_RC_ASSERT_OK(InitialStates(saved_run, &states));
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&states, k));
  RestartedResume r;
  CKPTSPEC_RC_ASSERT_OK(SaveRestartResume(factory, saved_run, states, run, flags, &r));
  // Which loads are refused is P3's business; here both must agree and the rest is moot.
  RC_CLASSIFY(!r.spec.ok(), "spec refuses");
  if (!r.spec.ok()) {
    RC_LOG() << "spec refuses: " << r.spec.ToString() << "\ntarget: " << r.got.ToString() << "\n";
    if (r.got.ok()) RC_FAIL("the target accepted a resume the spec refuses: " + r.spec.ToString());
    return;
  }
  CKPTSPEC_RC_ASSERT_OK(r.got);

  for (size_t m = 0; m < r.resumed.size(); ++m) {
    const TrainingState& s = r.resumed[m];
    std::string bad;
    if (model_only) {
      const DType dt = s.config.model.params_dtype;
      bad = CopyMismatch(s, "the loaded model weight", [&s, dt](size_t p, size_t e) {
        return static_cast<float>(DecodeToDouble(dt, s.params[p].model[e]));
      });
    } else {
      // One master value fills both copies.
      bad = CopyMismatch(s, "the loaded master value", [&s](size_t p, size_t e) {
        return static_cast<float>(MasterValue(s, static_cast<int>(p), static_cast<int64_t>(e)));
      });
    }
    if (!bad.empty()) RC_FAIL("module " + std::to_string(m) + " after the load: " + bad);
  }

  CKPTSPEC_RC_ASSERT_OK(TrainRun(&r.resumed, 1));
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&r.expected, 1));
  CKPTSPEC_RC_ASSERT_SAME(FirstRunDifference(r.resumed, r.expected),
                          "the first step after the load differs from the spec's");
}

}  // namespace ckptspec
