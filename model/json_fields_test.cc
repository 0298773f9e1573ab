#include "model/json_fields.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ckptspec {
namespace {

using nlohmann::json;

const json kDocument = json::parse(R"({
  "name": "w", "count": 3, "ratio": 0.5, "flag": true, "nothing": null, "big": 18446744073709551615,
  "tensors": [{"chunks": [{"offset": [0, 4]}]}, {"chunks": [{"offset": "x"}]}],
  "a b": {"c": 1}
})");

// The message of reading `text` (one JSON value) with `read`, "" when OK.
template <typename Read>
std::string ErrorOf(const std::string& text, Read read) {
  const json value = json::parse(text);
  const JsonField root(value);
  const Status s = read(root);
  if (s.ok()) return "";
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << s.ToString();
  return s.message();
}

TEST(JsonField, PathsAreWrittenAsJsonPathWritesThem) {
  const JsonField root(kDocument);
  EXPECT_EQ(root.Path(), "(root)");
  const JsonField tensors = root.Member("tensors");
  const JsonField tensor = tensors.Element(1);
  const JsonField chunks = tensor.Member("chunks");
  const JsonField chunk = chunks.Element(0);
  EXPECT_EQ(chunk.Member("offset").Path(), "tensors[1].chunks[0].offset");
  const JsonField odd = root.Member("a b");
  EXPECT_EQ(odd.Member("c").Path(), "[\"a b\"].c");
  // Absent fields name where they would be.
  EXPECT_EQ(tensors.Element(7).Path(), "tensors[7]");
  EXPECT_EQ(root.Member("gone").Path(), "gone");
}

TEST(JsonField, ANamedRootStartsItsPaths) {
  const JsonField root(kDocument, "load reply");
  EXPECT_EQ(root.Path(), "load reply");
  const JsonField tensors = root.Member("tensors");
  EXPECT_EQ(tensors.Element(1).Path(), "load reply.tensors[1]");
  std::string s;
  EXPECT_EQ(root.Member("count").GetString(&s).message(),
            "load reply.count: expected a string, got 3");
  EXPECT_EQ(root.Member("gone").GetString(&s).message(),
            "load reply: missing required member \"gone\"");
  EXPECT_EQ(root.Error("bad").message(), "load reply: bad");
  const json list = json::array({1});
  const JsonField named_array(list, "dropped");
  EXPECT_EQ(named_array.Element(0).GetString(&s).message(), "dropped[0]: expected a string, got 1");
}

TEST(JsonField, ErrorsNameTheNestedPath) {
  const JsonField root(kDocument);
  const JsonField tensors = root.Member("tensors");
  const JsonField tensor = tensors.Element(1);
  const JsonField chunks = tensor.Member("chunks");
  const JsonField chunk = chunks.Element(0);
  int64_t offset = 0;
  const Status s = chunk.Member("offset").GetInt64(&offset);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "tensors[1].chunks[0].offset: expected an integer, got \"x\"");
  EXPECT_EQ(chunk.Error("overlaps").message(), "tensors[1].chunks[0]: overlaps");
  EXPECT_EQ(chunk.Expected("a tensor").message(),
            "tensors[1].chunks[0]: expected a tensor, got {\"offset\": \"x\"}");
  EXPECT_EQ(chunk.OutOfRange(7, 0, 1).message(),
            "tensors[1].chunks[0]: expected an integer in [0, 1], got 7");
  EXPECT_EQ(root.Member("flag").Expected("a name").message(), "flag: expected a name, got true");
  EXPECT_EQ(chunk.UnknownMember("size").message(), "tensors[1].chunks[0]: unknown member \"size\"");
}

// Reads the streamed elements of "tensors" and keeps each one's first error.
class StreamedReader : public JsonStreamHandler {
 public:
  Action Classify(const JsonPath& path) override {
    return path.Matches({"tensors", "[]"}) ? Action::kStream : Action::kKeep;
  }
  Status Take(const JsonPath& path, json&& value) override {
    const JsonField tensor(value, path);
    const JsonField chunks = tensor.Member("chunks");
    const JsonField chunk = chunks.Element(0);
    Dims offset;
    errors.push_back(chunk.Member("offset").GetNonNegativeInt64Array(&offset).message());
    paths.push_back(tensor.Path());
    return Status::OK();
  }
  std::vector<std::string> errors, paths;
};

TEST(JsonField, AStreamedValueStartsAtItsPath) {
  StreamedReader reader;
  json top;
  ASSERT_TRUE(ParseJsonStreamed(kDocument.dump(), JsonLimits(), &reader, &top).ok());
  EXPECT_EQ(reader.paths, (std::vector<std::string>{"tensors[0]", "tensors[1]"}));
  EXPECT_EQ(reader.errors,
            (std::vector<std::string>{"",
                                      "tensors[1].chunks[0].offset: expected an array of "
                                      "non-negative integers, got \"x\""}));
  // The root of a streamed document is "(root)".
  const JsonField root(top);
  EXPECT_EQ(root.Path(), "(root)");
}

TEST(JsonField, PresentFieldsShowTheirValue) {
  const JsonField root(kDocument);
  EXPECT_TRUE(root.present());
  EXPECT_EQ(&root.value(), &kDocument);
  EXPECT_EQ(root.Member("tensors").size(), 2u);
  EXPECT_EQ(root.Member("count").size(), 0u);
  EXPECT_EQ(root.Member("name").value(), "w");
  const JsonField gone = root.Member("gone");
  EXPECT_FALSE(gone.present());
  EXPECT_TRUE(gone.value().is_null());
  EXPECT_EQ(gone.size(), 0u);
}

TEST(JsonField, AMissingRequiredMemberIsNamedAtItsObject) {
  const JsonField root(kDocument);
  const JsonField tensors = root.Member("tensors");
  const JsonField tensor = tensors.Element(0);
  std::string s;
  EXPECT_EQ(tensor.Member("key").GetString(&s).message(),
            "tensors[0]: missing required member \"key\"");
  EXPECT_EQ(tensor.Member("key").ExpectPresent().message(),
            "tensors[0]: missing required member \"key\"");
  EXPECT_EQ(tensor.Member("key").Expected("a key").message(),
            "tensors[0]: missing required member \"key\"");
  // What is taken from a missing member reports that member.
  const JsonField missing = root.Member("layout");
  const JsonField below = missing.OptionalMember("tp");
  int64_t tp = 0;
  EXPECT_EQ(below.GetInt64(&tp).message(), "(root): missing required member \"layout\"");
  // A member of a value that is not an object.
  const JsonField count = root.Member("count");
  EXPECT_EQ(count.Member("x").GetInt64(&tp).message(), "count: expected an object, got 3");
  EXPECT_EQ(count.OptionalMember("x").GetInt64(&tp).message(), "count: expected an object, got 3");
  EXPECT_EQ(root.Member("count").ExpectPresent().message(), "");
}

TEST(JsonField, AnOptionalMemberLeftOutReadsAsNothing) {
  const JsonField root(kDocument);
  const JsonField gone = root.OptionalMember("gone");
  EXPECT_FALSE(gone.present());
  int64_t i = 5;
  uint64_t u = 6;
  double d = 7;
  std::optional<double> od = 8.0;
  bool b = true;
  std::string s = "kept";
  Dims dims = {1};
  int small = 9;
  EXPECT_TRUE(gone.ExpectPresent().ok());
  EXPECT_TRUE(gone.ExpectObject().ok());
  EXPECT_TRUE(gone.ExpectArray().ok());
  EXPECT_TRUE(gone.ExpectArrayOfSize(2).ok());
  EXPECT_FALSE(gone.is_null());
  EXPECT_TRUE(gone.ExpectOnlyMembers({"a"}).ok());
  EXPECT_TRUE(gone.GetInt64(&i).ok());
  EXPECT_TRUE(gone.GetInt64(0, 1, &i).ok());
  EXPECT_TRUE(gone.GetNonNegativeInt64(&i).ok());
  EXPECT_TRUE(gone.GetInt(&small).ok());
  EXPECT_TRUE(gone.GetUint64(&u).ok());
  EXPECT_TRUE(gone.GetDouble(&d).ok());
  EXPECT_TRUE(gone.GetDoubleOrNull(&od).ok());
  EXPECT_TRUE(gone.GetBool(&b).ok());
  EXPECT_TRUE(gone.GetString(&s).ok());
  std::vector<std::string> strings = {"kept"};
  EXPECT_TRUE(gone.GetStringArray(&strings).ok());
  EXPECT_TRUE(gone.GetNonNegativeInt64Array(&dims).ok());
  EXPECT_TRUE(gone.GetEnum([](const std::string&, int*) { return false; }, &small).ok());
  int calls = 0;
  EXPECT_TRUE(gone.ForEachElement([&](const JsonField&) {
                    ++calls;
                    return Status::OK();
                  })
                  .ok());
  EXPECT_TRUE(gone.ForEachMember([&](const std::string&, const JsonField&) {
                    ++calls;
                    return Status::OK();
                  })
                  .ok());
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(strings, std::vector<std::string>{"kept"});
  EXPECT_EQ(i, 5);
  EXPECT_EQ(u, 6u);
  EXPECT_EQ(d, 7);
  EXPECT_EQ(od, 8.0);
  EXPECT_TRUE(b);
  EXPECT_EQ(s, "kept");
  EXPECT_EQ(dims, std::vector<int64_t>{1});
  EXPECT_EQ(small, 9);
  // Required members of a left-out member are left out too.
  EXPECT_TRUE(gone.Member("inner").GetInt64(&i).ok());
  // Errors still name where it would be; Expected names what is missing.
  EXPECT_EQ(gone.Error("bad").message(), "gone: bad");
  EXPECT_EQ(gone.Expected("a number").message(), "(root): missing required member \"gone\"");
  // A member that is there is read as a required one.
  EXPECT_EQ(root.OptionalMember("name").GetInt64(&i).message(),
            "name: expected an integer, got \"w\"");
}

TEST(JsonField, ElementsPastTheEndAreMissing) {
  const JsonField root(kDocument);
  const JsonField tensors = root.Member("tensors");
  EXPECT_TRUE(tensors.Element(1).present());
  EXPECT_EQ(tensors.Element(2).ExpectObject().message(), "tensors: missing element [2]");
  const JsonField name = root.Member("name");
  EXPECT_EQ(name.Element(0).ExpectObject().message(), "name: expected an array, got \"w\"");
}

TEST(JsonField, ExpectTypes) {
  EXPECT_EQ(ErrorOf("{}", [](const JsonField& f) { return f.ExpectObject(); }), "");
  EXPECT_EQ(ErrorOf("[1]", [](const JsonField& f) { return f.ExpectObject(); }),
            "(root): expected an object, got [1]");
  EXPECT_EQ(ErrorOf("[]", [](const JsonField& f) { return f.ExpectArray(); }), "");
  EXPECT_EQ(ErrorOf("{}", [](const JsonField& f) { return f.ExpectArray(); }),
            "(root): expected an array, got {}");
}

TEST(JsonField, IsNullOnlyWhenPresentAndNull) {
  const JsonField root(kDocument);
  EXPECT_TRUE(root.Member("nothing").is_null());
  EXPECT_FALSE(root.Member("count").is_null());
  EXPECT_FALSE(root.Member("gone").is_null());
  EXPECT_FALSE(root.OptionalMember("gone").is_null());
}

TEST(JsonField, ExpectArrayOfSize) {
  const auto pair = [](const JsonField& f) { return f.ExpectArrayOfSize(2); };
  EXPECT_EQ(ErrorOf("[1, \"x\"]", pair), "");
  EXPECT_EQ(ErrorOf("[1]", pair), "(root): expected an array of 2 elements, got [1]");
  EXPECT_EQ(ErrorOf("[1, 2, 3]", pair), "(root): expected an array of 2 elements, got [1, 2, 3]");
  EXPECT_EQ(ErrorOf("{}", pair), "(root): expected an array, got {}");
  EXPECT_EQ(ErrorOf("[]", [](const JsonField& f) { return f.ExpectArrayOfSize(1); }),
            "(root): expected an array of 1 element, got []");
  EXPECT_EQ(ErrorOf("[]", [](const JsonField& f) { return f.ExpectArrayOfSize(0); }), "");
  EXPECT_EQ(ErrorOf("{}", [](const JsonField& f) { return f.Member("p").ExpectArrayOfSize(2); }),
            "(root): missing required member \"p\"");
}

TEST(JsonField, ExpectOnlyMembersNamesTheFirstUnknownOne) {
  const auto only_a_b = [](const JsonField& f) { return f.ExpectOnlyMembers({"a", "b"}); };
  EXPECT_EQ(ErrorOf(R"({"a": 1, "b": 2})", only_a_b), "");
  EXPECT_EQ(ErrorOf(R"({})", only_a_b), "");
  EXPECT_EQ(ErrorOf(R"({"a": 1, "bb": 2})", only_a_b), "(root): unknown member \"bb\"");
  EXPECT_EQ(ErrorOf(R"("a")", only_a_b), "(root): expected an object, got \"a\"");
  EXPECT_EQ(ErrorOf(R"({"a": {"x": 1}})",
                    [](const JsonField& f) { return f.Member("a").ExpectOnlyMembers({}); }),
            "a: unknown member \"x\"");
}

TEST(JsonField, ForEachElementGivesEachIndexInOrder) {
  std::vector<std::string> paths;
  std::vector<int64_t> values;
  const auto read = [&](const JsonField& f) {
    return f.Member("list").ForEachElement([&](const JsonField& element) {
      paths.push_back(element.Path());
      int64_t v;
      CKPTSPEC_RETURN_IF_ERROR(element.GetInt64(&v));
      values.push_back(v);
      return Status::OK();
    });
  };
  EXPECT_EQ(ErrorOf(R"({"list": [4, 5]})", read), "");
  EXPECT_EQ(paths, (std::vector<std::string>{"list[0]", "list[1]"}));
  EXPECT_EQ(values, (std::vector<int64_t>{4, 5}));
  values.clear();
  EXPECT_EQ(ErrorOf(R"({"list": [6, "x", "y"]})", read), "list[1]: expected an integer, got \"x\"");
  EXPECT_EQ(values, std::vector<int64_t>{6});  // stops at the first error
  EXPECT_EQ(ErrorOf(R"({"list": {}})", read), "list: expected an array, got {}");
  EXPECT_EQ(ErrorOf(R"({})", read), "(root): missing required member \"list\"");
}

TEST(JsonField, ForEachMemberGivesEachNameInOrder) {
  std::vector<std::string> names, paths;
  std::vector<int64_t> values;
  const auto read = [&](const JsonField& f) {
    return f.Member("counts").ForEachMember([&](const std::string& name, const JsonField& member) {
      names.push_back(name);
      paths.push_back(member.Path());
      int64_t v;
      CKPTSPEC_RETURN_IF_ERROR(member.GetInt64(&v));
      values.push_back(v);
      return Status::OK();
    });
  };
  EXPECT_EQ(ErrorOf(R"({"counts": {"b": 2, "a b": 1}})", read), "");
  EXPECT_EQ(names, (std::vector<std::string>{"a b", "b"}));
  EXPECT_EQ(paths, (std::vector<std::string>{"counts[\"a b\"]", "counts.b"}));
  EXPECT_EQ(values, (std::vector<int64_t>{1, 2}));
  values.clear();
  EXPECT_EQ(ErrorOf(R"({"counts": {"a": 1, "b": "x", "c": "y"}})", read),
            "counts.b: expected an integer, got \"x\"");
  EXPECT_EQ(values, std::vector<int64_t>{1});  // stops at the first error
  EXPECT_EQ(ErrorOf(R"({"counts": []})", read), "counts: expected an object, got []");
  EXPECT_EQ(ErrorOf(R"({})", read), "(root): missing required member \"counts\"");
}

// The message of reading the document `text` with `get` on the root, "" when OK.
template <typename T, typename Get>
std::string GetError(const std::string& text, Get get, T* out) {
  return ErrorOf(text, [&](const JsonField& f) { return (f.*get)(out); });
}

TEST(JsonField, GetInt64) {
  int64_t v = 0;
  const auto get = static_cast<Status (JsonField::*)(int64_t*) const>(&JsonField::GetInt64);
  EXPECT_EQ(GetError("-9223372036854775808", get, &v), "");
  EXPECT_EQ(v, INT64_MIN);
  EXPECT_EQ(GetError("9223372036854775807", get, &v), "");
  EXPECT_EQ(v, INT64_MAX);
  EXPECT_EQ(GetError("9223372036854775808", get, &v),
            "(root): integer 9223372036854775808 overflows int64");
  EXPECT_EQ(GetError("1e20", get, &v), "(root): integer 1e+20 overflows int64");
  EXPECT_EQ(GetError("-1e20", get, &v), "(root): integer -1e+20 overflows int64");
  EXPECT_EQ(GetError("1.5", get, &v), "(root): expected an integer, got 1.5");
  EXPECT_EQ(GetError("2.0", get, &v), "(root): expected an integer, got 2.0");
  EXPECT_EQ(GetError("\"7\"", get, &v), "(root): expected an integer, got \"7\"");
  EXPECT_EQ(GetError("null", get, &v), "(root): expected an integer, got null");
  EXPECT_EQ(v, INT64_MAX);  // unchanged by errors
}

TEST(JsonField, GetInt64WithinBounds) {
  int64_t v = 0;
  const auto read = [&](const JsonField& f) { return f.GetInt64(1, 1 << 20, &v); };
  EXPECT_EQ(ErrorOf("1", read), "");
  EXPECT_EQ(v, 1);
  EXPECT_EQ(ErrorOf("1048576", read), "");
  EXPECT_EQ(v, 1048576);
  EXPECT_EQ(ErrorOf("0", read), "(root): expected an integer in [1, 1048576], got 0");
  EXPECT_EQ(ErrorOf("1048577", read), "(root): expected an integer in [1, 1048576], got 1048577");
  EXPECT_EQ(ErrorOf("true", read), "(root): expected an integer, got true");
  EXPECT_EQ(ErrorOf("18446744073709551615", read),
            "(root): integer 18446744073709551615 overflows int64");
  EXPECT_EQ(v, 1048576);
}

TEST(JsonField, GetNonNegativeInt64) {
  int64_t v = 0;
  const auto get = &JsonField::GetNonNegativeInt64;
  EXPECT_EQ(GetError("0", get, &v), "");
  EXPECT_EQ(GetError("12", get, &v), "");
  EXPECT_EQ(v, 12);
  EXPECT_EQ(GetError("-4", get, &v), "(root): expected a non-negative integer, got -4");
  EXPECT_EQ(GetError("4.5", get, &v), "(root): expected a non-negative integer, got 4.5");
  EXPECT_EQ(GetError("9223372036854775808", get, &v),
            "(root): integer 9223372036854775808 overflows int64");
  EXPECT_EQ(v, 12);
}

TEST(JsonField, GetIntKeepsToTheType) {
  int small = 0;
  EXPECT_EQ(GetError("-2147483648", &JsonField::GetInt<int>, &small), "");
  EXPECT_EQ(small, INT32_MIN);
  EXPECT_EQ(GetError("3000000000", &JsonField::GetInt<int>, &small),
            "(root): expected an integer in [-2147483648, 2147483647], got 3000000000");
  EXPECT_EQ(GetError("\"x\"", &JsonField::GetInt<int>, &small),
            "(root): expected an integer, got \"x\"");
  int8_t tiny = 0;
  EXPECT_EQ(GetError("-128", &JsonField::GetInt<int8_t>, &tiny), "");
  EXPECT_EQ(tiny, -128);
  EXPECT_EQ(GetError("128", &JsonField::GetInt<int8_t>, &tiny),
            "(root): expected an integer in [-128, 127], got 128");
  int64_t wide = 0;
  EXPECT_EQ(GetError("-9223372036854775808", &JsonField::GetInt<int64_t>, &wide), "");
  EXPECT_EQ(wide, INT64_MIN);
}

TEST(JsonField, GetUint64) {
  uint64_t v = 0;
  const auto get = &JsonField::GetUint64;
  EXPECT_EQ(GetError("18446744073709551615", get, &v), "");
  EXPECT_EQ(v, UINT64_MAX);
  EXPECT_EQ(GetError("0", get, &v), "");
  EXPECT_EQ(v, 0u);
  EXPECT_EQ(GetError("-1", get, &v), "(root): expected a non-negative integer, got -1");
  EXPECT_EQ(GetError("1e20", get, &v), "(root): integer 1e+20 overflows uint64");
  EXPECT_EQ(GetError("-1e20", get, &v), "(root): expected a non-negative integer, got -1e+20");
  EXPECT_EQ(GetError("0.5", get, &v), "(root): expected a non-negative integer, got 0.5");
  EXPECT_EQ(v, 0u);
}

TEST(JsonField, GetDouble) {
  double v = 0;
  const auto get = &JsonField::GetDouble;
  EXPECT_EQ(GetError("0.25", get, &v), "");
  EXPECT_EQ(v, 0.25);
  EXPECT_EQ(GetError("-3", get, &v), "");
  EXPECT_EQ(v, -3.0);
  EXPECT_EQ(GetError("18446744073709551615", get, &v), "");
  EXPECT_EQ(v, 18446744073709551615.0);
  EXPECT_EQ(GetError("\"0.5\"", get, &v), "(root): expected a number, got \"0.5\"");
  EXPECT_EQ(GetError("null", get, &v), "(root): expected a number, got null");
}

TEST(JsonField, GetDoubleOrNull) {
  std::optional<double> v;
  const auto get = &JsonField::GetDoubleOrNull;
  EXPECT_EQ(GetError("2.5", get, &v), "");
  EXPECT_EQ(v, 2.5);
  EXPECT_EQ(GetError("null", get, &v), "");
  EXPECT_FALSE(v.has_value());
  EXPECT_EQ(GetError("7", get, &v), "");
  EXPECT_EQ(v, 7.0);
  EXPECT_EQ(GetError("false", get, &v), "(root): expected a number or null, got false");
  EXPECT_EQ(v, 7.0);
}

TEST(JsonField, GetBool) {
  bool v = false;
  const auto get = &JsonField::GetBool;
  EXPECT_EQ(GetError("true", get, &v), "");
  EXPECT_TRUE(v);
  EXPECT_EQ(GetError("false", get, &v), "");
  EXPECT_FALSE(v);
  EXPECT_EQ(GetError("0", get, &v), "(root): expected a boolean, got 0");
  EXPECT_EQ(GetError("\"no\"", get, &v), "(root): expected a boolean, got \"no\"");
}

TEST(JsonField, GetString) {
  std::string v;
  const auto get = &JsonField::GetString;
  EXPECT_EQ(GetError("\"abc\"", get, &v), "");
  EXPECT_EQ(v, "abc");
  EXPECT_EQ(GetError("\"\"", get, &v), "");
  EXPECT_EQ(v, "");
  EXPECT_EQ(GetError("3", get, &v), "(root): expected a string, got 3");
  EXPECT_EQ(GetError("[]", get, &v), "(root): expected a string, got []");
  // Long values are shown shortened.
  EXPECT_EQ(GetError("[\"" + std::string(200, 'x') + "\"]", get, &v),
            "(root): expected a string, got [\"" + std::string(62, 'x') + "...");
}

TEST(JsonField, GetNonNegativeInt64Array) {
  Dims v;
  const auto get = &JsonField::GetNonNegativeInt64Array;
  EXPECT_EQ(GetError("[4, 0, 9223372036854775807]", get, &v), "");
  EXPECT_EQ(v, (std::vector<int64_t>{4, 0, INT64_MAX}));
  EXPECT_EQ(GetError("[]", get, &v), "");
  EXPECT_TRUE(v.empty());
  v = {1};
  EXPECT_EQ(GetError("\"4,4\"", get, &v),
            "(root): expected an array of non-negative integers, got \"4,4\"");
  EXPECT_EQ(GetError("[1, -4]", get, &v), "[1]: expected a non-negative integer, got -4");
  EXPECT_EQ(GetError("[9223372036854775808]", get, &v),
            "[0]: integer 9223372036854775808 overflows int64");
  EXPECT_EQ(v, std::vector<int64_t>{1});  // unchanged by errors
  const auto shape = [&](const JsonField& f) {
    return f.Member("shape").GetNonNegativeInt64Array(&v);
  };
  EXPECT_EQ(ErrorOf(R"({"shape": [1, 2.5]})", shape),
            "shape[1]: expected a non-negative integer, got 2.5");
}

TEST(JsonField, GetStringArray) {
  std::vector<std::string> v;
  const auto get = &JsonField::GetStringArray;
  EXPECT_EQ(GetError(R"(["a", ""])", get, &v), "");
  EXPECT_EQ(v, (std::vector<std::string>{"a", ""}));
  EXPECT_EQ(GetError("[]", get, &v), "");
  EXPECT_TRUE(v.empty());
  v = {"kept"};
  EXPECT_EQ(GetError("\"a\"", get, &v), "(root): expected an array of strings, got \"a\"");
  EXPECT_EQ(GetError(R"(["a", 1])", get, &v), "[1]: expected a string, got 1");
  EXPECT_EQ(v, std::vector<std::string>{"kept"});  // unchanged by errors
}

TEST(JsonField, AsCorruptionRecodesOnlyRefusals) {
  const JsonField root(kDocument, "state");
  std::string s;
  const Status refusal = AsCorruption(root.Member("count").GetString(&s));
  EXPECT_EQ(refusal.code(), Status::Code::kCorruption);
  EXPECT_EQ(refusal.message(), "state.count: expected a string, got 3");
  EXPECT_TRUE(AsCorruption(Status::OK()).ok());
  EXPECT_EQ(AsCorruption(Status::NotFound("x")).code(), Status::Code::kNotFound);
}

bool ParseColor(const std::string& name, int* out) {
  if (name == "red")
    *out = 1;
  else if (name == "blue")
    *out = 2;
  else
    return false;
  return true;
}

TEST(JsonField, GetEnum) {
  int v = 0;
  const auto read = [&](const JsonField& f) { return f.Member("color").GetEnum(ParseColor, &v); };
  EXPECT_EQ(ErrorOf(R"({"color": "blue"})", read), "");
  EXPECT_EQ(v, 2);
  EXPECT_EQ(ErrorOf(R"({"color": "green"})", read), "color: unknown value \"green\"");
  EXPECT_EQ(ErrorOf(R"({"color": 1})", read), "color: expected a string, got 1");
  EXPECT_EQ(v, 2);
}

}  // namespace
}  // namespace ckptspec
