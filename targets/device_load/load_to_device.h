// Load a reference checkpoint straight into device memory (or, the same code path, into host
// memory), so that the state can be checked where training would hold it (its own tests do; no
// property of the catalog uses it yet).
//
// LoadToMemory runs ReferenceEngine::LoadToDestinations with one TensorBuffer per loaded tensor:
// each chunk is read once into host staging memory, its XXH3 checksum verified there, and every
// piece that intersects a requested shard is copied (one copy per contiguous run) into that
// shard's buffer at its offset -- cudaMemcpy for MemoryKind::kCuda, memcpy for kHost. Resharding,
// strict modes and allow_shape_mismatch behave exactly as in Engine::Load.
//
// Contracts:
//  - kCuda without CUDA at build time or without a usable device returns NotSupported ("no CUDA
//    device ...") before anything is read; kHost works everywhere.
//  - On success out->tensors holds one LoadedTensor per loaded template tensor, in rank order and,
//    within a rank, template order (entries dropped by a strict mode are absent), and out->result
//    is the engine's LoadResult with empty tensor data (objects and common state are loaded as
//    usual). On error *out is left unchanged.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "model/sharded.h"
#include "model/status.h"
#include "targets/device_load/tensor_buffer.h"
#include "targets/reference/reference_engine.h"

namespace ckptspec {

struct LoadedTensor {
  size_t rank = 0;
  TensorSpec spec;
  std::unique_ptr<TensorBuffer> buffer;  // the shard: spec.box() row-major
};

struct MemoryLoadResult {
  LoadResult result;
  std::vector<LoadedTensor> tensors;
};

Status LoadToMemory(ReferenceEngine& engine, LoadRequest request, MemoryKind kind,
                    MemoryLoadResult* out);

// LoadToMemory into CUDA device memory.
inline Status LoadToDevice(ReferenceEngine& engine, LoadRequest request, MemoryLoadResult* out) {
  return LoadToMemory(engine, std::move(request), MemoryKind::kCuda, out);
}

}  // namespace ckptspec
