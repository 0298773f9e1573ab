#include "model/chunk_resolve.h"

#include <cstring>
#include <map>

#include "model/dtype_conversion.h"

namespace ckptspec {

namespace {

// Row-major strides of a shape.
Dims Strides(const Dims& shape) {
  Dims s(shape.size(), 1);
  for (int a = static_cast<int>(shape.size()) - 2; a >= 0; --a) s[a] = s[a + 1] * shape[a + 1];
  return s;
}

// Copies the elements of `region` (inside both boxes) from `src` (laid out over src_box, elements
// of `from`) to `dst` (over dst_box, elements of `to`), converting each (dtype_conversion.h) when
// the dtypes differ; `covered` marks the destination elements written. Errors: the conversion's,
// naming the destination element.
Status CopyRegion(const Box& region, const Box& src_box, const uint8_t* src, DType from,
                  const Box& dst_box, uint8_t* dst, DType to, std::vector<bool>* covered) {
  const size_t in = static_cast<size_t>(DTypeSize(from)), out = static_cast<size_t>(DTypeSize(to));
  const Dims ss = Strides(src_box.shape), ds = Strides(dst_box.shape);
  const int n = region.rank();
  const int64_t count = Volume(region.shape);
  Dims idx(n, 0);
  for (int64_t k = 0; k < count; ++k) {
    int64_t si = 0, di = 0;
    for (int a = 0; a < n; ++a) {
      const int64_t g = region.offset[a] + idx[a];
      si += (g - src_box.offset[a]) * ss[a];
      di += (g - dst_box.offset[a]) * ds[a];
    }
    if (from == to) {
      std::memcpy(dst + di * out, src + si * in, out);
    } else {
      CKPTSPEC_RETURN_IF_ERROR(
          ConvertElements(from, to, src + si * in, 1, static_cast<uint64_t>(di), dst + di * out));
    }
    (*covered)[static_cast<size_t>(di)] = true;
    for (int a = n - 1; a >= 0; --a) {
      if (++idx[a] < region.shape[a]) break;
      idx[a] = 0;
    }
  }
  return Status::OK();
}

}  // namespace

Status FillTensorFromChunks(const std::vector<const ShardedTensor*>& saved, ShardedTensor* target) {
  const TensorSpec& t = target->spec;
  const size_t elem = static_cast<size_t>(DTypeSize(t.dtype));
  int64_t volume = 0;
  if (!CheckedVolume(t.local_shape, &volume)) {
    return Status::InvalidArgument("template of '" + t.key + "' has an invalid local shape " +
                                   DimsToString(t.local_shape));
  }
  target->data.assign(static_cast<size_t>(volume) * elem, 0);
  std::vector<bool> covered(static_cast<size_t>(volume), false);
  const Box dst_box = t.box();
  for (const ShardedTensor* c : saved) {
    if (c->spec.key != t.key) continue;
    const Status convertible = CheckConversion(c->spec.dtype, t.dtype);
    if (!convertible.ok()) {
      return Status::InvalidArgument("'" + t.key + "': requested dtype " + DTypeName(t.dtype) +
                                     ", saved " + DTypeName(c->spec.dtype) + ": " +
                                     convertible.message());
    }
    const size_t saved_elem = static_cast<size_t>(DTypeSize(c->spec.dtype));
    if (c->spec.global_shape != t.global_shape) {
      return Status::InvalidArgument("'" + t.key + "': global shape mismatch: requested " +
                                     DimsToString(t.global_shape) + ", saved " +
                                     DimsToString(c->spec.global_shape));
    }
    int64_t saved_volume = 0;
    if (!CheckedVolume(c->spec.local_shape, &saved_volume) ||
        c->data.size() != static_cast<size_t>(saved_volume) * saved_elem) {
      return Status::Corruption("'" + t.key + "': saved chunk " + BoxToString(c->spec.box()) +
                                " holds " + std::to_string(c->data.size()) + " bytes");
    }
    Box region;
    if (!Intersect(c->spec.box(), dst_box, &region)) continue;
    CKPTSPEC_RETURN_IF_ERROR(CopyRegion(region, c->spec.box(), c->data.data(), c->spec.dtype,
                                        dst_box, target->data.data(), t.dtype, &covered)
                                 .WithContext("'" + t.key + "'"));
  }
  for (size_t i = 0; i < covered.size(); ++i) {
    if (!covered[i]) {
      return Status::NotFound("'" + t.key + "': element " + std::to_string(i) + " of the chunk " +
                              BoxToString(dst_box) + " is in no saved chunk");
    }
  }
  return Status::OK();
}

Status ResolveFromSaved(const std::vector<ShardedStateDict>& saved, int64_t rank,
                        ShardedStateDict* request) {
  std::map<std::string, std::vector<const ShardedTensor*>> tensors;
  std::map<std::string, const ShardedObject*> objects;  // by StoredObjectKey
  for (size_t r = 0; r < saved.size(); ++r) {
    for (const ShardedTensor& t : saved[r].tensors) {
      if (IsMainReplica(t.spec.replica_id)) tensors[t.spec.key].push_back(&t);
    }
    for (const ShardedObject& o : saved[r].objects) {
      if (IsMainReplica(o.spec.replica_id))
        objects.emplace(StoredObjectKey(o.spec, static_cast<int64_t>(r)), &o);
    }
  }
  for (ShardedTensor& t : request->tensors) {
    auto it = tensors.find(t.spec.key);
    if (it == tensors.end()) return Status::NotFound("missing tensor '" + t.spec.key + "'");
    CKPTSPEC_RETURN_IF_ERROR(FillTensorFromChunks(it->second, &t));
  }
  for (ShardedObject& o : request->objects) {
    auto it = objects.find(StoredObjectKey(o.spec, rank));
    if (it == objects.end()) {
      return Status::NotFound(
          "missing object '" + o.spec.UniqueKey() + "'" +
          (IsRankLocal(o.spec) ? " (rank-local) of rank " + std::to_string(rank) : std::string()));
    }
    o.data = it->second->data;
  }
  request->common = saved.empty() ? SharedJson() : saved.front().common;
  return Status::OK();
}

}  // namespace ckptspec
