// The load-side context a framework layer receives (targets/target.h: LoadedCheckpoint) and
// ToCanonicalLoad, the helper that maps a framework's own load back onto the canonical templates.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>

#include "generators/run_gen.h"
#include "harness/harness.h"
#include "properties/property_util.h"
#include "base/mem_env.h"
#include "targets/reference/reference_target.h"

namespace ckptspec {
namespace {

// Requests every canonical entry but the objects keyed `left_out`, and rebuilds through
// ToCanonicalLoad, supplying those objects from `supply` (by rank and unique key) when it has
// them. Also records what FromStateDicts was told.
class LeavingOutFramework : public CanonicalFramework {
 public:
  LeavingOutFramework(std::string left_out,
                      std::map<std::pair<size_t, std::string>, std::string> supply)
      : left_out_(std::move(left_out)), supply_(std::move(supply)) {}
  Status LoadTemplates(const HeterogeneousLayout& layout,
                       const std::vector<TrainingConfig>& configs, const CheckpointInfo& saved,
                       const LoadFlags& flags,
                       std::vector<ShardedStateDict>* every_rank) const override {
    CKPTSPEC_RETURN_IF_ERROR(
        CanonicalFramework::LoadTemplates(layout, configs, saved, flags, every_rank));
    for (ShardedStateDict& d : *every_rank) {
      for (size_t i = d.objects.size(); i-- > 0;) {
        if (d.objects[i].spec.key == left_out_) d.objects.erase(d.objects.begin() + i);
      }
    }
    return Status::OK();
  }
  Status FromStateDicts(const LoadedCheckpoint& load,
                        std::vector<TrainingState>* states) const override {
    requested_objects_ = 0;
    for (const ShardedStateDict& d : load.requested) {
      for (const ShardedObject& o : d.objects) {
        if (!o.data.empty() || o.spec.key == left_out_) return Status::Corruption("bad request");
        ++requested_objects_;
      }
    }
    saved_common_ = load.saved.common;
    MissingEntryFill fill;
    fill.object = [&](size_t rank, ShardedObject* o) {
      auto it = supply_.find({rank, o->spec.UniqueKey()});
      if (it == supply_.end()) return false;
      o->data = it->second;
      return true;
    };
    std::vector<ShardedStateDict> canonical;
    CKPTSPEC_RETURN_IF_ERROR(ToCanonicalLoad(load, fill, &canonical));
    return CanonicalFramework::FromStateDicts(load.WithLoaded(canonical), states);
  }
  mutable size_t requested_objects_ = 0;
  mutable nlohmann::json saved_common_;

 private:
  std::string left_out_;
  std::map<std::pair<size_t, std::string>, std::string> supply_;
};

struct Case {
  RunSpec run;
  std::vector<TrainingState> states;
  std::vector<ShardedStateDict> saved;  // what the canonical framework saved
  MemEnv env;
};

std::unique_ptr<ReferenceTarget> TargetOn(MemEnv* env, std::unique_ptr<FrameworkLayer> framework) {
  ReferenceOptions options;
  options.env = env;
  options.root = "/ckpt";
  ReplacedParts parts;
  parts.framework = std::move(framework);
  return std::make_unique<ReferenceTarget>("leaving-out", std::move(options), std::move(parts));
}

// For any run: a framework that requests one object key less and supplies it itself rebuilds
// exactly the states the canonical framework does; without a supply, the error names the entry.
RC_GTEST_PROP(LoadContext, ToCanonicalLoadRebuildsWhatTheCanonicalLoadDoes, ()) {
  Case c;
  c.run = *gen::RunUpTo(4);
  RC_ASSERT(InitialStates(c.run, &c.states).ok());
  RC_ASSERT(TrainRun(&c.states, *rc::gen::inRange<int64_t>(0, 3)).ok());
  CanonicalFramework canonical;
  RC_ASSERT(canonical.ToStateDicts(c.run.layout, c.states, c.run.sharding, &c.saved).ok());
  // Keys of objects the canonical load requests of this checkpoint.
  CheckpointInfo info;
  RC_ASSERT(canonical.ReadCheckpointInfo(c.saved[0].common, &info).ok());
  std::vector<ShardedStateDict> templates;
  RC_ASSERT(
      canonical.LoadTemplates(c.run.layout, c.run.configs, info, LoadFlags(), &templates).ok());
  std::vector<std::string> keys;
  for (const ShardedStateDict& d : templates) {
    for (const ShardedObject& o : d.objects) keys.push_back(o.spec.key);
  }
  RC_PRE(!keys.empty());
  const std::string left_out = *rc::gen::elementOf(keys);
  RC_LOG() << "left out: " << left_out << "\n";

  auto reference = TargetOn(&c.env, nullptr);
  RC_ASSERT(SaveRun(*reference, c.run, c.states, 1, SaveOptions()).ok());
  std::vector<TrainingState> expected;
  RC_ASSERT(ResumeRun(*reference, c.run, ResumeOptions(), &expected, nullptr).ok());

  std::map<std::pair<size_t, std::string>, std::string> supply;
  for (size_t r = 0; r < c.saved.size(); ++r) {
    for (const ShardedObject& o : c.saved[r].objects) {
      if (o.spec.key == left_out) supply[{r, o.spec.UniqueKey()}] = o.data;
    }
  }
  auto framework = std::make_unique<LeavingOutFramework>(left_out, supply);
  const LeavingOutFramework* seen = framework.get();
  auto leaving_out = TargetOn(&c.env, std::move(framework));
  std::vector<TrainingState> got;
  const Status s = ResumeRun(*leaving_out, c.run, ResumeOptions(), &got, nullptr);
  RC_ASSERT(s.ok());
  RC_ASSERT(seen->saved_common_ == c.saved[0].common);
  RC_ASSERT(got.size() == expected.size());
  for (size_t m = 0; m < got.size(); ++m) RC_ASSERT(FirstDifference(got[m], expected[m]) == "");

  auto unsupplied =
      TargetOn(&c.env, std::make_unique<LeavingOutFramework>(left_out, decltype(supply)()));
  const Status missing = ResumeRun(*unsupplied, c.run, ResumeOptions(), &got, nullptr);
  RC_ASSERT(missing.code() == Status::Code::kNotFound);
  RC_ASSERT(missing.message().find("the load holds no object '" + left_out) != std::string::npos);
}

// Loads one state class by its own rule (RebuildWithOwnRule): requests the canonical templates
// under FlagsLeavingOut, and sets the class from `oracle` (each module's value of the class), or
// leaves it as the canonical rules made it without the class (`oracle` null).
class OwnRuleFramework : public CanonicalFramework {
 public:
  OwnRuleFramework(OwnRuleClass replaced, const std::vector<TrainingState>* oracle)
      : replaced_(replaced), oracle_(oracle) {}
  Status LoadTemplates(const HeterogeneousLayout& layout,
                       const std::vector<TrainingConfig>& configs, const CheckpointInfo& saved,
                       const LoadFlags& flags,
                       std::vector<ShardedStateDict>* every_rank) const override {
    return CanonicalFramework::LoadTemplates(layout, configs, saved,
                                             FlagsLeavingOut(flags, replaced_), every_rank);
  }
  Status FromStateDicts(const LoadedCheckpoint& load,
                        std::vector<TrainingState>* states) const override {
    OwnLoadRule rule;
    rule.replaces = replaced_;
    rule.apply = [this](const LoadedCheckpoint&, size_t m, TrainingState* state) {
      if (oracle_ == nullptr) return Status::OK();
      if (replaced_ == OwnRuleClass::kRng) {
        state->rng = (*oracle_)[m].rng;
      } else {
        state->data = (*oracle_)[m].data;
      }
      return Status::OK();
    };
    return RebuildWithOwnRule(load, MissingEntryFill(), rule, states);
  }

 private:
  OwnRuleClass replaced_;
  const std::vector<TrainingState>* oracle_;
};

// For any run: a framework whose own rule replaces the RNG's or the data iterator's needs none of
// that class's canonical entries; doing nothing gives the canonical load under the class's flag,
// and a rule that sets the class (here to what the canonical load gives) decides it alone.
RC_GTEST_PROP(LoadContext, AnOwnRuleReplacesOneStateClass, ()) {
  const RunSpec run = *gen::RunUpTo(4);
  const OwnRuleClass replaced = *rc::gen::element(OwnRuleClass::kRng, OwnRuleClass::kDataIterator);
  RC_LOG() << (replaced == OwnRuleClass::kRng ? "RNG" : "data iterator") << " by its own rule\n";
  std::vector<TrainingState> states;
  RC_ASSERT(InitialStates(run, &states).ok());
  RC_ASSERT(TrainRun(&states, *rc::gen::inRange<int64_t>(1, 3)).ok());
  MemEnv env;
  auto reference = TargetOn(&env, nullptr);
  RC_ASSERT(SaveRun(*reference, run, states, 1, SaveOptions()).ok());
  std::vector<TrainingState> loaded, without_class;
  RC_ASSERT(ResumeRun(*reference, run, ResumeOptions(), &loaded, nullptr).ok());
  ResumeOptions leaving_out;
  leaving_out.flags = FlagsLeavingOut(LoadFlags(), replaced);
  RC_ASSERT(ResumeRun(*reference, run, leaving_out, &without_class, nullptr).ok());

  std::vector<TrainingState> got;
  auto no_op = TargetOn(&env, std::make_unique<OwnRuleFramework>(replaced, nullptr));
  CKPTSPEC_RC_ASSERT_OK(ResumeRun(*no_op, run, ResumeOptions(), &got, nullptr));
  RC_ASSERT(got.size() == without_class.size());
  for (size_t m = 0; m < got.size(); ++m) {
    CKPTSPEC_RC_ASSERT_SAME(FirstDifference(got[m], without_class[m]), "a rule doing nothing");
  }
  auto oracle = TargetOn(&env, std::make_unique<OwnRuleFramework>(replaced, &loaded));
  CKPTSPEC_RC_ASSERT_OK(ResumeRun(*oracle, run, ResumeOptions(), &got, nullptr));
  for (size_t m = 0; m < got.size(); ++m) {
    CKPTSPEC_RC_ASSERT_SAME(FirstDifference(got[m], loaded[m]),
                            "a rule giving the canonical value");
  }
}

}  // namespace
}  // namespace ckptspec
