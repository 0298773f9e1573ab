"""The observation of a MIMO run (mimo.py), as observe.py makes it for a GPT run, with the
MimoOptimizer seen through its module optimizers:

  model, main, offload, exp_avg, exp_avg_sq, param_steps
              per parameter of the rank's module (full names "<module>.<name>"), counted once over
              the world: the model copy by the module's DP rank 0 (and TP rank 0 for a parameter
              TP does not split), the distributed optimizer's shards by the rank that holds them
  groups      every param group of every leaf optimizer of the rank's module optimizer, in
              order; "optimizer" names the module and the leaf ("vision.0", "language.0")
  scheduler, rng, consumed_samples, iteration, rerun
              as observe.py
"""
from ckptspec_framework_kit import hex_digest
from observe import (IDENTITY_FIELDS, LeafView, _float, add, digest_of, group_step, leaves,
                     rerun, rng_digest, scheduler)


def module_leaves(run):
    """[(optimizer name, leaf optimizer)] of the rank's module optimizers, in order."""
    out = []
    for name, optimizer in run.framework.module_optimizers(run.optimizer):
        for k, leaf in enumerate(leaves(optimizer)):
            out.append((f"{name}.{k}", leaf))
    return out


def counted_here(run, entry, view):
    """observe.counted_here with the module's TP rank."""
    if entry.tied_copy:
        return False
    if hasattr(view.leaf, "model_param_group_index_map"):
        split = bool(getattr(entry.param, "tensor_model_parallel", False))
        return split or run.framework.own.pg.tp.rank() == 0
    return entry.counted


def copies(run):
    out = {k: {} for k in ("model", "main", "offload", "exp_avg", "exp_avg_sq")}
    steps = {}
    for entry in run.table:
        if entry.counted:
            add(out, "model", entry.name, digest_of(entry.index, entry.param))
    for _, leaf in module_leaves(run):
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


def groups(run):
    out = []
    for name, leaf in module_leaves(run):
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


def observe(run):
    """The reply's observation."""
    hexed, steps = copies(run)
    obs = {"iteration": run.iteration, **hexed, "param_steps": steps, "groups": groups(run),
           "rng": rng_digest(), "consumed_samples": run.args.consumed_train_samples,
           "rerun": rerun(run)}
    if run.scheduler is not None:
        obs["scheduler"] = scheduler(run.scheduler)
    return obs
