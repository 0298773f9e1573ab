// The plan cache behind assume_constant_structure (P6, P7; docs/BUGS.md B04, B09).
#include <gtest/gtest.h>

#include "targets/reference/reference_test_util.h"

namespace ckptspec {
namespace {

using testing_util::CheckContent;
using testing_util::DictsOf;
using testing_util::LoadInto;
using testing_util::MakeSharding;
using testing_util::MemHarness;
using testing_util::TemplatesOf;

// Megatron's RerunStateMachine payload in a fault: one object per rank, (world,) at (rank,).
void AddRerunState(std::vector<ShardedStateDict>* dicts) {
  const int64_t world = static_cast<int64_t>(dicts->size());
  for (int64_t r = 0; r < world; ++r) {
    ShardedObject o;
    o.spec.key = "rerun_state_machine_state";
    o.spec.global_shape = {world};
    o.spec.global_offset = {r};
    o.data = "state=WILL_RERUN_FROM_CHECKPOINT rank=" + std::to_string(r);
    (*dicts)[r].objects.push_back(o);
    (*(*dicts)[r].common.Mutable())["rerun_state"] = "WILL_RERUN_FROM_CHECKPOINT";
  }
}

// The B04 deviation, as a mutant would write it: the first plan is frozen and reused whatever
// the structure (Megatron's cached_local_plan).
class FrozenPlanCache : public PlanCache {
 public:
  const SavePlan* Lookup(uint64_t) const override {
    if (!plan_) return nullptr;
    ++hits_;
    return &*plan_;
  }
};

// Saves 1 and 2 in steady state, 3 in a fault (with the rerun object), all with a cached plan;
// returns the status of loading iteration 3 with templates that request the object.
Status B04Scenario(std::unique_ptr<PlanCache> cache, MemHarness** out_harness = nullptr,
                   LoadResult* result = nullptr) {
  static std::unique_ptr<MemHarness> keep;
  keep = std::make_unique<MemHarness>(0, AsyncExecution::kDeferred, std::move(cache));
  MemHarness& h = *keep;
  if (out_harness) *out_harness = &h;
  const ParameterSharding sharding = MakeSharding(4, 2, 1);
  SaveOptions options;
  options.assume_constant_structure = true;
  for (int64_t it = 1; it <= 2; ++it) {
    CKPTSPEC_RETURN_IF_ERROR(h.engine->Save(it, DictsOf(sharding, it), options));
  }
  auto fault = DictsOf(sharding, 3);
  AddRerunState(&fault);
  CKPTSPEC_RETURN_IF_ERROR(h.engine->Save(3, fault, options));
  std::vector<ShardedStateDict> templates;
  for (const auto& d : fault) templates.push_back(TemplateOf(d));
  LoadResult local;
  return LoadInto(*h.engine, templates, result ? result : &local);
}

TEST(ReferencePlanCache, ReplansWhenAnObjectAppearsOnlyInAFaultSave) {
  MemHarness* h = nullptr;
  LoadResult result;
  const Status s = B04Scenario(nullptr, &h, &result);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(h->engine->plan_cache().hits(), 1);  // save 2 reused the plan; save 3 re-planned
  EXPECT_EQ(result.iteration, 3);
  for (size_t r = 0; r < result.state.size(); ++r) {
    ASSERT_EQ(result.state[r].objects.size(), 1u);
    EXPECT_EQ(result.state[r].objects[0].data,
              "state=WILL_RERUN_FROM_CHECKPOINT rank=" + std::to_string(r));
  }
  EXPECT_EQ(CheckContent(result.state, 3), "");
}

TEST(ReferencePlanCache, AFrozenPlanReproducesB04) {
  // Not the reference: shows that the scenario above catches the real bug.
  const Status s = B04Scenario(std::make_unique<FrozenPlanCache>());
  EXPECT_EQ(s.code(), Status::Code::kNotFound);
  EXPECT_NE(s.message().find("rerun_state_machine_state/shard_0_4"), std::string::npos)
      << s.ToString();
}

TEST(ReferencePlanCache, AReusedPlanWritesTheCurrentDataNotTheFirstSaves) {
  // B09: a cache keyed on structure must never pin the data of an earlier save.
  MemHarness h;
  const ParameterSharding sharding = MakeSharding(4, 2, 2);
  SaveOptions options;
  options.assume_constant_structure = true;
  for (int64_t it = 1; it <= 3; ++it)
    ASSERT_TRUE(h.engine->Save(it, DictsOf(sharding, 50 + it), options).ok());
  EXPECT_EQ(h.engine->plan_cache().hits(), 2);
  for (int64_t it = 1; it <= 3; ++it) {
    LoadResult result;
    ASSERT_TRUE(
        LoadInto(*h.engine, TemplatesOf(sharding), &result, StrictMode::kAssumeOkUnexpected, it)
            .ok());
    EXPECT_EQ(CheckContent(result.state, 50 + it), "") << "iteration " << it;
  }
}

TEST(ReferencePlanCache, ReplansWhenAParameterIsRemovedOrReshaped) {
  MemHarness h;
  const ParameterSharding sharding = MakeSharding(2, 2, 1);
  SaveOptions options;
  options.assume_constant_structure = true;
  ASSERT_TRUE(h.engine->Save(1, DictsOf(sharding, 1), options).ok());
  auto fewer = DictsOf(sharding, 2);
  for (auto& d : fewer) d.tensors.pop_back();  // e.g. a parameter frozen and left out
  ASSERT_TRUE(h.engine->Save(2, fewer, options).ok());
  const ParameterSharding other = MakeSharding(2, 1, 1);  // same keys, other chunks
  ASSERT_TRUE(h.engine->Save(3, DictsOf(other, 3), options).ok());
  EXPECT_EQ(h.engine->plan_cache().hits(), 0);
  LoadResult result;
  ASSERT_TRUE(LoadInto(*h.engine, TemplatesOf(sharding), &result).ok());
  EXPECT_EQ(CheckContent(result.state, 3), "");
}

TEST(ReferencePlanCache, AStalePlanThatNamesAGoneItemFailsLoudly) {
  MemHarness h(0, AsyncExecution::kDeferred, std::make_unique<FrozenPlanCache>());
  const ParameterSharding sharding = MakeSharding(2, 2, 1);
  SaveOptions options;
  options.assume_constant_structure = true;
  ASSERT_TRUE(h.engine->Save(1, DictsOf(sharding, 1), options).ok());
  auto fewer = DictsOf(sharding, 2);
  for (auto& d : fewer) d.tensors.pop_back();
  const Status s = h.engine->Save(2, fewer, options);
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("stale save plan"), std::string::npos);
  int64_t latest;
  ASSERT_TRUE(h.engine->LatestIteration(&latest).ok());
  EXPECT_EQ(latest, 1);
}

TEST(ReferencePlanCache, FingerprintDependsOnStructureOnly) {
  const ParameterSharding sharding = MakeSharding(4, 2, 2);
  auto a = DictsOf(sharding, 1), b = DictsOf(sharding, 2);
  (*b[0].common.Mutable())["anything"] = 1;
  EXPECT_EQ(StructureFingerprint(a), StructureFingerprint(b));
  b[3].tensors[0].spec.replica_id.back() ^= 1;
  EXPECT_NE(StructureFingerprint(a), StructureFingerprint(b));
  AddRerunState(&a);
  EXPECT_NE(StructureFingerprint(a), StructureFingerprint(DictsOf(sharding, 1)));
}

}  // namespace
}  // namespace ckptspec
