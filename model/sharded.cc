#include "model/sharded.h"

#include <cstdio>

#include "model/content.h"

namespace ckptspec {

bool IsMainReplica(const ReplicaId& replica_id) {
  for (int64_t r : replica_id) {
    if (r != 0) return false;
  }
  return true;
}

std::string ReplicaIdToString(const ReplicaId& replica_id) { return DimsToString(replica_id); }

Box TensorSpec::box() const {
  Box b;
  b.offset = global_offset;
  b.shape.assign(prepend_axis_num > 0 ? prepend_axis_num : 0, 1);
  b.shape.insert(b.shape.end(), local_shape.begin(), local_shape.end());
  return b;
}

bool TensorSpec::operator==(const TensorSpec& o) const {
  return key == o.key && dtype == o.dtype && global_shape == o.global_shape &&
         global_offset == o.global_offset && local_shape == o.local_shape &&
         axis_fragmentations == o.axis_fragmentations && prepend_axis_num == o.prepend_axis_num &&
         replica_id == o.replica_id && origin == o.origin && digest == o.digest;
}

static std::string JoinDims(const Dims& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ".";
    s += std::to_string(dims[i]);
  }
  return s;
}

std::string ObjectSpec::UniqueKey() const {
  if (IsRankLocal(*this)) return key;
  return key + "/shard_" + JoinDims(global_offset) + "_" + JoinDims(global_shape);
}

bool IsRankLocal(const ObjectSpec& spec) {
  return spec.global_shape.empty() && spec.global_offset.empty() && spec.replica_id.empty();
}

ObjectSpec RankLocalObjectSpec(const std::string& key) {
  ObjectSpec spec;
  spec.key = key;
  spec.global_shape.clear();
  spec.global_offset.clear();
  spec.replica_id.clear();
  return spec;
}

std::string StoredObjectKey(const ObjectSpec& spec, int64_t rank) {
  if (IsRankLocal(spec)) return spec.key + "/rank_" + std::to_string(rank);
  return spec.UniqueKey();
}

bool ObjectSpec::operator==(const ObjectSpec& o) const {
  return key == o.key && global_shape == o.global_shape && global_offset == o.global_offset &&
         replica_id == o.replica_id && origin == o.origin && digest == o.digest;
}

Status ValidateTensorSpec(const TensorSpec& spec) {
  auto bad = [&](const std::string& what) {
    return Status::InvalidArgument("tensor '" + spec.key + "': " + what);
  };
  if (spec.key.empty()) return Status::InvalidArgument("tensor with an empty key");
  if (spec.prepend_axis_num < 0) {
    return bad("prepend_axis_num is " + std::to_string(spec.prepend_axis_num) + ", must be >= 0");
  }
  const size_t rank = spec.global_shape.size();
  if (spec.global_offset.size() != rank) {
    return bad("global_offset " + DimsToString(spec.global_offset) + " has " +
               std::to_string(spec.global_offset.size()) + " axes but global_shape " +
               DimsToString(spec.global_shape) + " has " + std::to_string(rank));
  }
  if (spec.local_shape.size() + spec.prepend_axis_num != rank) {
    return bad("local_shape " + DimsToString(spec.local_shape) + " plus prepend_axis_num " +
               std::to_string(spec.prepend_axis_num) + " does not match global_shape " +
               DimsToString(spec.global_shape));
  }
  int64_t volume;
  if (!CheckedVolume(spec.global_shape, &volume)) {
    return bad("global_shape " + DimsToString(spec.global_shape) +
               " has a negative extent or its volume overflows int64");
  }
  if (!CheckedVolume(spec.local_shape, &volume)) {
    return bad("local_shape " + DimsToString(spec.local_shape) +
               " has a negative extent or its volume overflows int64");
  }
  const Box box = spec.box();
  if (!IsWithin(box, spec.global_shape)) {
    return bad("chunk " + BoxToString(box) + " lies outside global_shape " +
               DimsToString(spec.global_shape));
  }
  if (spec.has_regular_grid()) {
    if (spec.axis_fragmentations.size() != rank) {
      return bad("axis_fragmentations " + DimsToString(spec.axis_fragmentations) + " has " +
                 std::to_string(spec.axis_fragmentations.size()) + " axes, global_shape has " +
                 std::to_string(rank));
    }
    for (size_t a = 0; a < rank; ++a) {
      const int64_t f = spec.axis_fragmentations[a];
      if (f < 1 || spec.global_shape[a] % f != 0 || spec.global_shape[a] / f != box.shape[a]) {
        return bad("axis_fragmentations[" + std::to_string(a) + "] = " + std::to_string(f) +
                   " does not split global extent " + std::to_string(spec.global_shape[a]) +
                   " into chunks of " + std::to_string(box.shape[a]));
      }
      if (box.shape[a] != 0 && box.offset[a] % box.shape[a] != 0) {
        return bad("global_offset[" + std::to_string(a) + "] = " + std::to_string(box.offset[a]) +
                   " is not a multiple of the chunk extent " + std::to_string(box.shape[a]));
      }
    }
  }
  if (spec.replica_id.empty()) return bad("replica_id is an empty tuple");
  return Status::OK();
}

Status ValidateObjectSpec(const ObjectSpec& spec) {
  auto bad = [&](const std::string& what) {
    return Status::InvalidArgument("object '" + spec.key + "': " + what);
  };
  if (spec.key.empty()) return Status::InvalidArgument("object with an empty key");
  if (spec.global_offset.size() != spec.global_shape.size()) {
    return bad("global_offset " + DimsToString(spec.global_offset) + " and global_shape " +
               DimsToString(spec.global_shape) + " differ in rank");
  }
  int64_t volume;
  if (!CheckedVolume(spec.global_shape, &volume)) {
    return bad("global_shape " + DimsToString(spec.global_shape) +
               " has a negative extent or its volume overflows int64");
  }
  for (size_t a = 0; a < spec.global_shape.size(); ++a) {
    if (spec.global_offset[a] < 0 || spec.global_offset[a] >= spec.global_shape[a]) {
      return bad("global_offset " + DimsToString(spec.global_offset) +
                 " lies outside global_shape " + DimsToString(spec.global_shape));
    }
  }
  if (spec.global_shape.empty() != spec.replica_id.empty()) {
    return bad(spec.replica_id.empty()
                   ? "replica_id is an empty tuple (only a rank-local object, of empty "
                     "global_shape, declares none)"
                   : "global_shape () declares no sharding (a rank-local object) but replica_id " +
                         ReplicaIdToString(spec.replica_id) + " is set");
  }
  return Status::OK();
}

uint64_t ContentDigest(const void* data, size_t size) {
  // FNV-1a over 8-byte words then Mix64; enough to tell different contents apart.
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t h = 0xCBF29CE484222325ull ^ size;
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001B3ull;
  }
  return Mix64(h);
}

std::string DigestHex(uint64_t digest) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(digest));
  return buf;
}

RankSignature SignatureOf(int64_t rank, const ShardedStateDict& state, bool with_digests) {
  RankSignature sig;
  sig.rank = rank;
  sig.tensors.reserve(state.tensors.size());
  for (const ShardedTensor& t : state.tensors) {
    sig.tensors.push_back(t.spec);
    if (with_digests) sig.tensors.back().digest = ContentDigest(t.data.data(), t.data.size());
  }
  sig.objects.reserve(state.objects.size());
  for (const ShardedObject& o : state.objects) {
    sig.objects.push_back(o.spec);
    if (with_digests) sig.objects.back().digest = ContentDigest(o.data.data(), o.data.size());
  }
  sig.common = state.common;
  return sig;
}

}  // namespace ckptspec
