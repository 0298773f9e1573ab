"""The framework the adapter drives: megatron-core's GPTModel, DistributedDataParallel,
get_megatron_optimizer, OptimizerParamScheduler and RerunStateMachine, built in the order and with
the arguments Megatron-LM's pretrain_gpt.py / training.py use (megatron/training is not part of the
megatron-core wheel, so its order is reproduced here with megatron-core's objects).

GptFramework is the pluggable unit: a different model or optimizer builder (a multi-module MIMO
model, ms-swift's optimizer setup) is another class with the same methods. Its contract:

  initialize(job)                 model-parallel state on the default (gloo) process group, seeds
  build_model(job)                [DDP model chunk], frozen parameters already excluded
  build_optimizer(job, model)     the MegatronOptimizer
  build_scheduler(job, optimizer, flags)
                                  an OptimizerParamScheduler with the load flags as arguments
  build_rerun_state_machine(job)  megatron's global RerunStateMachine in the job's mode
  post_load(optimizer)            what the framework runs after a checkpoint load (Bridge's sync)
  param_table(job, model)         the run's params.ParamTable (names, indices, who counts what)
  run_args(job)                   the args a checkpoint stores (loop.run_args)
  destroy()                       forgets everything initialize() and the builders set up

and where a run's layout matters to checkpointing.py and observe.py (the rank's own model: a MIMO
run's module):
  module_optimizers(optimizer)    [(module name or None, its megatron optimizer)] of this rank
  data_parallel_group()           the data-parallel (with context-parallel) group
  tensor_parallel_rank()          this rank's tensor-parallel rank
  rng_sharding()                  the RNG ShardedObject's key, shape, offset and replica id
  sharded_model_state_dict(model, **kwargs), model_to_load(model)
                                  the checkpoint's 'model' entry, and what it loads into
  parallel_layout(args)           (TP, PP, DP) as a checkpoint's (or the run's) args record them
  check_checkpoint_args(ckpt_args, args)
                                  Megatron-LM's check of the checkpoint's model sizes
"""
import random

import numpy as np
import torch

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def transformer_config(job):
    """megatron's TransformerConfig as Megatron-LM's core_transformer_config_from_args makes it for
    a GPT model with --normalization RMSNorm, --position-embedding-type rope, --swiglu (gated
    linear unit), --disable-bias-linear (add_bias false), --use-cpu-initialization."""
    from megatron.core.transformer.transformer_config import TransformerConfig
    m, mod = job.module.model, job.module
    dtype = DTYPES[m.params_dtype]
    kw = dict(num_layers=m.num_layers, hidden_size=m.hidden_size,
              num_attention_heads=m.num_attention_heads, num_query_groups=m.num_query_groups,
              ffn_hidden_size=m.ffn_hidden_size, add_bias_linear=m.add_bias,
              gated_linear_unit=m.gated_linear_unit, normalization="RMSNorm",
              tensor_model_parallel_size=mod.tp, pipeline_model_parallel_size=mod.pp,
              params_dtype=dtype, bf16=m.params_dtype == "bf16", fp16=m.params_dtype == "fp16",
              use_cpu_initialization=True, bias_activation_fusion=False,
              masked_softmax_fusion=False, apply_rope_fusion=False)
    if m.gated_linear_unit:
        kw["activation_func"] = torch.nn.functional.silu
    if mod.pp > 1:
        kw["pipeline_dtype"] = dtype
    if m.first_stage_layers is not None:
        kw["num_layers_in_first_pipeline_stage"] = m.first_stage_layers
    if m.last_stage_layers is not None:
        kw["num_layers_in_last_pipeline_stage"] = m.last_stage_layers
    return TransformerConfig(**kw)


def set_random_seed(seed):
    """Megatron-LM's initialize._set_random_seed (data_parallel_random_init false): seed + 100 x
    the pipeline rank for python, numpy and torch, then the CUDA RNG tracker (on the CPU stand-in
    of the CUDA generator: cpu_shims.cuda_rng_on_cpu)."""
    from megatron.core import parallel_state, tensor_parallel
    if seed <= 0:
        raise ValueError(f"Seed ({seed}) should be a positive integer.")
    seed = seed + 100 * parallel_state.get_pipeline_model_parallel_rank()
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    tensor_parallel.model_parallel_cuda_manual_seed(seed)


class GptFramework:
    """megatron-core's GPT training job as Megatron-LM builds it (see the module docstring).
    With `bridge` (a bridge.BridgeRelease), the optimizer is set up as that Megatron-Bridge release
    does (CPU offload without the precision-aware optimizer, which Bridge does not require) and its
    post-load step runs after a load."""

    def __init__(self, bridge=None):
        self.bridge = bridge

    # --- process state ---

    def initialize(self, job):
        """Megatron-LM's initialize_megatron after torch.distributed is up: the model-parallel
        groups (its _initialize_distributed), the rerun state machine (before them, as
        Megatron-LM does), then the seeds."""
        from megatron.core import parallel_state
        self.build_rerun_state_machine(job)
        mod = job.module
        parallel_state.initialize_model_parallel(
            tensor_model_parallel_size=mod.tp, pipeline_model_parallel_size=mod.pp,
            context_parallel_size=mod.cp, expert_model_parallel_size=mod.ep,
            expert_tensor_parallel_size=mod.etp, order=mod.order)
        set_random_seed(job.seed)

    def destroy(self):
        """Forgets the model-parallel state, the rerun state machine and the RNG tracker's states;
        the default process group stays."""
        from megatron.core import parallel_state, rerun_state_machine
        from megatron.core.tensor_parallel import random as tp_random
        parallel_state.destroy_model_parallel()
        rerun_state_machine.destroy_rerun_state_machine()
        tp_random.initialize_rng_tracker(force_reset=True)

    def build_rerun_state_machine(self, job):
        """Megatron-LM's initialize_rerun_state_machine call: its state_save/restore functions keep
        the CUDA RNG tracker's states; no error injection (rate 0), no tracker file."""
        from megatron.core import tensor_parallel
        from megatron.core.rerun_state_machine import (RerunDiagnostic, RerunErrorInjector,
                                                       RerunMode, initialize_rerun_state_machine)

        def state_save_func():
            return {"rng_tracker_states": tensor_parallel.get_cuda_rng_tracker().get_states()}

        def state_restore_func(state_dict):
            if state_dict["rng_tracker_states"]:
                tensor_parallel.get_cuda_rng_tracker().set_states(state_dict["rng_tracker_states"])

        initialize_rerun_state_machine(
            state_save_func=state_save_func, state_restore_func=state_restore_func,
            mode=RerunMode(job.rerun_mode),
            error_injector=RerunErrorInjector(error_injection_rate=0,
                                              error_injection_type=RerunDiagnostic.TRANSIENT_ERROR),
            result_rejected_tracker_filename=None)

    # --- model ---

    def build_model(self, job):
        """Megatron-LM's get_model(model_provider) for one model chunk: a GPTModel with the local
        layer spec on this pipeline stage, tensor-parallel defaults on every parameter, the frozen
        parameters' requires_grad cleared, Float16Module for bf16/fp16, then megatron's DDP."""
        from megatron.core import parallel_state, tensor_parallel
        from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig
        from megatron.core.models.gpt import GPTModel
        from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
        from megatron.core.transformer.module import Float16Module
        config = transformer_config(job)
        m = job.module.model
        model = GPTModel(config=config,
                         transformer_layer_spec=get_gpt_layer_local_spec(normalization="RMSNorm"),
                         vocab_size=m.vocab_size, max_sequence_length=64,
                         pre_process=parallel_state.is_pipeline_first_stage(),
                         post_process=parallel_state.is_pipeline_last_stage(),
                         parallel_output=True,
                         share_embeddings_and_output_weights=m.tie_embeddings,
                         position_embedding_type="rope")
        for param in model.parameters():
            tensor_parallel.set_defaults_if_not_set_tensor_model_parallel_attributes(param)
        self.freeze(job, model)
        if config.bf16 or config.fp16:
            model = Float16Module(config, model)
        ddp_config = DistributedDataParallelConfig(
            grad_reduce_in_fp32=True, overlap_grad_reduce=False,
            use_distributed_optimizer=job.optimizer.distributed, check_for_nan_in_grad=True,
            bucket_size=None, average_in_collective=False)
        return [DistributedDataParallel(config=config, ddp_config=ddp_config, module=model)]

    @staticmethod
    def freeze(job, model):
        """requires_grad = False for every parameter whose full name contains a `frozen` string
        (before DDP and the optimizer see them)."""
        if not job.frozen:
            return
        names = global_param_names(model)
        for param in model.parameters():
            name = job.param_name(names[id(param)])
            if any(f in name for f in job.frozen):
                param.requires_grad_(False)

    # --- optimizer ---

    def optimizer_config(self, job):
        """Megatron-LM's get_megatron_optimizer_config: adam, the scheduler's max_lr/min_lr as
        lr/min_lr, clip_grad 0 (so that a step is exactly Adam's), CPU offload with the
        precision-aware optimizer (Megatron-LM's arguments.py requires the pair) or, under
        Megatron-Bridge, without it (unless --megatron-bridge-precision-aware)."""
        from megatron.core.optimizer import OptimizerConfig
        o, s, m = job.optimizer, job.scheduler, job.module.model
        offload = o.cpu_offload_fraction > 0
        kw = dict(optimizer="adam", lr=s.max_lr, min_lr=s.min_lr, weight_decay=o.weight_decay,
                  adam_beta1=o.beta1, adam_beta2=o.beta2, adam_eps=o.eps, clip_grad=0.0,
                  bf16=m.params_dtype == "bf16", fp16=m.params_dtype == "fp16",
                  params_dtype=DTYPES[m.params_dtype],
                  use_distributed_optimizer=o.distributed, decoupled_lr=o.decoupled_lr,
                  decoupled_min_lr=o.decoupled_min_lr)
        if offload:
            kw.update(optimizer_cpu_offload=True, optimizer_offload_fraction=o.cpu_offload_fraction,
                      use_precision_aware_optimizer=(self.bridge is None
                                                     or self.bridge.precision_aware))
        return OptimizerConfig(**kw)

    def config_overrides(self, job, model, config):
        """get_standard_config_overrides(config) (Megatron-LM's; wd_mult 0 for biases and 1-D
        parameters, the decoupled LR) plus the job's per-parameter overrides as megatron-core's
        ParamKey -> ParamGroupOverride entries: lr_bounds as {'max_lr', 'min_lr'} (min_lr left
        out: the scheduler's), lr_mult as {'lr_mult'}. megatron merges every matching entry; the
        job says the first matching entry of a list applies, so entry k matches only parameters
        that no earlier entry of its list matches. Names are matched as the job names parameters
        (full names, global layer numbers)."""
        from megatron.core.optimizer import get_standard_config_overrides
        overrides = get_standard_config_overrides(config=config)
        full = {}
        for chunk in model:
            names = global_param_names(chunk)
            for p in chunk.parameters():
                full[id(p)] = job.param_name(names[id(p)])
        add_job_overrides(overrides, job, full)
        return overrides

    def build_optimizer(self, job, model):
        """get_megatron_optimizer(config, model, config_overrides, use_gloo_process_groups=True),
        as Megatron-LM's setup_model_and_optimizer (and Megatron-Bridge's setup_optimizer) call
        it."""
        from megatron.core.optimizer import get_megatron_optimizer
        config = self.optimizer_config(job)
        return get_megatron_optimizer(config, model,
                                      config_overrides=self.config_overrides(job, model, config),
                                      use_gloo_process_groups=True)

    def build_scheduler(self, job, optimizer, flags):
        """Megatron-LM's get_optimizer_param_scheduler with the job's scheduler (steps count
        samples) and --override-opt_param-scheduler / --use-checkpoint-opt_param-scheduler as the
        load flags say (both false for a run that does not load)."""
        from megatron.core.optimizer_param_scheduler import OptimizerParamScheduler
        s = job.scheduler
        return OptimizerParamScheduler(
            optimizer, init_lr=s.init_lr, max_lr=s.max_lr, min_lr=s.min_lr,
            lr_warmup_steps=s.lr_warmup_steps, lr_decay_steps=s.lr_decay_steps,
            lr_decay_style=s.lr_decay_style, start_wd=s.start_wd, end_wd=s.end_wd,
            wd_incr_steps=s.wd_incr_steps, wd_incr_style=s.wd_incr_style,
            use_checkpoint_opt_param_scheduler=flags["use_checkpoint_scheduler"],
            override_opt_param_scheduler=flags["override_scheduler"],
            wsd_decay_steps=s.wsd_decay_steps if s.lr_decay_style == "WSD" else None,
            lr_wsd_decay_style=s.lr_wsd_decay_style)

    def post_load(self, optimizer):
        """After a checkpoint load: Megatron-LM runs nothing more; under Megatron-Bridge, that
        release's post-load step (setup.py after checkpoint_manager.load)."""
        if self.bridge is not None:
            self.bridge.post_load(optimizer)

    # --- the run ---

    def param_table(self, job, model):
        """params.ParamTable of the model chunk."""
        from params import gpt_param_table
        return gpt_param_table(job, model[0])

    def run_args(self, job):
        """The args a checkpoint stores (loop.run_args)."""
        from loop import run_args
        return run_args(job)

    # --- the run's layout, as checkpointing.py and observe.py read it ---

    def module_optimizers(self, optimizer):
        """[(module name, its megatron optimizer)] of the modules this rank is in: the one
        optimizer of the run's one module, which has no name of its own (None)."""
        return [(None, optimizer)]

    def data_parallel_group(self):
        """The data-parallel (with context-parallel) group of this rank's model: the one a
        checkpoint's content metadata names (dp_cp_group) and a fully-parallel save spreads its
        writes over. megatron's global group."""
        from megatron.core import parallel_state as ps
        return ps.get_data_parallel_group(with_context_parallel=True)

    def tensor_parallel_rank(self):
        """This rank's tensor-parallel rank: megatron's global one."""
        from megatron.core import parallel_state as ps
        return ps.get_tensor_model_parallel_rank()

    def rng_sharding(self):
        """Where Megatron-LM's get_rng_state (torch_dist) places this rank's RNG ShardedObject:
        (key, global shape, global offset, replica id) = ('rng_state', (PP, TP) sizes, (PP, TP)
        ranks, the data-parallel with context-parallel rank)."""
        from megatron.core import parallel_state as ps
        return ("rng_state",
                (ps.get_pipeline_model_parallel_world_size(),
                 ps.get_tensor_model_parallel_world_size()),
                (ps.get_pipeline_model_parallel_rank(), ps.get_tensor_model_parallel_rank()),
                ps.get_data_parallel_rank(with_context_parallel=True))

    def sharded_model_state_dict(self, model, **kwargs):
        """The checkpoint's 'model' entry (Megatron-LM's generate_state_dict): the unwrapped
        GPTModel's sharded_state_dict(**kwargs)."""
        return gpt_model(model[0]).sharded_state_dict(**kwargs)

    def model_to_load(self, model):
        """What Megatron-LM's load_model_state_dict loads the checkpoint's 'model' into: the DDP
        model chunk."""
        return model[0]

    def parallel_layout(self, args):
        """(TP, PP, DP) of this rank's model as `args` (a checkpoint's, possibly None, or the
        run's) record them; (1, 1, 0) for what they lack, as Megatron-LM's load_checkpoint reads
        a checkpoint's args."""
        return (getattr(args, "tensor_model_parallel_size", 1),
                getattr(args, "pipeline_model_parallel_size", 1),
                getattr(args, "data_parallel_size", 0))

    def check_checkpoint_args(self, ckpt_args, args):
        """Megatron-LM's check_checkpoint_args for a torch_dist checkpoint (no vocab file): the
        model's fixed sizes must match (AssertionError naming the first that does not)."""
        for name in ("num_layers", "hidden_size", "num_attention_heads"):
            ckpt, now = getattr(ckpt_args, name), getattr(args, name)
            assert ckpt == now, (f"{name} value from checkpoint ({ckpt}) is not equal to the "
                                 f"input argument value ({now}).")
        ckpt = getattr(ckpt_args, "add_position_embedding", True)
        assert ckpt == args.add_position_embedding, (
            f"add_position_embedding value from checkpoint ({ckpt}) is not equal to the input "
            f"argument value ({args.add_position_embedding}).")


def gpt_model(chunk):
    """The GPTModel inside a DDP chunk (DDP -> [Float16Module ->] GPTModel)."""
    from megatron.core.utils import unwrap_model
    return unwrap_model(chunk)


def add_job_overrides(overrides, job, full_names):
    """Adds the job's per-parameter overrides to `overrides` (megatron's ParamKey ->
    ParamGroupOverride entries; see GptFramework.config_overrides): lr_bounds as {'max_lr',
    'min_lr'} (min_lr left out: the scheduler's), lr_mult as {'lr_mult'}, entry k of a list
    matching the parameters whose full name (full_names[id(param)], else megatron's name) contains
    its string and no earlier entry's."""
    from megatron.core.optimizer.optimizer_config import ParamKey, ParamWithNamePredicate

    def first_match(entries, k):
        def fn(param, name):
            n = full_names.get(id(param), name)
            return (entries[k].name_contains in n
                    and not any(e.name_contains in n for e in entries[:k]))
        return fn

    def bounds(e):
        return {"max_lr": e.max_lr, **({} if e.min_lr is None else {"min_lr": e.min_lr})}

    for what, entries, value in (
            ("lr_bounds", job.optimizer.lr_bounds, bounds),
            ("lr_mult", job.optimizer.lr_mult, lambda e: {"lr_mult": e.lr_mult})):
        for k, entry in enumerate(entries):
            key = ParamKey(with_name_predicate=ParamWithNamePredicate(
                name=f"ckptspec_{what}_{k}", fn=first_match(entries, k)))
            overrides[key] = value(entry)


def global_param_names(chunk):
    """{id(param): the parameter's name as megatron's checkpoint names it, with its layer numbered
    globally}: megatron's name in the GPTModel, with the decoder's layers renamed
    (names_with_global_layers)."""
    model = gpt_model(chunk)
    decoder = getattr(model, "decoder", None)
    return names_with_global_layers(
        model, [("decoder.layers.", i, layer)
                for i, layer in enumerate(getattr(decoder, "layers", []))])


def names_with_global_layers(model, layers):
    """{id(param): its name in `model`}, the parameters of every layer in `layers` (a list of
    (the layer list's prefix, e.g. "decoder.layers.", the layer's stage-local index, the layer))
    named as megatron's checkpoint names them: "<prefix><layer_number - 1>." in place of
    "<prefix><index>.", and the layer's sharded_state_dict_keys_map applied to the rest (the local
    spec's "input_layernorm." is "self_attention.linear_qkv.layer_norm_", as Transformer Engine's
    fused layer names it and model/model_config.h does)."""
    renames = {}
    for prefix, i, layer in layers:
        submodules = getattr(layer, "submodules_config", None)
        keys_map = dict(getattr(submodules, "sharded_state_dict_keys_map", None) or {})
        renames[f"{prefix}{i}."] = (f"{prefix}{layer.layer_number - 1}.", keys_map)
    names = {}
    for name, param in model.named_parameters():
        for local, (glob, keys_map) in renames.items():
            if name.startswith(local):
                rest = name[len(local):]
                for old, new in keys_map.items():
                    if rest.startswith(old):
                        rest = new + rest[len(old):]
                        break
                name = glob + rest
                break
        names[id(param)] = name
    return names
