// The checkpoint bundle format (bundle.h) and its structure-aware mutator (bundle_mutator.h).
#include "fuzz/bundle.h"

#include <gtest/gtest.h>

#include <random>

#include "fuzz/bundle_mutator.h"
#include "fuzz/seed_runs.h"
#include "harness/harness.h"
#include "base/mem_env.h"
#include "targets/reference/reference_factory.h"
#include "targets/reference/verify.h"

namespace ckptspec {
namespace {

// A real checkpoint directory of the smallest seed run, as a bundle.
Bundle SavedBundle() {
  const RunSpec& run = SeedRuns().back().run;
  std::vector<TrainingState> states;
  EXPECT_TRUE(InitialStates(run, &states).ok());
  EXPECT_TRUE(TrainRun(&states, 1).ok());
  std::unique_ptr<TargetUnderTest> target = ReferenceTargetFactory().make(TargetOptions());
  EXPECT_TRUE(SaveRun(target->target(), run, states, 1, SaveOptions()).ok());
  Bundle bundle;
  EXPECT_TRUE(CollectBundle(target->mem_env(), target->root(), 0, 0, &bundle).ok());
  return bundle;
}

bool Parses(const std::string& bytes, Bundle* out) {
  return ParseBundle(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), out);
}

// Stand-in for LLVMFuzzerMutate: flips one bit of a random byte.
size_t FlipOneBit(uint8_t* data, size_t size, size_t) {
  static std::mt19937 rng(7);
  if (size > 0) data[rng() % size] ^= static_cast<uint8_t>(1u << (rng() % 8));
  return size;
}

TEST(Bundle, RoundTripsAndMaterializes) {
  const Bundle bundle = SavedBundle();
  ASSERT_GE(bundle.files.size(), 4u) << "tracker, metadata, its checksum, a shard";
  const std::string bytes = SerializeBundle(bundle);
  Bundle again;
  ASSERT_TRUE(Parses(bytes, &again));
  EXPECT_EQ(SerializeBundle(again), bytes);

  MemEnv env;
  ASSERT_TRUE(MaterializeBundle(again, &env, "/restored").ok());
  VerifyReport report;
  ASSERT_TRUE(VerifyCheckpoint(&env, "/restored", true, &report).ok());
  EXPECT_TRUE(report.ok()) << report.findings.front();
  EXPECT_EQ(report.iterations, std::vector<int64_t>{1});
}

TEST(Bundle, RejectsWhatIsNotABundle) {
  const std::string bytes = SerializeBundle(SavedBundle());
  Bundle out;
  EXPECT_FALSE(Parses(bytes.substr(0, bytes.size() - 1), &out)) << "truncated content";
  EXPECT_FALSE(Parses(bytes + "x", &out)) << "bytes after the last record";
  EXPECT_FALSE(Parses("CKB2" + bytes.substr(4), &out)) << "wrong magic";
  EXPECT_FALSE(Parses(std::string("CKB1\0\0\0\0", 8), &out)) << "empty path";
  EXPECT_TRUE(Parses(std::string("CKB1\0\0", 6), &out)) << "no files is a bundle";
}

TEST(BundleMutator, KeepsInputsBundlesAndMostlySound) {
  const std::string original = SerializeBundle(SavedBundle());
  int bundles = 0, sound = 0, unsound = 0, sound_with_changed_data = 0;
  for (unsigned seed = 0; seed < 300; ++seed) {
    std::vector<uint8_t> buffer(original.begin(), original.end());
    buffer.resize(original.size() + 4096);
    const size_t size =
        MutateBundle(buffer.data(), original.size(), buffer.size(), seed, FlipOneBit);
    ASSERT_LE(size, buffer.size());
    Bundle mutated;
    if (!ParseBundle(buffer.data(), size, &mutated)) continue;
    ++bundles;
    MemEnv env;
    if (!MaterializeBundle(mutated, &env, "/m").ok()) continue;
    VerifyReport report;
    // What verify found is in the report, read below; its Status says the same.
    VerifyCheckpoint(&env, "/m", true, &report).IgnoreError();
    if (!report.ok()) {
      ++unsound;
      continue;
    }
    ++sound;
    Bundle before;
    ASSERT_TRUE(Parses(original, &before));
    for (const auto& [path, content] : mutated.files) {
      const auto old = before.files.find(path);
      if (old != before.files.end() && path.find(".bin") != std::string::npos &&
          old->second != content) {
        ++sound_with_changed_data;
        break;
      }
    }
  }
  EXPECT_GE(bundles, 240)
      << "the raw fallback is 1 in 8; nearly every other mutation keeps a bundle";
  EXPECT_GT(unsound, 0) << "mutations find their way past nothing";
  EXPECT_GT(sound_with_changed_data, 0)
      << "changed shard bytes with re-synced checksums keep a checkpoint verify accepts";
  EXPECT_GT(sound, sound_with_changed_data);
}

TEST(BundleMutator, CrossOverMixesFiles) {
  Bundle a = SavedBundle();
  Bundle b = a;
  b.options = 0xff;
  b.files.clear();
  for (const auto& [path, content] : a.files) b.files["other/" + path] = content;
  const std::string sa = SerializeBundle(a), sb = SerializeBundle(b);
  std::vector<uint8_t> out(sa.size() + sb.size());
  size_t mixed = 0;
  for (unsigned seed = 0; seed < 20; ++seed) {
    const size_t size = CrossOverBundles(reinterpret_cast<const uint8_t*>(sa.data()), sa.size(),
                                         reinterpret_cast<const uint8_t*>(sb.data()), sb.size(),
                                         out.data(), out.size(), seed);
    Bundle child;
    ASSERT_TRUE(ParseBundle(out.data(), size, &child));
    bool from_a = false, from_b = false;
    for (const auto& [path, content] : child.files)
      (path.rfind("other/", 0) == 0 ? from_b : from_a) = true;
    mixed += from_a && from_b;
  }
  EXPECT_GT(mixed, 0u);
  EXPECT_EQ(
      CrossOverBundles(reinterpret_cast<const uint8_t*>(sa.data()), sa.size(),
                       reinterpret_cast<const uint8_t*>(sb.data()), sb.size(), out.data(), 10, 1),
      0u)
      << "a child that does not fit is not written";
}

}  // namespace
}  // namespace ckptspec
