#include "targets/process/request_writer.h"

#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/dtype.h"
#include "model/json_text_writer.h"
#include "model/sharded.h"
#include "targets/strict_mode.h"
#include "targets/target.h"

namespace ckptspec {
namespace {

// A packed entry's "length" and "offset" (protocol revision 4), each in its sorted place.
void Length(JsonTextWriter* w, const std::optional<FileRange>& range) {
  if (!range) return;
  w->Member("length");
  w->Uint(range->length);
}
void Offset(JsonTextWriter* w, const std::optional<FileRange>& range) {
  if (!range) return;
  w->Member("offset");
  w->Uint(range->offset);
}

// A tensor entry: TensorSpecToJson's members, "file", the range, and a save's "placement"
// (nullptr: none), in sorted order.
void Tensor(JsonTextWriter* w, const WireTensor& e, const char* placement) {
  const TensorSpec& t = e.spec;
  w->Element();
  w->Open('{');
  if (t.has_regular_grid()) {
    w->Member("axis_fragmentations");
    w->Dims(t.axis_fragmentations);
  }
  if (t.digest) {
    w->Member("digest");
    w->String(DigestHex(*t.digest));
  }
  w->Member("dtype");
  w->String(DTypeName(t.dtype));
  w->Member("file");
  w->String(e.file);
  w->Member("global_offset");
  w->Dims(t.global_offset);
  w->Member("global_shape");
  w->Dims(t.global_shape);
  w->Member("key");
  w->String(t.key);
  Length(w, e.range);
  w->Member("local_shape");
  w->Dims(t.local_shape);
  Offset(w, e.range);
  if (!t.origin.empty()) {
    w->Member("origin");
    w->String(t.origin);
  }
  if (placement != nullptr) {
    w->Member("placement");
    w->String(placement);
  }
  if (t.prepend_axis_num != 0) {
    w->Member("prepend_axis_num");
    w->Int(t.prepend_axis_num);
  }
  w->Member("replica_id");
  w->Dims(t.replica_id);
  w->Close('}');
}

// An object entry: ObjectSpecToJson's members, "file" and the range, in sorted order.
void Object(JsonTextWriter* w, const WireObject& e) {
  const ObjectSpec& o = e.spec;
  w->Element();
  w->Open('{');
  if (o.digest) {
    w->Member("digest");
    w->String(DigestHex(*o.digest));
  }
  w->Member("file");
  w->String(e.file);
  w->Member("global_offset");
  w->Dims(o.global_offset);
  w->Member("global_shape");
  w->Dims(o.global_shape);
  w->Member("key");
  w->String(o.key);
  Length(w, e.range);
  Offset(w, e.range);
  if (!o.origin.empty()) {
    w->Member("origin");
    w->String(o.origin);
  }
  w->Member("replica_id");
  w->Dims(o.replica_id);
  w->Close('}');
}

void Objects(JsonTextWriter* w, const std::vector<WireObject>& objects) {
  w->Member("objects");
  w->Open('[');
  for (const WireObject& o : objects) Object(w, o);
  w->Close(']');
}

// Room for a request of `tensors` and `objects` entries without regrowing the line: an entry's
// members take a few hundred bytes, its path and key most of them.
size_t RoomFor(size_t tensors, size_t objects) { return 1024 + 512 * (tensors + objects); }

}  // namespace

std::string SaveRequestLine(const SaveCall& call, int64_t id) {
  std::string out;
  out.reserve(RoomFor(call.tensors.size(), call.objects.size()));
  JsonTextWriter w(&out, -1, nlohmann::json::error_handler_t::replace);
  w.Open('{');
  w.Member("assume_constant_structure");
  w.Bool(call.options.assume_constant_structure);
  w.Member("async");
  w.Bool(call.options.async);
  w.Member("common");
  w.Value(call.common);
  w.Member("directory");
  w.String(call.directory);
  w.Member("id");
  w.Int(id);
  w.Member("iteration");
  w.Int(call.iteration);
  w.Member("layout");
  w.Value(call.options.layout);
  Objects(&w, call.objects);
  w.Member("op");
  w.String("save");
  w.Member("tensors");
  w.Open('[');
  for (size_t i = 0; i < call.tensors.size(); ++i) {
    Tensor(&w, call.tensors[i],
           PlacementName(i < call.placements.size() ? call.placements[i] : Placement::kDevice));
  }
  w.Close(']');
  w.Member("validate");
  w.Bool(call.options.validate);
  w.Close('}');
  return out;
}

std::string LoadRequestLine(const LoadCall& call, int64_t id) {
  std::string out;
  out.reserve(RoomFor(call.tensors.size(), call.objects.size()));
  JsonTextWriter w(&out, -1, nlohmann::json::error_handler_t::replace);
  w.Open('{');
  w.Member("allow_shape_mismatch");
  w.Bool(call.allow_shape_mismatch);
  w.Member("directory");
  w.String(call.directory);
  w.Member("id");
  w.Int(id);
  w.Member("iteration");
  if (call.iteration) {
    w.Int(*call.iteration);
  } else {
    w.Value(nullptr);
  }
  Objects(&w, call.objects);
  w.Member("op");
  w.String("load");
  w.Member("strict");
  w.String(StrictModeName(call.strict));
  w.Member("tensors");
  w.Open('[');
  for (const WireTensor& t : call.tensors) Tensor(&w, t, nullptr);
  w.Close(']');
  w.Close('}');
  return out;
}

}  // namespace ckptspec
