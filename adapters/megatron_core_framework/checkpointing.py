"""Save and load of a training run as Megatron-LM's megatron/training/checkpointing.py does them for
--ckpt-format torch_dist (save_checkpoint, generate_state_dict, get_rng_state, load_checkpoint;
that file is not part of the megatron-core wheel, so its order is reproduced here with megatron-
core's calls). Megatron-LM's defaults apply where the job says nothing: fully-parallel save over
the data-parallel group, no fully-parallel load, no async save, data_parallel_random_init false.

save_checkpoint(run, directory, group) -> {"iteration", "signature"}
load_checkpoint(run, directory, iteration, flags, strict, group) -> the loop's iteration

The same functions serve a GPT run (gpt.GptFramework) and a MIMO run (mimo.MimoFramework): where
Megatron-LM reads the run's layout, they ask the run's framework (gpt.py's contract), which for a
MIMO run answers with the rank's own module, as Megatron-LM's heterogeneous MIMO training passes
the module's groups: the content metadata's dp_cp_group and the fully-parallel save's group
(data_parallel_group), the RNG object's key, shape, offset and replica id (rng_sharding), the
model's sharded state dict and what it loads into (sharded_model_state_dict, model_to_load: a
MimoModel's), the optimizers primed before a state dict is built (module_optimizers), the layout
the load's decisions compare (parallel_layout) and the check of the checkpoint's args
(check_checkpoint_args).

Every rank fails together (docs/PROTOCOL.md): the preparation of a save or load ends in an
agreement (group.agree), and the dist_checkpointing strategies are gated (the megatron_core storage
adapter's Gate: a rank that failed before the strategy's collectives meets the others at the gate).
"""
import inspect
import logging
import random
import sys
import traceback
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

import cpu_shims  # noqa: E402
from ckptspec_adapter_kit import (AdapterError, iter_dir, iteration_to_load,  # noqa: E402
                                  refuse_overwrite, write_tracker)
from errors import attempt, failure, from_exception  # noqa: E402  (puts megatron_core/ on the path)
from ckptspec_megatron_core_adapter import Gate, gated  # noqa: E402
from loop import enter_loop  # noqa: E402

CHECKPOINT_VERSION = 3.0
DTYPE_NAMES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16",
               "float8_e4m3fn": "fp8_e4m3", "float8_e5m2": "fp8_e5m2", "int32": "int32",
               "int64": "int64"}


# ---------------------------------------------------------------------------------------------
# State dict pieces


def prime_optimizers(run):
    """cpu_shims.prime_torch_adam_state for every optimizer of the rank's modules (a MIMO run's
    MimoOptimizer keeps one per module)."""
    for _, optimizer in run.framework.module_optimizers(run.optimizer):
        cpu_shims.prime_torch_adam_state(optimizer)


def sharded_sd_metadata(run):
    """Megatron-LM's _build_sharded_state_dict_metadata: the distributed optimizer's sharding type
    (the job's format), singleton_local_shards False, chained_optim_avoid_prefix True, and the
    data-parallel (with context-parallel) group."""
    metadata = {}
    if run.job.optimizer.distributed:
        metadata["distrib_optim_sharding_type"] = run.job.optimizer.format
        if run.job.optimizer.format == "fully_reshardable":
            metadata["distrib_optim_fully_reshardable_mem_efficient"] = False
    metadata["singleton_local_shards"] = False
    metadata["chained_optim_avoid_prefix"] = True
    metadata["dp_cp_group"] = run.framework.data_parallel_group()
    return metadata


def rng_state_object(run):
    """Megatron-LM's get_rng_state for torch_dist: this rank's python, numpy, torch, CUDA and
    CUDA-tracker RNG states as a ShardedObject (the framework's rng_sharding: 'rng_state' over
    (pp, tp), one replica per data-parallel with context-parallel rank; a MIMO run's module's
    grid, its key prefixed per module)."""
    from megatron.core import tensor_parallel
    from megatron.core.dist_checkpointing.mapping import ShardedObject
    rng_state = {"random_rng_state": random.getstate(),
                 "np_rng_state": np.random.get_state(),
                 "torch_rng_state": torch.get_rng_state(),
                 "cuda_rng_state": torch.cuda.get_rng_state(),
                 "rng_tracker_states": tensor_parallel.get_cuda_rng_tracker().get_states()}
    key, shape, offset, replica_id = run.framework.rng_sharding()
    return ShardedObject(key, [rng_state], shape, offset, replica_id=replica_id)


def generate_state_dict(run, optimizer, scheduler, rng_state, iteration=None,
                        optim_sd_kwargs=None, model_sd_kwargs=None, rerun_state=None):
    """Megatron-LM's generate_state_dict for torch_dist: args, checkpoint_version, iteration, the
    model's sharded state dict (the framework's sharded_model_state_dict), the optimizer's (given
    the model's) and the scheduler's state, the rerun state machine's, the RNG object."""
    state_dict = {"args": run.args, "checkpoint_version": CHECKPOINT_VERSION}
    if iteration is not None:
        state_dict["iteration"] = iteration
    state_dict["model"] = run.framework.sharded_model_state_dict(run.model,
                                                                 **(model_sd_kwargs or {}))
    if optimizer is not None and not getattr(optimizer, "is_stub_optimizer", False):
        state_dict["optimizer"] = optimizer.sharded_state_dict(state_dict,
                                                               **(optim_sd_kwargs or {}))
    if scheduler is not None:
        state_dict["opt_param_scheduler"] = scheduler.state_dict()
    if rerun_state:
        state_dict["rerun_state_machine"] = rerun_state
    if rng_state:
        state_dict["rng_state"] = rng_state
    return state_dict


# ---------------------------------------------------------------------------------------------
# Signatures (docs/SIGNATURE.md rank entries)


def rank_signature(state_dict, content_metadata, rank):
    """This rank's signature of the state dict handed to dist_checkpointing.save (with the
    content metadata save() adds to the common state): tools/megatron_signature.py's
    rank_signature (ShardedTensorFactory built, LocalNonpersistentObject left out, megatron's
    common-state rules), dtypes in the protocol's spelling and replica ids as arrays."""
    import megatron_signature
    entry = megatron_signature.rank_signature(state_dict, rank)
    for t in entry["tensors"]:
        t["dtype"] = DTYPE_NAMES.get(t["dtype"], t["dtype"])
    for e in entry["tensors"] + entry["objects"]:
        if not isinstance(e["replica_id"], list):
            e["replica_id"] = [e["replica_id"]]
    if content_metadata is not None:
        from megatron.core.dist_checkpointing.serialization import _CONTENT_METADATA_KEY
        common = entry["common"] if isinstance(entry["common"], dict) else {}
        common[_CONTENT_METADATA_KEY] = megatron_signature.rank_signature(
            dict(content_metadata), rank)["common"]
        entry["common"] = common
    return entry


# ---------------------------------------------------------------------------------------------
# The dist_checkpointing call of a save or load


def through_gate(group, strategy, call):
    """call() -- dist_checkpointing.save or load with `strategy` -- with the strategy gated over
    `group` (a rank that fails before the strategy's collectives meets the others at the gate,
    which fails them too), then an agreement: a failure on any rank is raised on every rank.
    Returns call()'s result."""
    gate = Gate(group, True)
    strategy.ckptspec_gate = gate
    result, error = None, None
    try:
        result = call()
    except BaseException as e:
        if not failure(e):
            raise
        traceback.print_exc(file=sys.stderr)
        group.check(e)
        error = from_exception(e)
        gate.fail(error)
    group.agree(error)
    return result


# ---------------------------------------------------------------------------------------------
# Save


def save_strategy(run):
    """The save strategy as Megatron-LM's save_checkpoint keeps it in checkpointing_context: made
    at the first save (TorchDistSaveShardedStrategy with use_cached_ckpt_structure = --ckpt-assume-
    constant-structure, one thread for a synchronous save, the metadata a load strategy read
    plugged in, wrapped in FullyParallelSaveStrategyWrapper over the data-parallel group: the
    default --ckpt-fully-parallel-save) and reused by every later save of the process. Returns
    (strategy, validate_access_integrity)."""
    from megatron.core.dist_checkpointing.strategies.fully_parallel import \
        FullyParallelSaveStrategyWrapper
    from megatron.core.dist_checkpointing.strategies.torch import TorchDistSaveShardedStrategy
    constant = run.job.assume_constant_structure
    if "save_strategy" in run.context:
        return run.context["save_strategy"], not constant
    strategy = TorchDistSaveShardedStrategy("torch_dist", 1)
    if constant:
        strategy.use_cached_ckpt_structure = constant
        strategy.thread_count = 1
        load_strategy = run.context.get("load_strategy")
        cached = getattr(load_strategy, "cached_global_metadata", None)
        if cached is not None:
            strategy.cached_global_metadata = cached
    wrapper = gated(FullyParallelSaveStrategyWrapper, "save")
    strategy = wrapper(strategy, run.framework.data_parallel_group(), constant)
    run.context["save_strategy"] = strategy
    return strategy, True


def save_checkpoint(run, directory, group):
    """Megatron-LM's save_checkpoint (torch_dist, synchronous) at the loop's iteration; then
    rank 0 names the iteration in the tracker. Returns the reply's fields."""
    from megatron.core import dist_checkpointing
    from megatron.core.dist_checkpointing.utils import _clean_metadata_for_serialization
    from megatron.core.rerun_state_machine import get_rerun_state_machine
    iteration = run.iteration
    ckpt = iter_dir(directory, iteration)

    def prepare():
        refuse_overwrite(directory, iteration)
        prime_optimizers(run)  # an unstepped optimizer (iteration 0)
        rng_state = rng_state_object(run)
        rerun_state = get_rerun_state_machine().state_dict(data_iterator=run.data_iterator,
                                                           ckpt_format="torch_dist")
        metadata = sharded_sd_metadata(run)
        state_dict = generate_state_dict(run, run.optimizer, run.scheduler, rng_state,
                                         iteration=iteration,
                                         optim_sd_kwargs=dict(metadata=metadata),
                                         model_sd_kwargs=dict(metadata=metadata),
                                         rerun_state=rerun_state)
        state_dict["num_floating_point_operations_so_far"] = 0
        content = _clean_metadata_for_serialization(metadata)
        signature = rank_signature(state_dict, content, dist.get_rank())
        if dist.get_rank() == 0:
            ckpt.mkdir(parents=True, exist_ok=True)
        return state_dict, content, signature

    prepared, error = attempt(prepare)
    group.agree(error)  # also: rank 0 made the directory before anyone saves into it
    state_dict, content, signature = prepared
    strategy, validate = save_strategy(run)
    through_gate(group, strategy,
                 lambda: dist_checkpointing.save(state_dict, str(ckpt), strategy,
                                                 validate_access_integrity=validate,
                                                 content_metadata=content))

    def commit():
        if dist.get_rank() == 0:
            write_tracker(directory, iteration)

    _, error = attempt(commit)
    group.agree(error)  # every rank sees the tracker before it goes on
    return {"iteration": iteration, "signature": signature}


# ---------------------------------------------------------------------------------------------
# Load


def read_common(directory, iteration):
    """Megatron-LM's _load_base_checkpoint(rank0=True): the tracker's (or the requested)
    iteration and the checkpoint's common state (dist_checkpointing.load_common_state_dict)."""
    from megatron.core import dist_checkpointing
    iteration, ckpt = iteration_to_load(directory, iteration)
    if not dist_checkpointing.check_is_distributed_checkpoint(str(ckpt)):
        raise AdapterError("NotFound", f"{ckpt} is not a distributed checkpoint")
    return iteration, ckpt, dist_checkpointing.load_common_state_dict(str(ckpt))


class LoadPlan:
    """What Megatron-LM's load_checkpoint decides from the common state and the flags before it
    builds the template (which parts load, the content metadata). The layout it compares is the
    rank's own model's (the framework's parallel_layout; a MIMO run's module's, with the world
    size)."""

    def __init__(self, run, common, flags):
        from megatron.core import dist_checkpointing
        from megatron.core.optimizer import DistributedOptimizer
        from megatron.core.rerun_state_machine import get_rerun_state_machine
        args, finetune = run.args, flags["finetune"]
        ckpt_args = common.get("args")
        get = (lambda name, default: getattr(ckpt_args, name, default))
        ckpt_tp, ckpt_pp, ckpt_dp = run.framework.parallel_layout(ckpt_args)
        run_tp, run_pp, run_dp = run.framework.parallel_layout(args)
        ckpt_tp_pp, run_tp_pp = (ckpt_tp, ckpt_pp), (run_tp, run_pp)
        same_layout = (ckpt_tp_pp == run_tp_pp and get("world_size", 0) == args.world_size
                       and ckpt_dp == run_dp)
        mismatch = f"(TP, PP) mismatch after resume ({run_tp_pp} vs {ckpt_tp_pp} from checkpoint)"
        self.load_rng = (ckpt_tp_pp == run_tp_pp and not finetune and not flags["no_load_rng"]
                         and not get("no_save_rng", False))
        self.load_optim = (not finetune and not flags["no_load_optim"]
                           and not get("no_save_optim", False))
        metadata = dist_checkpointing.load_content_metadata(preloaded_state_dict=common)
        if self.load_optim and args.use_distributed_optimizer:
            if metadata is None:
                metadata = {"distrib_optim_sharding_type": "dp_zero_gather_scatter"}
            kind = metadata["distrib_optim_sharding_type"]
            if (ckpt_tp_pp != run_tp_pp
                    and kind not in DistributedOptimizer.checkpoint_fully_reshardable_formats):
                raise AdapterError("FailedPrecondition",  # Megatron-LM: RuntimeError
                                   f"{mismatch}: not supported for DistributedOptimizer with "
                                   f"sharding type {kind}. Please use `--ckpt-fully-parallel-save`"
                                   " flag during checkpoint saving.")
        self.metadata = dict(metadata or {})
        self.metadata["dp_cp_group"] = run.framework.data_parallel_group()
        self.load_rerun = False
        rsm = get_rerun_state_machine()
        if same_layout and not finetune and "rerun_state_machine" in common:
            self.load_rerun = bool(rsm.validate_state_dict(common["rerun_state_machine"]))


def load_checkpoint(run, directory, iteration, flags, strict, group):
    """Megatron-LM's load_checkpoint (torch_dist) in its order: the common state, the template
    (model; optimizer and scheduler unless --finetune/--no-load-optim; RNG unless --finetune/
    --no-load-rng or another TP/PP; the rerun state machine's when the checkpoint's machine
    awaits a rerun and the layout is the same), dist_checkpointing.load, then the model's,
    optimizer's and scheduler's load_state_dict (reload_model_params without the optimizer), the
    rerun state machine, the RNG, the data position and the iteration (0 under --finetune).
    Then the framework's post-load step. Returns the loop's iteration."""
    from megatron.core import dist_checkpointing
    from megatron.core.dist_checkpointing.validation import StrictHandling
    from megatron.core.rerun_state_machine import get_rerun_state_machine

    def prepare():
        found = read_common(directory, iteration)
        plan = LoadPlan(run, found[2], flags)
        if plan.load_optim:
            prime_optimizers(run)
        rsm = get_rerun_state_machine()
        rerun = (rsm.state_dict(data_iterator=None, ckpt_format="torch_dist", force=True)
                 if plan.load_rerun else None)
        template = generate_state_dict(
            run, run.optimizer if plan.load_optim else None,
            run.scheduler if plan.load_optim else None,
            rng_state_object(run) if plan.load_rng else None,
            optim_sd_kwargs=dict(metadata=plan.metadata, is_loading=True),
            model_sd_kwargs=dict(metadata=plan.metadata), rerun_state=rerun)
        return found, plan, template

    prepared, error = attempt(prepare)
    group.agree(error)
    (iteration, ckpt, common), plan, template = prepared
    strategy = load_strategy(run)

    def load():
        loaded = dist_checkpointing.load(template, str(ckpt), strategy,
                                         strict=StrictHandling(strict))
        if isinstance(loaded, tuple):  # the return_* modes: (state dict, missing, unexpected)
            loaded = loaded[0]
        return loaded

    loaded = through_gate(group, strategy, load)
    _, error = attempt(lambda: restore(run, loaded, plan, flags))
    group.agree(error)
    return run.iteration


def load_strategy(run):
    """Megatron-LM's _load_global_dist_base_checkpoint: TorchDistLoadShardedStrategy, with
    cache_metadata = --ckpt-assume-constant-structure where the strategy takes it (megatron-core
    0.16's takes no argument), kept in checkpointing_context (a later save plugs in the metadata
    it read)."""
    from megatron.core.dist_checkpointing.strategies.torch import TorchDistLoadShardedStrategy
    kw = {}
    if "cache_metadata" in inspect.signature(TorchDistLoadShardedStrategy.__init__).parameters:
        kw["cache_metadata"] = run.job.assume_constant_structure
    strategy = gated(TorchDistLoadShardedStrategy, "load")(**kw)
    run.context["load_strategy"] = strategy
    return strategy


def restore(run, state_dict, plan, flags):
    """The part of load_checkpoint after dist_checkpointing.load (see load_checkpoint)."""
    from megatron.core import tensor_parallel
    from megatron.core.rerun_state_machine import get_rerun_state_machine
    finetune = flags["finetune"]
    if state_dict.get("checkpoint_version", 0) != CHECKPOINT_VERSION:
        version = state_dict.get("checkpoint_version")
        raise AdapterError("Corruption", f"checkpoint_version {version}, expected "
                                         f"{CHECKPOINT_VERSION}")
    iteration = 0 if finetune else state_dict["iteration"]
    if "args" in state_dict and not finetune:
        ckpt_args = state_dict["args"]
        run.framework.check_checkpoint_args(ckpt_args, run.args)
        run.args.consumed_train_samples = getattr(ckpt_args, "consumed_train_samples", 0)
        run.args.skipped_train_samples = getattr(ckpt_args, "skipped_train_samples", 0)
        run.args.consumed_valid_samples = getattr(ckpt_args, "consumed_valid_samples", 0)
    load_model_state_dict(run.framework.model_to_load(run.model), state_dict["model"])
    if plan.load_optim:
        run.optimizer.load_state_dict(state_dict["optimizer"])
        if run.scheduler is not None:
            run.scheduler.load_state_dict(state_dict["opt_param_scheduler"])
    elif run.args.fp16 or run.args.bf16:
        run.optimizer.reload_model_params()
    restored_rerun = False
    if plan.load_rerun and "rerun_state_machine" in state_dict:
        try:
            get_rerun_state_machine().load_state_dict(state_dict["rerun_state_machine"])
            restored_rerun = True
        except Exception as e:  # Megatron-LM: "Unable to restore RerunMachine ... Skipping."
            logging.getLogger(__name__).warning(f"Unable to restore RerunMachine from checkpoint: "
                                                f"{e}. Skipping.")
    if plan.load_rng and "rng_state" in state_dict:
        restore_rng(state_dict["rng_state"][0], tensor_parallel)
    for group in run.optimizer.param_groups:  # Megatron-LM's 'default_config' patch
        group.setdefault("default_config", True)
    run.iteration = iteration
    run.data_iterator = None  # Megatron-LM builds its data iterators after the load
    if not restored_rerun:
        enter_loop(run)
    run.framework.post_load(run.optimizer)


def load_model_state_dict(module, state_dict):
    """Megatron-LM's load_model_state_dict: strict, and on an error again without strict."""
    try:
        module.load_state_dict(state_dict, strict=True)
    except Exception as e:
        result = module.load_state_dict(state_dict, strict=False)
        print(f"load_return: {result} (strict load failed: {type(e).__name__}: {e})",
              file=sys.stderr)


def restore_rng(rng_state, tensor_parallel):
    """Megatron-LM's RNG restore: python, numpy, torch, CUDA, then the CUDA tracker's states
    (an empty tracker is Megatron-LM's 'Unable to load rng state')."""
    random.setstate(rng_state["random_rng_state"])
    np.random.set_state(rng_state["np_rng_state"])
    torch.set_rng_state(rng_state["torch_rng_state"])
    torch.cuda.set_rng_state(rng_state["cuda_rng_state"])
    if not rng_state["rng_tracker_states"]:
        raise AdapterError("Corruption", "Unable to load rng state from checkpoint: no CUDA RNG "
                                         "tracker states")
    tracker = tensor_parallel.get_cuda_rng_tracker()
    graph_safe = tensor_parallel.is_graph_safe_cuda_rng_tracker(tracker)
    tracker.set_states({k: tensor_parallel.convert_cuda_rng_state(v, to_graphable=graph_safe)
                        for k, v in rng_state["rng_tracker_states"].items()})
