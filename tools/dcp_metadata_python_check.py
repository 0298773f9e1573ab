#!/usr/bin/env python3
"""Checks a PyTorch DCP `.metadata` the way a careful user would in Python: the baseline of the
benchmark of reading and checking DCP metadata (its input: tools/write_dcp_metadata_bench_input.py).

  dcp_metadata_python_check.py FILE [--with-gc]

Run it with the torch environment of ci/setup:
  adapters/torch_dcp/run_with_torch_env.sh . @PYTHON@ tools/dcp_metadata_python_check.py FILE

torch and DCP's modules are imported first (not timed); then `pickle.load` of FILE (timed: load_s)
and the checks (timed: check_s), with Python's cyclic garbage collector off, as an efficient
reader of a large pickle turns it off (the object graph has no cycles to collect; with it on,
--with-gc, the collector's passes over the millions of objects being loaded make load_s several
times longer: 4.4 s against 14.6 s for the 200 MiB input on a 2-core machine). The checks:
  - for each tensor, every chunk has as many offsets and sizes as the tensor has dimensions and
    lies inside it;
  - the chunks' volumes add up to the tensor's (so, with no overlap, they cover it exactly);
  - no two chunks overlap: a sweep along dimension 0 over the chunks sorted by their offsets,
    comparing a chunk only with those still open at its start (not every pair);
  - every chunk, and every bytes item, has a storage_data entry (looked up by (fqn, offsets));
  - no two storage entries of one file overlap (sorted by byte offset, each non-empty one starts
    at or after the end of those before it), and none has a negative offset or length.
Prints {"load_s", "check_s", "tensors", "chunks", "storage_entries", "problems", "gc"} as JSON
on stdout and the first problems on stderr; exits 1 when there is any.
"""
import argparse
import gc
import heapq
import json
import math
import operator
import pickle
import sys
import time
from collections import defaultdict

import torch  # noqa: F401 (the pickle names torch.Size and dtypes)
import torch.distributed.checkpoint.filesystem  # noqa: F401 (_StorageInfo)
import torch.distributed.checkpoint.planner  # noqa: F401 (megatron-core's all_local_plans)
from torch.distributed.checkpoint.metadata import TensorStorageMetadata

SHOWN = 20


def check_chunks(fqn, item, storage_keys, problems):
    """The chunks of one tensor: returns how many it has."""
    size = tuple(item.size)
    ndim = len(size)
    total = 0
    boxes = []  # (offsets, ends) of the chunks that hold elements
    for chunk in item.chunks:
        offsets, sizes = chunk.offsets, chunk.sizes
        if (fqn, offsets) not in storage_keys:
            problems.append(f"{fqn}: the chunk at {list(offsets)} has no storage entry")
        if len(offsets) != ndim or len(sizes) != ndim:
            problems.append(f"{fqn}: the chunk at {list(offsets)} has {len(offsets)} offsets and "
                            f"{len(sizes)} sizes for {ndim} dimensions")
            continue
        ends = tuple(map(operator.add, offsets, sizes))
        if ndim and (min(offsets) < 0 or min(sizes) < 0 or any(map(operator.gt, ends, size))):
            problems.append(f"{fqn}: the chunk at {list(offsets)} of sizes {list(sizes)} is not "
                            f"inside {list(size)}")
            continue
        volume = math.prod(sizes)
        total += volume
        if volume:
            boxes.append((offsets, ends))
    if total != math.prod(size):
        problems.append(f"{fqn}: the chunks hold {total} elements, the tensor {math.prod(size)}")
    if ndim == 0:
        if len(boxes) > 1:
            problems.append(f"{fqn}: {len(boxes)} chunks of one scalar")
        return len(item.chunks)
    boxes.sort()
    open_boxes = []  # a heap of (end along dimension 0, position in boxes)
    for i, (offsets, ends) in enumerate(boxes):
        while open_boxes and open_boxes[0][0] <= offsets[0]:
            heapq.heappop(open_boxes)
        for _, j in open_boxes:  # all of them overlap this box along dimension 0
            other_offsets, other_ends = boxes[j]
            if all(map(operator.lt, offsets, other_ends)) and \
                    all(map(operator.lt, other_offsets, ends)):
                problems.append(f"{fqn}: the chunks at {list(other_offsets)} and "
                                f"{list(offsets)} overlap")
        heapq.heappush(open_boxes, (ends[0], i))
    return len(item.chunks)


def check_storage(storage_data, problems):
    """No two entries of one file overlap."""
    by_file = defaultdict(list)
    for key, info in storage_data.items():
        by_file[info.relative_path].append((info.offset, info.length, key))
    for path, entries in by_file.items():
        entries.sort(key=lambda e: (e[0], e[1]))
        end, end_key = 0, None
        for offset, length, key in entries:
            if offset < 0 or length < 0:
                problems.append(f"{path}: the entry of {key.fqn} has offset {offset} and length "
                                f"{length}")
                continue
            if length == 0:
                continue  # an empty range overlaps nothing
            if offset < end:
                problems.append(f"{path}: the entries of {end_key.fqn} and {key.fqn} overlap "
                                f"(bytes {offset}..{end - 1})")
            if offset + length > end:
                end, end_key = offset + length, key


def check(metadata):
    problems = []
    storage_keys = {(key.fqn, key.offset) for key in metadata.storage_data}
    tensors = chunks = 0
    for fqn, item in metadata.state_dict_metadata.items():
        if isinstance(item, TensorStorageMetadata):
            tensors += 1
            chunks += check_chunks(fqn, item, storage_keys, problems)
        elif (fqn, None) not in storage_keys:
            problems.append(f"{fqn}: the bytes item has no storage entry")
    check_storage(metadata.storage_data, problems)
    return tensors, chunks, problems


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("file", help="a DCP .metadata")
    p.add_argument("--with-gc", action="store_true",
                   help="leave Python's cyclic garbage collector on")
    args = p.parse_args()
    if not args.with_gc:
        gc.disable()
    start = time.perf_counter()
    with open(args.file, "rb") as f:
        metadata = pickle.load(f)
    loaded = time.perf_counter()
    tensors, chunks, problems = check(metadata)
    checked = time.perf_counter()
    print(json.dumps({"load_s": round(loaded - start, 4), "check_s": round(checked - loaded, 4),
                      "tensors": tensors, "chunks": chunks,
                      "storage_entries": len(metadata.storage_data),
                      "problems": len(problems), "gc": args.with_gc}))
    for problem in problems[:SHOWN]:
        print(problem, file=sys.stderr)
    if len(problems) > SHOWN:
        print(f"... and {len(problems) - SHOWN} more", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
