// P4, sharding integrity: (a) the target's framework dicts for any generated run (both optimizer
// formats, heterogeneous modules, in steady state, after training and in a rerun fault) have
// exactly one main replica for every element of every tensor and every object shard, and ranks
// agree on dtype, global shape and grid (CheckShardingIntegrity); (b) the engine, handed a save
// whose sharding is broken (a gap: a main replica demoted; an overlap: a non-main replica promoted
// with other data; a duplicated main entry with other data), refuses it under validate, or else a
// full load under the same layout's templates fails or returns exactly the valid data -- never
// missing or wrong data silently.
// Catches: B02 (every TP rank claims primary: overlaps), B08 (a per-expert entry without its expert
// axis: experts overlap at one offset), and engines that write an unvalidated broken save.
#include <string>
#include <vector>

#include "generators/run_gen.h"
#include "model/validate.h"
#include "properties/property.h"
#include "properties/property_util.h"
#include "properties/run_faults.h"

namespace ckptspec {
namespace {

enum class Break { kGap, kOverlap, kDuplicateMain };

const char* BreakName(Break b) {
  switch (b) {
    case Break::kGap:
      return "gap (a main replica demoted)";
    case Break::kOverlap:
      return "overlap (a non-main replica promoted, other data)";
    case Break::kDuplicateMain:
      return "duplicate main (a main entry copied, other data)";
  }
  return "?";
}

// How RapidCheck prints the generated break in a counterexample.
void showValue(Break b, std::ostream& os) { os << BreakName(b); }

// One entry of one rank's dict.
struct EntryRef {
  int64_t rank = 0;
  bool is_object = false;
  size_t index = 0;
};

const ReplicaId& ReplicaOf(const std::vector<ShardedStateDict>& d, const EntryRef& e) {
  return e.is_object ? d[e.rank].objects[e.index].spec.replica_id
                     : d[e.rank].tensors[e.index].spec.replica_id;
}

// The main (or non-main) replicas of every rank's dict. Rank-local objects (IsRankLocal) count as
// main unless `sharded_only`: they declare no replica id to demote.
std::vector<EntryRef> Entries(const std::vector<ShardedStateDict>& d, bool main,
                              bool sharded_only = false) {
  std::vector<EntryRef> out;
  for (size_t r = 0; r < d.size(); ++r) {
    for (size_t i = 0; i < d[r].tensors.size(); ++i) {
      if (IsMainReplica(d[r].tensors[i].spec.replica_id) == main)
        out.push_back({int64_t(r), false, i});
    }
    for (size_t i = 0; i < d[r].objects.size(); ++i) {
      if (sharded_only && IsRankLocal(d[r].objects[i].spec)) continue;
      if (IsMainReplica(d[r].objects[i].spec.replica_id) == main)
        out.push_back({int64_t(r), true, i});
    }
  }
  return out;
}

std::string Describe(const std::vector<ShardedStateDict>& d, const EntryRef& e) {
  const std::string key = e.is_object ? d[e.rank].objects[e.index].spec.UniqueKey()
                                      : d[e.rank].tensors[e.index].spec.key + " " +
                                            BoxToString(d[e.rank].tensors[e.index].spec.box());
  return std::string(e.is_object ? "object " : "tensor ") + key + " of rank " +
         std::to_string(e.rank) + " (replica " + ReplicaIdToString(ReplicaOf(d, e)) + ")";
}

void Perturb(ShardedTensor* t) {
  for (uint8_t& b : t->data) b ^= 0x5a;
}
void Perturb(ShardedObject* o) { o->data += "#not-the-saved-state"; }

// The exact data of every entry of `loaded` equals `valid`'s (same templates, same order).
std::string LoadedDifference(const std::vector<ShardedStateDict>& valid,
                             const std::vector<ShardedStateDict>& loaded) {
  if (loaded.size() != valid.size())
    return "the load returned " + std::to_string(loaded.size()) + " ranks";
  for (size_t r = 0; r < valid.size(); ++r) {
    if (loaded[r].tensors.size() != valid[r].tensors.size() ||
        loaded[r].objects.size() != valid[r].objects.size()) {
      return "rank " + std::to_string(r) + ": the load returned another set of entries";
    }
    for (size_t i = 0; i < valid[r].tensors.size(); ++i) {
      if (loaded[r].tensors[i].data != valid[r].tensors[i].data) {
        return "rank " + std::to_string(r) + ": tensor " + valid[r].tensors[i].spec.key + " " +
               BoxToString(valid[r].tensors[i].spec.box()) + " loaded other data than saved";
      }
    }
    for (size_t i = 0; i < valid[r].objects.size(); ++i) {
      if (loaded[r].objects[i].data != valid[r].objects[i].data) {
        return "rank " + std::to_string(r) + ": object " + valid[r].objects[i].spec.UniqueKey() +
               " loaded other data than saved";
      }
    }
  }
  return "";
}

}  // namespace

void CheckSaveShardingIntegrity(const TargetFactory& factory) {
  RunSpec run = *gen::RunUpTo(16);
  const int64_t k = *rc::gen::inRange<int64_t>(0, 3);
  const bool fault = *rc::gen::inRange(0, 4) == 0;
  const Break broken =
      *rc::gen::elementOf(std::vector<Break>{Break::kGap, Break::kOverlap, Break::kDuplicateMain});
  std::vector<TrainingState> states;
  CKPTSPEC_RC_ASSERT_OK(TrainedStates(&run, k, fault, &states));
  RC_LOG() << "scenario:\n  " << DescribeRun(run) << "\n  train " << states.front().iteration
           << (fault ? ", drive the rerun machine to WILL_RERUN_FROM_CHECKPOINT" : "")
           << ", take every rank's dict from the framework and check its sharding\n";
  const RunShape shape = ShapeOf(run);
  RC_CLASSIFY(shape.heterogeneous, "heterogeneous");
  RC_CLASSIFY(shape.dp_reshardable, "dp_reshardable");
  RC_CLASSIFY(shape.tp, "tp>1");
  RC_CLASSIFY(shape.ep, "ep>1");
  RC_CLASSIFY(fault, "rerun fault");
  RC_CLASSIFY(states.front().iteration > 0, "trained");

  auto under_test = factory.make(TargetOptions());
  Target& target = under_test->target();
  std::vector<ShardedStateDict> valid;
  CKPTSPEC_RC_ASSERT_OK(target.framework().ToStateDicts(run.layout, states, run.sharding, &valid));

  // (a) the framework's sharding.
  const std::vector<Violation> violations = CheckShardingIntegrity(RunSignature(valid, false));
  if (!violations.empty())
    RC_FAIL("framework dicts break sharding integrity:\n" + FormatViolations(violations));

  // (b) the engine and a broken save.
  std::vector<ShardedStateDict> bad = valid;
  Break applied = broken;
  const std::vector<EntryRef> replicas = Entries(valid, false);
  const std::vector<EntryRef> mains = Entries(valid, true, /*sharded_only=*/applied == Break::kGap);
  RC_PRE(!mains.empty());
  if (applied == Break::kOverlap && replicas.empty()) applied = Break::kDuplicateMain;
  std::string what;
  if (applied == Break::kOverlap) {
    const EntryRef e = replicas[*rc::gen::inRange<size_t>(0, replicas.size())];
    what = "promote " + Describe(valid, e) + " to main with other data";
    if (e.is_object) {
      ShardedObject& o = bad[e.rank].objects[e.index];
      o.spec.replica_id.assign(o.spec.replica_id.size(), 0);
      Perturb(&o);
    } else {
      ShardedTensor& t = bad[e.rank].tensors[e.index];
      t.spec.replica_id.assign(t.spec.replica_id.size(), 0);
      Perturb(&t);
    }
  } else {
    const EntryRef e = mains[*rc::gen::inRange<size_t>(0, mains.size())];
    if (applied == Break::kGap) {
      what = "demote " + Describe(valid, e) + " to a non-main replica";
      ReplicaId& id = e.is_object ? bad[e.rank].objects[e.index].spec.replica_id
                                  : bad[e.rank].tensors[e.index].spec.replica_id;
      id.back() = 1;
    } else {
      const int64_t to = *rc::gen::inRange<int64_t>(0, static_cast<int64_t>(valid.size()));
      what = "copy " + Describe(valid, e) + " with other data into rank " + std::to_string(to);
      if (e.is_object) {
        ShardedObject o = valid[e.rank].objects[e.index];
        Perturb(&o);
        bad[to].objects.push_back(o);
      } else {
        ShardedTensor t = valid[e.rank].tensors[e.index];
        Perturb(&t);
        bad[to].tensors.push_back(t);
      }
    }
  }
  RC_LOG() << "  then break the sharding: " << BreakName(applied) << ": " << what
           << "; save with validation; a load under the valid templates must fail or be exact\n";
  RC_TAG(BreakName(applied));

  SaveOptions options;
  options.validate = true;
  const int64_t iteration = states.front().iteration;
  Status saved = target.engine().Save(iteration, bad, options);
  if (saved.ok()) saved = target.engine().Finalize();
  if (!saved.ok()) {
    RC_TAG("engine refused the broken save");
    return;
  }
  RC_TAG("engine accepted the broken save");
  LoadRequest request;
  request.iteration = iteration;
  for (const ShardedStateDict& d : valid) request.templates.push_back(TemplateOf(d));
  LoadResult loaded;
  if (!target.engine().Load(std::move(request), &loaded).ok()) return;
  CKPTSPEC_RC_ASSERT_SAME(
      LoadedDifference(valid, loaded.state),
      "the engine accepted a broken save and a load returned wrong data silently");
}

}  // namespace ckptspec
