#include "model/json_util.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ckptspec {
namespace {

using nlohmann::json;

Status Parse(const std::string& text, json* out = nullptr, JsonLimits limits = JsonLimits()) {
  json ignored;
  return ParseJson(text, limits, out != nullptr ? out : &ignored);
}

std::string Nested(size_t depth, const std::string& open, const std::string& close) {
  std::string text;
  text.reserve(depth * (open.size() + close.size()));
  for (size_t i = 0; i < depth; ++i) text += open;
  for (size_t i = 0; i < depth; ++i) text += close;
  return text;
}

TEST(ParseJson, ReadsWhatNlohmannReads) {
  const std::string text =
      R"({"a": [1, -2, 3.5, "x\u00e9", true, false, null, {}], "b": {"c": [[]]},
          "big": 18446744073709551615, "low": -9223372036854775808, "e": 1e308})";
  json j;
  ASSERT_TRUE(Parse(text, &j).ok()) << Parse(text).ToString();
  EXPECT_EQ(j, json::parse(text));
  EXPECT_TRUE(j["big"].is_number_unsigned());
  EXPECT_TRUE(j["low"].is_number_integer());
  json scalar;
  ASSERT_TRUE(Parse(" 42 ", &scalar).ok());
  EXPECT_EQ(scalar, json(42));
}

TEST(ParseJson, NestingUpToTheLimitIsRead) {
  JsonLimits limits;
  limits.max_depth = 8;
  json j;
  ASSERT_TRUE(Parse(Nested(8, "[", "]"), &j, limits).ok());
  EXPECT_EQ(j, json::parse(Nested(8, "[", "]")));
  const Status s = Parse(Nested(9, "[", "]"), &j, limits);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "[0][0][0][0][0][0][0][0]: nests deeper than 8 levels at byte 9, line 1, column 9");
}

TEST(ParseJson, HundredThousandDeepArraysAreRefusedWithoutRecursion) {
  const Status s = Parse(Nested(100000, "[", "]"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "[0][0][0][0][0][0]...[0][0][0][0][0][0]: nests deeper than " +
                             std::to_string(kDefaultMaxJsonDepth) + " levels at byte " +
                             std::to_string(kDefaultMaxJsonDepth + 1) + ", line 1, column " +
                             std::to_string(kDefaultMaxJsonDepth + 1));
}

TEST(ParseJson, TwoHundredThousandDeepObjectsAreRefusedWithoutRecursion) {
  const Status s = Parse(R"({"common": )" + Nested(200000, R"({"a": )", "}") + "}");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("common.a.a.a.a.a...a.a.a.a.a.a: nests deeper than"),
            std::string::npos)
      << s.message();
  // The same text, streamed and skipped, is refused the same way.
  struct SkipAll : JsonStreamHandler {
    Action Classify(const JsonPath&) override { return Action::kSkip; }
    Status Take(const JsonPath&, json&&) override { return Status::OK(); }
  } skip;
  json j;
  const Status streamed = ParseJsonStreamed(
      R"({"common": )" + Nested(200000, R"({"a": )", "}") + "}", JsonLimits(), &skip, &j);
  EXPECT_EQ(streamed.message(), s.message());
}

TEST(ParseJson, DuplicateKeysAreRefusedAtTheTopLevel) {
  const Status s = Parse(R"({"ranks": [{"rank": 0}], "ranks": []})");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), R"((root): duplicate key "ranks" at byte 26, line 1, column 26)");
}

TEST(ParseJson, DuplicateKeysAreRefusedWhenNested) {
  const Status s = Parse("{\"ranks\": [{\"rank\": 0},\n {\"rank\": 1, \"rank\": 2}]}");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), R"(ranks[1]: duplicate key "rank" at byte 38, line 2, column 14)");
  // An escaped quote inside the key does not confuse the position.
  const Status escaped = Parse(R"({"a\"b": 1, "a\"b": 2})");
  EXPECT_EQ(escaped.message(), R"((root): duplicate key "a\"b" at byte 13, line 1, column 13)");
  // Member names that are not identifiers are quoted in the path.
  const Status odd = Parse(R"({"a.b": {"c": 1, "c": 2}})");
  EXPECT_EQ(odd.message(), R"(["a.b"]: duplicate key "c" at byte 18, line 1, column 18)");
  // Equal names in different objects are fine.
  EXPECT_TRUE(Parse(R"({"a": {"a": 1}, "b": {"a": 2}})").ok());
}

TEST(ParseJson, SyntaxErrorsNameTheirByteLineAndColumn) {
  Status s = Parse(R"({"format": "ckptspec.signature", "version": 1,, })");
  EXPECT_EQ(s.message(),
            "parse error at byte 47, line 1, column 47: syntax error while parsing object key - "
            "unexpected ','; expected string literal");
  s = Parse("{\n  \"a\": [1, 2,\n  ]\n}");
  EXPECT_EQ(s.message(),
            "parse error at byte 19, line 3, column 3: syntax error while parsing value - "
            "unexpected ']'; expected '[', '{', or a literal");
  s = Parse("{} x");
  EXPECT_NE(s.message().find("parse error at byte 4, line 1, column 4: syntax error while parsing "
                             "value - invalid literal"),
            std::string::npos)
      << s.message();
  EXPECT_NE(Parse("").message().find("parse error at byte 1"), std::string::npos);
  EXPECT_NE(Parse("\"\xff\"").message().find("ill-formed UTF-8"), std::string::npos);
}

TEST(ParseJson, NumbersBeyondADoubleAreRefused) {
  Status s = Parse(R"({"x": [0, 1e400]})");
  EXPECT_EQ(s.message(),
            "x[1]: number 1e400 is out of range of a double at byte 11, line 1, column 11");
  s = Parse("-1e400");
  EXPECT_EQ(s.message(),
            "(root): number -1e400 is out of range of a double at byte 1, line 1, column 1");
}

TEST(ParseJson, IntegersBeyondSixtyFourBitsAreRefused) {
  Status s = Parse(R"({"seed": 99999999999999999999})");
  EXPECT_EQ(
      s.message(),
      "seed: integer 99999999999999999999 is out of range of a 64-bit integer at byte 10, line "
      "1, column 10");
  s = Parse("[-9223372036854775809]");
  EXPECT_EQ(
      s.message(),
      "[0]: integer -9223372036854775809 is out of range of a 64-bit integer at byte 2, line 1, "
      "column 2");
  s = Parse("18446744073709551616");
  EXPECT_EQ(s.message(),
            "(root): integer 18446744073709551616 is out of range of a 64-bit integer at byte 1, "
            "line 1, column 1");
  EXPECT_TRUE(Parse("[1e300, 18446744073709551615, -9223372036854775808]").ok());
}

TEST(ParseJson, TextLongerThanTheLimitIsRefusedBeforeReading) {
  JsonLimits limits;
  limits.max_bytes = 4;
  EXPECT_EQ(Parse("[1,2]", nullptr, limits).message(),
            "JSON text of 5 bytes exceeds the limit of 4 bytes");
  EXPECT_TRUE(Parse("[12]", nullptr, limits).ok());
}

TEST(ParseJson, ATreeBeyondItsMemoryBoundIsRefused) {
  JsonLimits limits;
  limits.max_tree_bytes = 127;  // the array (64) and two elements (32 each) do not fit
  const Status s = Parse("[1, 2, 3]", nullptr, limits);
  EXPECT_EQ(s.message().rfind("[1]: the JSON tree kept in memory exceeds 127 bytes at byte ", 0),
            0u)
      << s.message();
  limits.max_tree_bytes = 64 + 3 * 32;
  EXPECT_TRUE(Parse("[1, 2, 3]", nullptr, limits).ok());
  // Thirty times its text: each "{}," is an element and an object's header.
  std::string many = "[";
  for (int i = 0; i < 1000; ++i) many += "{},";
  many += "{}]";
  limits.max_tree_bytes = 30 * many.size();
  EXPECT_FALSE(Parse(many, nullptr, limits).ok());
}

TEST(JsonTreeBytes, IsWhatTheReaderChargesForTheTree) {
  for (const char* text :
       {"1", R"("a string longer than fifteen bytes")", "[]", "{}", "[1, 2.5, null, true]",
        R"({"a": {}, "a key longer than fifteen bytes": [[], [{}], "short"]})",
        R"([{"k": [1, {"deep": [[[]]]}]}, "x", {"": ""}])"}) {
    json value;
    ASSERT_TRUE(Parse(text, &value).ok()) << text;
    const uint64_t bytes = JsonTreeBytes(value);
    JsonLimits limits;
    limits.max_tree_bytes = bytes;
    EXPECT_TRUE(Parse(text, nullptr, limits).ok()) << text << " within " << bytes;
    if (bytes == 0) continue;  // a number kept alone costs nothing
    limits.max_tree_bytes = bytes - 1;
    EXPECT_FALSE(Parse(text, nullptr, limits).ok()) << text << " within " << bytes - 1;
  }
}

// Streams the elements of "items", skips "skipped", keeps the rest.
class Recorder : public JsonStreamHandler {
 public:
  Action Classify(const JsonPath& path) override {
    if (path.Matches({"items", "[]"})) return Action::kStream;
    if (path.Matches({"items", "[]", "parts", "[]"})) return Action::kStream;
    if (path.Matches({"skipped"})) return Action::kSkip;
    return Action::kKeep;
  }
  Status Take(const JsonPath& path, json&& value) override {
    taken.push_back(path.ToString() + "=" + value.dump());
    if (value == json("stop")) return Status::Corruption("stopped at " + path.ToString());
    return Status::OK();
  }
  std::vector<std::string> taken;
};

TEST(ParseJsonStreamed, StreamedValuesAreHandedOverAndLeftOut) {
  Recorder recorder;
  json j;
  const Status s = ParseJsonStreamed(
      R"({"head": 1, "items": [{"k": 1, "parts": [7, 8]}, 2], "skipped": {"x": [1, 2]}, "tail": [3]})",
      JsonLimits(), &recorder, &j);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(j, json::parse(R"({"head": 1, "items": [], "tail": [3]})"));
  EXPECT_EQ(recorder.taken,
            (std::vector<std::string>{"items[0].parts[0]=7", "items[0].parts[1]=8",
                                      R"(items[0]={"k":1,"parts":[]})", "items[1]=2"}));
}

TEST(ParseJsonStreamed, StreamedValuesDoNotCountAgainstTheTreeBound) {
  Recorder recorder;
  std::string items = R"({"items": [)";
  for (int i = 0; i < 1000; ++i) items += R"({"k": 1, "parts": [1, 2]}, )";
  items += "3]}";
  JsonLimits limits;
  limits.max_tree_bytes = 64 + 96 + 64;  // the root, its member "items" and that empty array
  json j;
  const Status s = ParseJsonStreamed(items, limits, &recorder, &j);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(recorder.taken.size(), 3001u);
}

TEST(ParseJsonStreamed, ChecksApplyToStreamedAndSkippedParts) {
  Recorder recorder;
  json j;
  Status s = ParseJsonStreamed(R"({"skipped": {"x": 1, "x": 2}})", JsonLimits(), &recorder, &j);
  EXPECT_EQ(s.message(), R"(skipped: duplicate key "x" at byte 22, line 1, column 22)");
  s = ParseJsonStreamed(R"({"items": [{"k": 1, "k": 2}]})", JsonLimits(), &recorder, &j);
  EXPECT_EQ(s.message(), R"(items[0]: duplicate key "k" at byte 21, line 1, column 21)");
  // A streamed or skipped member is still a member: naming it again is a duplicate.
  s = ParseJsonStreamed(R"({"skipped": 1, "skipped": 2})", JsonLimits(), &recorder, &j);
  EXPECT_EQ(s.message(), R"((root): duplicate key "skipped" at byte 16, line 1, column 16)");
  // Many members of a skipped object (the set behind the small vector).
  std::string many = R"({"skipped": {)";
  for (int i = 0; i < 40; ++i) many += "\"k" + std::to_string(i) + "\": 0, ";
  s = ParseJsonStreamed(many + R"("k7": 1}})", JsonLimits(), &recorder, &j);
  EXPECT_NE(s.message().find(R"(skipped: duplicate key "k7")"), std::string::npos) << s.message();
  JsonLimits shallow;
  shallow.max_depth = 2;
  s = ParseJsonStreamed(R"({"skipped": [[1]]})", shallow, &recorder, &j);
  EXPECT_EQ(s.message(), "skipped[0]: nests deeper than 2 levels at byte 14, line 1, column 14");
}

TEST(ParseJsonStreamed, AHandlerErrorEndsTheRead) {
  Recorder recorder;
  json j;
  const Status s = ParseJsonStreamed(R"({"items": [1, "stop", 3]})", JsonLimits(), &recorder, &j);
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_EQ(s.message(), "stopped at items[1]");
  EXPECT_EQ(recorder.taken.size(), 2u);
}

TEST(JsonPath, LongPathsAndOddNamesStayShort) {
  std::string long_key(500, 'k');
  const Status s = Parse("{\"" + long_key + "\": {\"a\": 1, \"a\": 2}}");
  ASSERT_FALSE(s.ok());
  EXPECT_LT(s.message().size(), 120u) << s.message();
  EXPECT_EQ(s.message().compare(0, 3, "[\"k"), 0) << s.message();
}

TEST(JsonPath, LevelsAppendAsJsonPathWritesThem) {
  std::string path;
  AppendJsonPathMember("tensors", &path);
  AppendJsonPathIndex(3, &path);
  AppendJsonPathMember("chunks", &path);
  AppendJsonPathIndex(0, &path);
  AppendJsonPathMember("offset", &path);
  EXPECT_EQ(path, "tensors[3].chunks[0].offset");
  std::string odd;
  AppendJsonPathIndex(1, &odd);
  AppendJsonPathMember("a b", &odd);
  AppendJsonPathMember("", &odd);
  EXPECT_EQ(odd, "[1][\"a b\"][\"\"]");
  std::string first;
  AppendJsonPathMember("x.y", &first);
  EXPECT_EQ(first, "[\"x.y\"]");
}

}  // namespace
}  // namespace ckptspec
