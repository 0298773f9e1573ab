#!/usr/bin/env python3
"""ckptspec adapter (docs/PROTOCOL.md, version 1) over zarr 2.x.

Stores sharded state the way Megatron-core's former zarr backend did
(megatron/core/dist_checkpointing/strategies/zarr.py with strategies/common.py):

  <directory>/latest_checkpointed_iteration.txt   rank 0, after every rank finished (the tracker)
  <directory>/iter_0000010/
      <tensor key>/             one zarr array per key: the global shape and dtype, chunks on the
                                regular grid (global_shape // axis_fragmentations), no compressor,
                                fill_value None, write_empty_chunks; the main replica at offset 0
                                creates it, then every main replica writes its chunk
      <object key>/shard_<offsets>_<shape>.bin   a main-replica object's bytes (Megatron: .pt); a
                                rank-local object is <key>.rank_<rank>/shard_0_1.bin
      common.json               rank 0's common state (Megatron: common.pt)
      metadata.json             rank 0, after every rank wrote: the completion marker

Deliberately faithful, so that ckptspec measures the backend and not this file:
  - bf16 had no numpy dtype; Megatron used the 'bfloat16' numpy dtype that tensorstore registers
    (ml_dtypes here), converted through float32, and patched the array's .zarray ("<V2" ->
    "bfloat16"). fp8 had no mapping at all: saving it is NotSupported.
  - Tensors on an irregular grid (no axis_fragmentations) have no chunk grid: like Megatron's
    flattened tensors they share chunks (here: one chunk, the whole array) and write under a
    zarr.ProcessSynchronizer.
  - fill_value None: a region that no rank wrote reads back as whatever np.empty held. Nothing
    records which chunks were written.
  - Loading a tensor reads the requested box from the array (any layout: resharding); the
    stored dtype is converted to the requested one, as Megatron's caller's copy_ did.
  - Validation of a save (Megatron's validate_sharding_integrity) and the strict modes
    (validate_integrity_and_strict_load) are Megatron's, which ran above the zarr strategy; the
    checkpoint's keys come from a scan like load_tensors_metadata's (see checkpoint_keys).

Every rank is its own process. Where Megatron called torch.distributed (barrier, all_gather_object)
the ranks meet over MASTER_ADDR:MASTER_PORT (Group below): rank 0 listens, the others connect.
"""
import argparse
import json
import math
import os
import shutil
import socket
import sys
import time
from pathlib import Path

import ml_dtypes
import numpy as np
import zarr

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from ckptspec_adapter_kit import (STRICT_MODES, AdapterError,  # noqa: E402
                                  add_make_durable_flag, attempt, box_of, entry_bytes, is_main,
                                  iter_dir, iteration_to_load, make_durable, rank_local_as_shard,
                                  refuse_overwrite, serve, unique_key, write_durably, write_entry,
                                  write_tracker)

METADATA = "metadata.json"
COMMON = "common.json"
CAPABILITIES = {"resharding": True, "objects": True, "async": False, "checksums": False,
                "plan_cache": False, "deterministic": False, "strict_modes": True,
                "reset": True,  # protocol revision 2: nothing is kept between requests to forget
                "packed": True}  # protocol revision 4: entries at ranges of one file per request
BF16 = np.dtype(ml_dtypes.bfloat16)
# Megatron's torch_to_numpy_dtype_dict (bfloat16 only with tensorstore's dtype registered).
DTYPES = {"fp32": np.dtype("float32"), "fp16": np.dtype("float16"), "int32": np.dtype("int32"),
          "int64": np.dtype("int64"), "bf16": BF16, "bfloat16": BF16, "float32": np.dtype("float32"),
          "float16": np.dtype("float16")}
NO_NUMPY_DTYPE = ("fp8_e4m3", "fp8_e5m2", "float8_e4m3fn", "float8_e5m2")


class Group:
    """The ranks of one process group meeting over TCP: all_gather of JSON values, in call order.

    Rank 0 listens on MASTER_ADDR:MASTER_PORT from its start; rank r > 0 connects at its first
    collective. A rank that dies or breaks the exchange makes every other rank's collective fail.
    """

    def __init__(self, rank, world, timeout=50.0):
        self.rank, self.world, self.timeout = rank, world, timeout
        self.addr = os.environ.get("MASTER_ADDR", "127.0.0.1")
        self.port = int(os.environ.get("MASTER_PORT", "0") or 0)
        self.peers = None  # rank 0: {rank: file}; rank > 0: a file to rank 0
        self.listener = None
        if world > 1 and rank == 0:
            self.listener = socket.create_server((self.addr, self.port), backlog=world)

    def _connect(self):
        deadline = time.monotonic() + self.timeout
        if self.rank == 0:
            self.listener.settimeout(self.timeout)
            self.peers = {}
            while len(self.peers) < self.world - 1:
                conn, _ = self.listener.accept()
                conn.settimeout(self.timeout)
                f = conn.makefile("rwb")
                peer = json.loads(f.readline())["rank"]
                self.peers[peer] = f
            return
        while True:
            try:
                conn = socket.create_connection((self.addr, self.port), timeout=self.timeout)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise AdapterError("IOError", f"cannot reach rank 0 at {self.addr}:{self.port}")
                time.sleep(0.05)
        self.peers = conn.makefile("rwb")
        self._send(self.peers, {"rank": self.rank})

    @staticmethod
    def _send(f, value):
        f.write(json.dumps(value).encode() + b"\n")
        f.flush()

    @staticmethod
    def _recv(f, who):
        line = f.readline()
        if not line:
            raise AdapterError("IOError", f"{who} left the process group")
        return json.loads(line)

    def all_gather(self, value):
        if self.world == 1:
            return [value]
        try:
            if self.peers is None:
                self._connect()
            if self.rank == 0:
                values = [value] + [self._recv(self.peers[r], f"rank {r}") for r in range(1, self.world)]
                for r in range(1, self.world):
                    self._send(self.peers[r], values)
                return values
            self._send(self.peers, value)
            return self._recv(self.peers, "rank 0")
        except (OSError, ValueError) as e:
            raise AdapterError("IOError", f"process group exchange failed: {e}") from e

    def agree(self, error, value=None):
        """All ranks exchange (error, value); raises the first rank's error on every rank."""
        gathered = self.all_gather([None if error is None else [error.code, str(error)], value])
        for r, (err, _) in enumerate(gathered):
            if err is not None:
                if error is not None:
                    raise error
                raise AdapterError(err[0], f"rank {r} failed: {err[1]}")
        return [v for _, v in gathered]


def phase(group, fn):
    """Runs fn on this rank, then lets every rank learn whether any rank failed."""
    return group.agree(*reversed(attempt(fn)))


# ---------------------------------------------------------------------------------------------
# Entries


def numpy_dtype(name, key):
    if name in DTYPES:
        return DTYPES[name]
    if name in NO_NUMPY_DTYPE:
        raise AdapterError("NotSupported", f"tensor '{key}': the zarr backend has no numpy dtype "
                                           f"for {name} (Megatron's map: bool..complex128, bfloat16)")
    raise AdapterError("InvalidArgument", f"tensor '{key}': unknown dtype '{name}'")


def read_tensor(t):
    dtype = numpy_dtype(t["dtype"], t["key"])
    raw = entry_bytes(t, f"tensor '{t['key']}'")
    shape = tuple(t["local_shape"])
    if len(raw) != dtype.itemsize * math.prod(shape):
        raise AdapterError("InvalidArgument", f"tensor '{t['key']}': {len(raw)} bytes in "
                                              f"{t['file']}, local shape {list(shape)} needs "
                                              f"{dtype.itemsize * math.prod(shape)}")
    return np.frombuffer(raw, dtype=dtype).reshape(shape)


def global_slice(offset, shape, prepend):
    """Megatron's ShardedTensor.global_slice(): an integer on prepended axes, slices elsewhere."""
    return tuple(offset[a] if a < prepend else slice(offset[a], offset[a] + shape[a])
                 for a in range(len(offset)))


# ---------------------------------------------------------------------------------------------
# Save


def validate_sharding(every_rank):
    """Megatron's validate_sharding_integrity over every rank's entries; a sentence or None."""
    tensors, objects = {}, {}
    for rank, (ts, os_) in enumerate(every_rank):
        for t in ts:
            tensors.setdefault(t["key"], []).append((rank, t))
        for o in os_:
            objects.setdefault(o["key"], []).append((rank, o))
    for key, shards in tensors.items():
        first = shards[0][1]
        for rank, t in shards:
            for field in ("dtype", "global_shape", "axis_fragmentations"):
                if t.get(field) != first.get(field):
                    return (f"tensor '{key}': rank {rank} has {field} {t.get(field)}, rank "
                            f"{shards[0][0]} {first.get(field)}")
        mains = [(r, box_of(t)) for r, t in shards if is_main(t["replica_id"])]
        if first.get("axis_fragmentations"):
            counts = {}
            for r, (off, shp) in mains:
                cell = tuple(o // s if s else 0 for o, s in zip(off, shp))
                counts.setdefault(cell, []).append(r)
            cells = math.prod(first["axis_fragmentations"])
            bad = {c: rs for c, rs in counts.items() if len(rs) != 1}
            if bad or len(counts) != cells:
                return (f"Invalid access pattern for {key}: {len(counts)} of {cells} grid cells have a "
                        f"main replica; cells with several: {sorted(bad.items())[:4]}")
        else:  # irregular grid: main chunks tile the tensor (Megatron's flattened-range check)
            total = sum(math.prod(shp) for _, (_, shp) in mains)
            if total != math.prod(first["global_shape"]) or overlapping(mains):
                return (f"tensor '{key}': main chunks hold {total} elements of "
                        f"{math.prod(first['global_shape'])} or overlap (they do not cover the "
                        f"whole tensor)")
    for key, shards in objects.items():
        seen = {}
        for rank, o in shards:
            if is_main(o["replica_id"]):
                uk = unique_key(o)
                if uk in seen:
                    return f"Duplicate ShardedObject keys: {uk} on ranks {seen[uk]} and {rank}"
                seen[uk] = rank
        want = math.prod(shards[0][1]["global_shape"])
        if len(seen) != want:
            return f"{want - len(seen)} ShardedObject are missing for key '{key}'"
    return None


def overlapping(mains):
    for i, (_, (o1, s1)) in enumerate(mains):
        for _, (o2, s2) in mains[i + 1:]:
            if all(a < b + t and b < a + s for a, s, b, t in zip(o1, s1, o2, s2)):
                return True
    return False


def create_array(path, t, dtype):
    """Megatron's _create_zarr_array; on an irregular grid one chunk spans the whole array."""
    frag = t.get("axis_fragmentations")
    chunks = ([g // f for g, f in zip(t["global_shape"], frag)] if frag
              else list(t["global_shape"]))
    try:
        arr = zarr.create(t["global_shape"], dtype=dtype, store=str(path), chunks=chunks,
                          compressor=None, fill_value=None, write_empty_chunks=True)
    except zarr.errors.ContainsArrayError as e:
        raise AdapterError("FailedPrecondition", f"Array {path} already exists") from e
    if dtype == BF16:  # zarr writes the unknown dtype as "<V2"; Megatron renamed it
        arr.store[".zarray"] = arr.store[".zarray"].replace(b"<V2", b"bfloat16")


def write_chunk(directory, t, data):
    prepend = t.get("prepend_axis_num", 0) or 0
    offset, shape = box_of(t)
    sync = None
    if not t.get("axis_fragmentations"):
        sync = zarr.ProcessSynchronizer(str(directory / f"{t['key']}.sync"))
    arr = zarr.open(str(directory / t["key"]), mode="r+", synchronizer=sync)
    if data.dtype == BF16:  # Megatron: x.float().numpy().astype('bfloat16')
        data = data.astype(np.float32).astype(BF16)
    arr[global_slice(offset, shape, prepend)] = data


def save(group, rank, req, durable=False):
    # "async" and "assume_constant_structure" are not declared: every save is synchronous and
    # plans anew, as the backend did.
    directory, iteration = req["directory"], int(req["iteration"])
    ckpt = iter_dir(directory, iteration)
    req["objects"] = [rank_local_as_shard(o, rank) for o in req["objects"]]

    def prepare():
        refuse_overwrite(directory, iteration)
        data = [read_tensor(t) for t in req["tensors"]]
        objs = [entry_bytes(o, f"object '{unique_key(o)}'") for o in req["objects"]]
        return data, objs

    def signature():
        strip = ("file", "origin", "digest")
        return ([{k: v for k, v in t.items() if k not in strip} for t in req["tensors"]],
                [{k: v for k, v in o.items() if k not in strip} for o in req["objects"]])

    prepared, error = attempt(prepare)
    every_rank = group.agree(error, signature())
    data, objs = prepared
    if req.get("validate", True):
        problem = validate_sharding(every_rank)
        if problem:
            raise AdapterError("InvalidArgument", problem)

    def create():
        if rank == 0:
            ckpt.mkdir(parents=True, exist_ok=True)
            write_durably(ckpt / COMMON, json.dumps(req.get("common", {}), sort_keys=True))

    def create_arrays():
        for t in req["tensors"]:  # Megatron's _should_create_array
            if is_main(t["replica_id"]) and set(t["global_offset"]) <= {0}:
                create_array(ckpt / t["key"], t, numpy_dtype(t["dtype"], t["key"]))

    def write():
        for t, d in zip(req["tensors"], data):
            if is_main(t["replica_id"]):
                write_chunk(ckpt, t, d)
        for o, b in zip(req["objects"], objs):
            if is_main(o["replica_id"]):
                path = ckpt / f"{unique_key(o)}.bin"
                path.parent.mkdir(parents=True, exist_ok=True)
                write_durably(path, b)

    def commit():
        if rank == 0:
            meta = {"sharded_backend": "zarr", "sharded_backend_version": 1,
                    "common_backend": "json", "common_backend_version": 1,
                    "iteration": iteration, "world_size": group.world, "layout": req.get("layout")}
            write_durably(ckpt / METADATA, json.dumps(meta, sort_keys=True))
            if durable:
                make_durable(ckpt, directory)
            write_tracker(directory, iteration)

    for step in (create, create_arrays, write, commit):
        phase(group, step)
    return {}


# ---------------------------------------------------------------------------------------------
# Load


def checkpoint_keys(ckpt):
    """The checkpoint's keys as Megatron's strict handling learnt them: load_tensors_metadata
    (load_zarr_based_sharded_metadata: every directory holding a .zarray is an array, whose shape
    and dtype are read) and load_sharded_metadata (directories of shard_* files are objects).
    Note: a zarr.ProcessSynchronizer's lock directory (<key>.sync, irregular grids) holds an empty
    .zarray lock file too, and reading it fails -- in Megatron as here."""
    tensors, objects = set(), set()
    for root, dirs, files in os.walk(ckpt):
        rel = Path(root).relative_to(ckpt).as_posix()
        if ".zarray" in files:
            try:
                zarr.open_array(root, mode="r")
            except (ValueError, TypeError, KeyError) as e:
                raise AdapterError("Corruption", f"{root}/.zarray: not zarr array metadata "
                                                 f"({type(e).__name__}: {e})") from e
            tensors.add(rel)
            dirs[:] = []
        elif any(f.startswith("shard_") and f.endswith(".bin") for f in files):
            objects.add(rel)
    return tensors, objects


def resolve(directory, iteration):
    iteration, ckpt = iteration_to_load(directory, iteration)
    meta_path = ckpt / METADATA
    if not meta_path.exists():
        raise AdapterError("NotFound", f"{ckpt} is not a complete checkpoint: no {METADATA}")
    try:
        meta = json.loads(meta_path.read_text())
        common = json.loads((ckpt / COMMON).read_text())
    except FileNotFoundError as e:
        raise AdapterError("NotFound", f"{e.filename} is missing") from e
    except (ValueError, UnicodeDecodeError) as e:
        raise AdapterError("Corruption", f"{ckpt}: malformed {METADATA} or {COMMON}: {e}") from e
    if not isinstance(meta, dict) or meta.get("sharded_backend") != "zarr":
        raise AdapterError("Corruption", f"{meta_path}: not a zarr checkpoint")
    return iteration, ckpt, common


def read_box(arr, t, dtype, allow_shape_mismatch):
    """The requested chunk from a stored array; with allow_shape_mismatch the overlap, zero-padded."""
    key = t["key"]
    offset, shape = box_of(t)
    prepend = t.get("prepend_axis_num", 0) or 0
    if list(arr.shape) != list(t["global_shape"]):
        if not allow_shape_mismatch or len(arr.shape) != len(shape):
            raise AdapterError("InvalidArgument", f"Global shape mismatch for loaded ({list(arr.shape)}) "
                                                  f"and expected ({t['global_shape']}) tensor for key {key}")
        out = np.zeros(shape, dtype=arr.dtype)
        lo = [min(o, n) for o, n in zip(offset, arr.shape)]
        hi = [min(o + s, n) for o, s, n in zip(offset, shape, arr.shape)]
        if all(h > l for l, h in zip(lo, hi)):
            out[tuple(slice(l - o, h - o) for l, h, o in zip(lo, hi, offset))] = \
                arr[tuple(slice(l, h) for l, h in zip(lo, hi))]
        x = out.reshape(t["local_shape"])
    else:
        x = arr[global_slice(offset, shape, prepend)]
    if x.dtype == BF16:  # Megatron: x.astype(float32) -> torch -> .bfloat16()
        x = x.astype(np.float32).astype(BF16)
    return np.ascontiguousarray(x.astype(dtype, copy=False))


def load(group, rank, req):
    strict = req.get("strict", "assume_ok_unexpected")
    if strict not in STRICT_MODES:
        raise AdapterError("InvalidArgument", f"unknown strict mode '{strict}'")
    tensors = req.get("tensors", [])
    objects = [rank_local_as_shard(o, rank) for o in req.get("objects", [])]
    requested = sorted({t["key"] for t in tensors} | {o["key"] for o in objects})

    def inspect():
        iteration, ckpt, common = resolve(req["directory"], req.get("iteration"))
        if strict == "assume_ok_unexpected":  # Megatron reads no checkpoint metadata then
            return iteration, ckpt, common, None
        t_keys, o_keys = checkpoint_keys(ckpt)
        return iteration, ckpt, common, t_keys | o_keys

    # Missing keys need what every rank requests; a raise_* error names every rank's unexpected
    # keys (in Megatron each rank raised with its own; one error is all a caller sees here).
    needs_group = strict.endswith("_all") or strict.startswith("raise_")
    if needs_group:
        found, error = attempt(inspect)
        every_rank = group.agree(error, requested)
    else:
        found, every_rank = inspect(), [requested]
    iteration, ckpt, common, ckpt_keys = found
    unexpected = [k for k in requested if k not in ckpt_keys] if ckpt_keys is not None else []
    missing = (sorted(ckpt_keys - set().union(*every_rank)) if strict.endswith("_all") else [])
    reply = {"iteration": iteration, "common": common, "dropped": [], "unexpected": [],
             "missing": [], "warnings": []}
    if strict.startswith("raise_"):
        by_rank = {r: u for r, u in enumerate([k for k in keys if k not in ckpt_keys]
                                              for keys in every_rank) if u}
        if by_rank or (strict == "raise_all" and missing):
            raise AdapterError("InvalidArgument", f"{ckpt}: unexpected keys (requested, not in the "
                                                  f"checkpoint) by rank: {by_rank}; missing keys (in "
                                                  f"the checkpoint, requested by no rank): {missing}")
    if strict.startswith("log_"):
        reply["warnings"] += [f"unexpected key (not in {ckpt}): {k}" for k in unexpected]
        reply["warnings"] += [f"missing key (requested by no rank): {k}" for k in missing]
    if strict.startswith("return_"):
        reply["unexpected"] = unexpected
        reply["missing"] = missing
    drop = set(unexpected) if strict != "assume_ok_unexpected" else set()
    reply["dropped"] = sorted(drop)

    for t in tensors:
        if t["key"] in drop:
            continue
        dtype = numpy_dtype(t["dtype"], t["key"])
        try:
            arr = zarr.open_array(str(ckpt / t["key"]), mode="r")
        except (zarr.errors.ArrayNotFoundError, zarr.errors.PathNotFoundError) as e:
            raise AdapterError("NotFound", f"Array {ckpt / t['key']} not found") from e
        except (ValueError, TypeError, KeyError) as e:
            raise AdapterError("Corruption", f"{ckpt / t['key']}/.zarray: {e}") from e
        try:
            x = read_box(arr, t, dtype, req.get("allow_shape_mismatch", False))
        except (ValueError, TypeError) as e:
            raise AdapterError("Corruption", f"{ckpt / t['key']}: {type(e).__name__}: {e}") from e
        write_entry(t, x.tobytes())
    for o in objects:
        if o["key"] in drop:
            continue
        path = ckpt / f"{unique_key(o)}.bin"
        if not path.is_file():
            raise AdapterError("NotFound", f"Object shard {path} not found")
        shutil.copyfile(path, o["file"])
    return reply


# ---------------------------------------------------------------------------------------------
# The request loop


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_make_durable_flag(p, "zarr", "F29")
    args = p.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    group = Group(rank, world)
    # finalize: no async saves, nothing is ever pending; reset: no state outlives a request (the
    # rendezvous is kept).
    ops = {"save": lambda req: save(group, rank, req, args.make_durable),
           "load": lambda req: load(group, rank, req),
           "finalize": lambda req: {}, "reset": lambda req: {}}
    serve(rank, "zarr", CAPABILITIES, ops)


if __name__ == "__main__":
    main()
