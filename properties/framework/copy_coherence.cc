// P9's framework form, copy coherence: after any load the optimizer's copies of every parameter
// (the fp32 main copy, the CPU-offload copy) hold what the load rules say: with the optimizer
// loaded, the saved master value; without it (no_load_optim, finetune: a model-only load), the
// loaded model weights (L4) -- never the values of the build before the load (B03: the
// HybridDeviceOptimizer's copies left at their initial values). CPU offload and mixed precision
// are drawn more often than the job generator draws them.
#include "generators/framework_job_gen.h"
#include "model/describe.h"
#include "model/observation_rules.h"
#include "properties/framework/framework_properties.h"
#include "properties/framework/framework_util.h"

namespace ckptspec {

void CheckFrameworkCopyCoherence(const TargetFactory& factory) {
  const FrameworkSupport& s = SupportOf(factory);
  FrameworkJob saved_job = *gen::JobWithin(s, factory.capabilities.plan_cache, kFrameworkMaxWorld);
  if (s.Has(s.optimizer, "cpu_offload") && s.Has(s.optimizer, "distributed") &&
      *rc::gen::arbitrary<bool>()) {
    saved_job.optimizer.distributed = true;
    saved_job.optimizer.cpu_offload_fraction = *rc::gen::elementOf(std::vector<double>{1.0, 0.5});
  }
  const bool change = factory.capabilities.resharding && gen::OneIn(3);
  const FrameworkJob job = *gen::ResumeJobFor(saved_job, s, kFrameworkMaxWorld, change);
  FrameworkLoad load;
  if (*rc::gen::arbitrary<bool>()) {
    // A model-only load, as a fine-tuning start from a pretrained checkpoint does.
    const bool finetune = s.Has(s.load_flags, "finetune") &&
                          (!s.Has(s.load_flags, "no_load_optim") || *rc::gen::arbitrary<bool>());
    if (finetune) {
      load.flags.finetune = true;
    } else if (s.Has(s.load_flags, "no_load_optim")) {
      load.flags.no_load_optim = true;
    }
  } else {
    load.flags = *gen::LoadFlagsWithin(s, false);
  }
  const int64_t k = *rc::gen::inRange<int64_t>(1, 3);  // trained: the loaded weights are not init
  RC_LOG() << "scenario:\n  save: " << DescribeJob(saved_job) << "\n  train " << k
           << ", save, restart\n  load: " << DescribeJob(job) << "\n  flags "
           << DescribeLoadFlags(load.flags) << "\n";
  const bool model_only = load.flags.finetune || load.flags.no_load_optim;
  RC_CLASSIFY(model_only, "model-only load");
  RC_CLASSIFY(job.optimizer.cpu_offload_fraction > 0, "cpu offload");

  FrameworkPair pair(factory, TargetOptions());
  const JudgedLoad judged = TrainSaveRestartLoad(pair, saved_job, k, job, load);
  if (!judged.loaded_ok) return;
  const LoadCase rules{saved_job, judged.saved, job, judged.fresh, load.flags};
  AssertLoaded(pair, rules, judged.loaded, {StateClass::kModel, StateClass::kCopies},
               "after the load");
}

}  // namespace ckptspec
