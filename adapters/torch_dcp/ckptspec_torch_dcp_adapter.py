#!/usr/bin/env python3
"""ckptspec adapter (docs/PROTOCOL.md, version 1) over PyTorch DCP (torch.distributed.checkpoint).

One process per rank, a gloo process group over the rendezvous that hello names (revision 6; an
older harness's: MASTER_ADDR:MASTER_PORT), CPU tensors; with regroup, a process serves group after
group, of any size, as whichever rank each hello names (GlooGroup.regroup). The state
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
    (DCP pickles it with torch.save; Megatron stores io.BytesIO of torch.save too); a rank-local
    object (no sharding declared) as the one shard of the key `{key}.rank_{rank}`, so each rank's
    value has a key of its own; `--rank-local plain` hands it over as a plain value under
    its one key instead, which DCP's dedup_save_plans merges across ranks (pytorch #120356);
  - rank 0 writes the common state beside the DCP files (common.json; Megatron: common.pt).

Layout of a checkpoint directory:

  <directory>/latest_checkpointed_iteration.txt   rank 0, after DCP finished (the tracker)
  <directory>/iter_0000010/                       DCP's checkpoint_id (FileSystemWriter):
      .metadata  __<rank>_0.distcp ...            written by DCP (.metadata last, by rank 0)
      common.json  metadata.json                  rank 0 (metadata.json: Megatron's backend record)

What DCP has, declared in hello: resharding (its load planner reads every requested chunk by
intersecting it with the saved chunks), objects, async (dcp.async_save, its own gloo group, staged
by CopyingStager; poll, protocol revision 3: the harness's in-place updates are written into the
tensors handed to async_save, as training writes into its parameters, and the future is asked
whether it is done), plan
caching (DefaultSavePlanner(enable_plan_caching=True) for assume_constant_structure). What it has
not: checksums, byte-identical saves, Megatron's StrictHandling (DCP's load raises on a requested
key the checkpoint lacks unless allow_partial_load; the other modes are Megatron's, above DCP).
`validate` is not needed: DCP's save planner always validates the global plan (bounds, overlaps,
volume) on the coordinator; it cannot be turned off. It does not compare the bytes of two chunks of
one key and offset (dedup_save_plans keeps one); `--refuse-differing-duplicates` compares their
digests across ranks before DCP plans, and refuses the save on every rank when they differ.
"""
import argparse
import hashlib
import json
import os
import sys
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

import torch  # noqa: E402
import torch.distributed.checkpoint as dcp  # noqa: E402
from torch.distributed._shard.metadata import ShardMetadata  # noqa: E402
from torch.distributed._shard.sharded_tensor import Shard, ShardedTensor  # noqa: E402
from torch.distributed._shard.sharded_tensor.metadata import (  # noqa: E402
    ShardedTensorMetadata, TensorProperties)
from torch.distributed.checkpoint.api import CheckpointException  # noqa: E402

from ckptspec_adapter_kit import (STRICT_MODES, AdapterError,  # noqa: E402
                                  add_make_durable_flag, attempt, box_of, entry_bytes, is_main,
                                  iteration_to_load, make_durable, rank_local_as_shard,
                                  refuse_overwrite, unique_key, write_durably, write_entry,
                                  write_tracker)
from ckptspec_torch_kit import (GlooGroup, add_pg_timeout_flag,  # noqa: E402
                                add_storage_flags, apply_poll_updates, check_storage_bounds,
                                exception_text, exit_now_if_store_pending, read_tensor,
                                regroups, save_parameters, serve_engine, torch_dtype,
                                write_tensor)

METADATA = "metadata.json"
COMMON = "common.json"
DCP_METADATA = ".metadata"


# DCP's plan cache lives in class attributes of its SavePlanner, shared by every planner of the
# process (torch/distributed/checkpoint/planner.py); reset empties them.
PLAN_CACHES = ("_cached_save_plan", "_cached_final_save_plan", "_cached_all_plans",
               "_cached_global_plan", "_cached_metadata")


def from_exception(e):
    """An AdapterError for any exception; DCP's CheckpointException carries each rank's failure."""
    if isinstance(e, AdapterError):
        return e
    if isinstance(e, CheckpointException):
        text = exception_text(e)
        if "Missing key in checkpoint" in text:
            code = "NotFound"
        elif "FileNotFoundError" in text:
            code = "NotFound"
        elif ("Size mismatch" in text or "Failed to validate global plan" in text
              or "ValueError" in text):
            code = "InvalidArgument"
        else:
            code = "IOError"
        return AdapterError(code, f"DCP {text}")
    if isinstance(e, FileNotFoundError):
        return AdapterError("NotFound", f"{type(e).__name__}: {e}")
    return AdapterError("IOError", f"{type(e).__name__}: {e}")


class AliasingStager:
    """An AsyncStager that hands the state dict over as it is: the background write reads the
    tensors the harness's poll updates write into, as DCP's staging did to CPU tensors before
    pytorch PR #145408 (issue #144657). `--async-stager alias`, to show what P20 makes of it."""

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


class CopyingStager(AliasingStager):
    """An AsyncStager that copies every ShardedTensor's local shards before async_save returns,
    so that what training writes into the handed-over tensors afterwards never reaches the
    checkpoint. DCP's DefaultStager cannot stage a ShardedTensor (its deepcopy calls data_ptr(),
    which ShardedTensor refuses: RuntimeError "torch function 'data_ptr' ... not supported for
    ShardedTensor!"); `--async-stager default` uses it anyway, to show that."""

    def stage(self, state_dict):
        staged = {}
        for key, value in state_dict.items():
            if isinstance(value, ShardedTensor):
                shards = [Shard(s.tensor.clone(), s.metadata) for s in value.local_shards()]
                value = ShardedTensor._init_from_local_shards_and_global_metadata(
                    shards, value.metadata())
            staged[key] = value  # bytes are immutable
        return staged


STAGERS = {"copy": CopyingStager, "alias": AliasingStager, "default": lambda: None}


# ---------------------------------------------------------------------------------------------
# Entries <-> torch


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
    return {key: sharded_tensor(key, t["global_shape"], chunks, rank, world)
            for key, (t, chunks) in by_key.items()}


# ---------------------------------------------------------------------------------------------
# The checkpoint directory


def resolve(directory, iteration):
    iteration, ckpt = iteration_to_load(directory, iteration)
    for name in (DCP_METADATA, METADATA):
        if not (ckpt / name).exists():
            raise AdapterError("NotFound", f"{ckpt} is not a complete checkpoint: no {name}")
    try:
        common = json.loads((ckpt / COMMON).read_text())
    except FileNotFoundError as e:
        raise AdapterError("NotFound", f"{e.filename} is missing") from e
    except (ValueError, UnicodeDecodeError) as e:
        raise AdapterError("Corruption", f"{ckpt / COMMON}: {e}") from e
    return iteration, ckpt, common


def dcp_key(o):
    """An object's key in DCP's state dict: Megatron's unique key of a shard; a rank-local object
    left plain (--rank-local plain) its key alone, the same on every rank."""
    return unique_key(o) if o["global_shape"] else o["key"]


# ---------------------------------------------------------------------------------------------
# The engine


class Engine:
    def __init__(self, args, rank, world):
        self.args, self.rank, self.world = args, rank, world
        self.group = GlooGroup(rank, world, args.pg_timeout, launched=regroups(args))
        self.pending = None  # an async save: (future, commit)
        self.save_inputs = {}  # the pending save's tensors by their index in the save request

    def object_entry(self, o):
        """How an object reaches DCP: a rank-local one (no sharding declared) under a key of its
        rank's, unless --rank-local plain hands DCP the plain value under its one key (what DCP
        then deduplicates by name: pytorch issue #120356)."""
        if self.args.rank_local == "plain":
            return o
        return rank_local_as_shard(o, self.rank)

    # --- save ---

    def save(self, req):
        self.finalize()
        directory, iteration, ckpt, use_async, cache = save_parameters(req, self.args)

        def prepare():
            refuse_overwrite(directory, iteration)
            keep = [(i, t) for i, t in enumerate(req["tensors"])
                    if self.args.replicas == "all" or is_main(t["replica_id"])]
            inputs = {i: read_tensor(t, box_of(t)[1]) for i, t in keep}
            sd = state_dict_of([t for _, t in keep], [inputs[i] for i, _ in keep], self.rank,
                              self.world)
            self.save_inputs = inputs if use_async else {}
            for o in req["objects"]:
                o = self.object_entry(o)
                if self.args.replicas == "all" or is_main(o["replica_id"]):
                    if dcp_key(o) in sd:  # one key of a state dict holds one value
                        raise AdapterError("InvalidArgument", f"object '{dcp_key(o)}' is handed "
                                                              f"over twice by rank {self.rank}")
                    sd[dcp_key(o)] = entry_bytes(o, f"object '{dcp_key(o)}'")
            if self.rank == 0:
                ckpt.mkdir(parents=True, exist_ok=True)
                write_durably(ckpt / COMMON, json.dumps(req.get("common", {}), sort_keys=True))
            return sd

        self.group.ensure()
        sd, error = attempt(prepare, from_exception)
        self.group.agree(error)
        if self.args.refuse_differing_duplicates:
            self.refuse_differing_duplicates(sd)
        planner = dcp.DefaultSavePlanner(enable_plan_caching=cache)

        def commit():
            if self.rank == 0:
                meta = {"sharded_backend": "torch_dist", "sharded_backend_version": 1,
                        "common_backend": "json", "common_backend_version": 1,
                        "iteration": iteration, "world_size": self.world,
                        "layout": req.get("layout")}
                write_durably(ckpt / METADATA, json.dumps(meta, sort_keys=True))
                if self.args.make_durable:
                    make_durable(ckpt, directory)
                write_tracker(directory, iteration)

        if use_async:
            try:
                stager = STAGERS[self.args.async_stager]()
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

    def refuse_differing_duplicates(self, sd):
        """--refuse-differing-duplicates (a collective): the check DCP's dedup_save_plans does not
        make. Every rank's chunks and objects are compared by a digest of their bytes; when two
        ranks hand DCP the same chunk (key and offset) or object key with different bytes, every
        rank refuses the save, naming the chunk and the ranks, instead of DCP keeping one copy
        silently (docs/FINDINGS.md F3)."""
        digests = {}
        for key, value in sd.items():
            if isinstance(value, ShardedTensor):
                for shard in value.local_shards():
                    data = shard.tensor.contiguous().flatten().view(torch.uint8).numpy().tobytes()
                    offsets = tuple(shard.metadata.shard_offsets)
                    digests[(key, offsets)] = hashlib.sha256(data).hexdigest()
            elif isinstance(value, bytes):  # an object: one value per key
                digests[(key, ())] = hashlib.sha256(value).hexdigest()
        first = {}
        for rank, theirs in enumerate(self.group.gather(digests)):
            for chunk, digest in sorted(theirs.items()):
                seen = first.setdefault(chunk, (rank, digest))
                if seen[1] != digest:
                    raise AdapterError("InvalidArgument",
                                       f"chunk of '{chunk[0]}' at offset {list(chunk[1])} is "
                                       f"handed to DCP by ranks {seen[0]} and {rank} with "
                                       "different bytes (--refuse-differing-duplicates)")

    def poll(self, req):
        """Protocol revision 3: writes the harness's updates into the pending save's tensors in
        place, then completes the save as finalize does once every rank's future is done."""
        apply_poll_updates(self.group, req.get("tensors", []), self.save_inputs,
                           self.pending is not None, self.finalize, from_exception)
        if self.pending is None:
            return {"complete": True}
        if not self.group.all_true(self.pending[0].done()):
            return {"complete": False}
        self.finalize()
        return {"complete": True}

    def finalize(self):
        self.save_inputs = {}
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
        _, error = attempt(commit, from_exception)
        self.group.agree(error)  # and every rank sees the tracker before it goes on (a load)
        return {}

    # --- reset (protocol revision 2) ---

    def reset(self):
        """Back to the state of a fresh process after hello: a pending async save is completed as
        finalize would (its error belongs to no case, but a failed collective leaves the ranks out
        of step, so it is the reset's error and the harness replaces the group), and DCP's plan
        cache is emptied. The gloo process groups are kept, unless a collective of theirs
        failed: then reset is refused and the harness starts a new group."""
        self.finalize()
        self.group.refuse_reset_if_broken()
        from torch.distributed.checkpoint.planner import SavePlanner
        for name in PLAN_CACHES:
            cache = getattr(SavePlanner, name, None)
            if isinstance(cache, dict):
                cache.clear()
        return {}

    # --- regroup (protocol revision 6) ---

    def regroup(self, rank, world, group):
        """A hello's group (first, or right after reset: no save is pending): the next collective
        runs in a new process group of `world` ranks as `rank`; the old one and its async group
        are destroyed (GlooGroup.regroup). The plan cache was emptied by the reset."""
        self.rank, self.world = rank, world
        self.group.regroup(rank, world, group)

    # --- load ---

    def load(self, req):
        self.finalize()
        strict = req.get("strict", "assume_ok_unexpected")
        tensors = req.get("tensors", [])
        objects = [self.object_entry(o) for o in req.get("objects", [])]

        def prepare():
            if strict not in STRICT_MODES:
                raise AdapterError("InvalidArgument", f"unknown strict mode '{strict}'")
            if strict != "assume_ok_unexpected":
                raise AdapterError("NotSupported", f"strict={strict}: DCP has no StrictHandling "
                                                   "(capabilities.strict_modes is false)")
            iteration, ckpt, common = resolve(req["directory"], req.get("iteration"))
            if self.args.check_storage_bounds:
                check_storage_bounds(ckpt)
            templates = [torch.zeros(box_of(t)[1], dtype=torch_dtype(t["dtype"], t["key"]))
                         for t in tensors]
            sd = state_dict_of(tensors, templates, self.rank, self.world)
            for o in objects:
                sd[dcp_key(o)] = b""
            return iteration, ckpt, common, sd, templates

        self.group.ensure()
        found, error = attempt(prepare, from_exception)
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
            write_tensor(t, x)
        for o in objects:
            value = sd[dcp_key(o)]
            if not isinstance(value, (bytes, bytearray)):
                raise AdapterError("Corruption", f"object '{dcp_key(o)}' loaded as "
                                                 f"{type(value).__name__}, not bytes")
            write_entry(o, bytes(value))
        return {"iteration": iteration, "common": common}


# ---------------------------------------------------------------------------------------------
# The request loop


def serve(args):
    engine = Engine(args, int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    serve_engine("torch_dcp", engine, args, strict_modes=False, to_error=from_exception)
    engine.group.close()
    exit_now_if_store_pending()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rank-local", choices=("by-rank", "plain"), default="by-rank",
                   help="hand DCP a rank-local object under a key of its rank's own, "
                        "{key}.rank_{rank} (the default), or as a plain value under its one key "
                        "(which DCP merges across ranks)")
    p.add_argument("--replicas", choices=("main", "all"), default="main",
                   help="hand DCP only main replicas (Megatron's keep_only_main_replica) or all")
    p.add_argument("--async-stager", choices=tuple(STAGERS), default="copy",
                   help="async_save's stager: copy the local shards (the default), alias them "
                        "(the write reads what later poll updates write into them), or DCP's "
                        "DefaultStager (which cannot stage a ShardedTensor)")
    p.add_argument("--refuse-differing-duplicates", action="store_true",
                   help="compare the bytes of every chunk two ranks hand DCP under one key and "
                        "offset, and refuse the save when they differ (DCP keeps one copy "
                        "without comparing)")
    add_make_durable_flag(p, "DCP", "F27")
    add_storage_flags(p, "DCP's plan cache")
    add_pg_timeout_flag(p, "CKPTSPEC_DCP_PG_TIMEOUT")
    serve(p.parse_args())


if __name__ == "__main__":
    main()
