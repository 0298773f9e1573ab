#!/usr/bin/env python3
"""ckptspec adapter (docs/PROTOCOL.md, version 1) over PyTorch DCP (torch.distributed.checkpoint).

One process per rank, a gloo process group over MASTER_ADDR:MASTER_PORT, CPU tensors. The state
reaches DCP the way Megatron-core's torch_dist strategy hands it over
(megatron/core/dist_checkpointing/strategies/torch.py):

  - each tensor key becomes one torch ShardedTensor (torch.distributed._shard) whose local shards
    are this rank's chunks at their global offsets and shapes, built with
    ShardedTensor._init_from_local_shards_and_global_metadata without communication. Megatron
    fills the global metadata with the regular grid's other cells placed on "some other rank";
    here the rest of the tensor is cut into boxes around the local chunks (any grid, irregular
    ones included) and placed on rank (rank + 1) % world. DCP itself reads only the local shards
    and the global size;
  - only main replicas (replica id all zeros) are handed to DCP (Megatron's
    keep_only_main_replica, its default); `--replicas all` hands every replica over and leaves the
    choice to DCP's planner, which keeps one copy of each (key, offset) chunk (dedup_save_plans);
  - an object is a bytes value under Megatron's unique key `{key}/shard_{offsets}_{shape}`
    (DCP pickles it with torch.save; Megatron stores io.BytesIO of torch.save too);
  - rank 0 writes the common state beside the DCP files (common.json; Megatron: common.pt).

Layout of a checkpoint directory:

  <directory>/latest_checkpointed_iteration.txt   rank 0, after DCP finished (the tracker)
  <directory>/iter_0000010/                       DCP's checkpoint_id (FileSystemWriter):
      .metadata  __<rank>_0.distcp ...            written by DCP (.metadata last, by rank 0)
      common.json  metadata.json                  rank 0 (metadata.json: Megatron's backend record)

What DCP has, declared in hello: resharding (its load planner reads every requested chunk by
intersecting it with the saved chunks), objects, async (dcp.async_save, its own gloo group, no
staging copy: see OwnedCopyStager), plan
caching (DefaultSavePlanner(enable_plan_caching=True) for assume_constant_structure). What it has
not: checksums, byte-identical saves, Megatron's StrictHandling (DCP's load raises on a requested
key the checkpoint lacks unless allow_partial_load; the other modes are Megatron's, above DCP).
`validate` is not needed: DCP's save planner always validates the global plan (bounds, overlaps,
volume) on the coordinator; it cannot be turned off.
"""
import argparse
import datetime
import json
import math
import os
import sys
import traceback
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.distributed.checkpoint as dcp  # noqa: E402
from torch.distributed._shard.metadata import ShardMetadata  # noqa: E402
from torch.distributed._shard.sharded_tensor import Shard, ShardedTensor  # noqa: E402
from torch.distributed._shard.sharded_tensor.metadata import (  # noqa: E402
    ShardedTensorMetadata, TensorProperties)
from torch.distributed.checkpoint.api import CheckpointException  # noqa: E402

PROTOCOL = 1
TRACKER = "latest_checkpointed_iteration.txt"
METADATA = "metadata.json"
COMMON = "common.json"
DCP_METADATA = ".metadata"
STRICT_MODES = ("assume_ok_unexpected", "log_unexpected", "log_all", "raise_unexpected",
                "raise_all", "return_unexpected", "return_all", "ignore_all")
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16,
          "fp8_e4m3": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2,
          "int32": torch.int32, "int64": torch.int64}


class AdapterError(Exception):
    """An error with one of the protocol's Status codes."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def capabilities(args):
    return {"resharding": True, "objects": True, "async": not args.no_async, "checksums": False,
            "plan_cache": not args.no_plan_cache, "deterministic": False, "strict_modes": False,
            "reset": not args.no_reset}  # protocol revision 2: Engine.reset forgets everything


# DCP's plan cache lives in class attributes of its SavePlanner, shared by every planner of the
# process (torch/distributed/checkpoint/planner.py); reset empties them.
PLAN_CACHES = ("_cached_save_plan", "_cached_final_save_plan", "_cached_all_plans",
               "_cached_global_plan", "_cached_metadata")


def from_exception(e):
    """An AdapterError for any exception; DCP's CheckpointException carries each rank's failure."""
    if isinstance(e, AdapterError):
        return e
    if isinstance(e, CheckpointException):
        parts = []
        for r, failure in sorted(e.failures.items()):
            exc = failure[0] if isinstance(failure, tuple) else failure
            parts.append(f"rank {r}: {type(exc).__name__}: {exc}")
        text = "; ".join(parts) or str(e)
        if "Missing key in checkpoint" in text:
            code = "NotFound"
        elif "FileNotFoundError" in text:
            code = "NotFound"
        elif ("Size mismatch" in text or "Failed to validate global plan" in text
              or "ValueError" in text):
            code = "InvalidArgument"
        else:
            code = "IOError"
        return AdapterError(code, f"DCP CheckpointException: {text}")
    if isinstance(e, FileNotFoundError):
        return AdapterError("NotFound", f"{type(e).__name__}: {e}")
    return AdapterError("IOError", f"{type(e).__name__}: {e}")


class OwnedCopyStager:
    """An AsyncStager that hands the state dict over as it is: the adapter's tensors are its own
    copies (read from the harness's files), so there is nothing to stage. DCP's DefaultStager
    cannot stage a ShardedTensor (its deepcopy calls data_ptr(), which ShardedTensor refuses:
    RuntimeError "torch function 'data_ptr' ... not supported for ShardedTensor!");
    `--async-stager default` uses it anyway, to show that."""

    _synchronize_after_execute = False

    @property
    def should_synchronize_after_execute(self):
        return False

    def stage(self, state_dict):
        return state_dict

    def synchronize_staging(self):
        pass

    def close(self):
        pass


class Group:
    """The gloo process group, created at the first operation that needs it (hello stays fast)."""

    def __init__(self, rank, world, timeout_s):
        self.rank, self.world, self.timeout_s = rank, world, timeout_s
        self.async_pg = None

    def ensure(self):
        if not dist.is_initialized():
            dist.init_process_group("gloo", rank=self.rank, world_size=self.world,
                                    timeout=datetime.timedelta(seconds=self.timeout_s))

    def async_group(self):
        # async_save runs its collectives in a thread: a group of its own, as DCP advises.
        if self.async_pg is None:
            self.ensure()
            self.async_pg = dist.new_group(backend="gloo")
        return self.async_pg

    def agree(self, error):
        """Every rank learns whether any rank failed; raises the first failure on every rank, so
        that no rank enters a DCP collective the others never reach."""
        self.ensure()
        gathered = [None] * self.world
        dist.all_gather_object(gathered, None if error is None else [error.code, str(error)])
        if error is not None:
            raise error
        for r, err in enumerate(gathered):
            if err is not None:
                raise AdapterError(err[0], f"rank {r} failed: {err[1]}")

    def close(self):
        if dist.is_initialized():
            dist.destroy_process_group()


def attempt(fn):
    try:
        return fn(), None
    except Exception as e:  # every rank must reach agree()
        return None, from_exception(e)


# ---------------------------------------------------------------------------------------------
# Entries <-> torch


def torch_dtype(name, key):
    if name not in DTYPES:
        raise AdapterError("InvalidArgument", f"tensor '{key}': unknown dtype '{name}'")
    return DTYPES[name]


def is_main(replica_id):
    return all(r == 0 for r in replica_id)


def box_of(t):
    """(offset, shape) of a tensor entry's chunk in the global tensor (prepended axes are 1)."""
    p = t.get("prepend_axis_num", 0) or 0
    return list(t["global_offset"]), [1] * p + list(t["local_shape"])


def unique_key(o):
    return (f"{o['key']}/shard_{'.'.join(map(str, o['global_offset']))}"
            f"_{'.'.join(map(str, o['global_shape']))}")


def read_bytes(path, what):
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise AdapterError("IOError", f"{what}: cannot read {path}: {e.strerror}") from e


def read_tensor(t):
    dtype = torch_dtype(t["dtype"], t["key"])
    _, shape = box_of(t)
    raw = read_bytes(t["file"], f"tensor '{t['key']}'")
    size = torch.empty((), dtype=dtype).element_size() * math.prod(shape)
    if len(raw) != size:
        raise AdapterError("InvalidArgument", f"tensor '{t['key']}': {t['file']} holds {len(raw)} "
                                              f"bytes, local shape {t['local_shape']} needs {size}")
    if size == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype).reshape(shape)


def tensor_bytes(x):
    x = x.contiguous()
    if x.numel() == 0:
        return b""
    return x.view(-1).view(torch.uint8).numpy().tobytes()


def subtract(box, cut):
    """box minus cut (each (offset, shape)): at most 2 * ndim disjoint boxes."""
    (bo, bs), (co, cs) = box, cut
    if any(c >= b + s or b >= c + n for b, s, c, n in zip(bo, bs, co, cs)):
        return [box]
    out, lo, hi = [], list(bo), [b + s for b, s in zip(bo, bs)]
    for a in range(len(bo)):
        c_lo, c_hi = max(lo[a], co[a]), min(hi[a], co[a] + cs[a])
        if lo[a] < c_lo:
            out.append((lo[:a] + [lo[a]] + lo[a + 1:],
                        [h - l for l, h in zip(lo, hi)][:a] + [c_lo - lo[a]] +
                        [h - l for l, h in zip(lo, hi)][a + 1:]))
        if c_hi < hi[a]:
            out.append((lo[:a] + [c_hi] + lo[a + 1:],
                        [h - l for l, h in zip(lo, hi)][:a] + [hi[a] - c_hi] +
                        [h - l for l, h in zip(lo, hi)][a + 1:]))
        lo[a], hi[a] = c_lo, c_hi
    return [b for b in out if all(s > 0 for s in b[1])]


def sharded_tensor(key, global_shape, chunks, rank, world):
    """A torch ShardedTensor of this rank's chunks [(offset, tensor)] in a global_shape tensor,
    built as Megatron's sharded_tensor_to_torch_sharded_tensor does (no communication): the
    global metadata lists the local shards and, for the rest of the tensor, boxes placed on
    another rank (DCP reads only the local shards and the global size)."""
    dtype = chunks[0][1].dtype
    local = [Shard(x, ShardMetadata(shard_offsets=list(off), shard_sizes=list(x.shape),
                                    placement=f"rank:{rank}/cpu")) for off, x in chunks]
    rest = [([0] * len(global_shape), list(global_shape))]
    for off, x in chunks:
        rest = [piece for box in rest for piece in subtract(box, (list(off), list(x.shape)))]
    if rest and world == 1:
        raise AdapterError("InvalidArgument", f"tensor '{key}': the chunks of rank 0 do not cover "
                                              f"the tensor, and a ShardedTensor of one rank must "
                                              f"place every element (uncovered: {rest[:4]})")
    other = f"rank:{(rank + 1) % world}/cpu"
    metas = [s.metadata for s in local] + [ShardMetadata(shard_offsets=o, shard_sizes=s, placement=other)
                                           for o, s in rest]
    props = TensorProperties(dtype=dtype, layout=torch.strided, requires_grad=False,
                             memory_format=torch.contiguous_format, pin_memory=False)
    md = ShardedTensorMetadata(shards_metadata=metas, size=torch.Size(global_shape),
                               tensor_properties=props)
    try:
        return ShardedTensor._init_from_local_shards_and_global_metadata(local, md)
    except (ValueError, RuntimeError) as e:
        raise AdapterError("InvalidArgument", f"tensor '{key}': torch refuses the local shards as a "
                                              f"ShardedTensor: {e}") from e


def state_dict_of(entries, tensors, rank, world):
    """{key: ShardedTensor} from [(entry, tensor)] (several chunks of one key on a rank are
    several local shards)."""
    by_key = {}
    for t, x in zip(entries, tensors):
        off, _ = box_of(t)
        by_key.setdefault(t["key"], (t, []))[1].append((off, x))
    return {key: sharded_tensor(key, t["global_shape"], chunks, int(os.environ["RANK"]),
                                int(os.environ["WORLD_SIZE"]))
            for key, (t, chunks) in by_key.items()}


# ---------------------------------------------------------------------------------------------
# The checkpoint directory


def iter_dir(directory, iteration):
    return Path(directory) / f"iter_{iteration:07d}"


def tracked_iteration(directory):
    path = Path(directory) / TRACKER
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    try:
        return int(text)
    except ValueError as e:
        raise AdapterError("Corruption", f"{path}: '{text[:40]}' is not an iteration") from e


def resolve(directory, iteration):
    if iteration is None:
        iteration = tracked_iteration(directory)
        if iteration is None:
            raise AdapterError("NotFound", f"no checkpoint under {directory}: no {TRACKER}")
    ckpt = iter_dir(directory, int(iteration))
    for name in (DCP_METADATA, METADATA):
        if not (ckpt / name).exists():
            raise AdapterError("NotFound", f"{ckpt} is not a complete checkpoint: no {name}")
    try:
        common = json.loads((ckpt / COMMON).read_text())
    except FileNotFoundError as e:
        raise AdapterError("NotFound", f"{e.filename} is missing") from e
    except (ValueError, UnicodeDecodeError) as e:
        raise AdapterError("Corruption", f"{ckpt / COMMON}: {e}") from e
    return int(iteration), ckpt, common


# ---------------------------------------------------------------------------------------------
# The engine


class Engine:
    def __init__(self, args, rank, world):
        self.args, self.rank, self.world = args, rank, world
        self.group = Group(rank, world, args.pg_timeout)
        self.pending = None  # an async save: (future, commit)

    # --- save ---

    def save(self, req):
        self.finalize()
        directory, iteration = req["directory"], int(req["iteration"])
        ckpt = iter_dir(directory, iteration)
        use_async = bool(req.get("async")) and not self.args.no_async
        cache = bool(req.get("assume_constant_structure")) and not self.args.no_plan_cache

        def prepare():
            if tracked_iteration(directory) == iteration:
                raise AdapterError("FailedPrecondition", f"{ckpt} is the checkpoint the tracker "
                                                         "names; refusing to overwrite it")
            keep = [t for t in req["tensors"]
                    if self.args.replicas == "all" or is_main(t["replica_id"])]
            sd = state_dict_of(keep, [read_tensor(t) for t in keep], self.rank, self.world)
            for o in req["objects"]:
                if self.args.replicas == "all" or is_main(o["replica_id"]):
                    sd[unique_key(o)] = read_bytes(o["file"], f"object '{unique_key(o)}'")
            if self.rank == 0:
                ckpt.mkdir(parents=True, exist_ok=True)
                (ckpt / COMMON).write_text(json.dumps(req.get("common", {}), sort_keys=True))
            return sd

        self.group.ensure()
        sd, error = attempt(prepare)
        self.group.agree(error)
        planner = dcp.DefaultSavePlanner(enable_plan_caching=cache)

        def commit():
            if self.rank == 0:
                meta = {"sharded_backend": "torch_dist", "sharded_backend_version": 1,
                        "common_backend": "json", "common_backend_version": 1,
                        "iteration": iteration, "world_size": self.world,
                        "layout": req.get("layout")}
                (ckpt / METADATA).write_text(json.dumps(meta, sort_keys=True))
                tmp = Path(directory) / (TRACKER + ".tmp")
                tmp.write_text(f"{iteration}\n")
                os.replace(tmp, Path(directory) / TRACKER)

        if use_async:
            try:
                stager = OwnedCopyStager() if self.args.async_stager == "owned" else None
                future = dcp.async_save(sd, checkpoint_id=str(ckpt), planner=planner,
                                        process_group=self.group.async_group(),
                                        async_stager=stager)
            except BaseException as e:
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
                raise from_exception(e) from e
            self.pending = (future, commit)
            return {}
        try:
            dcp.save(sd, checkpoint_id=str(ckpt), planner=planner)
        except BaseException as e:  # CheckpointException is a BaseException
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            raise from_exception(e) from e
        commit()
        return {}

    def finalize(self):
        if self.pending is None:
            return {}
        (future, commit), self.pending = self.pending, None
        error = None
        try:
            future.result()
        except BaseException as e:
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            error = from_exception(e)
        self.group.agree(error)  # the tracker names the iteration only once every rank is done
        _, error = attempt(commit)
        self.group.agree(error)  # and every rank sees the tracker before it goes on (a load)
        return {}

    # --- reset (protocol revision 2) ---

    def reset(self):
        """Back to the state of a fresh process after hello: a pending async save is completed as
        finalize would (its error belongs to no case, but a failed collective leaves the ranks out
        of step, so it is the reset's error and the harness replaces the group), and DCP's plan
        cache is emptied. The gloo process groups are kept."""
        self.finalize()
        from torch.distributed.checkpoint.planner import SavePlanner
        for name in PLAN_CACHES:
            cache = getattr(SavePlanner, name, None)
            if isinstance(cache, dict):
                cache.clear()
        return {}

    # --- load ---

    def load(self, req):
        self.finalize()
        strict = req.get("strict", "assume_ok_unexpected")
        tensors, objects = req.get("tensors", []), req.get("objects", [])

        def prepare():
            if strict not in STRICT_MODES:
                raise AdapterError("InvalidArgument", f"unknown strict mode '{strict}'")
            if strict != "assume_ok_unexpected":
                raise AdapterError("NotSupported", f"strict={strict}: DCP has no StrictHandling "
                                                   "(capabilities.strict_modes is false)")
            iteration, ckpt, common = resolve(req["directory"], req.get("iteration"))
            templates = [torch.zeros(box_of(t)[1], dtype=torch_dtype(t["dtype"], t["key"]))
                         for t in tensors]
            sd = state_dict_of(tensors, templates, self.rank, self.world)
            for o in objects:
                sd[unique_key(o)] = b""
            return iteration, ckpt, common, sd, templates

        self.group.ensure()
        found, error = attempt(prepare)
        self.group.agree(error)
        iteration, ckpt, common, sd, templates = found
        try:
            dcp.load(sd, checkpoint_id=str(ckpt),
                     planner=dcp.DefaultLoadPlanner(allow_partial_load=False))
        except BaseException as e:
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            raise from_exception(e) from e
        for t, x in zip(tensors, templates):  # the local shards are the templates themselves
            Path(t["file"]).write_bytes(tensor_bytes(x))
        for o in objects:
            value = sd[unique_key(o)]
            if not isinstance(value, (bytes, bytearray)):
                raise AdapterError("Corruption", f"object '{unique_key(o)}' loaded as "
                                                 f"{type(value).__name__}, not bytes")
            Path(o["file"]).write_bytes(bytes(value))
        return {"iteration": iteration, "common": common}


# ---------------------------------------------------------------------------------------------
# The request loop


def serve(args):
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    engine = Engine(args, rank, world)
    out = sys.stdout
    sys.stdout = sys.stderr  # stdout carries replies only: anything torch prints goes to stderr
    for line in sys.stdin:
        req = {}
        try:
            req = json.loads(line)
            op = req["op"]
            reply = {"id": req["id"], "rank": rank, "ok": True}
            if op == "hello":
                if req.get("protocol") != PROTOCOL:
                    raise AdapterError("NotSupported", f"protocol {req.get('protocol')} requested; "
                                                       f"this adapter speaks {PROTOCOL}")
                reply.update(protocol=PROTOCOL, adapter="torch_dcp", capabilities=capabilities(args))
            elif op == "save":
                reply.update(engine.save(req))
            elif op == "load":
                reply.update(engine.load(req))
            elif op == "finalize":
                reply.update(engine.finalize())
            elif op == "reset" and not args.no_reset:
                reply.update(engine.reset())
            elif op == "shutdown":
                out.write(json.dumps(reply) + "\n")
                out.flush()
                break
            else:
                raise AdapterError("InvalidArgument", f"unknown op '{op}'")
        except Exception as e:  # a bug here or in torch: still one reply, named
            if not isinstance(e, AdapterError):
                traceback.print_exc(file=sys.stderr)
            e = from_exception(e)
            reply = {"id": req.get("id"), "rank": rank, "ok": False,
                     "error": {"code": e.code, "message": str(e)}}
        out.write(json.dumps(reply) + "\n")
        out.flush()
    engine.group.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--replicas", choices=("main", "all"), default="main",
                   help="hand DCP only main replicas (Megatron's keep_only_main_replica) or all")
    p.add_argument("--async-stager", choices=("owned", "default"), default="owned",
                   help="async_save's stager: none needed (owned copies) or DCP's DefaultStager")
    p.add_argument("--no-async", action="store_true", help="do not declare async saves")
    p.add_argument("--no-plan-cache", action="store_true", help="do not declare DCP's plan cache")
    p.add_argument("--no-reset", action="store_true",
                   help="do not declare reset: the harness then starts new processes for every engine")
    p.add_argument("--pg-timeout", type=float, default=float(os.environ.get("CKPTSPEC_DCP_PG_TIMEOUT", 45)),
                   help="gloo collective timeout in seconds (default 45: below the harness's 60)")
    serve(p.parse_args())


if __name__ == "__main__":
    main()
