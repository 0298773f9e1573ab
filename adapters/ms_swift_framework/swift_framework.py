"""The framework the ms-swift adapter drives: the megatron-core framework adapter's GptFramework
(the model-parallel state, the seeds, the rerun state machine, the GPTModel in megatron's DDP) with
ms-swift's Megatron trainer on top: the optimizer and the scheduler come from ms-swift's own
BaseMegatronTrainer.get_optimizer_and_scheduler, with the args ms-swift's trainer would hold for the
job (swift_args).

The trainer object carries only `args` and `wrapped_models`: the rest of BaseMegatronTrainer's
__init__ needs a Hugging Face model, a template and mcore_bridge (prepare_model, the data collator,
callbacks), none of which the optimizer and scheduler read.

What hello declares (framework_member) is computed from the installed ms-swift and megatron-core:
  optimizer      distributed, frozen, and decoupled_lr where megatron-core's OptimizerConfig has it.
                 Not lr_mult and lr_bounds: ms-swift passes no config_overrides to
                 get_megatron_optimizer, so per-parameter LR multipliers and bounds cannot be set.
                 Not cpu_offload (not driven by this adapter).
  load_flags     finetune, no_load_optim, no_load_rng (ms-swift's --finetune, --no_load_optim,
                 --no_load_rng). Not override_scheduler / use_checkpoint_scheduler: ms-swift has
                 neither; its scheduler is megatron-core's OptimizerParamScheduler with its defaults
                 (use_checkpoint_opt_param_scheduler=True: a loaded scheduler keeps the
                 checkpoint's values).
  rerun_modes    disabled: ms-swift neither configures nor saves megatron's rerun state machine.
  options        apply_wd_to_qk_layernorm (bool): ms-swift's --apply_wd_to_qk_layernorm, which makes
                 get_optimizer_and_scheduler build the param groups with ms-swift's own
                 _get_param_groups instead of megatron-core's.
"""
import dataclasses
import types

from ckptspec_adapter_kit import AdapterError
from gpt import GptFramework

OPTIONS = {"apply_wd_to_qk_layernorm": "bool"}
SUBSTITUTES = [
    "the model is megatron-core's GPTModel in Float16Module and DDP, built, seeded and placed in "
    "model-parallel groups as the megatron-core framework adapter does (ms-swift builds its models "
    "from a Hugging Face checkpoint through mcore_bridge and seeds with mcore_bridge's "
    "set_random_seed)",
    "ms-swift's args: MegatronArguments' defaults with the job's values and ms-swift's _map_dtype "
    "(its __post_init__ needs a Hugging Face model); start/end_weight_decay are the job's",
    "BaseMegatronTrainer.get_optimizer_and_scheduler runs on a trainer carrying only args and "
    "wrapped_models",
    "apply_wd_to_qk_layernorm routes the param groups through ms-swift's _get_param_groups; the "
    "GPT model has no q/k layernorms (ms-swift accepts the option for qwen3_next/qwen3_5 models), "
    "so it changes no weight decay here",
    "save_mcore_checkpoint writes into the request's directory (the trainer's is "
    "output_dir/checkpoint-<iteration>)"]
LOAD_FLAGS = ["finetune", "no_load_optim", "no_load_rng"]


def swift_version():
    import swift
    return getattr(swift, "__version__", "?")


def default_args():
    """ms-swift's MegatronArguments with its defaults (every dataclass field's default), as an
    argparse-like namespace. Its __post_init__ is not run: it needs a Hugging Face model and
    Transformer Engine; the parts of it the driven path depends on are applied by swift_args."""
    from swift.megatron.arguments.megatron_args import MegatronArguments
    values = {}
    for f in dataclasses.fields(MegatronArguments):
        if f.default is not dataclasses.MISSING:
            values[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            values[f.name] = f.default_factory()
    return types.SimpleNamespace(**values)


def iterations(job, member, samples):
    """ms-swift counts the schedule in iterations and multiplies by global_batch_size
    (get_optimizer_param_scheduler): `samples` as a whole number of iterations, or NotSupported."""
    gbs = job.global_batch_size
    if samples % gbs:
        raise AdapterError("NotSupported", f"job: 'scheduler.{member}' = {samples} is not a "
                                           f"multiple of global_batch_size = {gbs}: ms-swift sets "
                                           "its schedule in iterations of global_batch_size "
                                           "samples")
    return samples // gbs


def swift_args(job):
    """The args ms-swift's Megatron trainer holds for this job: MegatronArguments' defaults, then
    the job's values under ms-swift's names, then ms-swift's own _map_dtype (from __post_init__).

    Scheduler (ms-swift's get_optimizer_param_scheduler multiplies iterations by global_batch_size;
    every count of the job must be a multiple of it, else the job is NotSupported):
      lr_decay_iters = lr_decay_steps / gbs, lr_warmup_iters = lr_warmup_steps / gbs
      (lr_warmup_fraction None), train_iters = wd_incr_steps / gbs (ms-swift's wd_incr_steps is
      train_iters x gbs), lr_wsd_decay_iters = wsd_decay_steps / gbs under WSD (else None),
      lr_warmup_init = init_lr, lr = max_lr, min_lr, lr_decay_style, lr_wsd_decay_style,
      weight_decay_incr_style, start_weight_decay / end_weight_decay = start_wd / end_wd (set
      directly: ms-swift's __post_init__ sets both to weight_decay under the constant style, and the
      scheduler, which sets every group's weight decay from its first step on, reads only these).
    Optimizer: optimizer adam, weight_decay, adam_beta1/2, adam_eps, clip_grad 0 (a step is exactly
      Adam's), bf16/fp16 from the model's dtype, use_distributed_optimizer, decoupled_lr and
      decoupled_min_lr, apply_wd_to_qk_layernorm from the job's options (vit_lr and aligner_lr
      None; megatron_model_meta a non-multimodal model's).
    Checkpointing: tuner_type full, dist_ckpt_optim_fully_reshardable = (format fully_reshardable),
      no_save_optim/no_save_rng False, async_save False, the layout's parallel sizes, seed."""
    o, s, m, mod = job.optimizer, job.scheduler, job.module.model, job.module
    args = default_args()
    values = dict(
        optimizer="adam", lr=s.max_lr, min_lr=s.min_lr, weight_decay=o.weight_decay,
        adam_beta1=o.beta1, adam_beta2=o.beta2, adam_eps=o.eps, clip_grad=0.0,
        bf16=m.params_dtype == "bf16", fp16=m.params_dtype == "fp16",
        use_distributed_optimizer=o.distributed, decoupled_lr=o.decoupled_lr,
        decoupled_min_lr=o.decoupled_min_lr,
        apply_wd_to_qk_layernorm=bool(job.options.get("apply_wd_to_qk_layernorm", False)),
        vit_lr=None, aligner_lr=None,
        megatron_model_meta=types.SimpleNamespace(is_multimodal=False),
        lr_warmup_init=s.init_lr, lr_decay_style=s.lr_decay_style,
        lr_decay_iters=iterations(job, "lr_decay_steps", s.lr_decay_steps),
        lr_warmup_iters=iterations(job, "lr_warmup_steps", s.lr_warmup_steps),
        lr_warmup_fraction=None,
        train_iters=iterations(job, "wd_incr_steps", s.wd_incr_steps),
        lr_wsd_decay_iters=(iterations(job, "wsd_decay_steps", s.wsd_decay_steps)
                            if s.lr_decay_style == "WSD" else None),
        lr_wsd_decay_style=s.lr_wsd_decay_style, start_weight_decay=s.start_wd,
        end_weight_decay=s.end_wd, weight_decay_incr_style=s.wd_incr_style,
        global_batch_size=job.global_batch_size,
        tuner_type="full", finetune=False, no_load_optim=False, no_load_rng=False,
        no_save_optim=False, no_save_rng=False, async_save=False,
        dist_ckpt_save_pre_mcore_014=False,
        dist_ckpt_optim_fully_reshardable=o.format == "fully_reshardable",
        distrib_optim_fully_reshardable_mem_efficient=False,
        tensor_model_parallel_size=mod.tp, pipeline_model_parallel_size=mod.pp,
        context_parallel_size=mod.cp, expert_model_parallel_size=mod.ep,
        expert_tensor_parallel_size=mod.etp, data_parallel_random_init=False, seed=job.seed,
        consumed_train_samples=0, mcore_model=None)
    for name, value in values.items():
        setattr(args, name, value)
    from swift.megatron.arguments.megatron_args import MegatronArguments
    MegatronArguments._map_dtype(args)  # main_grads_dtype, exp_avg_dtype, ... as torch dtypes
    return args


def trainer_for(args, model):
    """A BaseMegatronTrainer carrying only `args` and `wrapped_models` (see the module
    docstring)."""
    from swift.megatron.trainers.base import BaseMegatronTrainer

    class Trainer(BaseMegatronTrainer):
        pass

    Trainer.__abstractmethods__ = frozenset()
    trainer = object.__new__(Trainer)
    trainer.args, trainer.wrapped_models = args, model
    return trainer


class SwiftFramework(GptFramework):
    """GptFramework with ms-swift's optimizer and scheduler (see the module docstring). `args`: the
    ms-swift args of the job built last (the run's args: what a save stores, the data position)."""

    def __init__(self):
        super().__init__(bridge=None)
        self.args = None
        self.built_scheduler = None

    def build_optimizer(self, job, model):
        """ms-swift's BaseMegatronTrainer.get_optimizer_and_scheduler on the job's args; the
        scheduler it made is kept for build_scheduler."""
        self.args = swift_args(job)
        optimizer, scheduler = trainer_for(self.args, model).get_optimizer_and_scheduler()
        self.built_scheduler = (optimizer, scheduler)
        return optimizer

    def build_scheduler(self, job, optimizer, flags):
        """The scheduler get_optimizer_and_scheduler made with `optimizer`, or ms-swift's
        get_optimizer_param_scheduler(args, optimizer) (the function it calls). ms-swift has no
        override/use-checkpoint flags (LOAD_FLAGS)."""
        if self.built_scheduler is not None and self.built_scheduler[0] is optimizer:
            return self.built_scheduler[1]
        from swift.megatron.utils.megatron_lm_utils import get_optimizer_param_scheduler
        return get_optimizer_param_scheduler(self.args, optimizer)

    def destroy(self):
        self.args = None
        self.built_scheduler = None
        super().destroy()


def optimizer_features():
    from megatron.core.optimizer import OptimizerConfig
    features = ["distributed"]
    if "decoupled_lr" in {f.name for f in dataclasses.fields(OptimizerConfig)}:
        features.append("decoupled_lr")
    features.append("frozen")
    return features


def framework_member(args, fidelity):
    """hello's "framework" member (args: the adapter's command line)."""
    import megatron.core
    from features import model_features, optimizer_formats
    library = (f"ms-swift {swift_version()} on megatron-core "
               f"{getattr(megatron.core, '__version__', '?')}")
    return {"library": library, "max_world_size": args.max_world_size,
            "parallelism": ["tp", "pp"], "max_modules": 1,
            "dtypes": ["bf16", "fp16", "fp32"], "model": model_features(),
            "optimizer": optimizer_features(), "optimizer_formats": optimizer_formats(),
            "load_flags": list(LOAD_FLAGS), "rerun_modes": ["disabled"], "signatures": True,
            "options": dict(OPTIONS), "fidelity": SUBSTITUTES + list(fidelity)}
