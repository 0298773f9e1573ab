#!/usr/bin/env python3
"""Writes a large synthetic PyTorch DCP `.metadata` (no data files): the input of the benchmark
of reading and checking DCP metadata (tools/dcp_metadata_python_check.py is its Python baseline).

  write_dcp_metadata_bench_input.py OUT_FILE [--target-mib 200] [--experts 64]

Run it with the torch environment of ci/setup:
  adapters/torch_dcp/run_with_torch_env.sh . @PYTHON@ tools/write_dcp_metadata_bench_input.py \\
      /tmp/bench.metadata --target-mib 200

The torch Metadata object is built directly, as DCP's save would leave it for an MoE run saved
from 64 ranks: tensors `model.layers.{i}.mlp.experts.{j}.weight` (--experts per layer, as many
layers as the size needs), each bfloat16 of shape (2048, 1408) cut into an 8x8 grid of 64 chunks
of (256, 176); chunk c of every tensor is stored in `__{c}_0.distcp`, one after the other, each
entry as long as the chunk's bytes plus 1536 (about what torch.save adds to each chunk);
planner_data maps each key to its path ("model", rest), as DCP's flattening of {"model": ...}
does. It is pickled as FileSystemWriter does (pickle.dump, the default protocol). The number of
tensors comes from the pickled size of one layer and of four: bytes per tensor, then scaled to
--target-mib. Deterministic: the same arguments write the same bytes. Prints the tensors, chunks
and bytes written.
"""
import argparse
import pickle
import sys
from pathlib import Path

import torch
from torch.distributed.checkpoint.filesystem import _StorageInfo
from torch.distributed.checkpoint.metadata import (ChunkStorageMetadata, Metadata,
                                                   MetadataIndex, StorageMeta, TensorProperties,
                                                   TensorStorageMetadata)

SHAPE = (2048, 1408)
GRID = (8, 8)  # 64 chunks, one per rank
DTYPE = torch.bfloat16
TORCH_SAVE_OVERHEAD = 1536


def tensor_names(count, experts):
    for n in range(count):
        yield f"model.layers.{n // experts}.mlp.experts.{n % experts}.weight"


def build(count, experts):
    """The Metadata of `count` expert weights."""
    rows, cols = SHAPE[0] // GRID[0], SHAPE[1] // GRID[1]
    chunk_bytes = rows * cols * DTYPE.itemsize + TORCH_SAVE_OVERHEAD
    files = [f"__{rank}_0.distcp" for rank in range(GRID[0] * GRID[1])]
    file_end = [0] * len(files)
    state_dict_metadata, storage_data, planner_data = {}, {}, {}
    for fqn in tensor_names(count, experts):
        chunks = []
        for index in range(GRID[0] * GRID[1]):
            offsets = (index // GRID[1] * rows, index % GRID[1] * cols)
            chunks.append(ChunkStorageMetadata(offsets=torch.Size(offsets),
                                               sizes=torch.Size((rows, cols))))
            storage_data[MetadataIndex(fqn, offsets, index)] = _StorageInfo(
                relative_path=files[index], offset=file_end[index], length=chunk_bytes)
            file_end[index] += chunk_bytes
        state_dict_metadata[fqn] = TensorStorageMetadata(
            properties=TensorProperties(dtype=DTYPE), size=torch.Size(SHAPE), chunks=chunks)
        planner_data[fqn] = ("model", fqn.removeprefix("model."))
    return Metadata(state_dict_metadata=state_dict_metadata, planner_data=planner_data,
                    storage_data=storage_data,
                    storage_meta=StorageMeta(checkpoint_id=Path("bench"),
                                             save_id="ckptspec-bench"),
                    version="1.0.0")


def pickled_size(count, experts):
    return len(pickle.dumps(build(count, experts)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out_file")
    p.add_argument("--target-mib", type=float, default=200.0,
                   help="about how large the pickle is to be (default 200)")
    p.add_argument("--experts", type=int, default=64, help="experts per layer (default 64)")
    args = p.parse_args()
    small, large = args.experts, 4 * args.experts
    size_small, size_large = pickled_size(small, args.experts), pickled_size(large, args.experts)
    per_tensor = (size_large - size_small) / (large - small)
    target = args.target_mib * 2**20
    count = max(1, round(small + (target - size_small) / per_tensor))
    metadata = build(count, args.experts)
    with open(args.out_file, "wb") as f:
        pickle.dump(metadata, f)
        written = f.tell()
    chunks = sum(len(m.chunks) for m in metadata.state_dict_metadata.values())
    print(f"{args.out_file}: {count} tensors, {chunks} chunks, {len(metadata.storage_data)} "
          f"storage entries, {written} bytes ({written / 2**20:.1f} MiB; "
          f"{per_tensor:.0f} bytes a tensor)", file=sys.stderr)


if __name__ == "__main__":
    main()
