"""Save and load of a MIMO run (mimo.py) in Megatron-LM's order (checkpointing.py's save_checkpoint
and load_checkpoint), with what Megatron-LM's save_checkpoint/load_checkpoint take for a model of
several process-group grids (its heterogeneous MIMO training passes the rank's module's groups and
a per-grid key prefix of the RNG object):

  - the content metadata's dp_cp_group, the fully-parallel save's group and the RNG object's
    replica id: the module's data-parallel (with context-parallel) group; the RNG object's shape
    and offset: the module's (PP, TP) sizes and ranks; its key: "encoder.rng_state" or
    "language.rng_state";
  - the state dict: args, checkpoint_version, iteration, MimoModel.sharded_state_dict, the
    MimoOptimizer's sharded_state_dict (given the state dict), the scheduler's state, the rerun
    state machine's, the RNG object; on load the same template, dist_checkpointing.load, then
    MimoModel.load_state_dict, MimoOptimizer.load_state_dict and the scheduler's (the MIMO
    optimizer's own extraction and restoration of param groups, grad scaler and sharding type run
    unchanged);
  - the load's decisions (RNG, optimizer format, rerun machine) compare the rank's own module's
    layout (args.mimo_modules) where Megatron-LM compares the job's one layout; the rerun machine
    loads where the world and the module's TP, PP and DP are unchanged.

save_checkpoint(run, directory, group) -> {"iteration", "signature"}
load_checkpoint(run, directory, iteration, flags, strict, group) -> the loop's iteration
"""
import inspect
import logging
import random
import sys
import traceback

import numpy as np
import torch
import torch.distributed as dist

import cpu_shims
from checkpointing import (CHECKPOINT_VERSION, check_checkpoint_args, load_model_state_dict,
                           rank_signature, read_common, restore_rng)
from ckptspec_adapter_kit import AdapterError, iter_dir, refuse_overwrite, write_tracker
from errors import attempt, failure, from_exception
from ckptspec_megatron_core_adapter import Gate, gated  # noqa: E402  (errors.py's path)
from loop import enter_loop


def own(run):
    return run.framework.own


def prime(run):
    """cpu_shims.prime_torch_adam_state for every module optimizer of this rank (the
    MimoOptimizer keeps them in module_infos)."""
    for _, optimizer in run.framework.module_optimizers(run.optimizer):
        cpu_shims.prime_torch_adam_state(optimizer)


def sharded_sd_metadata(run):
    """checkpointing.sharded_sd_metadata with the module's data-parallel group."""
    metadata = {}
    if run.job.optimizer.distributed:
        metadata["distrib_optim_sharding_type"] = run.job.optimizer.format
        if run.job.optimizer.format == "fully_reshardable":
            metadata["distrib_optim_fully_reshardable_mem_efficient"] = False
    metadata["singleton_local_shards"] = False
    metadata["chained_optim_avoid_prefix"] = True
    metadata["dp_cp_group"] = own(run).pg.dp_cp
    return metadata


def rng_key_prefix(run):
    """Megatron-LM's per-grid prefix of the RNG object's key (its MIMO builder's
    rng_state_key_prefix)."""
    return "language." if own(run).is_language else "encoder."


def rng_state_object(run):
    """Megatron-LM's get_rng_state(torch_dist, tp_group, pp_group, dp_cp_group, key_prefix) with
    the module's groups."""
    from megatron.core import tensor_parallel
    from megatron.core.dist_checkpointing.mapping import ShardedObject
    pg = own(run).pg
    rng_state = {"random_rng_state": random.getstate(),
                 "np_rng_state": np.random.get_state(),
                 "torch_rng_state": torch.get_rng_state(),
                 "cuda_rng_state": torch.cuda.get_rng_state(),
                 "rng_tracker_states": tensor_parallel.get_cuda_rng_tracker().get_states()}
    return ShardedObject(f"{rng_key_prefix(run)}rng_state", [rng_state],
                         (pg.pp.size(), pg.tp.size()), (pg.pp.rank(), pg.tp.rank()),
                         replica_id=pg.dp_cp.rank())


def generate_state_dict(run, optimizer, scheduler, rng_state, iteration=None,
                        optim_sd_kwargs=None, model_sd_kwargs=None, rerun_state=None):
    """checkpointing.generate_state_dict with the MimoModel's sharded state dict."""
    state_dict = {"args": run.args, "checkpoint_version": CHECKPOINT_VERSION}
    if iteration is not None:
        state_dict["iteration"] = iteration
    state_dict["model"] = run.framework.mimo.sharded_state_dict(**(model_sd_kwargs or {}))
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
# Save


def save_strategy(run):
    """checkpointing.save_strategy over the module's data-parallel group."""
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
        cached = getattr(run.context.get("load_strategy"), "cached_global_metadata", None)
        if cached is not None:
            strategy.cached_global_metadata = cached
    wrapper = gated(FullyParallelSaveStrategyWrapper, "save")
    strategy = wrapper(strategy, own(run).pg.dp_cp, constant)
    run.context["save_strategy"] = strategy
    return strategy, True


def save_checkpoint(run, directory, group):
    """checkpointing.save_checkpoint for a MIMO run (see the module docstring)."""
    from megatron.core import dist_checkpointing
    from megatron.core.dist_checkpointing.utils import _clean_metadata_for_serialization
    from megatron.core.rerun_state_machine import get_rerun_state_machine
    iteration = run.iteration
    ckpt = iter_dir(directory, iteration)

    def prepare():
        refuse_overwrite(directory, iteration)
        prime(run)  # an unstepped optimizer (iteration 0)
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
    group.agree(error)
    state_dict, content, signature = prepared
    strategy, validate = save_strategy(run)
    gate = Gate(group, True)
    strategy.ckptspec_gate = gate
    error = None
    try:
        dist_checkpointing.save(state_dict, str(ckpt), strategy,
                                validate_access_integrity=validate, content_metadata=content)
    except BaseException as e:
        if not failure(e):
            raise
        traceback.print_exc(file=sys.stderr)
        group.check(e)
        error = from_exception(e)
        gate.fail(error)
    group.agree(error)

    def commit():
        if dist.get_rank() == 0:
            write_tracker(directory, iteration)

    _, error = attempt(commit)
    group.agree(error)
    return {"iteration": iteration, "signature": signature}


# ---------------------------------------------------------------------------------------------
# Load


class LoadPlan:
    """checkpointing.LoadPlan with the rank's own module's layout in place of the job's."""

    def __init__(self, run, common, flags):
        from megatron.core import dist_checkpointing
        from megatron.core.optimizer import DistributedOptimizer
        from megatron.core.rerun_state_machine import get_rerun_state_machine
        finetune = flags["finetune"]
        fw = run.framework
        ckpt_args = common.get("args")
        saved = fw.own_module_args(ckpt_args) or {}
        now = fw.own_module_args(run.args)

        def get(entry, name, default):
            return entry.get(name, default)

        ckpt_tp_pp = (get(saved, "tensor_model_parallel_size", 1),
                      get(saved, "pipeline_model_parallel_size", 1))
        run_tp_pp = (now["tensor_model_parallel_size"], now["pipeline_model_parallel_size"])
        same_layout = (ckpt_tp_pp == run_tp_pp
                       and getattr(ckpt_args, "world_size", 0) == run.args.world_size
                       and get(saved, "data_parallel_size", 0) == now["data_parallel_size"])
        mismatch = f"(TP, PP) mismatch after resume ({run_tp_pp} vs {ckpt_tp_pp} from checkpoint)"
        self.load_rng = (ckpt_tp_pp == run_tp_pp and not finetune and not flags["no_load_rng"]
                         and not getattr(ckpt_args, "no_save_rng", False))
        self.load_optim = (not finetune and not flags["no_load_optim"]
                           and not getattr(ckpt_args, "no_save_optim", False))
        metadata = dist_checkpointing.load_content_metadata(preloaded_state_dict=common)
        if self.load_optim and run.args.use_distributed_optimizer:
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
        self.metadata["dp_cp_group"] = own(run).pg.dp_cp
        self.load_rerun = False
        if same_layout and not finetune and "rerun_state_machine" in common:
            rsm = get_rerun_state_machine()
            self.load_rerun = bool(rsm.validate_state_dict(common["rerun_state_machine"]))


def check_module_args(run, ckpt_args):
    """Megatron-LM's check_checkpoint_args, for the rank's module: the checkpoint's entry of the
    module must have its num_layers, hidden_size and num_attention_heads."""
    saved = run.framework.own_module_args(ckpt_args)
    now = run.framework.own_module_args(run.args)
    assert saved is not None, (f"module '{now['name']}' is not in the checkpoint's args "
                               f"({[e.get('name') for e in getattr(ckpt_args, 'mimo_modules', [])]})")
    for name in ("num_layers", "hidden_size", "num_attention_heads"):
        assert saved[name] == now[name], (
            f"{name} value from checkpoint ({saved[name]}) is not equal to the input argument "
            f"value ({now[name]}) (module '{now['name']}').")
    check_checkpoint_args(ckpt_args, run.args)


def load_strategy(run):
    """checkpointing.load_strategy."""
    from megatron.core.dist_checkpointing.strategies.torch import TorchDistLoadShardedStrategy
    kw = {}
    if "cache_metadata" in inspect.signature(TorchDistLoadShardedStrategy.__init__).parameters:
        kw["cache_metadata"] = run.job.assume_constant_structure
    strategy = gated(TorchDistLoadShardedStrategy, "load")(**kw)
    run.context["load_strategy"] = strategy
    return strategy


def load_checkpoint(run, directory, iteration, flags, strict, group):
    """checkpointing.load_checkpoint for a MIMO run (see the module docstring)."""
    from megatron.core import dist_checkpointing
    from megatron.core.dist_checkpointing.validation import StrictHandling
    from megatron.core.rerun_state_machine import get_rerun_state_machine

    def prepare():
        found = read_common(directory, iteration)
        plan = LoadPlan(run, found[2], flags)
        if plan.load_optim:
            prime(run)
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
    gate = Gate(group, True)
    strategy.ckptspec_gate = gate
    loaded, error = None, None
    try:
        loaded = dist_checkpointing.load(template, str(ckpt), strategy,
                                         strict=StrictHandling(strict))
        if isinstance(loaded, tuple):  # the return_* modes: (state dict, missing, unexpected)
            loaded = loaded[0]
    except BaseException as e:
        if not failure(e):
            raise
        traceback.print_exc(file=sys.stderr)
        group.check(e)
        error = from_exception(e)
        gate.fail(error)
    group.agree(error)
    _, error = attempt(lambda: restore(run, loaded, plan, flags))
    group.agree(error)
    return run.iteration


def restore(run, state_dict, plan, flags):
    """checkpointing.restore for a MIMO run: MimoModel.load_state_dict (strict, then not),
    MimoOptimizer.load_state_dict and the scheduler's (reload_model_params without the optimizer),
    the rerun machine, the RNG, the data position, the iteration."""
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
        check_module_args(run, ckpt_args)
        run.args.consumed_train_samples = getattr(ckpt_args, "consumed_train_samples", 0)
        run.args.skipped_train_samples = getattr(ckpt_args, "skipped_train_samples", 0)
        run.args.consumed_valid_samples = getattr(ckpt_args, "consumed_valid_samples", 0)
    load_model_state_dict(run.framework.mimo, state_dict["model"])
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
    run.data_iterator = None
    if not restored_rerun:
        enter_loop(run)
    run.framework.post_load(run.optimizer)
