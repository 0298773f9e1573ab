"""The observation of a run (docs/PROTOCOL.md, "Framework adapters", observe): what the rank holds
now, changing nothing (no RNG draw, no optimizer or scheduler call that changes state).

The optimizer is seen through the run's framework (gpt.py's contract): module_optimizers (the
run's one optimizer; in a MIMO run, mimo.py, the optimizer of the rank's module inside the
MimoOptimizer) and tensor_parallel_rank.

Copies per parameter (full names, params.ParamTable), each the digest
(ckptspec_framework_kit.digest) of the elements this rank counts:
  model       the model weights (params.ParamTable.counted)
  main        the fp32 master copies: the distributed optimizer's shard_fp32_from_float16 shards
              (each DP rank its own shard, by _get_model_param_range_map), the
              HybridDeviceOptimizer's fp32 copies under the precision-aware optimizer (which keeps
              no shard of its own), Float16OptimizerWithFloat16Params' fp32_from_float16 copies;
              absent for an fp32 model stepped in place
  offload     the HybridDeviceOptimizer's CPU copies of offloaded shards (gpu_params_map_cpu_copy)
  exp_avg, exp_avg_sq
              Adam's moments (the inner optimizer's state of the parameter's shard or copy)
param_steps   torch AdamW's per-parameter step, where it keeps one
groups        every param group of every sub-optimizer (the ChainedOptimizer's leaves, named by
              their index; in a MIMO run by the module's name and the index, "vision.0"), the
              model parameters whose shard or copy the group holds on this rank, its
              hyper-parameters and identity fields
scheduler     OptimizerParamScheduler.state_dict()
rng           a 64-bit digest of python's, numpy's, torch's, the CUDA generator's and the CUDA RNG
              tracker's states
consumed_samples, iteration, rerun (mode, state, current iteration, and a digest of the rank-level
              fields the machine would persist)
"""
import hashlib
import pickle
import random
from enum import Enum

import numpy as np
import torch

from ckptspec_framework_kit import MASK, digest, fp32_bits, hex_digest

IDENTITY_FIELDS = ("wd_mult", "lr_mult", "is_expert_parallel", "is_decoupled_lr", "max_lr",
                   "min_lr")


def digest_of(index, values):
    """The protocol's digest of `values` (any float tensor) at whole-parameter indices `index`."""
    values = values.detach().reshape(-1).to(torch.float32).cpu().numpy()
    return digest(index.reshape(-1).numpy(), fp32_bits(values))


def add(copies, kind, name, d):
    copies[kind][name] = (copies[kind].get(name, 0) + d) & MASK


def leaves(optimizer):
    """The leaf optimizers of a (Chained)MegatronOptimizer, in order."""
    return list(getattr(optimizer, "chained_optimizers", None) or [optimizer])


def named_leaves(run):
    """[(the leaf's name in the observation's groups, leaf optimizer)] of the rank's module
    optimizers, in order: the leaf's index, after its module's name where the module has one."""
    out = []
    for module, optimizer in run.framework.module_optimizers(run.optimizer):
        for k, leaf in enumerate(leaves(optimizer)):
            out.append((str(k) if module is None else f"{module}.{k}", leaf))
    return out


def _float(v):
    if isinstance(v, torch.Tensor):
        return float(v.item())
    return None if v is None else float(v)


class LeafView:
    """One leaf optimizer seen per model parameter: the tensor its inner optimizer steps for the
    parameter (a shard or a copy), which elements of the whole parameter that tensor holds, and
    the fp32 master and CPU copies kept for it."""

    def __init__(self, leaf, table):
        from megatron.core.optimizer.cpu_offloading import HybridDeviceOptimizer
        self.leaf, self.table = leaf, table
        self.inner = getattr(leaf, "optimizer", None)
        self.hdo = self.inner if isinstance(self.inner, HybridDeviceOptimizer) else None
        self.items = []  # (model param entry, inner tensor, index of its elements, main or None)
        if self.inner is None:
            return
        if hasattr(leaf, "model_param_group_index_map"):
            self._distributed()
        elif hasattr(leaf, "float16_groups"):
            self._float16()
        else:
            self._fp32()

    def _distributed(self):
        leaf = self.leaf
        for model_param, (gi, go) in leaf.model_param_group_index_map.items():
            entry = self.table.of(model_param)
            shard = self.inner.param_groups[gi]["params"][go]
            r = leaf._get_model_param_range_map(model_param)["param"]
            index = entry.index.reshape(-1)[r.start:r.end]
            main = None
            if shard.dtype == torch.float32 and model_param.dtype != torch.float32:
                main = shard  # shard_fp32_from_float16: the fp32 master shard
            elif self.hdo is not None and shard in self.hdo.param_to_fp32_param:
                main = self.hdo.param_to_fp32_param[shard]  # precision-aware: HDO's fp32 copy
            self.items.append((entry, shard, index, main))

    def _float16(self):
        leaf = self.leaf
        mains = {}
        for model_group, main_group in zip(leaf.float16_groups, leaf.fp32_from_float16_groups):
            for model_param, main in zip(model_group, main_group):
                mains[id(main)] = (model_param, main)
        for group in leaf.fp32_from_fp32_groups:
            for p in group:
                mains[id(p)] = (p, None)
        for group in self.inner.param_groups:
            for p in group["params"]:
                model_param, main = mains[id(p)]
                entry = self.table.of(model_param)
                self.items.append((entry, p, entry.index, main))

    def _fp32(self):
        for group in self.inner.param_groups:
            for p in group["params"]:
                entry = self.table.of(p)
                self.items.append((entry, p, entry.index, None))

    def state_of(self, inner_tensor):
        state = self.inner.state.get(inner_tensor)
        return state or {}

    def model_params_of_group(self, gi):
        """The full names of the model parameters whose shard or copy group `gi` holds (a tied
        copy by its checkpoint name: the word embedding's)."""
        held = {id(p) for p in self.inner.param_groups[gi]["params"]}
        return [entry.checkpoint_name or entry.name for entry, t, _, _ in self.items
                if id(t) in held]


def counted_here(run, entry, view):
    """Whether this rank counts the optimizer's copy of this parameter: the distributed
    optimizer's shards are each counted by the rank that holds them (by TP rank 0 for a parameter
    TP does not split); a whole copy (non-distributed optimizer) as the model copy is."""
    if entry.tied_copy:
        return False
    if hasattr(view.leaf, "model_param_group_index_map"):
        split = bool(getattr(entry.param, "tensor_model_parallel", False))
        return split or run.framework.tensor_parallel_rank() == 0
    return entry.counted


def copies(run):
    """The digests of model, main, offload, exp_avg and exp_avg_sq, and param_steps."""
    out = {k: {} for k in ("model", "main", "offload", "exp_avg", "exp_avg_sq")}
    steps = {}
    for entry in run.table:
        if entry.counted:
            add(out, "model", entry.name, digest_of(entry.index, entry.param))
    for _, leaf in named_leaves(run):
        view = LeafView(leaf, run.table)
        for entry, tensor, index, main in view.items:
            state = view.state_of(tensor)
            if "step" in state and not entry.tied_copy:
                steps[entry.name] = int(_float(state["step"]))
            if not counted_here(run, entry, view):
                continue
            if main is not None:
                add(out, "main", entry.name, digest_of(index, main))
            if view.hdo is not None and tensor in view.hdo.gpu_params_map_cpu_copy:
                add(out, "offload", entry.name,
                    digest_of(index, view.hdo.gpu_params_map_cpu_copy[tensor]))
            for key in ("exp_avg", "exp_avg_sq"):
                if key in state:
                    add(out, key, entry.name, digest_of(index, state[key]))
    hexed = {k: {n: hex_digest(d) for n, d in v.items()} for k, v in out.items()}
    return hexed, steps


def keeps_param_steps(view):
    """Whether the leaf's inner optimizer (or every sub-optimizer of a HybridDeviceOptimizer) is
    torch's Adam/AdamW, which keeps its step per parameter and reads no group step."""
    inners = view.hdo.sub_optimizers if view.hdo is not None else [view.inner]
    return all(isinstance(o, (torch.optim.Adam, torch.optim.AdamW)) for o in inners)


def group_step(view, group):
    """The group's step counter, or None where the optimizer keeps none per group (torch's Adam:
    a 'step' key megatron's state_dict adds to such a group for the checkpoint is not one)."""
    if keeps_param_steps(view) or group.get("step") is None:
        return None
    return int(_float(group["step"]))


def groups(run):
    """Every param group of every leaf optimizer, in order (see the module docstring)."""
    out = []
    for name, leaf in named_leaves(run):
        view = LeafView(leaf, run.table)
        if view.inner is None:
            continue
        for gi, group in enumerate(view.inner.param_groups):
            betas = group.get("betas", (None, None))
            g = {"optimizer": name, "params": view.model_params_of_group(gi),
                 "lr": _float(group.get("lr")), "weight_decay": _float(group.get("weight_decay")),
                 "beta1": _float(betas[0]), "beta2": _float(betas[1]),
                 "eps": _float(group.get("eps")),
                 "step": group_step(view, group)}
            for field in IDENTITY_FIELDS:
                if field in group:
                    v = group[field]
                    g[field] = v if isinstance(v, bool) or v is None else float(v)
            out.append(g)
    return out


def canonical(x):
    """x with tensors and arrays as (dtype, shape, bytes), ShardedObjects as (key, data), enum
    members by name and tuples as lists: a form whose pickle depends on the values only."""
    from megatron.core.dist_checkpointing.mapping import ShardedObject
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().contiguous()
        raw = x.view(-1).view(torch.uint8).numpy().tobytes()
        return ["tensor", str(x.dtype), list(x.shape), raw]
    if isinstance(x, np.ndarray):
        return ["ndarray", str(x.dtype), list(x.shape), np.ascontiguousarray(x).tobytes()]
    if isinstance(x, ShardedObject):
        return ["ShardedObject", x.key, canonical(x.data)]
    if isinstance(x, Enum):
        return f"{type(x).__name__}.{x.name}"
    if isinstance(x, dict):
        return {str(k): canonical(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [canonical(v) for v in x]
    return x


def digest64(obj):
    """The first 64 bits of sha256 of obj's canonical form pickled, as 16 hex digits."""
    return hashlib.sha256(pickle.dumps(canonical(obj), protocol=4)).hexdigest()[:16]


def rng_digest():
    """Every RNG state the rank keeps (the ones Megatron-LM's checkpoint saves)."""
    from megatron.core import tensor_parallel
    tracker = tensor_parallel.get_cuda_rng_tracker().get_states()
    return digest64({"random": random.getstate(), "numpy": np.random.get_state(),
                     "torch": torch.get_rng_state(), "cuda": torch.cuda.get_rng_state(),
                     "tracker": {k: tracker[k] for k in sorted(tracker)}})


def rerun(run):
    """The rerun state machine's mode, state, current iteration and a digest of the rank-level
    fields a save would store of it (the data of its 'sharded' ShardedObject; None where the
    machine would store nothing: disabled, or megatron-core 0.16-0.17 in the steady state). Before
    the run has a data iterator (after a build or load, before the first train), the data
    iterator checkpoint is the one the machine holds (a restored machine's loaded one), where
    state_dict would read the iterator that does not exist yet."""
    from megatron.core.rerun_state_machine import get_rerun_state_machine
    rsm = get_rerun_state_machine()
    persisted = rsm.state_dict(data_iterator=run.data_iterator, ckpt_format="torch_dist")
    sharded = dict(persisted["sharded"].data) if persisted else None
    if sharded is not None and run.data_iterator is None:
        sharded["data_iterator_checkpoints"] = rsm.data_iterator_checkpoints
    return {"mode": rsm.mode.value, "state": rsm.state.name,
            "current_iteration": rsm.current_iteration, "digest": digest64(sharded)}


def observe(run):
    """The reply's observation."""
    hexed, steps = copies(run)
    obs = {"iteration": run.iteration, **hexed, "param_steps": steps, "groups": groups(run),
           "rng": rng_digest(), "consumed_samples": run.args.consumed_train_samples,
           "rerun": rerun(run)}
    if run.scheduler is not None:
        obs["scheduler"] = scheduler(run.scheduler)
    return obs


SCHEDULER_INTS = ("num_steps", "lr_warmup_steps", "lr_decay_steps", "wd_incr_steps")
SCHEDULER_STRINGS = ("lr_decay_style", "wd_incr_style")


def scheduler(s):
    """OptimizerParamScheduler.state_dict(): steps as integers, styles as strings, the rest as
    numbers."""
    out = {}
    for k, v in s.state_dict().items():
        out[k] = (int(v) if k in SCHEDULER_INTS else v if k in SCHEDULER_STRINGS else float(v))
    return out
