// The per-rank sharded state dict and its structure signature (Megatron-core's data model:
// ShardedTensor, ShardedObject, common state; docs/SEMANTICS.md §1-§2).
//
// A TensorSpec / ObjectSpec is the structure of one entry without data; a signature is the list of
// specs of every rank (the "plan dump" third parties hand to ckptspec, JSON form in
// signature_json.h and docs/SIGNATURE.md). ShardedTensor / ShardedObject add the bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/box.h"
#include "model/dtype.h"
#include "model/shared_json.h"
#include "model/status.h"

namespace ckptspec {

// A replica id is a tuple (Megatron's convention is (pp-copy, tp, dp)); a single int is a 1-tuple.
using ReplicaId = Dims;

// The main-replica rule: the one copy that is written is the one whose replica id is all zeros.
bool IsMainReplica(const ReplicaId& replica_id);
std::string ReplicaIdToString(const ReplicaId& replica_id);

struct TensorSpec {
  std::string key;
  DType dtype = DType::kFloat32;
  Dims global_shape;
  Dims global_offset;  // in elements, one per global axis
  Dims local_shape;    // the data's shape: global rank minus prepend_axis_num axes
  // Fragmentation per global axis when the tensor lives on a regular grid; empty for an
  // irregular grid (arbitrary chunks, e.g. the distributed optimizer's flat buffers).
  Dims axis_fragmentations;
  int prepend_axis_num = 0;  // leading global axes (PP layers, experts) of local extent 1
  ReplicaId replica_id{0};
  // Optional identity of the state this entry holds (e.g. "vision/layer 3/fc1.weight/exp_avg").
  // Entries under one key must share it (P5); empty means unknown.
  std::string origin;
  // Optional 64-bit digest of this chunk's content; replicas of one chunk must agree (P5).
  std::optional<uint64_t> digest;

  // The chunk's box in the global tensor: offset = global_offset, shape = (1,)*prepend + local.
  Box box() const;
  bool has_regular_grid() const { return !axis_fragmentations.empty(); }
  bool operator==(const TensorSpec& other) const;
};

// An object is either SHARDED (Megatron's ShardedObject: a global shape, this shard's offset in it
// and a replica id; one main replica per offset is written) or RANK-LOCAL: global_shape,
// global_offset and replica_id all empty, no sharding declared (PyTorch DCP's plain values, a
// per-rank RNG field). Every rank may hold a rank-local object under the same key with its own
// value: a checkpointer keeps each rank's value (never one per name) and a load returns to a rank
// the value that the rank of the same global rank saved (docs/SEMANTICS.md §9).
struct ObjectSpec {
  std::string key;
  Dims global_shape{1};
  Dims global_offset{0};
  ReplicaId replica_id{0};
  std::string origin;
  std::optional<uint64_t> digest;

  // Megatron's storage key: "{key}/shard_{offsets joined by '.'}_{shape joined by '.'}"; the key
  // alone for a rank-local object (every rank's is the same: see StoredObjectKey).
  std::string UniqueKey() const;
  bool operator==(const ObjectSpec& other) const;
};

// No sharding declared: global_shape, global_offset and replica_id are all empty.
bool IsRankLocal(const ObjectSpec& spec);
// The rank-local object spec of `key` (origin and digest unset).
ObjectSpec RankLocalObjectSpec(const std::string& key);
// Where a checkpointer keeps an object that global rank `rank` saves or requests: UniqueKey() for
// a sharded object (one per shard, whichever rank writes it); "{key}/rank_{rank}" for a rank-local
// one (one per rank). The two never collide: a sharded unique key ends in "/shard_...".
std::string StoredObjectKey(const ObjectSpec& spec, int64_t rank);

// Megatron's validate_metadata_integrity on one tensor spec: ranks agree (len(global_offset) ==
// len(global_shape) == len(local_shape) + prepend_axis_num), non-negative extents, the chunk inside
// the global shape without overflow, and on a regular grid each non-prepended offset a multiple of
// the local extent. The error names the key and the offending field.
Status ValidateTensorSpec(const TensorSpec& spec);
// Ranks of shape and offset agree, the offsets lie inside the shape, and the replica id is empty
// exactly when the shape is (a rank-local object: a sharded one needs a replica id, a 0-d shape
// declares no sharding); named errors.
Status ValidateObjectSpec(const ObjectSpec& spec);

struct ShardedTensor {
  TensorSpec spec;
  std::vector<uint8_t> data;  // row-major over local_shape, DTypeSize(spec.dtype) bytes each
};

struct ShardedObject {
  ObjectSpec spec;
  std::string data;  // opaque bytes
};

// Everything one rank hands to (or requests from) a checkpointer.
struct ShardedStateDict {
  std::vector<ShardedTensor> tensors;
  std::vector<ShardedObject> objects;
  SharedJson common;  // an object; should be identical on every rank (P11)
};

// The structure of one rank's state dict: no tensor or object data.
struct RankSignature {
  int64_t rank = 0;
  std::vector<TensorSpec> tensors;
  std::vector<ObjectSpec> objects;
  // The rank's common state, or null when the dump does not include it.
  SharedJson common = nullptr;
};

// The structure of a whole save: one RankSignature per rank, in rank order.
struct GlobalSignature {
  std::vector<RankSignature> ranks;
};

// The signature of a state dict. With `with_digests`, each entry's digest is set from its data.
RankSignature SignatureOf(int64_t rank, const ShardedStateDict& state, bool with_digests = false);

// 64-bit digest of a byte string (content identity for P5; not a checksum format).
uint64_t ContentDigest(const void* data, size_t size);
// A 64-bit digest or checksum as the project writes it (signatures, indexes, messages, reports):
// 16 lowercase hex digits.
std::string DigestHex(uint64_t digest);

}  // namespace ckptspec
