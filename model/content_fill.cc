#include "model/content_fill.h"

#include <cstring>

namespace ckptspec {

void FillContent(DType dtype, uint64_t seed, uint64_t key_hash, const Dims& global_shape,
                 const Box& local, uint8_t* out) {
  const int rank = local.rank();
  const int64_t count = Volume(local.shape);
  if (count == 0) return;
  const int elem = DTypeSize(dtype);
  if (rank == 0) {
    const uint64_t bits = ContentElementBits(dtype, seed, key_hash, 0);
    memcpy(out, &bits, elem);
    return;
  }
  // Walk the local box row by row: each innermost row is a contiguous run of global indices.
  Dims coord(rank, 0);
  const int64_t row = local.shape[rank - 1];
  for (int64_t done = 0; done < count; done += row) {
    Dims global_coord(rank);
    for (int a = 0; a < rank; ++a) global_coord[a] = local.offset[a] + coord[a];
    const uint64_t first = static_cast<uint64_t>(LinearIndex(global_coord, global_shape));
    for (int64_t j = 0; j < row; ++j) {
      const uint64_t bits = ContentElementBits(dtype, seed, key_hash, first + j);
      memcpy(out + (done + j) * elem, &bits, elem);  // little-endian host
    }
    for (int a = rank - 2; a >= 0; --a) {
      if (++coord[a] < local.shape[a]) break;
      coord[a] = 0;
    }
  }
}

}  // namespace ckptspec
