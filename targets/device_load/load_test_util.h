// Helpers shared by the load-to-device tests (header-only; not part of the library): a TP2
// checkpoint of the small model, optionally with planted wrong values, and TP4 load requests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "model/content.h"
#include "targets/device_load/load_to_device.h"
#include "targets/device_load/tensor_check.h"
#include "targets/reference/reference_test_util.h"

namespace ckptspec {
namespace testing_util {

constexpr uint64_t kLoadSeed = 1234;

// A wrong value planted into a saved tensor: `bits` at global index `global_index` of `key`.
struct Plant {
  std::string key;
  int64_t global_index = -1;
  uint64_t bits = 0;
};

// The global index of local element `local` of a shard with spec `spec`.
inline int64_t GlobalIndexOf(const TensorSpec& spec, int64_t local) {
  const Box box = spec.box();
  Dims coord(box.rank());
  for (int a = box.rank() - 1; a >= 0; --a) {
    coord[a] = box.offset[a] + local % box.shape[a];
    local /= box.shape[a];
  }
  return LinearIndex(coord, spec.global_shape);
}

// The `nth` main replica with at least 8 elements, counting across ranks in order.
inline ShardedTensor* NthMainReplica(std::vector<ShardedStateDict>* dicts, int nth) {
  int seen = 0;
  for (ShardedStateDict& d : *dicts) {
    for (ShardedTensor& t : d.tensors) {
      if (!IsMainReplica(t.spec.replica_id) || Volume(t.spec.local_shape) < 8) continue;
      if (seen++ == nth) return &t;
    }
  }
  return nullptr;
}

// Overwrites element `local` of `t` with `bits`; returns where it went.
inline Plant PlantInto(ShardedTensor* t, int64_t local, uint64_t bits) {
  const int elem = DTypeSize(t->spec.dtype);
  std::memcpy(t->data.data() + local * elem, &bits, elem);  // little-endian: the low bytes
  return Plant{t->spec.key, GlobalIndexOf(t->spec, local), bits};
}

// The TP2 save (world 4: TP2 x DP2) of the small model under kLoadSeed. With `corrupt`, two
// wrong values that pass every checksum are planted first and listed in *plants: a NaN, and a
// finite value (the generator's pattern with bit 1 flipped).
inline void SaveTp2(MemHarness* h, int64_t iteration, bool corrupt, std::vector<Plant>* plants) {
  auto dicts = DictsOf(MakeSharding(4, 2, 1), kLoadSeed);
  if (corrupt) {
    ShardedTensor* nan_victim = NthMainReplica(&dicts, 1);
    ShardedTensor* value_victim = NthMainReplica(&dicts, 3);
    ASSERT_NE(nan_victim, nullptr);
    ASSERT_NE(value_victim, nullptr);
    ASSERT_NE(nan_victim->spec.key, value_victim->spec.key);
    const DType dtype = nan_victim->spec.dtype;
    plants->push_back(PlantInto(nan_victim, 5, EncodeFloat(dtype, NAN)));
    const uint64_t good =
        ContentElementBits(value_victim->spec.dtype, kLoadSeed, KeyHash(value_victim->spec.key),
                           static_cast<uint64_t>(GlobalIndexOf(value_victim->spec, 2)));
    plants->push_back(PlantInto(value_victim, 2, good ^ 0x2));
  }
  const Status s = h->engine->Save(iteration, dicts, SaveOptions());
  ASSERT_TRUE(s.ok()) << s.ToString();
}

inline LoadRequest Tp4Request(int64_t iteration) {
  LoadRequest request;
  request.iteration = iteration;
  request.templates = TemplatesOf(MakeSharding(4, 4, 1));
  return request;
}

}  // namespace testing_util
}  // namespace ckptspec
