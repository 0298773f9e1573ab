#!/usr/bin/env python3
"""ckptspec adapter (docs/PROTOCOL.md, version 1 revision 6) over megatron-core dist_checkpointing.

One process per rank, a gloo default process group over the rendezvous that hello names (revision
6; an older harness's: MASTER_ADDR:MASTER_PORT), CPU tensors, the `torch_dist` strategy; with
regroup, a process serves group after group, of any size, as whichever rank each hello names. The
megatron-core version is whichever `megatron` the interpreter imports (PYTHONPATH: see
run_with_mcore_env.sh --mcore VERSION). What reaches megatron-core:

  - each tensor entry becomes a megatron.core.dist_checkpointing.mapping.ShardedTensor with the
    entry's key, dtype, local_shape, global_shape, global_offset, axis_fragmentations (None when
    absent: an irregular grid), replica_id (a tuple) and prepend_axis_num; several chunks of one
    key on a rank are several ShardedTensors;
  - each object entry becomes a ShardedObject(key, bytes, global_shape, global_offset, replica_id)
    (megatron stores it under its unique key `{key}/shard_{offsets}_{shape}`); a rank-local object
    (no sharding declared) a one-shard ShardedObject under the key `{key}.rank_{rank}`;
  - the request's `common` is the state dict's non-sharded part, saved by megatron's common backend
    (0.16.1: common.pt by the torch common strategy; 0.19.2: the `common_state` ShardedObject) and
    read back with dist_checkpointing.load_common_state_dict.

save: dist_checkpointing.save(state, iter_dir, sharded_strategy, validate_access_integrity=
validate). The save strategy is FullyParallelSaveStrategyWrapper(TorchDistSaveShardedStrategy(
cached_metadata=C), WORLD, do_cache_distribution=C) -- Megatron-LM's default -- where C is the
request's assume_constant_structure; the strategy object lives across saves (as in Megatron-LM's
training/checkpointing.py) so that the cached plan is reused, and a save without
assume_constant_structure gets a fresh one (with --replan-on-changed-keys, so does a save whose
entries differ from the planned save's on any rank: the check megatron-core does not make). Then
rank 0 writes latest_checkpointed_iteration.txt (Megatron-LM's tracker). load:
dist_checkpointing.load(templates, iter_dir, TorchDist load strategy (or the fully-parallel wrapper
with --fully-parallel-load), strict=StrictHandling(strict)).

async save (capability async, with poll: protocol revision 3), driven as Megatron-LM's
training/checkpointing.py and training/async_utils.py drive it: dist_checkpointing.save(...,
async_sharded_save=True, async_strategy="mcore" where the argument exists: megatron-core's own
writer, not nvidia-resiliency-ext's) returns an AsyncRequest; a finalize function that writes the
tracker on rank 0 is added to it (Megatron-LM's iter_finalize_fn) and it is scheduled on one
AsyncCallsQueue of the process (async_utils.py). The writer is the persistent worker
(AsyncCallsQueue(persistent=True): Megatron-LM turns --async-save off for torch_dist without
--use-persistent-ckpt-worker; where megatron-core has warmup_persistent_caller it is started as
Megatron-LM's initialize.py starts it, with the forkserver start method) or, with --async-worker
temporal, a process forked per save (TemporalAsyncCaller). A tensor placed on the host is handed
to megatron-core as the training loop's buffer itself, one on the device as a copy made at the
save (handed_over: the host copy megatron-core makes of a GPU tensor before the save returns).
poll writes the harness's updates into the training loop's buffers, in place, then calls
maybe_finalize_async_calls(blocking=False) (Megatron-LM's maybe_finalize_async_save at every
training step): every rank agrees whether every write finished, and if so megatron-core's
finalize functions run (save_state_dict_async_finalize: the write results gathered, .metadata
written, a failed write raised on every rank; metadata.json; the tracker). finalize, and a save
or load while a save is pending, call it with blocking=True.

megatron-core raises some errors on one rank only (validate_sharding_integrity on rank 0, the
raise_* strict modes on the ranks with unexpected keys) while the others enter the strategy's
collectives and block until the process-group timeout. The adapter's strategies are "gated":
their save/load first agree with every rank (all_gather_object), and a rank that failed before
the gate meets the others there with its error, so every rank fails at once (--no-gate: the raw
behaviour). A save passes a second gate between megatron-core's planning and its writing
(plan_gated): the cached plan's one-rank error (a key it names is gone) is met there. CUDA calls
on the checkpoint path are patched in one place: patch_cuda_for_cpu().
"""
import argparse
import inspect
import logging
import os
import sys
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from ckptspec_adapter_kit import (STRICT_MODES, AdapterError,  # noqa: E402
                                  add_make_durable_flag, attempt, entry_bytes, iteration_to_load,
                                  iter_dir, make_durable, rank_local_as_shard, refuse_overwrite,
                                  write_entry, write_tracker)
from ckptspec_torch_kit import (GlooGroup, add_pg_timeout_flag,  # noqa: E402
                                add_storage_flags, apply_poll_updates, check_storage_bounds,
                                exception_text, exit_now_if_store_pending, read_tensor,
                                regroups, save_parameters, serve_engine, torch_dtype,
                                write_tensor)

COMMON_KEY = "ckptspec_common"    # the request's common state inside megatron's state dict
ENTRIES_KEY = "ckptspec_entries"  # {"t<i>": ShardedTensor, "o<i>": ShardedObject}
PATCHES = []
UPSTREAM_ASYNC_LOOP = []  # megatron-core's PersistentAsyncCaller.async_loop, once patched


def persistent_worker_main(*args, **kwargs):
    """The persistent async worker's main (patch 6 of patch_cuda_for_cpu): a process of its own,
    spawned or forked from a fork server, that imported this module afresh and so has none of
    the rank's patches. Patches the CUDA calls the worker makes, then runs megatron-core's loop."""
    from megatron.core.dist_checkpointing.strategies.async_utils import PersistentAsyncCaller
    sys.stdout = sys.stderr  # stdout is the rank's reply pipe
    torch.cuda.device_count = lambda: 1  # async_loop: set_device(rank % device_count())
    torch.cuda.set_device = lambda *a, **k: None
    torch.cuda.synchronize = lambda *a, **k: None  # FileSystemWriterAsync.preload_tensors
    loop = UPSTREAM_ASYNC_LOOP[0] if UPSTREAM_ASYNC_LOOP else PersistentAsyncCaller.async_loop
    return loop(*args, **kwargs)


def structure_of(req):
    """What a cached save plan assumes of a save request: each entry's key, dtype, shapes, offset
    and replica id (--replan-on-changed-keys compares it with the planned save's)."""
    fields = ("key", "dtype", "global_shape", "global_offset", "local_shape", "replica_id")
    return sorted(tuple(repr(e.get(f)) for f in fields) for e in req["tensors"] + req["objects"])


def patch_cuda_for_cpu():
    """Every CUDA call megatron-core makes on the torch_dist save/load path, redirected to the CPU.
    The only place the adapter changes megatron-core's behaviour; each line names the upstream
    function (megatron/core/dist_checkpointing/...) that needs it. Listed in docs/ADAPTERS.md."""
    from megatron.core.dist_checkpointing import exchange_utils
    from megatron.core.dist_checkpointing.mapping import ShardedTensor
    from megatron.core.dist_checkpointing.strategies import state_dict_saver
    from megatron.core.dist_checkpointing.strategies.async_utils import PersistentAsyncCaller

    # 1. strategies/state_dict_saver.py save_state_dict_async_finalize (the broadcast of write
    #    failures) and strategies/async_utils.py AsyncCaller.sync_all_async_calls (the all-reduce
    #    of "my write is still running") and AsyncCallsQueue.maybe_finalize_async_calls (the
    #    all-reduce of the finalized call's index): torch.tensor(...,
    #    device=torch.cuda.current_device()).
    torch.cuda.current_device = lambda: "cpu"
    # 2. strategies/filesystem_async.py FileSystemWriterAsync.preload_tensors,
    #    strategies/async_utils.py TemporalAsyncCaller.schedule_async_call (before it forks the
    #    writer) and strategies/fully_parallel.py FullyParallelLoadStrategyWrapper.load:
    #    torch.cuda.synchronize().
    torch.cuda.synchronize = lambda *a, **k: None

    class CpuTorch:
        """The `torch` of one megatron module with device "cuda" read as "cpu"."""

        def __getattr__(self, name):
            return getattr(torch, name)

        @staticmethod
        def _dev(kw):
            if str(kw.get("device", "")).startswith("cuda"):
                kw["device"] = "cpu"
            return kw

        def tensor(self, *a, **kw):
            return torch.tensor(*a, **self._dev(kw))

        def empty(self, *a, **kw):
            return torch.empty(*a, **self._dev(kw))

        def empty_like(self, *a, **kw):
            return torch.empty_like(*a, **self._dev(kw))

    # 3. strategies/state_dict_saver.py verify_global_md_reuse: torch.tensor(..., device='cuda')
    #    (the cached save plan's cross-rank check).
    state_dict_saver.torch = CpuTorch()
    # 4. exchange_utils.py exchange_loaded_tensors_* / _get_empty_tensor_for_exchange (the
    #    fully-parallel load): torch.empty(_like)(..., device="cuda") ...
    exchange_utils.torch = CpuTorch()
    #    ... ShardedTensor.init_data("cuda") ...
    init_data = ShardedTensor.init_data
    ShardedTensor.init_data = lambda self, device, *a, **k: init_data(
        self, "cpu" if str(device).startswith("cuda") else device, *a, **k)
    # 5. ... and tensor.cuda() on the exchanged tensors: stays on the CPU.
    torch.Tensor.cuda = lambda self, *a, **k: self
    # 6. strategies/async_utils.py PersistentAsyncCaller.async_loop, the persistent worker (a
    #    process started by spawn or a fork server, which inherits none of the above):
    #    torch.cuda.set_device(rank % torch.cuda.device_count()) at its start, and
    #    preload_tensors' torch.cuda.synchronize(). The worker runs persistent_worker_main,
    #    which patches those in the worker, then megatron-core's loop.
    UPSTREAM_ASYNC_LOOP[:] = [PersistentAsyncCaller.async_loop]
    PersistentAsyncCaller.async_loop = staticmethod(persistent_worker_main)
    PATCHES[:] = ["torch.cuda.current_device", "torch.cuda.synchronize",
                  "state_dict_saver.torch", "exchange_utils.torch", "ShardedTensor.init_data",
                  "torch.Tensor.cuda", "PersistentAsyncCaller.async_loop"]


def from_exception(e):
    if isinstance(e, AdapterError):
        return e
    text = exception_text(e)
    if ("Missing key in checkpoint" in text or "FileNotFoundError" in text
            or "does not exist" in text or "is not a distributed checkpoint" in text):
        code = "NotFound"
    elif any(s in text for s in ("Invalid sharding", "Unexpected keys", "Missing keys",
                                 "Size mismatch", "shape mismatch", "ValueError",
                                 "Failed to validate global plan", "CheckpointingException",
                                 "AssertionError")):
        code = "InvalidArgument"
    elif isinstance(e, FileNotFoundError):
        code = "NotFound"
    else:
        code = "IOError"
    return AdapterError(code, text)


def failure_of_this_rank(e, rank):
    """from_exception(e); None for the CheckpointException megatron-core raises on a rank other
    than the coordinator (0) when a write failed (save_state_dict_async_finalize broadcasts only
    that one did: its failures are empty there), so that the agreement hands that rank the
    coordinator's error, which names each failed write."""
    if rank != 0 and getattr(e, "failures", None) == {}:
        return None
    return from_exception(e)


class Gate:
    """The agreement point in front of a strategy's collectives (see the module docstring)."""

    def __init__(self, group, enabled):
        self.group, self.enabled = group, enabled
        self.passed = False   # this rank reached the gate (or failed before it and met it)
        self.tripped = False  # the gate itself raised: another rank failed before it

    def __call__(self):
        if self.passed:  # a strategy's save that calls its own async_save meets the gate once
            return
        self.passed = True
        if self.enabled:
            try:
                self.group.agree(None)
            except AdapterError:
                self.tripped = True
                raise

    def fail(self, error):
        """Called with any error of the megatron call. A rank that failed before the gate meets
        the others there; an error of the gate itself ends the call on this rank too. Returns
        (the error, for every rank's final agree) only for a failure past the gate."""
        if self.enabled and not self.passed:
            self.passed = True
            self.group.agree(error)
        if self.tripped or not self.enabled:
            raise error
        return error


def gated(cls, *methods):
    """A subclass of a megatron strategy class whose `methods` pass the gate first."""
    def through_gate(method):
        def run(self, *a, **k):
            self.ckptspec_gate()
            return getattr(cls, method)(self, *a, **k)
        return run
    return type(f"Gated{cls.__name__}", (cls,), {m: through_gate(m) for m in methods})


def plan_gated(cls):
    """A subclass of TorchDistSaveShardedStrategy whose async_save -- the planning, which a
    synchronous save follows with the writing (execute_sync: a barrier, then the finalization's
    collectives) -- passes a second gate, ckptspec_plan_gate, before it returns. With a cached
    plan (cached_metadata) megatron-core plans without a collective, and a rank whose state dict
    lost a key that the plan names raises there (`ValueError: Could not find FQN`) while the
    others go on into the writing."""
    def async_save(self, *a, **k):
        request = cls.async_save(self, *a, **k)
        self.ckptspec_plan_gate()
        return request
    return type(f"PlanGated{cls.__name__}", (cls,), {"async_save": async_save})


# ---------------------------------------------------------------------------------------------
# Entries <-> megatron


def sharded_tensor(t, data, allow_shape_mismatch=False):
    from megatron.core.dist_checkpointing.mapping import ShardedTensor
    frag = t.get("axis_fragmentations")
    try:
        return ShardedTensor(key=t["key"], data=data, dtype=data.dtype,
                             local_shape=tuple(t["local_shape"]),
                             global_shape=tuple(t["global_shape"]),
                             global_offset=tuple(t["global_offset"]),
                             axis_fragmentations=None if frag is None else tuple(frag),
                             replica_id=tuple(t["replica_id"]),
                             prepend_axis_num=t.get("prepend_axis_num", 0) or 0,
                             allow_shape_mismatch=allow_shape_mismatch)
    except Exception as e:
        raise AdapterError("InvalidArgument", f"tensor '{t['key']}': megatron-core refuses the "
                                              f"ShardedTensor: {type(e).__name__}: {e}") from e


def sharded_object(o, data):
    from megatron.core.dist_checkpointing.mapping import ShardedObject
    try:
        return ShardedObject(key=o["key"], data=data, global_shape=tuple(o["global_shape"]),
                             global_offset=tuple(o["global_offset"]),
                             replica_id=tuple(o["replica_id"]))
    except Exception as e:
        raise AdapterError("InvalidArgument", f"object '{o['key']}': megatron-core refuses the "
                                              f"ShardedObject: {type(e).__name__}: {e}") from e


def handed_over(t, x, use_async):
    """The tensor megatron-core gets for the training loop's buffer x (what polls update). On a
    GPU, megatron-core's async save copies a device tensor to the host (FileSystemWriterAsync.
    preload_tensors) before the save returns, and holds a host tensor as it is. Here every
    tensor is on the CPU, so for an async save a tensor the training keeps on the device
    (placement "device", the default) is handed over as a copy of x, made now (the copy
    megatron-core would make then); one on the host as x itself."""
    if use_async and t.get("placement", "device") == "device":
        return x.clone()
    return x


# ---------------------------------------------------------------------------------------------
# The checkpoint directory


def resolve(directory, iteration, check_bounds=False):
    from megatron.core import dist_checkpointing
    iteration, ckpt = iteration_to_load(directory, iteration)
    if not (ckpt / "metadata.json").exists():
        raise AdapterError("NotFound", f"{ckpt} is not a complete checkpoint: no metadata.json")
    if check_bounds:
        check_storage_bounds(ckpt, json_files=("metadata.json",))
    try:
        common = dist_checkpointing.load_common_state_dict(str(ckpt))
    except Exception as e:
        raise AdapterError("Corruption", f"{ckpt}: the common state does not load: "
                                         f"{type(e).__name__}: {e}") from e
    return iteration, ckpt, common.get(COMMON_KEY, {})


class WarningLog(logging.Handler):
    """Collects the warnings megatron-core's validation logs (the log_* strict modes)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


# ---------------------------------------------------------------------------------------------
# The engine


class Engine:
    def __init__(self, args, rank, world):
        self.args, self.rank, self.world = args, rank, world
        self.group = GlooGroup(rank, world, args.pg_timeout, launched=regroups(args))
        self.save_strategy = None  # kept across saves while assume_constant_structure holds
        self.planned_structure = None  # structure_of the save the kept strategy planned
        self.async_calls = None  # megatron-core's AsyncCallsQueue, made at the first async save
        self.save_inputs = {}  # the pending async save's tensors by their index in its request
        self.commit_error = None  # the tracker's finalize function's error, for every rank

    def ensure_megatron(self):
        """megatron-core is imported (and patched) at the first save or load: hello stays fast."""
        if not PATCHES:
            import megatron.core
            patch_cuda_for_cpu()
            print(f"megatron-core {getattr(megatron.core, '__version__', '?')} from "
                  f"{os.path.dirname(megatron.core.__file__)}; patched: {', '.join(PATCHES)}",
                  file=sys.stderr)

    def new_save_strategy(self, cache):
        from megatron.core.dist_checkpointing.strategies.fully_parallel import \
            FullyParallelSaveStrategyWrapper
        from megatron.core.dist_checkpointing.strategies.torch import TorchDistSaveShardedStrategy
        torch_dist = plan_gated(TorchDistSaveShardedStrategy)
        if self.args.no_fully_parallel_save:
            return gated(torch_dist, "save", "async_save")("torch_dist", 1, cached_metadata=cache)
        inner = torch_dist("torch_dist", 1, cached_metadata=cache)
        return gated(FullyParallelSaveStrategyWrapper, "save", "async_save")(
            inner, dist.group.WORLD, do_cache_distribution=cache)

    def new_load_strategy(self):
        from megatron.core.dist_checkpointing.strategies.fully_parallel import \
            FullyParallelLoadStrategyWrapper
        from megatron.core.dist_checkpointing.strategies.torch import TorchDistLoadShardedStrategy
        if self.args.fully_parallel_load:
            return gated(FullyParallelLoadStrategyWrapper, "load")(
                TorchDistLoadShardedStrategy(), dist.group.WORLD)
        return gated(TorchDistLoadShardedStrategy, "load")()

    # --- save ---

    def save(self, req):
        self.finalize()
        self.ensure_megatron()
        from megatron.core import dist_checkpointing
        directory, iteration, ckpt, use_async, cache = save_parameters(req, self.args)

        def prepare():
            refuse_overwrite(directory, iteration)
            entries, inputs = {}, {}
            for i, t in enumerate(req["tensors"]):
                inputs[i] = read_tensor(t, list(t["local_shape"]))
                entries[f"t{i}"] = sharded_tensor(t, handed_over(t, inputs[i], use_async))
            for i, o in enumerate(req["objects"]):
                o = rank_local_as_shard(o, self.rank)
                entries[f"o{i}"] = sharded_object(o, entry_bytes(o, f"object '{o['key']}'"))
            if self.rank == 0:
                ckpt.mkdir(parents=True, exist_ok=True)
            return {COMMON_KEY: req.get("common", {}), ENTRIES_KEY: entries}, inputs

        self.group.ensure()
        prepared, error = attempt(prepare, from_exception)
        self.group.agree(error)  # also: rank 0 made the directory before anyone saves into it
        state, inputs = prepared
        replan = self.args.replan_on_changed_keys
        if cache and self.save_strategy is not None and replan:
            # A collective: every rank drops its plan when any rank's structure changed.
            if not self.group.all_true(structure_of(req) == self.planned_structure):
                self.save_strategy = None
        if not cache or self.save_strategy is None:
            self.save_strategy = self.new_save_strategy(cache)
            self.planned_structure = structure_of(req) if replan else None
        strategy = self.save_strategy
        gate = Gate(self.group, not self.args.no_gate)
        plan_gate = Gate(self.group, not self.args.no_gate)
        strategy.ckptspec_gate = gate
        getattr(strategy, "base_strategy", strategy).ckptspec_plan_gate = plan_gate
        error, request = None, None
        try:
            request = dist_checkpointing.save(
                state, str(ckpt), sharded_strategy=strategy,
                validate_access_integrity=bool(req.get("validate", True)),
                **self.async_arguments(use_async))
        except BaseException as e:
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            self.save_strategy = None  # a failed save leaves no plan to reuse
            self.group.check(e)
            error = from_exception(e)
            gate.fail(error)  # a rank that failed before the first gate meets the others there,
            plan_gate.fail(error)  # one that failed while planning at the second
        self.group.agree(error)  # a failure past the gates: every rank learns of it

        def commit():
            if self.rank == 0:
                if self.args.make_durable:
                    make_durable(iter_dir(directory, iteration), directory)
                write_tracker(directory, iteration)

        if use_async:
            self.schedule(request, commit, inputs)
            return {}
        _, error = attempt(commit, from_exception)
        self.group.agree(error)  # every rank sees the tracker before it goes on
        return {}

    @staticmethod
    def async_arguments(use_async):
        """dist_checkpointing.save's arguments for an async save: async_sharded_save, and (0.17
        on, whose default is nvidia-resiliency-ext's writer) async_strategy="mcore"."""
        if not use_async:
            return {}
        from megatron.core import dist_checkpointing
        if "async_strategy" in inspect.signature(dist_checkpointing.save).parameters:
            return {"async_sharded_save": True, "async_strategy": "mcore"}
        return {"async_sharded_save": True}

    def calls(self):
        """The process's AsyncCallsQueue (Megatron-LM keeps one for the job): persistent unless
        --async-worker temporal. The persistent worker is started as Megatron-LM's
        init_persistent_async_worker starts it: with the forkserver start method where
        megatron-core has warmup_persistent_caller (0.17 on), else at the first schedule (0.16:
        spawn)."""
        if self.async_calls is None:
            from megatron.core.dist_checkpointing.strategies.async_utils import AsyncCallsQueue
            persistent = self.args.async_worker == "persistent"
            self.async_calls = AsyncCallsQueue(persistent=persistent)
            if persistent and hasattr(AsyncCallsQueue, "warmup_persistent_caller"):
                AsyncCallsQueue.warmup_persistent_caller(self.rank, mp_mode="forkserver")
        return self.async_calls

    def schedule(self, request, commit, inputs):
        """Adds the tracker's finalize function (rank 0 writes it once every rank's write has
        finished; its error is kept, not raised, so that every rank goes on through megatron's
        finalization) and schedules the request; `inputs` (the tensors handed to megatron-core,
        by index) are what polls update."""
        def write_tracker_when_done():
            _, self.commit_error = attempt(commit, from_exception)

        def start():
            request.add_finalize_fn(write_tracker_when_done)
            self.calls().schedule_async_request(request)

        _, error = attempt(start, from_exception)
        try:
            self.group.agree(error)
        except AdapterError:
            self.abandon_async()  # a rank that scheduled it must not write it
            raise
        self.save_inputs = inputs

    def poll(self, req):
        """Protocol revision 3: writes the harness's updates into the pending save's tensors in
        place, then completes the save as Megatron-LM's training step does
        (maybe_finalize_async_calls(blocking=False)); complete when no save is pending."""
        pending = self.async_calls is not None and self.async_calls.get_num_unfinalized_calls()
        apply_poll_updates(self.group, req.get("tensors", []), self.save_inputs, bool(pending),
                           self.finalize, from_exception)
        return {"complete": self.complete(blocking=False)}

    def finalize(self):
        self.complete(blocking=True)
        return {}

    def complete(self, blocking):
        """megatron-core's finalization of the pending save, if every rank's write has finished
        (or, blocking, once it has): AsyncCallsQueue.maybe_finalize_async_calls, which agrees
        across ranks and runs the finalize functions. Whether no save is pending afterwards (the
        same on every rank); a failure is raised on every rank."""
        if self.async_calls is None or not self.async_calls.get_num_unfinalized_calls():
            return True
        self.commit_error, error = None, None
        try:
            self.async_calls.maybe_finalize_async_calls(blocking=blocking)
        except BaseException as e:
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            self.group.check(e)
            error = failure_of_this_rank(e, self.rank)
        done = not self.async_calls.get_num_unfinalized_calls()
        if done:
            self.save_inputs = {}
        self.group.agree(error or self.commit_error)  # every rank sees the tracker, or the error
        return done

    def abandon_async(self):
        """Drops the async queue: the persistent worker is killed, a pending save is not
        completed (its tracker is never written)."""
        calls, self.async_calls, self.save_inputs = self.async_calls, None, {}
        if calls is not None:
            attempt(lambda: calls.close(abort=True))

    # --- reset (protocol revision 2) ---

    def reset(self):
        """Back to a fresh process after hello: a pending async save is completed as finalize
        would (a failed collective leaves the ranks out of step: it is the reset's error, and the
        harness replaces the group); the save strategy (its cached plan, cached global metadata,
        cached distribution) is dropped; load strategies are made per load. The gloo process
        group and the async queue with its persistent worker (idle, as Megatron-LM keeps it
        between saves) are kept."""
        self.finalize()
        self.save_strategy = None
        self.group.refuse_reset_if_broken()
        return {}

    # --- regroup (protocol revision 6) ---

    def regroup(self, rank, world, group):
        """A hello's group (first, or right after reset: no save is pending): the next collective
        runs in a new process group of `world` ranks as `rank` (GlooGroup.regroup destroys the
        old one). What megatron-core made for the old group goes with it: the async calls queue
        and its persistent worker (started for the old rank) and the save strategy (its
        fully-parallel wrapper holds the old group)."""
        self.abandon_async()
        self.save_strategy, self.planned_structure = None, None
        self.rank, self.world = rank, world
        self.group.regroup(rank, world, group)

    # --- load ---

    def load(self, req):
        self.finalize()
        self.ensure_megatron()
        from megatron.core import dist_checkpointing
        from megatron.core.dist_checkpointing.validation import StrictHandling
        strict = req.get("strict", "assume_ok_unexpected")
        tensors, objects = req.get("tensors", []), req.get("objects", [])
        shape_mismatch = bool(req.get("allow_shape_mismatch"))

        def prepare():
            if strict not in STRICT_MODES:
                raise AdapterError("InvalidArgument", f"unknown strict mode '{strict}'")
            iteration, ckpt, common = resolve(req["directory"], req.get("iteration"),
                                              self.args.check_storage_bounds)
            entries = {}
            for i, t in enumerate(tensors):
                dtype = torch_dtype(t["dtype"], t["key"])
                entries[f"t{i}"] = sharded_tensor(t, torch.zeros(t["local_shape"], dtype=dtype),
                                                  shape_mismatch)
            for i, o in enumerate(objects):
                entries[f"o{i}"] = sharded_object(rank_local_as_shard(o, self.rank), None)
            return iteration, ckpt, common, entries

        self.group.ensure()
        found, error = attempt(prepare, from_exception)
        self.group.agree(error)
        iteration, ckpt, common, entries = found
        strategy = self.new_load_strategy()
        gate = Gate(self.group, not self.args.no_gate)
        strategy.ckptspec_gate = gate
        log = WarningLog()
        logger = logging.getLogger("megatron.core.dist_checkpointing")
        logger.setLevel(logging.WARNING)  # the log_* modes' lines (the root logger is at ERROR)
        logger.addHandler(log)
        missing, unexpected, loaded, error = set(), set(), {}, None
        try:
            loaded = dist_checkpointing.load({ENTRIES_KEY: entries}, str(ckpt),
                                             sharded_strategy=strategy,
                                             strict=StrictHandling(strict))
            if isinstance(loaded, tuple):
                loaded, missing, unexpected = loaded
        except BaseException as e:
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            self.group.check(e)
            error = from_exception(e)
            gate.fail(error)
        finally:
            logger.removeHandler(log)
        got = loaded.get(ENTRIES_KEY, {}) or {}
        dropped = []

        def write():
            for i, t in enumerate(tensors):
                x = got.get(f"t{i}")
                if x is None:
                    dropped.append(t["key"])
                    continue
                write_tensor(t, x)
            for i, o in enumerate(objects):
                if f"o{i}" not in got:
                    dropped.append(o["key"])
                    continue
                value = got[f"o{i}"]
                if not isinstance(value, (bytes, bytearray)):
                    raise AdapterError("Corruption", f"object '{o['key']}' loaded as "
                                                     f"{type(value).__name__}, not bytes")
                write_entry(o, bytes(value))

        if error is None:
            _, error = attempt(write, from_exception)
        self.group.agree(error)  # DCP may fail on some ranks only (its coordinator's KeyError)
        return {"iteration": iteration, "common": common, "dropped": sorted(set(dropped)),
                "unexpected": sorted(unexpected) if "return" in strict else [],
                "missing": sorted(missing) if strict == "return_all" else [],
                "warnings": log.lines if strict.startswith("log") else []}


# ---------------------------------------------------------------------------------------------
# The request loop


def serve(args):
    logging.basicConfig(stream=sys.stderr, level=logging.ERROR)
    engine = Engine(args, int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    ended = serve_engine("megatron_core", engine, args, strict_modes=True,
                         to_error=from_exception)
    engine.abandon_async()  # a pending save is not completed at shutdown (docs/PROTOCOL.md)
    if ended == "shutdown":
        os._exit(0)  # no teardown of the gloo group: a peer may already be gone
    engine.group.close()
    exit_now_if_store_pending()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_make_durable_flag(p, "megatron-core", "F27")
    add_storage_flags(p, "the cached save plan (assume_constant_structure)",
                      json_files=("metadata.json",))
    add_pg_timeout_flag(p, "CKPTSPEC_MCORE_PG_TIMEOUT")
    p.add_argument("--async-worker", choices=("persistent", "temporal"), default="persistent",
                   help="megatron-core's async writer: the persistent worker process "
                        "(AsyncCallsQueue(persistent=True), the default: Megatron-LM's async save "
                        "needs --use-persistent-ckpt-worker) or a process forked per save "
                        "(TemporalAsyncCaller)")
    p.add_argument("--replan-on-changed-keys", action="store_true",
                   help="drop the cached save plan when a save's entries (keys, shapes, offsets, "
                        "replica ids) differ from the planned save's on any rank: the fix "
                        "NVIDIA/Megatron-LM#4378 proposes first, which megatron-core lacks")
    p.add_argument("--no-fully-parallel-save", action="store_true",
                   help="save with TorchDistSaveShardedStrategy alone, without the fully-parallel wrapper")
    p.add_argument("--fully-parallel-load", action="store_true",
                   help="load through FullyParallelLoadStrategyWrapper")
    p.add_argument("--no-gate", action="store_true",
                   help="no agreement before the strategies' collectives: a one-rank error "
                        "leaves the other ranks blocked until the process-group timeout")
    serve(p.parse_args())


if __name__ == "__main__":
    main()
