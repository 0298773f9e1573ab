#include "model/signature_json.h"

#include "model/json_util.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace ckptspec {
namespace {

using nlohmann::json;

// A valid random tensor spec: a regular or irregular chunk inside a random global shape.
rc::Gen<TensorSpec> GenTensorSpec() {
  return rc::gen::exec([] {
    TensorSpec t;
    t.key = *rc::gen::element<std::string>("a.weight", "b.bias", "optimizer.state.exp_avg.x",
                                           "k/with\"quotes", "\xc3\xa9t\xc3\xa9");
    t.dtype = *rc::gen::elementOf(std::vector<DType>(kAllDTypes, kAllDTypes + kNumDTypes));
    const int rank = *rc::gen::inRange(0, 4);
    t.prepend_axis_num = rank == 0 ? 0 : *rc::gen::inRange(0, rank);
    const bool regular = rank > 0 && *rc::gen::arbitrary<bool>();
    for (int a = 0; a < rank; ++a) {
      if (regular) {
        const int64_t frag = *rc::gen::inRange<int64_t>(1, 5);
        const int64_t cell = a < t.prepend_axis_num ? 1 : *rc::gen::inRange<int64_t>(0, 6);
        t.global_shape.push_back(frag * cell);
        t.axis_fragmentations.push_back(frag);  // a prepended axis: extent frag, cells of 1
        t.global_offset.push_back(*rc::gen::inRange<int64_t>(0, frag) * cell);
        if (a >= t.prepend_axis_num) t.local_shape.push_back(cell);
      } else {
        const int64_t extent = *rc::gen::inRange<int64_t>(1, 1000);
        t.global_shape.push_back(extent);
        const int64_t begin = *rc::gen::inRange<int64_t>(0, extent);
        t.global_offset.push_back(begin);
        if (a >= t.prepend_axis_num) {
          t.local_shape.push_back(*rc::gen::inRange<int64_t>(0, extent - begin + 1));
        }
      }
    }
    t.replica_id = *rc::gen::container<std::vector<int64_t>>(*rc::gen::inRange<size_t>(1, 4),
                                                             rc::gen::inRange<int64_t>(0, 3));
    t.origin = *rc::gen::element<std::string>("", "vision/layer3/fc1", "lm/emb");
    if (*rc::gen::arbitrary<bool>()) t.digest = *rc::gen::arbitrary<uint64_t>();
    return t;
  });
}

rc::Gen<ObjectSpec> GenObjectSpec() {
  return rc::gen::exec([] {
    ObjectSpec o;
    o.key = *rc::gen::element<std::string>("rng_state", "rerun_state_machine_state", "x/y");
    const int rank = *rc::gen::inRange(0, 3);
    o.global_shape.clear();
    o.global_offset.clear();
    for (int a = 0; a < rank; ++a) {
      const int64_t extent = *rc::gen::inRange<int64_t>(1, 20);
      o.global_shape.push_back(extent);
      o.global_offset.push_back(*rc::gen::inRange<int64_t>(0, extent));
    }
    // A 0-d object is rank-local: no replica id either.
    o.replica_id.clear();
    if (rank > 0) {
      o.replica_id = *rc::gen::container<std::vector<int64_t>>(*rc::gen::inRange<size_t>(1, 4),
                                                               rc::gen::inRange<int64_t>(0, 3));
    }
    o.origin = *rc::gen::element<std::string>("", "rng");
    if (*rc::gen::arbitrary<bool>()) o.digest = *rc::gen::arbitrary<uint64_t>();
    return o;
  });
}

rc::Gen<json> GenCommon() {
  return rc::gen::element<json>(
      json(nullptr), json::object(),
      json{{"iteration", 10}, {"args", {{"lr", 0.5}, {"name", "gpt"}}}},
      json{{"optimizer", {{"param_groups", json::array({json{{"lr", -1}}, json{{"wd", 0.1}}})}}}});
}

rc::Gen<GlobalSignature> GenSignature() {
  return rc::gen::exec([] {
    GlobalSignature s;
    const int n = *rc::gen::inRange(0, 5);
    for (int r = 0; r < n; ++r) {
      RankSignature rank;
      rank.rank = r;
      rank.tensors = *rc::gen::container<std::vector<TensorSpec>>(*rc::gen::inRange<size_t>(0, 5),
                                                                  GenTensorSpec());
      rank.objects = *rc::gen::container<std::vector<ObjectSpec>>(*rc::gen::inRange<size_t>(0, 3),
                                                                  GenObjectSpec());
      rank.common = *GenCommon();
      s.ranks.push_back(std::move(rank));
    }
    return s;
  });
}

RC_GTEST_PROP(SignatureJson, RoundTripsGeneratedSignatures, ()) {
  const GlobalSignature s = *GenSignature();
  for (const RankSignature& r : s.ranks) {
    for (const TensorSpec& t : r.tensors) RC_ASSERT(ValidateTensorSpec(t).ok());
    for (const ObjectSpec& o : r.objects) RC_ASSERT(ValidateObjectSpec(o).ok());
  }
  const json j = SignatureToJson(s);
  GlobalSignature back;
  const Status st = SignatureFromJson(j, &back);
  if (!st.ok()) RC_FAIL(st.ToString());
  std::string diff;
  if (!SameSignature(s, back, &diff)) RC_FAIL("after the round trip: " + diff);
  // Through text as well.
  GlobalSignature parsed;
  const Status parsed_st = ParseSignature(j.dump(), &parsed);
  if (!parsed_st.ok()) RC_FAIL(parsed_st.ToString());
  if (!SameSignature(s, parsed, &diff)) RC_FAIL("after the text round trip: " + diff);
}

const char* kValid = R"({
  "format": "ckptspec.signature", "version": 1,
  "ranks": [
    {"rank": 1,
     "tensors": [{"key": "w", "dtype": "bf16", "global_shape": [4, 8], "global_offset": [0, 4],
                  "local_shape": [4, 4], "axis_fragmentations": [1, 2], "replica_id": [0, 1, 0]}],
     "objects": [{"key": "rng_state", "global_shape": [2], "global_offset": [1], "replica_id": 0}],
     "common": {"iteration": 7}},
    {"rank": 0,
     "tensors": [{"key": "w", "dtype": "bfloat16", "global_shape": [4, 8], "global_offset": [0, 0],
                  "local_shape": [4, 4], "axis_fragmentations": [1, 2], "replica_id": 0,
                  "origin": "lm/w", "digest": "00000000DEADBEEF"},
                 {"key": "flat", "dtype": "fp32", "global_shape": [10], "global_offset": [3],
                  "local_shape": [5], "axis_fragmentations": null, "replica_id": [0]}],
     "objects": [{"key": "rng_state", "global_shape": [2], "global_offset": [0], "replica_id": [0]}]}
  ]})";

TEST(SignatureJson, ReadsTheDocumentedForm) {
  GlobalSignature s;
  const Status st = ParseSignature(kValid, &s);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(s.ranks.size(), 2u);
  EXPECT_EQ(s.ranks[0].rank, 0);  // sorted into rank order
  ASSERT_EQ(s.ranks[0].tensors.size(), 2u);
  const TensorSpec& w = s.ranks[0].tensors[0];
  EXPECT_EQ(w.dtype, DType::kBFloat16);
  EXPECT_EQ(w.replica_id, ReplicaId{0});
  EXPECT_EQ(w.origin, "lm/w");
  ASSERT_TRUE(w.digest.has_value());
  EXPECT_EQ(*w.digest, 0xdeadbeefull);
  EXPECT_EQ(w.axis_fragmentations, (Dims{1, 2}));
  EXPECT_TRUE(s.ranks[0].tensors[1].axis_fragmentations.empty());
  EXPECT_TRUE(s.ranks[0].common->is_null());
  EXPECT_EQ(s.ranks[1].common, (json{{"iteration", 7}}));
  EXPECT_EQ(s.ranks[1].tensors[0].replica_id, (ReplicaId{0, 1, 0}));
  EXPECT_EQ(s.ranks[1].objects[0].UniqueKey(), "rng_state/shard_1_2");
  // And writes it back in the canonical spelling.
  const json out = SignatureToJson(s);
  EXPECT_EQ(out["ranks"][0]["tensors"][0]["dtype"], "bf16");
  EXPECT_EQ(out["ranks"][0]["tensors"][0]["digest"], "00000000deadbeef");
  EXPECT_FALSE(out["ranks"][0]["tensors"][1].contains("axis_fragmentations"));
}

// Applies `edit` to the valid document, reads it and returns the error message ("" when OK).
template <typename Edit>
std::string ErrorAfter(Edit edit) {
  json j = json::parse(kValid);
  edit(j);
  GlobalSignature s;
  const Status st = SignatureFromJson(j, &s);
  if (st.ok()) return "";
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  return st.message();
}

TEST(SignatureJson, NamesPathAndValueOfEveryMalformedField) {
  struct Case {
    const char* name;
    std::function<void(json&)> edit;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"negative extent", [](json& j) { j["ranks"][1]["tensors"][1]["global_shape"][0] = -4; },
       "ranks[1].tensors[1].global_shape[0]: expected a non-negative integer, got -4"},
      {"unknown dtype", [](json& j) { j["ranks"][1]["tensors"][0]["dtype"] = "fp12"; },
       "ranks[1].tensors[0].dtype: unknown dtype \"fp12\""},
      {"dtype type", [](json& j) { j["ranks"][0]["tensors"][0]["dtype"] = 3; },
       "ranks[0].tensors[0].dtype: expected a string, got 3"},
      {"missing key", [](json& j) { j["ranks"][0]["tensors"][0].erase("key"); },
       "ranks[0].tensors[0]: missing required member \"key\""},
      {"missing replica id", [](json& j) { j["ranks"][0]["objects"][0].erase("replica_id"); },
       "ranks[0].objects[0]: missing required member \"replica_id\""},
      {"misspelled member", [](json& j) { j["ranks"][0]["tensors"][0]["replica_ids"] = 0; },
       "ranks[0].tensors[0]: unknown member \"replica_ids\""},
      {"shape not array", [](json& j) { j["ranks"][0]["tensors"][0]["local_shape"] = "4,4"; },
       "ranks[0].tensors[0].local_shape: expected an array of non-negative integers, got \"4,4\""},
      {"float extent", [](json& j) { j["ranks"][0]["tensors"][0]["local_shape"][1] = 4.5; },
       "ranks[0].tensors[0].local_shape[1]: expected a non-negative integer, got 4.5"},
      {"uint64 overflow",
       [](json& j) {
         j["ranks"][0]["tensors"][0]["global_offset"][0] = uint64_t{9223372036854775808ull};
       },
       "ranks[0].tensors[0].global_offset[0]: integer 9223372036854775808 overflows int64"},
      {"beyond uint64", [](json& j) { j["ranks"][0]["tensors"][0]["global_shape"][0] = 1e20; },
       "ranks[0].tensors[0].global_shape[0]: integer 1e+20 overflows int64"},
      {"volume overflow",
       [](json& j) {
         json& t = j["ranks"][1]["tensors"][1];
         t["global_shape"] = json::array({int64_t{1} << 40, int64_t{1} << 40});
         t["global_offset"] = json::array({0, 0});
         t["local_shape"] = json::array({1, 1});
       },
       "ranks[1].tensors[1]: tensor 'flat': global_shape (1099511627776, 1099511627776) has a "
       "negative extent or its volume overflows int64"},
      {"spec invalid",
       [](json& j) {
         j["ranks"][0]["tensors"][0]["global_offset"] = {0, 2};
       },
       "ranks[0].tensors[0]: tensor 'w': global_offset[1] = 2 is not a multiple of the chunk "
       "extent 4"},
      {"chunk outside", [](json& j) { j["ranks"][1]["tensors"][1]["global_offset"] = {6}; },
       "ranks[1].tensors[1]: tensor 'flat': chunk [6:11] lies outside global_shape (10,)"},
      {"object outside", [](json& j) { j["ranks"][1]["objects"][0]["global_offset"] = {2}; },
       "ranks[1].objects[0]: object 'rng_state': global_offset (2,) lies outside global_shape "
       "(2,)"},
      {"empty replica id",
       [](json& j) { j["ranks"][0]["tensors"][0]["replica_id"] = json::array(); },
       "ranks[0].tensors[0].replica_id: replica id is an empty array"},
      {"negative replica id", [](json& j) { j["ranks"][0]["tensors"][0]["replica_id"] = -1; },
       "ranks[0].tensors[0].replica_id: expected a non-negative integer, got -1"},
      {"bad digest", [](json& j) { j["ranks"][0]["tensors"][0]["digest"] = "xyz"; },
       "ranks[0].tensors[0].digest: expected a 16-hex-digit string, got \"xyz\""},
      {"digest number", [](json& j) { j["ranks"][0]["tensors"][0]["digest"] = 12; },
       "ranks[0].tensors[0].digest: expected a 16-hex-digit string, got 12"},
      {"origin type", [](json& j) { j["ranks"][0]["tensors"][0]["origin"] = json::array(); },
       "ranks[0].tensors[0].origin: expected a string, got []"},
      {"fragmentations type",
       [](json& j) { j["ranks"][0]["tensors"][0]["axis_fragmentations"] = 2; },
       "ranks[0].tensors[0].axis_fragmentations: expected an array of positive integers or null, "
       "got 2"},
      {"prepend negative", [](json& j) { j["ranks"][0]["tensors"][0]["prepend_axis_num"] = -1; },
       "ranks[0].tensors[0].prepend_axis_num: expected a non-negative integer, got -1"},
      {"tensors not array", [](json& j) { j["ranks"][0]["tensors"] = json::object(); },
       "ranks[0].tensors: expected an array, got {}"},
      {"rank entry type", [](json& j) { j["ranks"][1] = "rank 0"; },
       "ranks[1]: expected an object, got \"rank 0\""},
      {"missing rank", [](json& j) { j["ranks"][0].erase("rank"); },
       "ranks[0]: missing required member \"rank\""},
      {"duplicate rank", [](json& j) { j["ranks"][1]["rank"] = 1; },
       "ranks[1].rank: duplicate rank 1 (also at ranks[0])"},
      {"rank out of range", [](json& j) { j["ranks"][1]["rank"] = 2; },
       "ranks[1].rank: rank 2 is out of range: 2 ranks must be numbered 0..1"},
      {"unknown format", [](json& j) { j["format"] = "megatron.plan"; },
       "format: expected \"ckptspec.signature\", got \"megatron.plan\""},
      {"missing format", [](json& j) { j.erase("format"); },
       "(root): missing required member \"format\""},
      {"unknown version", [](json& j) { j["version"] = 2; },
       "version: unsupported version 2 (this reader knows 1)"},
      {"ranks type", [](json& j) { j["ranks"] = 5; }, "ranks: expected an array, got 5"},
      {"root type", [](json& j) { j = json::array(); }, "(root): expected an object, got []"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ErrorAfter(c.edit), c.expected) << c.name;
  }
}

TEST(SignatureJson, RejectsDeepCommonWithoutRecursing) {
  std::string deep(100000, '[');
  deep += std::string(100000, ']');
  const std::string text = R"({"format": "ckptspec.signature", "version": 1, "ranks": [{"rank": 0,
      "common": )" + deep + "}]}";
  GlobalSignature s;
  const Status st = ParseSignature(text, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(
      st.message().rfind("signature JSON: ranks[0].common[0][0][0]...[0][0][0][0][0][0]: nests "
                         "deeper than " +
                             std::to_string(kDefaultMaxJsonDepth) + " levels at byte ",
                         0),
      0u)
      << st.message();
  // A tree the reader accepts but deeper than a common tree may be is refused by the signature.
  std::string deeper(kMaxCommonDepth + 1, '[');
  deeper += "1" + std::string(kMaxCommonDepth + 1, ']');
  const Status common =
      ParseSignature(R"({"format": "ckptspec.signature", "version": 1, "ranks": [{"rank": 0,
      "common": )" + deeper +
                         "}]}",
                     &s);
  EXPECT_EQ(common.message(), "ranks[0].common: nests deeper than 256 levels");
}

TEST(SignatureJson, APlanDumpWithRanksTwiceIsRefused) {
  // Last-wins would read the empty second "ranks" and pass every check.
  json j = json::parse(kValid);
  std::string text = j.dump();
  ASSERT_EQ(text.back(), '}');
  text.pop_back();
  text += R"(,"ranks":[]})";
  GlobalSignature s;
  const Status st = ParseSignature(text, &s);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(st.message().rfind("signature JSON: (root): duplicate key \"ranks\" at byte ", 0), 0u)
      << st.message();
  // A key twice inside an entry is refused with the entry's path.
  text = R"({"format": "ckptspec.signature", "version": 1, "ranks": [{"rank": 0, "rank": 1}]})";
  EXPECT_EQ(ParseSignature(text, &s).message(),
            "signature JSON: ranks[0]: duplicate key \"rank\" at byte 70, line 1, column 70");
}

TEST(SignatureJson, ParseErrorsNameTheBytePosition) {
  GlobalSignature s;
  const Status st = ParseSignature(R"({"format": "ckptspec.signature", "version": 1,, })", &s);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(st.message(),
            "signature JSON: parse error at byte 47, line 1, column 47: syntax error while parsing "
            "object key - unexpected ','; expected string literal");
  EXPECT_FALSE(ParseSignature("", &s).ok());
  EXPECT_EQ(ParseSignature("{\"format\": 1e999}", &s).message(),
            "signature JSON: format: number 1e999 is out of range of a double at byte 12, line 1, "
            "column 12");
}

TEST(SignatureJson, HugeShapesAreReadWithoutAllocatingTheirVolume) {
  json j = json::parse(kValid);
  const int64_t big = int64_t{1} << 31;
  json& t = j["ranks"][1]["tensors"][1];
  t["global_shape"] = json::array({big, big});
  t["global_offset"] = json::array({0, 0});
  t["local_shape"] = json::array({big, big});
  GlobalSignature s;
  const Status st = SignatureFromJson(j, &s);
  EXPECT_TRUE(st.ok()) << st.ToString();
}

TEST(SignatureJson, SameSignatureNamesTheFirstDifference) {
  GlobalSignature a;
  ASSERT_TRUE(ParseSignature(kValid, &a).ok());
  GlobalSignature b = a;
  std::string diff;
  EXPECT_TRUE(SameSignature(a, b, &diff));
  b.ranks[1].tensors[0].replica_id = {0, 2, 0};
  EXPECT_FALSE(SameSignature(a, b, &diff));
  EXPECT_EQ(diff.rfind("ranks[1].tensors[0]: ", 0), 0u) << diff;
  b = a;
  (*b.ranks[1].common.Mutable())["iteration"] = 8;
  EXPECT_FALSE(SameSignature(a, b, &diff));
  EXPECT_EQ(diff, "ranks[1].common: {\"iteration\": 7} vs {\"iteration\": 8}");
  // Keys built in C++ may hold invalid UTF-8: described, never thrown.
  b = a;
  b.ranks[0].tensors[0].key = "w\xff";
  EXPECT_FALSE(SameSignature(a, b, &diff));
  EXPECT_NE(diff.find("ranks[0].tensors[0]"), std::string::npos);
}

}  // namespace
}  // namespace ckptspec
