"""What hello's "framework" member declares (docs/PROTOCOL.md, "Framework adapters", hello),
computed from the installed megatron-core: a feature is declared only where this version has the
mechanism it needs (branching on features, never on version strings).

  parallelism   tp, pp (context parallelism needs Transformer Engine's attention; experts are not
                built by this adapter)
  max_modules   2 where megatron-core has the MIMO model and get_mimo_optimizer (mimo.py), else 1
  dtypes        fp32, bf16, fp16
  model         gated_linear_unit, add_bias, untied_embeddings, query_groups; pipeline_split where
                TransformerConfig has num_layers_in_first/last_pipeline_stage
  optimizer     distributed, frozen; cpu_offload where the HybridDeviceOptimizer exists and an
                OptimizerConfig with CPU offload can be made here (with the precision-aware
                optimizer, as Megatron-LM requires, or without it under Megatron-Bridge);
                lr_bounds and decoupled_lr where get_megatron_optimizer takes config_overrides with
                ParamKey predicates and OptimizerConfig has decoupled_lr; lr_mult only where
                OptimizerParamScheduler applies a group's lr_mult to its lr (megatron-core 0.16
                through 0.19 keep lr_mult as an identity field only: see --lr-mult-identity-only)
  optimizer_formats
                dp_reshardable, and fully_reshardable where DistributedOptimizer lists it among
                checkpoint_fully_reshardable_formats
  rerun_modes   those of megatron's RerunMode the protocol names
"""
import dataclasses
import inspect

RERUN_MODES = ("disabled", "validate_results", "report_determinism_stats")
LOAD_FLAGS = ["finetune", "no_load_optim", "no_load_rng", "override_scheduler",
              "use_checkpoint_scheduler"]


def scheduler_applies_lr_mult():
    """Whether OptimizerParamScheduler.step scales a group's lr by its lr_mult."""
    from megatron.core.optimizer_param_scheduler import OptimizerParamScheduler
    return "lr_mult" in inspect.getsource(OptimizerParamScheduler.step)


def has_config_overrides():
    from megatron.core import optimizer
    params = inspect.signature(optimizer.get_megatron_optimizer).parameters
    return ("config_overrides" in params and hasattr(optimizer, "ParamKey")
            and hasattr(optimizer, "get_standard_config_overrides"))


def offload_config_builds(precision_aware):
    """Whether this megatron-core makes an OptimizerConfig with CPU offload (and the precision-
    aware optimizer as asked) here: 0.16's __post_init__ asks Transformer Engine's version for
    the precision-aware optimizer, which fails without Transformer Engine."""
    from megatron.core.optimizer import OptimizerConfig
    try:
        OptimizerConfig(optimizer="adam", bf16=True, use_distributed_optimizer=True,
                        optimizer_cpu_offload=True, optimizer_offload_fraction=1.0,
                        use_precision_aware_optimizer=precision_aware)
    except Exception:
        return False
    return True


def optimizer_features(lr_mult_identity_only, bridge):
    from megatron.core.optimizer import OptimizerConfig
    fields = {f.name for f in dataclasses.fields(OptimizerConfig)}
    features = ["distributed"]
    try:
        from megatron.core.optimizer.cpu_offloading import HybridDeviceOptimizer  # noqa: F401
        if ({"optimizer_cpu_offload", "optimizer_offload_fraction"} <= fields
                and offload_config_builds(bridge is None or bridge.precision_aware)):
            features.append("cpu_offload")
    except ImportError:
        pass
    overrides = has_config_overrides()
    if overrides and (scheduler_applies_lr_mult() or lr_mult_identity_only):
        features.append("lr_mult")
    if overrides:
        features.append("lr_bounds")
    if "decoupled_lr" in fields:
        features.append("decoupled_lr")
    features.append("frozen")
    return features


def model_features():
    from megatron.core.transformer.transformer_config import TransformerConfig
    fields = {f.name for f in dataclasses.fields(TransformerConfig)}
    features = ["gated_linear_unit", "add_bias", "untied_embeddings", "query_groups"]
    if {"num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage"} <= fields:
        features.append("pipeline_split")
    return features


def optimizer_formats():
    from megatron.core.optimizer.distrib_optimizer import DistributedOptimizer
    formats = ["dp_reshardable"]
    if "fully_reshardable" in getattr(DistributedOptimizer, "checkpoint_fully_reshardable_formats",
                                      ()):
        formats.append("fully_reshardable")
    return formats


def rerun_modes():
    from megatron.core.rerun_state_machine import RerunMode
    values = {m.value for m in RerunMode}
    return [m for m in RERUN_MODES if m in values]


def max_modules(bridge):
    """2 where this megatron-core has the MIMO model and get_mimo_optimizer (mimo.py; 0.17.0+)
    and no Megatron-Bridge release is set up, else 1."""
    import mimo
    return 2 if bridge is None and mimo.supported() else 1


def framework_member(args, bridge, fidelity):
    """hello's "framework" member for this process (args: the adapter's command line)."""
    import megatron.core
    library = f"megatron-core {getattr(megatron.core, '__version__', '?')}"
    if bridge is not None:
        library += f" with Megatron-Bridge {bridge.version}"
    lines = list(fidelity)
    if bridge is not None:
        lines.append(bridge.fidelity())
    if max_modules(bridge) > 1:
        import mimo
        lines.extend(mimo.FIDELITY)
        if not args.raw_torch_adam:
            lines.append(mimo.STEP_LINE)
    if args.lr_mult_identity_only and not scheduler_applies_lr_mult():
        lines.append("lr_mult: megatron-core's scheduler does not scale a group's lr by its "
                     "lr_mult; the job's lr_mult is a param-group identity field only")
    return undeclare({"library": library, "max_world_size": args.max_world_size,
                      "parallelism": ["tp", "pp"], "max_modules": max_modules(bridge),
                      "dtypes": ["bf16", "fp16", "fp32"], "model": model_features(),
                      "optimizer": optimizer_features(args.lr_mult_identity_only, bridge),
                      "optimizer_formats": optimizer_formats(), "load_flags": list(LOAD_FLAGS),
                      "rerun_modes": rerun_modes(), "signatures": True, "options": {},
                      "fidelity": lines}, getattr(args, "undeclare", None) or [])


def undeclare(member, names):
    """`member` without `names` in any of its lists of features (the adapter's --undeclare): a job
    then never asks for them. A name that none of the lists has is an error, so a typo cannot
    leave a run wider than meant."""
    lists = [k for k, v in member.items() if isinstance(v, list) and k != "fidelity"]
    for name in names:
        holders = [k for k in lists if name in member[k]]
        if not holders:
            raise SystemExit(f"--undeclare {name}: no declared feature has that name")
        for k in holders:
            member[k] = [x for x in member[k] if x != name]
    if names:
        member["fidelity"] = member["fidelity"] + [
            "undeclared on the command line (--undeclare): " + ", ".join(names)]
    return member
