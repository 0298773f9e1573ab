// P17, determinism: the same run (same seed, configs and layout), trained to the same iteration
// and saved the same way on two fresh targets, gives byte-identical storage: the same file names
// and the same bytes in every file under root(). Where the save is async both complete at
// Finalize. Not applicable to targets that do not claim capabilities.deterministic.
// Catches: timestamps, random nonces, hash-map iteration order or uninitialised padding in
// metadata or data files; plans that depend on anything but the input.
#include "generators/run_gen.h"
#include "properties/property.h"
#include "properties/property_util.h"
#include "harness/storage_util.h"

namespace ckptspec {

void CheckDeterminism(const TargetFactory& factory) {
  const RunSpec run = *gen::RunUpTo(8);
  const int64_t k = *rc::gen::inRange<int64_t>(0, 3);
  const int saves = *rc::gen::inRange(1, 3);
  const bool async = factory.capabilities.async && *rc::gen::arbitrary<bool>();
  RC_LOG() << "scenario:\n  " << DescribeRun(run) << "\n  on two fresh targets: train " << k
           << ", then " << saves << " save(s) (" << (async ? "async" : "sync")
           << ") one iteration apart; compare every stored file\n";
  RC_TAG(async ? "async save" : "sync save");
  RC_TAG(std::to_string(saves) + " save(s)");

  StorageTree trees[2];
  for (StorageTree& tree : trees) {
    std::vector<TrainingState> states;
    CKPTSPEC_RC_ASSERT_OK(InitialStates(run, &states));
    CKPTSPEC_RC_ASSERT_OK(TrainRun(&states, k));
    auto under_test = factory.make(TargetOptions());
    SaveOptions save;
    save.async = async;
    for (int i = 0; i < saves; ++i) {
      if (i > 0) CKPTSPEC_RC_ASSERT_OK(TrainRun(&states, 1));
      CKPTSPEC_RC_ASSERT_OK(
          SaveRun(under_test->target(), run, states, states.front().iteration, save));
      CKPTSPEC_RC_ASSERT_OK(under_test->target().engine().Finalize());
    }
    CKPTSPEC_RC_ASSERT_OK(ReadTree(under_test->mem_env(), under_test->root(), &tree));
  }
  RC_LOG() << "  stored: " << DescribeTree(trees[0]) << "\n";
  RC_ASSERT(!trees[0].empty());
  CKPTSPEC_RC_ASSERT_SAME(FirstTreeDifference(trees[0], trees[1]),
                          "two saves of the same run differ");
}

}  // namespace ckptspec
