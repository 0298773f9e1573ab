#include "ondisk/checkpoint_diff.h"

#include <gtest/gtest.h>

#include <string>

#include "ondisk/fixture_test_util.h"

namespace ckptspec {
namespace {

using testing_util::Fixture;
using testing_util::ViewOf;

struct Opened {
  std::unique_ptr<Env> view;
  std::unique_ptr<CheckpointContents> contents;
};

Opened Open(const std::string& name) {
  Opened o;
  o.view = ViewOf(Fixture(name));
  const Status s =
      CheckpointContents::Open(o.view.get(), Fixture(name), ResourceLimits(), &o.contents);
  EXPECT_TRUE(s.ok()) << name << ": " << s.ToString();
  return o;
}

DiffReport Diff(const std::string& a, const std::string& b, const DiffOptions& options) {
  const Opened x = Open(a), y = Open(b);
  DiffReport report;
  EXPECT_TRUE(DiffCheckpoints(*x.contents, *y.contents, options, &report).ok());
  return report;
}

TEST(CheckpointDiff, TheSameModelUnderAnotherLayoutIsTheSame) {
  const DiffReport r = Diff("dcp_two_ranks", "dcp_four_ranks_resharded", DiffOptions());
  EXPECT_TRUE(r.same()) << FormatDiffReport(r);
  ASSERT_EQ(r.tensors.size(), 4u);
  for (const TensorDiff& t : r.tensors) EXPECT_EQ(t.compared, t.elements) << t.key;
  EXPECT_EQ(r.blobs_same, 1);
}

TEST(CheckpointDiff, FindsExactlyTheChangedElement) {
  // corpus/dcp/MANIFEST.json: model.fc1.weight[5, 6] is 2.5 instead of -0.7230570912361145.
  const DiffReport r = Diff("dcp_two_ranks", "dcp_four_ranks_changed", DiffOptions());
  EXPECT_FALSE(r.same());
  for (const TensorDiff& t : r.tensors) {
    if (t.key != "model.fc1.weight") {
      EXPECT_TRUE(t.same()) << t.key;
      continue;
    }
    EXPECT_EQ(t.mismatches, 1u);
    EXPECT_EQ(t.first_mismatch, (Dims{5, 6}));
    EXPECT_EQ(t.first_a, "-0.723057091");
    EXPECT_EQ(t.first_b, "2.5");
  }
  EXPECT_NE(FormatDiffReport(r).find("tensor 'model.fc1.weight': 1 of 64 elements differ; first "
                                     "at (5, 6): -0.723057091 in A, 2.5 in B"),
            std::string::npos)
      << FormatDiffReport(r);
}

TEST(CheckpointDiff, ToleranceAndUlpFollowTheDeviceSemantics) {
  DiffOptions loose;
  loose.mode = CKPTSPEC_COMPARE_TOLERANCE;
  loose.atol = 3.3;  // |2.5 - (-0.723...)| = 3.223...
  loose.rtol = 0;
  EXPECT_TRUE(Diff("dcp_two_ranks", "dcp_four_ranks_changed", loose).same());
  DiffOptions tight = loose;
  tight.atol = 3.2;
  EXPECT_FALSE(Diff("dcp_two_ranks", "dcp_four_ranks_changed", tight).same());
  DiffOptions ulp;
  ulp.mode = CKPTSPEC_COMPARE_ULP;
  ulp.max_ulp = 1;
  EXPECT_FALSE(Diff("dcp_two_ranks", "dcp_four_ranks_changed", ulp).same());
}

TEST(CheckpointDiff, KeysDtypesAndShapesThatDifferAreNamed) {
  const DiffReport r = Diff("dcp_two_ranks", "dcp_single", DiffOptions());
  EXPECT_FALSE(r.same());
  EXPECT_EQ(r.only_in_a.size(), 4u);  // no tensor name in common
  const DiffReport m = Diff("torch_dist_mcore", "torch_dist_mcore_0_19", DiffOptions());
  // The same tensors; the common state moved from common.pt to a bytes item in 0.17+.
  for (const TensorDiff& t : m.tensors) EXPECT_TRUE(t.same()) << t.key;
  EXPECT_EQ(m.blobs_only_in_b, std::vector<std::string>{"common_state/shard_0_1"});
}

}  // namespace
}  // namespace ckptspec
