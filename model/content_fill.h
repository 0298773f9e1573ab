// Host helpers over the content generator: fill a shard's buffer with its expected content.
#pragma once

#include <cstdint>

#include "model/box.h"
#include "model/content.h"
#include "model/dtype.h"

namespace ckptspec {

// Writes the expected content of `local` (a box inside `global_shape`) into `out`, row-major over
// the local box, DTypeSize(dtype) little-endian bytes per element. Precondition:
// IsWithin(local, global_shape) and `out` holds Volume(local.shape) elements.
void FillContent(DType dtype, uint64_t seed, uint64_t key_hash, const Dims& global_shape,
                 const Box& local, uint8_t* out);

}  // namespace ckptspec
