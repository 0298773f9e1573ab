// DecodedFormOf, and the reference engine keeping the index it wrote: what a read takes from the
// kept form is exactly what decoding the text gives, JSON types included.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generators/json_gen.h"
#include "targets/reference/reference_test_util.h"

namespace ckptspec {
namespace {

using nlohmann::json;
using testing_util::DictsOf;
using testing_util::MakeSharding;

// JsonTypeName, with the integers' two types told apart.
std::string TypeName(const json& value) {
  if (value.is_number_unsigned()) return "unsigned integer";
  if (value.is_number_integer()) return "signed integer";
  return JsonTypeName(value);
}

// Empty when `a` and `b` are the same values of the same JSON types (doubles bit for bit);
// otherwise where they first differ.
std::string JsonDifference(const json& a, const json& b, const std::string& at = "(root)") {
  if (a.type() != b.type()) {
    return at + ": " + TypeName(a) + " " + a.dump() + " against " + TypeName(b) + " " + b.dump();
  }
  if (a.is_number_float()) {
    const double x = a.get<double>(), y = b.get<double>();
    return std::memcmp(&x, &y, sizeof x) == 0 ? "" : at + ": " + a.dump() + " against " + b.dump();
  }
  if (a.is_array()) {
    if (a.size() != b.size())
      return at + ": " + std::to_string(a.size()) + " elements against " + std::to_string(b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      const std::string d = JsonDifference(a[i], b[i], at + "[" + std::to_string(i) + "]");
      if (!d.empty()) return d;
    }
    return "";
  }
  if (a.is_object()) {
    if (a.size() != b.size())
      return at + ": " + std::to_string(a.size()) + " members against " + std::to_string(b.size());
    for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
      if (ia.key() != ib.key())
        return at + ": member \"" + ia.key() + "\" against \"" + ib.key() + "\"";
      const std::string d = JsonDifference(ia.value(), ib.value(), at + "." + ia.key());
      if (!d.empty()) return d;
    }
    return "";
  }
  return a == b ? "" : at + ": " + a.dump() + " against " + b.dump();
}

// Empty when two decoded indexes are the same: every struct member (the text spells each one)
// and the layout's and the common state's JSON types.
std::string IndexDifference(const CheckpointMetadata& a, const CheckpointMetadata& b) {
  if (EncodeMetadata(a) != EncodeMetadata(b)) return "the indexes' texts differ";
  const std::string layout = JsonDifference(a.layout, b.layout, "layout");
  return !layout.empty() ? layout : JsonDifference(a.common, b.common, "common");
}

// A JSON value of any type the reader tells apart; only valid UTF-8, which the encoder needs.
json ArbitraryJson(int depth) { return *gen::JsonValue(depth, /*invalid_utf8=*/false); }

RC_GTEST_PROP(DecodedForm, IsWhatDecodingTheEncodedTextGives, ()) {
  CheckpointMetadata m;
  m.iteration = *rc::gen::inRange<int64_t>(0, 1000);
  m.world_size = 1;
  m.layout = json::object({{"sizes", ArbitraryJson(3)}});
  m.common = json::object({{"state", ArbitraryJson(4)}, {"iteration", m.iteration}});
  const std::string text = EncodeMetadata(m);
  RC_LOG() << "index text:\n" << text << "\n";
  const JsonLimits limits = ResourceLimits().json();
  CheckpointMetadata decoded, formed;
  const Status s = DecodeMetadata(text, "metadata.json", limits, &decoded);
  RC_ASSERT(s.ok());
  RC_ASSERT(DecodedFormOf(m, text.size(), limits, &formed));
  const std::string difference = IndexDifference(formed, decoded);
  RC_LOG() << difference << "\n";
  RC_ASSERT(difference.empty());
}

struct LayoutCase {
  int64_t world, tp, pp;
};
const std::vector<LayoutCase> kLayouts = {{1, 1, 1}, {2, 2, 1}, {4, 2, 2}, {8, 2, 2}, {6, 2, 1}};

// The index files of iteration 3 under "/ckpt", as the engine names them.
std::vector<std::string> IndexFiles(Env* env, IndexLayout layout) {
  const std::string dir = JoinPath("/ckpt", IterationDirName(3));
  if (layout == IndexLayout::kSingle) return {JoinPath(dir, kMetadataFileName)};
  std::vector<std::string> names, files;
  if (!env->GetChildren(dir, &names).ok()) return files;
  for (const std::string& name : names) {
    int64_t rank;
    if (ParseWriterDirName(name, &rank)) {
      files.push_back(JoinPath(JoinPath(dir, name), kWriterIndexFileName));
    }
  }
  return files;
}

RC_GTEST_PROP(DecodedForm, WhatASaveKeepsOfEachIndexItWroteIsWhatDecodingTheFileGives, ()) {
  const LayoutCase c = *rc::gen::elementOf(kLayouts);
  const IndexLayout index =
      *rc::gen::elementOf(std::vector<IndexLayout>{IndexLayout::kSingle, IndexLayout::kPerWriter});
  const AsyncExecution execution = *rc::gen::elementOf(
      std::vector<AsyncExecution>{AsyncExecution::kDeferred, AsyncExecution::kThread});
  const bool async = *rc::gen::arbitrary<bool>();
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
  const json common = json::object({{"state", ArbitraryJson(3)}});
  const json layout = json::object({{"sizes", ArbitraryJson(2)}});
  RC_LOG() << "world " << c.world << " tp " << c.tp << " pp " << c.pp << ", "
           << IndexLayoutName(index) << " index, " << (async ? "async" : "sync") << " save, common "
           << common.dump() << ", layout " << layout.dump() << "\n";
  MemEnv env;
  RC_ASSERT(env.CreateDir("/ckpt").ok());
  RC_ASSERT(env.SyncDir("/").ok());
  ReferenceOptions options;
  options.env = &env;
  options.root = "/ckpt";
  options.index_layout = index;
  options.async_execution = execution;
  const JsonLimits limits = options.limits.json();
  ReferenceEngine engine(std::move(options));
  std::vector<ShardedStateDict> dicts = DictsOf(MakeSharding(c.world, c.tp, c.pp), seed);
  for (ShardedStateDict& d : dicts) d.common = common;
  SaveOptions save;
  save.async = async;
  save.layout = layout;
  RC_ASSERT(engine.Save(3, dicts, save).ok());
  RC_ASSERT(engine.Finalize().ok());
  const std::vector<std::string> files = IndexFiles(&env, index);
  RC_ASSERT(!files.empty());
  for (const std::string& file : files) {
    std::string text;
    RC_ASSERT(ReadFileToString(&env, file, kMaxMetadataBytes, &text).ok());
    CheckpointMetadata kept, decoded;
    RC_LOG() << file << "\n";
    RC_ASSERT(DecodedIndexCache::Shared().Find(file, text, limits, &kept));
    RC_ASSERT(DecodeMetadata(text, file, limits, &decoded).ok());
    const std::string difference = IndexDifference(kept, decoded);
    RC_LOG() << difference << "\n";
    RC_ASSERT(difference.empty());
  }
  CheckpointMetadata read;
  RC_ASSERT(engine.ReadMetadata(3, &read).ok());
}

TEST(DecodedForm, IsNotGivenWhereTheReaderMightRefuseTheText) {
  // The common state's innermost array opens level 9 of the text: the top level, the common
  // state's object, seven arrays.
  json deep = json::array();
  for (int i = 0; i < 6; ++i) deep = json::array({deep});
  CheckpointMetadata m;
  m.world_size = 1;
  m.common = json::object({{"deep", deep}});
  const std::string text = EncodeMetadata(m);
  CheckpointMetadata out;
  const JsonLimits limits = ResourceLimits().json();
  EXPECT_TRUE(DecodedFormOf(m, text.size(), limits, &out));
  JsonLimits shallow = limits;
  shallow.max_depth = 9;
  EXPECT_TRUE(DecodeMetadata(text, "metadata.json", shallow, &out).ok());
  EXPECT_TRUE(DecodedFormOf(m, text.size(), shallow, &out));
  shallow.max_depth = 8;
  EXPECT_FALSE(DecodeMetadata(text, "metadata.json", shallow, &out).ok());
  EXPECT_FALSE(DecodedFormOf(m, text.size(), shallow, &out));
  JsonLimits short_text = limits;
  short_text.max_bytes = text.size() - 1;
  EXPECT_FALSE(DecodedFormOf(m, text.size(), short_text, &out));
  JsonLimits small_tree = limits;
  small_tree.max_tree_bytes = 4096;
  EXPECT_FALSE(DecodedFormOf(m, text.size(), small_tree, &out));
  CheckpointMetadata binary = m;
  (*binary.common.Mutable())["bytes"] = json::binary({1, 2, 3});
  EXPECT_FALSE(DecodedFormOf(binary, EncodeMetadata(binary).size(), limits, &out));
}

}  // namespace
}  // namespace ckptspec
