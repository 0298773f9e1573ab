// The request lines written directly are the text the trees dump to: for random save and load
// calls, with every optional member present or absent, strings that need escapes, UTF-8 and
// invalid UTF-8, and layout and common JSON of every type.
#include "targets/process/request_writer.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generators/json_gen.h"

namespace ckptspec {
namespace {

using nlohmann::json;

std::string ArbitraryText() { return *gen::JsonText(/*invalid_utf8=*/true); }

Dims ArbitraryDims() {
  const int n = *rc::gen::inRange(0, 4);
  Dims dims;
  for (int i = 0; i < n; ++i) dims.push_back(*rc::gen::inRange<int64_t>(0, int64_t{1} << 40));
  return dims;
}

json ArbitraryJson(int depth) { return *gen::JsonValue(depth, /*invalid_utf8=*/true); }

std::optional<FileRange> ArbitraryRange() {
  if (*rc::gen::arbitrary<bool>()) return std::nullopt;
  return FileRange{*rc::gen::inRange<uint64_t>(0, uint64_t{1} << 62),
                   *rc::gen::inRange<uint64_t>(0, uint64_t{1} << 40)};
}

std::optional<uint64_t> ArbitraryDigest() {
  if (*rc::gen::arbitrary<bool>()) return std::nullopt;
  return *rc::gen::arbitrary<uint64_t>();
}

std::vector<WireTensor> ArbitraryTensors() {
  std::vector<WireTensor> tensors(*rc::gen::inRange<size_t>(0, 4));
  for (WireTensor& w : tensors) {
    TensorSpec& t = w.spec;
    t.key = ArbitraryText();
    t.dtype = *rc::gen::elementOf(std::vector<DType>(std::begin(kAllDTypes), std::end(kAllDTypes)));
    t.global_shape = ArbitraryDims();
    t.global_offset = ArbitraryDims();
    t.local_shape = ArbitraryDims();
    t.axis_fragmentations = ArbitraryDims();
    t.prepend_axis_num = *rc::gen::inRange(0, 3);
    t.replica_id = ArbitraryDims();
    t.origin = ArbitraryText();
    t.digest = ArbitraryDigest();
    w.file = ArbitraryText();
    w.range = ArbitraryRange();
  }
  return tensors;
}

std::vector<WireObject> ArbitraryObjects() {
  std::vector<WireObject> objects(*rc::gen::inRange<size_t>(0, 3));
  for (WireObject& w : objects) {
    ObjectSpec& o = w.spec;
    o.key = ArbitraryText();
    o.global_shape = ArbitraryDims();
    o.global_offset = ArbitraryDims();
    o.replica_id = ArbitraryDims();
    o.origin = ArbitraryText();
    o.digest = ArbitraryDigest();
    w.file = ArbitraryText();
    w.range = ArbitraryRange();
  }
  return objects;
}

// The line as the tree gives it: what RankGroup::Call sends.
std::string TreeLine(const json& body, int64_t id, const std::string& op) {
  json request = body;
  request["id"] = id;
  request["op"] = op;
  return DumpLine(request);
}

RC_GTEST_PROP(RequestWriter, ASaveLineIsTheTreesDump, ()) {
  SaveCall call;
  call.directory = ArbitraryText();
  call.iteration = *rc::gen::arbitrary<int64_t>();
  call.options.validate = *rc::gen::arbitrary<bool>();
  call.options.assume_constant_structure = *rc::gen::arbitrary<bool>();
  call.options.async = *rc::gen::arbitrary<bool>();
  call.options.layout = ArbitraryJson(3);
  call.common = ArbitraryJson(3);
  call.tensors = ArbitraryTensors();
  // Fewer placements than tensors: the rest are "device".
  for (size_t i = *rc::gen::inRange<size_t>(0, call.tensors.size() + 1); i > 0; --i) {
    call.placements.push_back(
        *rc::gen::elementOf(std::vector<Placement>{Placement::kDevice, Placement::kHost}));
  }
  call.objects = ArbitraryObjects();
  const int64_t id = *rc::gen::arbitrary<int64_t>();
  json body = json::object();
  SaveCallToJson(call, &body);
  const std::string tree = TreeLine(body, id, "save");
  RC_LOG() << "tree:   " << tree << "\n";
  RC_ASSERT(SaveRequestLine(call, id) == tree);
}

RC_GTEST_PROP(RequestWriter, ALoadLineIsTheTreesDump, ()) {
  LoadCall call;
  call.directory = ArbitraryText();
  if (*rc::gen::arbitrary<bool>()) call.iteration = *rc::gen::arbitrary<int64_t>();
  call.strict = static_cast<StrictMode>(*rc::gen::inRange(0, kNumStrictModes));
  call.allow_shape_mismatch = *rc::gen::arbitrary<bool>();
  call.tensors = ArbitraryTensors();
  call.objects = ArbitraryObjects();
  const int64_t id = *rc::gen::arbitrary<int64_t>();
  json body = json::object();
  LoadCallToJson(call, &body);
  const std::string tree = TreeLine(body, id, "load");
  RC_LOG() << "tree:   " << tree << "\n";
  RC_ASSERT(LoadRequestLine(call, id) == tree);
}

}  // namespace
}  // namespace ckptspec
