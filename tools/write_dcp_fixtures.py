#!/usr/bin/env python3
"""Writes small real PyTorch DCP and Megatron-core torch_dist checkpoints: the fixtures of
`ckptspec verify` and `ckptspec diff` (corpus/dcp/, described in corpus/dcp/README.md).

  write_dcp_fixtures.py OUT_DIR [--only NAME]...

Run it with the torch environment of ci/setup (torch 2.14.1, CPU):
  adapters/torch_dcp/run_with_torch_env.sh . @PYTHON@ tools/write_dcp_fixtures.py corpus/dcp

Each fixture is a directory OUT_DIR/NAME written by the real torch.distributed.checkpoint.save
(one process, or 2 or 4 processes over gloo on 127.0.0.1 with DTensors); the corrupt ones are
copies of dcp_two_ranks with one defect, their .metadata pickled from a modified torch Metadata
object; torch_dist_mcore and torch_dist_mcore_0_19 are written by megatron-core's
dist_checkpointing.save (0.16.1, which writes the common state to common.pt, and 0.19.2, which
saves it as a ShardedObject), each run through adapters/megatron_core/run_with_mcore_env.sh and
skipped with a SKIPPED: line when that environment is missing. OUT_DIR/MANIFEST.json describes
every fixture (a run with --only replaces only the entries of the fixtures it writes). After
writing, the good fixtures are loaded back with dcp.load and their values compared with the ones
written; dcp_two_ranks, dcp_four_ranks_resharded and dcp_four_ranks_changed are compared with
each other.

Deterministic: the values come from fixed seeds; every process saves with the fixture's directory
name (relative to OUT_DIR, the working directory) as its checkpoint_id, and DCP's save_id (a
random uuid4 by default) is fixed to "ckptspec-fixture-NAME", so a rerun writes the same bytes
(but for the order of storage_data in megatron-core's .metadata: its writer's threads finish in
either order).
"""
import argparse
import datetime
import json
import logging
import os
import pickle
import platform
import re
import shutil
import socket
import subprocess
import sys
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")
logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)  # "No CUDA runtime"

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.distributed.checkpoint as dcp  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch.distributed.checkpoint import filesystem as dcp_filesystem  # noqa: E402
from torch.distributed.checkpoint.metadata import (BytesStorageMetadata,  # noqa: E402
                                                   MetadataIndex, TensorStorageMetadata)

REPO = Path(__file__).resolve().parents[1]
# The megatron-core version of each mcore fixture: 0.16.1 writes the common state to common.pt,
# 0.19.2 as the ShardedObject "common_state" (a bytes item of the DCP checkpoint).
MCORE_VERSIONS = {"torch_dist_mcore": "0.16.1", "torch_dist_mcore_0_19": "0.19.2"}
SEED = 20240611

# ---------------------------------------------------------------------------------------------
# Values


def single_state():
    """dcp_single's state dict: a tensor of each dtype, a 0-d, a 3-D and an empty tensor, and
    values DCP stores as bytes items (torch.save of the value)."""
    g = torch.Generator().manual_seed(SEED)
    return {
        "f32_2d": torch.randn(4, 6, generator=g),
        "bf16": torch.randn(8, generator=g).to(torch.bfloat16),
        "f16": torch.randn(3, 5, generator=g).to(torch.float16),
        "f8_e4m3": (torch.randn(16, generator=g) * 4).to(torch.float8_e4m3fn),
        "f8_e5m2": (torch.randn(16, generator=g) * 4).to(torch.float8_e5m2),
        "i64": torch.arange(-3, 5, dtype=torch.int64) * (1 << 40),
        "i32": torch.arange(-6, 6, dtype=torch.int32).reshape(3, 4) * 1000,
        "u8": torch.arange(0, 250, 25, dtype=torch.uint8),
        "bool": torch.tensor([True, False, False, True, True, False, True]),
        "f64": torch.randn(5, generator=g, dtype=torch.float64),
        "scalar": torch.tensor(3.25),
        "t3d": torch.arange(24, dtype=torch.float32).reshape(2, 3, 4) / 8,
        "empty": torch.empty(0, 4),
        "step": 1234,
        "nested": {"schedule": [1, 2, 3], "inner": {"lr": 0.5}},
        "name": "ckptspec dcp_single fixture",
    }


def global_tensors():
    """The global tensors that dcp_two_ranks and dcp_four_ranks_resharded save as DTensors."""
    g = torch.Generator().manual_seed(SEED + 1)
    return {
        "model.fc1.weight": torch.randn(8, 8, generator=g),
        "model.fc2.weight": torch.randn(4, 10, generator=g).to(torch.bfloat16),
        "model.norm.weight": torch.randn(6, generator=g),
    }


# dcp_two_ranks' plain (not DTensor) tensor: each rank holds its own value, and DCP keeps one copy
# (dedup_save_plans). The four-rank fixtures save the copy dcp_two_ranks keeps on every rank
# (checked after dcp_two_ranks is written: PER_RANK_KEPT_BY_TWO_RANKS).
PER_RANK_KEY = "per_rank"
PER_RANK_KEPT_BY_TWO_RANKS = 1


def per_rank_value(rank):
    return torch.arange(3, dtype=torch.int64) + 100 * rank


BYTES_KEY = "step"
BYTES_VALUE = 42

# The element dcp_four_ranks_changed changes (of a tensor of global_tensors()).
CHANGED_KEY = "model.fc1.weight"
CHANGED_INDEX = (5, 6)
CHANGED_NEW_VALUE = 2.5

# The placements: a 1-D mesh of 2, and a 2x2 mesh of 4.
TWO_RANK_PLACEMENTS = {"model.fc1.weight": "Shard(0)", "model.fc2.weight": "Shard(1)",
                       "model.norm.weight": "Replicate()"}
FOUR_RANK_PLACEMENTS = {"model.fc1.weight": "(Shard(1), Shard(0))",
                        "model.fc2.weight": "(Shard(0), Replicate())",
                        "model.norm.weight": "(Shard(0), Shard(0))"}


def placements(text):
    """The DTensor placements a text above names."""
    from torch.distributed.tensor import Replicate, Shard
    return tuple(Replicate() if p == "Replicate()" else Shard(int(p[6:-1]))
                 for p in re.findall(r"Shard\(\d\)|Replicate\(\)", text))


def changed_tensors():
    tensors = global_tensors()
    tensors[CHANGED_KEY][CHANGED_INDEX] = CHANGED_NEW_VALUE
    return tensors


# ---------------------------------------------------------------------------------------------
# Processes


def fix_save_id(name):
    """DCP's save_id is a fresh uuid4 per save; the fixtures' is fixed (see the module doc)."""
    dcp_filesystem._generate_uuid = lambda: f"ckptspec-fixture-{name}"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_entry(rank, fn, world, port, args):
    warnings.filterwarnings("ignore")
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    try:
        fn(rank, world, *args)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def spawn(fn, world, *args):
    """fn(rank, world, *args) in `world` processes with a gloo default process group."""
    mp.spawn(_rank_entry, args=(fn, world, free_port(), args), nprocs=world, join=True)


def save_dtensors(rank, world, name, mesh_shape, placement_texts, tensors, per_rank):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import distribute_tensor
    fix_save_id(name)
    mesh = init_device_mesh("cpu", mesh_shape)
    state = {key: distribute_tensor(value, mesh, placements(placement_texts[key]))
             for key, value in tensors.items()}
    state[PER_RANK_KEY] = per_rank(rank)
    state[BYTES_KEY] = BYTES_VALUE
    dcp.save(state, checkpoint_id=name)


# ---------------------------------------------------------------------------------------------
# The good fixtures


def write_dcp_single(name):
    fix_save_id(name)
    dcp.save(single_state(), checkpoint_id=name)  # no process group: DCP's single-process save
    return {"made": "torch.distributed.checkpoint.save in one process without a process group "
                    "of a state dict with a tensor of each dtype (float32, bfloat16, float16, "
                    "float8_e4m3fn, float8_e5m2, int64, int32, uint8, bool, float64), a 0-d, a "
                    "3-D and an empty (0, 4) tensor, and an int, a nested dict with a list and "
                    "a string, which DCP flattens to dotted keys and stores as bytes items."}


def write_dcp_two_ranks(name):
    spawn(save_dtensors, 2, name, (2,), TWO_RANK_PLACEMENTS, global_tensors(), per_rank_value)
    kept = load_plain(name, {PER_RANK_KEY: torch.zeros(3, dtype=torch.int64)})[PER_RANK_KEY]
    if not torch.equal(kept, per_rank_value(PER_RANK_KEPT_BY_TWO_RANKS)):
        raise SystemExit(f"{name}: DCP kept {kept.tolist()} of {PER_RANK_KEY}, not rank "
                         f"{PER_RANK_KEPT_BY_TWO_RANKS}'s value: update PER_RANK_KEPT_BY_TWO_RANKS")
    return {"made": "torch.distributed.checkpoint.save from 2 processes (gloo, a 1-D device mesh "
                    "of 2) of DTensors made with distribute_tensor, a plain tensor whose value "
                    "differs per rank and an int (a bytes item).",
            "placements": TWO_RANK_PLACEMENTS,
            "per_rank": f"{PER_RANK_KEY} is arange(3) + 100 * rank on each rank; DCP keeps one "
                        f"copy: rank {PER_RANK_KEPT_BY_TWO_RANKS}'s, "
                        f"{per_rank_value(PER_RANK_KEPT_BY_TWO_RANKS).tolist()}"}


def kept_per_rank(rank):
    return per_rank_value(PER_RANK_KEPT_BY_TWO_RANKS)


def write_dcp_four_ranks_resharded(name):
    spawn(save_dtensors, 4, name, (2, 2), FOUR_RANK_PLACEMENTS, global_tensors(), kept_per_rank)
    return {"made": "torch.distributed.checkpoint.save from 4 processes (gloo, a 2x2 device "
                    "mesh) of the same global tensors as dcp_two_ranks with other placements; "
                    f"{PER_RANK_KEY} holds on every rank the copy dcp_two_ranks kept, so every "
                    "key equals dcp_two_ranks'.",
            "placements": FOUR_RANK_PLACEMENTS,
            "equal_to": "dcp_two_ranks"}


def write_dcp_four_ranks_changed(name):
    spawn(save_dtensors, 4, name, (2, 2), FOUR_RANK_PLACEMENTS, changed_tensors(), kept_per_rank)
    old = global_tensors()[CHANGED_KEY][CHANGED_INDEX].item()
    return {"made": "as dcp_four_ranks_resharded with exactly one element changed.",
            "placements": FOUR_RANK_PLACEMENTS,
            "changed": {"key": CHANGED_KEY, "index": list(CHANGED_INDEX), "old": old,
                        "new": CHANGED_NEW_VALUE,
                        "compared_with": ["dcp_two_ranks", "dcp_four_ranks_resharded"]}}


# ---------------------------------------------------------------------------------------------
# The corrupt copies of dcp_two_ranks


def copy_of_two_ranks(name):
    source = Path("dcp_two_ranks")
    if not (source / ".metadata").exists():
        record("dcp_two_ranks", write_dcp_two_ranks("dcp_two_ranks"))
    shutil.copytree(source, name)
    with open(Path(name) / ".metadata", "rb") as f:
        return pickle.load(f)


def write_metadata(name, metadata):
    with open(Path(name) / ".metadata", "wb") as f:
        pickle.dump(metadata, f)  # as FileSystemWriter.finish does


def chunk_of(metadata, fqn, offsets):
    chunks = metadata.state_dict_metadata[fqn].chunks
    return next(c for c in chunks if tuple(c.offsets) == tuple(offsets))


def storage_key(metadata, fqn, offsets):
    """The storage_data key of a chunk (MetadataIndex compares fqn and offset only)."""
    return next(k for k in metadata.storage_data
                if k.fqn == fqn and k.offset is not None and tuple(k.offset) == tuple(offsets))


def storage_text(key, info):
    return {"key": key.fqn, "offsets": None if key.offset is None else list(key.offset),
            "file": info.relative_path, "offset": info.offset, "length": info.length}


COPIED = "a copy of dcp_two_ranks"


def rewritten(change):
    return (f"{COPIED} whose .metadata is pickle.dump of its torch Metadata object after "
            f"{change}.")


def entries_in(metadata, file, beyond=0):
    """The storage entries of `file` that end past byte `beyond`, in file order."""
    return [storage_text(k, v) for k, v in sorted(metadata.storage_data.items(),
                                                   key=lambda kv: kv[1].offset)
            if v.relative_path == file and v.offset + v.length > beyond]


def corrupt_missing_file(name):
    md = copy_of_two_ranks(name)
    (Path(name) / "__1_0.distcp").unlink()
    return {"made": f"{COPIED} with __1_0.distcp deleted.",
            "defect": "the data file __1_0.distcp (rank 1's chunks) is removed; .metadata still "
                      "points into it.", "file": "__1_0.distcp",
            "entries_affected": entries_in(md, "__1_0.distcp")}


def corrupt_truncated_file(name):
    md = copy_of_two_ranks(name)
    path = Path(name) / "__1_0.distcp"
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate(size // 2)
    return {"made": f"{COPIED} with __1_0.distcp truncated (os truncate) to half its size.",
            "defect": f"__1_0.distcp is truncated from {size} to {size // 2} bytes; the "
                      "storage entries listed end past the new end of the file.",
            "file": "__1_0.distcp", "size_before": size, "size_after": size // 2,
            "entries_affected": entries_in(md, "__1_0.distcp", beyond=size // 2)}


def corrupt_overlap(name):
    md = copy_of_two_ranks(name)
    fqn, old, new = "model.fc1.weight", (4, 0), (2, 0)
    chunk = chunk_of(md, fqn, old)
    key = storage_key(md, fqn, old)
    chunk.offsets = torch.Size(new)
    md.storage_data[MetadataIndex(fqn, new, key.index)] = md.storage_data.pop(key)
    write_metadata(name, md)
    return {"made": rewritten("moving one chunk of model.fc1.weight (and its storage key)"),
            "defect": f"the chunk of {fqn} at offsets {list(old)} (sizes "
                      f"{list(chunk.sizes)}) is moved to offsets {list(new)}, its storage entry "
                      "with it: it overlaps the chunk at [0, 0] on rows 2..3, and rows 6..7 "
                      "are no longer covered.",
            "key": fqn, "offsets_before": list(old), "offsets_after": list(new),
            "sizes": list(chunk.sizes), "overlaps_with": {"offsets": [0, 0], "sizes": [4, 8]},
            "overlap_box": {"offsets": [2, 0], "sizes": [2, 8]},
            "uncovered_box": {"offsets": [6, 0], "sizes": [2, 8]}}


def corrupt_hole(name):
    md = copy_of_two_ranks(name)
    fqn, offsets = "model.fc1.weight", (4, 0)
    chunk = chunk_of(md, fqn, offsets)
    md.state_dict_metadata[fqn].chunks.remove(chunk)
    info = md.storage_data.pop(storage_key(md, fqn, offsets))
    write_metadata(name, md)
    return {"made": rewritten("removing one chunk of model.fc1.weight and its storage entry"),
            "defect": f"the chunk of {fqn} at offsets {list(offsets)} and its storage entry "
                      "are removed: rows 4..7 are not covered (the bytes stay, unreferenced, "
                      f"in {info.relative_path}).",
            "key": fqn, "removed_chunk": {"offsets": list(offsets), "sizes": list(chunk.sizes)},
            "file": info.relative_path}


def corrupt_unknown_global(name):
    md = copy_of_two_ranks(name)
    md.ckptspec_note = argparse.Namespace(note="not a DCP class")
    write_metadata(name, md)
    return {"made": rewritten("setting an extra attribute to an argparse.Namespace"),
            "defect": "the Metadata object carries an extra attribute ckptspec_note holding an "
                      "argparse.Namespace: the pickle names the global argparse.Namespace, "
                      "outside DCP's classes; a safe reader refuses it (torch's own load "
                      "unpickles it).",
            "global": "argparse Namespace", "attribute": "ckptspec_note"}


def corrupt_storage_overlap(name):
    md = copy_of_two_ranks(name)
    file = "__0_0.distcp"
    in_file = sorted(((k, v) for k, v in md.storage_data.items() if v.relative_path == file),
                     key=lambda kv: kv[1].offset)
    (first_key, first), (second_key, second) = in_file[0], in_file[1]
    before = second.offset
    second.offset = first.offset + first.length // 2
    write_metadata(name, md)
    return {"made": rewritten("moving one storage entry's byte offset"),
            "defect": f"in {file}, the storage entry of {second_key.fqn} is moved from byte "
                      f"{before} to byte {second.offset}, into the middle of the entry of "
                      f"{first_key.fqn} (bytes {first.offset}..{first.offset + first.length - 1})"
                      ": the two byte ranges overlap.",
            "file": file, "moved": storage_text(second_key, second), "offset_before": before,
            "overlaps_with": storage_text(first_key, first)}


def corrupt_missing_storage(name):
    md = copy_of_two_ranks(name)
    fqn, offsets = "model.fc2.weight", (0, 5)
    key = storage_key(md, fqn, offsets)
    info = md.storage_data.pop(key)
    write_metadata(name, md)
    return {"made": rewritten("removing one storage entry"),
            "defect": f"the storage entry of the chunk of {fqn} at offsets {list(offsets)} is "
                      "removed; the chunk stays in state_dict_metadata.",
            "key": fqn, "offsets": list(offsets),
            "removed_entry": storage_text(key, info)}


# ---------------------------------------------------------------------------------------------
# Megatron-core


MCORE_COMMON_ITEM = "common_state/shard_0_1"
MCORE_COMMON = {"iteration": 100,
                "args": {"hidden_size": 6, "schedule": {"warmup": 10, "milestones": [50, 90]}}}


def mcore_tensors():
    g = torch.Generator().manual_seed(SEED + 2)
    return {"decoder.linear.weight": torch.randn(8, 6, generator=g),
            "decoder.linear.bias": torch.randn(6, generator=g)}


def mcore_object(rank):
    return {"seed": 1234 + rank}


def save_mcore(rank, world, name):
    sys.path.insert(0, str(REPO / "adapters" / "megatron_core"))
    from ckptspec_megatron_core_adapter import patch_cuda_for_cpu
    patch_cuda_for_cpu()
    from megatron.core import dist_checkpointing
    from megatron.core.dist_checkpointing.mapping import ShardedObject, ShardedTensor
    fix_save_id(name)
    tensors = mcore_tensors()
    weight, bias = tensors["decoder.linear.weight"], tensors["decoder.linear.bias"]
    rows = 8 // world
    state = {
        # TP-sharded along dim 0 (make_tp_sharded_tensor_for_checkpoint's replica (0, 0, 0)).
        "decoder.linear.weight": ShardedTensor.from_rank_offsets(
            "decoder.linear.weight", weight[rank * rows:(rank + 1) * rows].clone(),
            (0, rank, world), replica_id=(0, 0, 0)),
        # Replicated on both ranks (rank 1 holds a non-main replica).
        "decoder.linear.bias": ShardedTensor.from_rank_offsets(
            "decoder.linear.bias", bias.clone(), replica_id=(0, rank, 0)),
        "rng_state": ShardedObject("rng_state", mcore_object(rank), (world,), (rank,),
                                   replica_id=0),
        # The common state: everything that is not sharded.
        **MCORE_COMMON,
    }
    if rank == 0:
        os.makedirs(name)
    dist.barrier()
    dist_checkpointing.save(state, name)


def write_torch_dist_mcore(name):
    """Runs this script again under run_with_mcore_env.sh; that run writes the fixture and its
    MANIFEST.json entry."""
    command = ["sh", str(REPO / "adapters" / "megatron_core" / "run_with_mcore_env.sh"),
               str(REPO), "--mcore", MCORE_VERSIONS[name], "@PYTHON@",
               str(Path(__file__).resolve()), ".", "--only", name, "--in-mcore-env"]
    result = subprocess.run(command)
    if result.returncode == 77:
        print(f"SKIPPED: {name}: megatron-core {MCORE_VERSIONS[name]} is not installed here",
              file=sys.stderr)
        return None
    if result.returncode != 0:
        raise SystemExit(f"{name}: the megatron-core run failed ({result.returncode})")
    return None  # the entry is recorded by that run


def write_torch_dist_mcore_in_env(name):
    import megatron.core
    version = megatron.core.__version__
    spawn(save_mcore, 2, name)
    return {"made": f"megatron-core {version} dist_checkpointing.save (torch_dist, its default "
                    "strategy, with adapters/megatron_core's patch_cuda_for_cpu) from 2 "
                    "processes (gloo) of a TP-sharded ShardedTensor, a replicated ShardedTensor "
                    "(replica_id (0, rank, 0)), a ShardedObject per rank and a common state.",
            "megatron_core": version,
            "sharded": {"decoder.linear.weight": "float32 (8, 6), rank r holds rows 4r..4r+3",
                        "decoder.linear.bias": "float32 (6,), replicated, rank 0's copy saved",
                        "rng_state": "ShardedObject (2,) {'seed': 1234 + rank}, stored as the "
                                     "bytes items rng_state/shard_0_2 and rng_state/shard_1_2 "
                                     "(torch.save of [{'seed': 1234 + rank}])"},
            "common": MCORE_COMMON,
            "common_in": "common.pt (torch.save of the dict)" if Path(name, "common.pt").exists()
            else f"the bytes item {MCORE_COMMON_ITEM} (torch.save of [the dict])"}


# ---------------------------------------------------------------------------------------------
# Loading back


def load_plain(name, templates):
    """dcp.load in this process (no process group) into plain tensor templates."""
    dcp.load(templates, checkpoint_id=name)
    return templates


def same_tensor(a, b):
    """Equal dtype, shape and bytes (float8 has no ==; NaN would not equal itself)."""
    return (a.dtype == b.dtype and a.shape == b.shape and
            torch.equal(a.contiguous().reshape(-1).view(torch.uint8),
                        b.contiguous().reshape(-1).view(torch.uint8)))


def templates_like(tensors):
    return {k: torch.zeros_like(v) for k, v in tensors.items()}


def check_single(name):
    expected = single_state()
    state = {k: torch.zeros_like(v) if isinstance(v, torch.Tensor) else None
             for k, v in expected.items()}
    state["nested"] = {"schedule": None, "inner": {"lr": None}}
    dcp.load(state, checkpoint_id=name)
    for key, value in expected.items():
        got = state[key]
        if not (same_tensor(got, value) if isinstance(value, torch.Tensor) else got == value):
            raise SystemExit(f"{name}: {key} loads as {got!r}, not {value!r}")


def load_pair_state(name):
    tensors = templates_like(global_tensors())
    tensors[PER_RANK_KEY] = torch.zeros(3, dtype=torch.int64)
    tensors[BYTES_KEY] = None
    return load_plain(name, tensors)


def differences(a, b):
    """(key, index) of every element that differs between two loaded states."""
    out = []
    for key in a:
        if isinstance(a[key], torch.Tensor):
            for index in (a[key] != b[key]).nonzero().tolist():
                out.append((key, tuple(index)))
        elif a[key] != b[key]:
            out.append((key, None))
    return out


def check_pairs(written):
    names = ["dcp_two_ranks", "dcp_four_ranks_resharded", "dcp_four_ranks_changed"]
    if not any(n in written for n in names) or not all(Path(n).exists() for n in names):
        return
    two, four, changed = (load_pair_state(n) for n in names)
    for key, value in global_tensors().items():
        if not torch.equal(two[key], value):
            raise SystemExit(f"dcp_two_ranks: {key} does not load as written")
    if two[PER_RANK_KEY].tolist() != per_rank_value(PER_RANK_KEPT_BY_TWO_RANKS).tolist() or \
            two[BYTES_KEY] != BYTES_VALUE:
        raise SystemExit("dcp_two_ranks: per_rank or step does not load as written")
    if differences(two, four):
        raise SystemExit(f"dcp_two_ranks and dcp_four_ranks_resharded differ: "
                         f"{differences(two, four)}")
    for other in (two, four):
        if differences(other, changed) != [(CHANGED_KEY, CHANGED_INDEX)]:
            raise SystemExit(f"dcp_four_ranks_changed differs in {differences(other, changed)}, "
                             f"not only in {CHANGED_KEY}{list(CHANGED_INDEX)}")
    print("checked: dcp_two_ranks == dcp_four_ranks_resharded; dcp_four_ranks_changed differs "
          f"only in {CHANGED_KEY}{list(CHANGED_INDEX)}")


def check_mcore(name):
    tensors = mcore_tensors()
    objects = {f"rng_state/shard_{r}_2": [mcore_object(r)] for r in range(2)}
    state = load_plain(name, {**templates_like(tensors), **{k: None for k in objects}})
    for key, value in {**tensors, **objects}.items():
        if not (same_tensor(state[key], value) if isinstance(value, torch.Tensor)
                else state[key] == value):
            raise SystemExit(f"{name}: {key} loads as {state[key]!r}, not {value!r}")
    if Path(name, "common.pt").exists():  # 0.16.1
        common = torch.load(Path(name) / "common.pt")
    else:  # 0.19: the ShardedObject common_state, of global shape (1,), a bytes item
        common = load_plain(name, {MCORE_COMMON_ITEM: None})[MCORE_COMMON_ITEM][0]
    if common != MCORE_COMMON:
        raise SystemExit(f"{name}: the common state is {common!r}, not {MCORE_COMMON!r}")


def check_written(written):
    if "dcp_single" in written:
        check_single("dcp_single")
        print("checked: dcp_single loads back as written")
    check_pairs(written)
    for name in MCORE_VERSIONS:
        if name in written and Path(name, ".metadata").exists():
            check_mcore(name)
            print(f"checked: {name} loads back as written")


def torch_load_outcome(name):
    """What torch's own dcp.load of a corrupt copy does, in words."""
    try:
        state = load_pair_state(name)
    except (Exception, dcp.api.CheckpointException) as e:  # the latter is a BaseException
        return f"dcp.load raises {type(e).__name__}"
    expected = {**global_tensors(), PER_RANK_KEY: per_rank_value(PER_RANK_KEPT_BY_TWO_RANKS),
                BYTES_KEY: BYTES_VALUE}
    wrong = differences(expected, state)
    if not wrong:
        return "dcp.load returns the values dcp_two_ranks holds"
    keys = sorted({k for k, _ in wrong})
    return (f"dcp.load returns without an error, with {len(wrong)} wrong elements "
            f"(of {', '.join(keys)}) in zero-filled templates")


# ---------------------------------------------------------------------------------------------
# The manifest


def describe(name):
    """What .metadata of a written fixture holds: per key its dtype, shape and chunk count, or
    "bytes"; and the files with their sizes."""
    directory = Path(name)
    entry = {"files": {p.name: p.stat().st_size for p in sorted(directory.iterdir())}}
    if not (directory / ".metadata").exists():
        return entry
    try:
        with open(directory / ".metadata", "rb") as f:
            md = pickle.load(f)
    except Exception:
        return entry
    keys = {}
    for fqn, item in md.state_dict_metadata.items():
        if isinstance(item, TensorStorageMetadata):
            keys[fqn] = {"dtype": str(item.properties.dtype).removeprefix("torch."),
                         "shape": list(item.size), "chunks": len(item.chunks)}
        elif isinstance(item, BytesStorageMetadata):
            keys[fqn] = "bytes"
    entry["keys"] = keys
    return entry


def readable_json(value, indent="", lead=0):
    """JSON with one member a line, but a list or object that fits the line (100 columns, `lead`
    of them taken by its key) on one line."""
    flat = json.dumps(value)
    if len(indent) + lead + len(flat) <= 100 or not isinstance(value, (dict, list)) or not value:
        return flat
    inner = indent + "  "
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {readable_json(v, inner, len(json.dumps(k)) + 3)}"
                 for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    items = [f"{inner}{readable_json(v, inner, 1)}" for v in value]
    return "[\n" + ",\n".join(items) + f"\n{indent}]"


def record(name, entry):
    path = Path("MANIFEST.json")
    manifest = json.loads(path.read_text()) if path.exists() else {}
    manifest.setdefault("generator", "tools/write_dcp_fixtures.py")
    fixtures = manifest.setdefault("fixtures", {})
    fixtures[name] = {"torch": torch.__version__, "python": platform.python_version(),
                      **entry, **describe(name)}
    manifest["fixtures"] = {n: fixtures[n] for n in sorted(fixtures, key=order)}
    path.write_text(readable_json(manifest) + "\n")


FIXTURES = {
    "dcp_single": write_dcp_single,
    "dcp_two_ranks": write_dcp_two_ranks,
    "dcp_four_ranks_resharded": write_dcp_four_ranks_resharded,
    "dcp_four_ranks_changed": write_dcp_four_ranks_changed,
    "corrupt_missing_file": corrupt_missing_file,
    "corrupt_truncated_file": corrupt_truncated_file,
    "corrupt_overlap": corrupt_overlap,
    "corrupt_hole": corrupt_hole,
    "corrupt_unknown_global": corrupt_unknown_global,
    "corrupt_storage_overlap": corrupt_storage_overlap,
    "corrupt_missing_storage": corrupt_missing_storage,
    "torch_dist_mcore": write_torch_dist_mcore,
    "torch_dist_mcore_0_19": write_torch_dist_mcore,
}


def order(name):
    return list(FIXTURES).index(name) if name in FIXTURES else len(FIXTURES)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out_dir", help="where the fixture directories and MANIFEST.json go")
    p.add_argument("--only", action="append", choices=list(FIXTURES), metavar="NAME",
                   help="write only this fixture (repeatable); default: all of them")
    p.add_argument("--in-mcore-env", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    os.chdir(args.out_dir)  # checkpoint_ids relative to OUT_DIR (see the module doc)
    if args.in_mcore_env:
        for name in args.only:
            record(name, write_torch_dist_mcore_in_env(name))
        return
    names = args.only or list(FIXTURES)
    for name in names:
        if os.path.exists(name):
            shutil.rmtree(name)
    for name in names:
        entry = FIXTURES[name](name)
        if entry is not None:
            if name.startswith("corrupt_"):
                entry["torch_dcp_load"] = torch_load_outcome(name)
            record(name, entry)
        print(f"wrote {name}" if os.path.exists(name) else f"skipped {name}")
    check_written(names)


if __name__ == "__main__":
    main()
