"""megatron-core's MIMO model as the framework of a job of two non-colocated modules
(docs/PROTOCOL.md, "Framework adapters": `modules`; docs/ADAPTERS.md, megatron_core_framework,
"MIMO jobs").

Module 0 (the encoder, e.g. "vision") is a VisionModalitySubmodules: a TransformerBlock encoder of
the module's model config (local layer spec, RMSNorm) and a MultimodalProjector ("mlp") to the
language model's hidden size. Module 1 (the language model) is a GPTModel with the local spec, as
gpt.py builds it. Both are one MimoModel(MimoModelConfig(...)) whose module_to_grid_map gives each
module a HyperCommGrid over its own rank range with the module's TP, PP and DP (dimension names in
the module's rank order), built as megatron-core's MIMO tests and Megatron-LM's heterogeneous MIMO
training (examples/mimo/training) build them: every rank creates every grid's process groups in
the same order, the language model's embedding groups per pipeline line; each rank then builds,
seeds and wraps only its own module (Float16Module for bf16/fp16, then megatron's DDP over the
module's process groups) and the optimizer is get_mimo_optimizer's MimoOptimizer (one megatron
optimizer per module). The scheduler is one OptimizerParamScheduler over the MimoOptimizer, as
Megatron-LM's setup_model_and_optimizer makes it (get_optimizer_param_scheduler(optimizer); from
0.19 its get_megatron_optimizer dispatches a MimoModel to get_mimo_optimizer).

Seeds: Megatron-LM's heterogeneous MIMO builder seeds each module's ranks with seed + 10000
(encoder) or + 20000 (language), plus 100 x the module's pipeline rank, the CUDA RNG tracker with
the module's TP rank.

Checkpoints (checkpointing.py) and the observation (observe.py) are a GPT run's, with the rank's
own module where they read the run's layout (gpt.py's contract, MimoFramework's answers), as
Megatron-LM's heterogeneous MIMO training passes the module's groups to save_checkpoint and
load_checkpoint:
  - the content metadata's dp_cp_group, the fully-parallel save's group and the RNG object's
    replica id: the module's data-parallel (with context-parallel) group; the RNG object's shape
    and offset: the module's (PP, TP) sizes and ranks; its key: "encoder.rng_state" or
    "language.rng_state" (the MIMO builder's rng_state_key_prefix);
  - the state dict's model: MimoModel.sharded_state_dict; on load MimoModel.load_state_dict; the
    optimizer: the MimoOptimizer's (its own extraction and restoration of param groups, grad
    scaler and sharding type run unchanged), its module optimizers primed before a state dict is
    built;
  - the load's decisions (RNG, optimizer format, rerun machine) compare the rank's own module's
    layout (args.mimo_modules) where Megatron-LM compares the job's one layout; the rerun machine
    loads where the world and the module's TP, PP and DP are unchanged; check_checkpoint_args
    checks the module's sizes first;
  - the observation's optimizer groups are named per module and leaf ("vision.0", "language.0").

Two departures, each a hello fidelity line (FIDELITY below):
  - get_mimo_optimizer passes one OptimizerConfig and no config_overrides to each module's
    get_megatron_optimizer. Where the job asks for more (modules of different dtypes; LR-bound
    overrides), that inner call gets the module's own precision flags and the job's overrides
    (plus megatron's standard ones); get_mimo_optimizer's own code runs unchanged.
  - the encoder module's vocab_size and tie_embeddings are not used (an encoder has no
    embedding or output layer).
"""
import contextlib
import dataclasses
import inspect
import random
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ckptspec_adapter_kit import AdapterError
from gpt import (DTYPES, GptFramework, add_job_overrides, names_with_global_layers,
                 transformer_config)

ENCODER_KEY_IN_SUBMODULE = "clip_encoder"
ENCODER_SEED_OFFSET, LANGUAGE_SEED_OFFSET = 10_000, 20_000
FIDELITY = [
    "MIMO jobs (two modules): get_mimo_optimizer's per-module get_megatron_optimizer call gets the "
    "module's own dtype flags and the job's LR-bound overrides where the job has them "
    "(get_mimo_optimizer passes one config and no overrides)",
    "MIMO jobs: the encoder module is a TransformerBlock and a MultimodalProjector; its "
    "vocab_size and tie_embeddings are not used"]
STEP_LINE = ("MIMO jobs, torch AdamW fallback, non-distributed optimizer: a module optimizer's saved "
             "Adam step is its param groups' 'step' (FusedAdam's layout, which the MIMO optimizer "
             "saves per module) instead of megatron's 'common_step' in the common state, which "
             "only rank 0's module would keep")


def supported():
    """Whether this megatron-core has the MIMO model and optimizer (0.17.0+) and HyperCommGrid's
    einops."""
    try:
        import einops  # noqa: F401
        from megatron.core.hyper_comm_grid import HyperCommGrid  # noqa: F401
        from megatron.core.models.mimo.model.base import MimoModel  # noqa: F401
        from megatron.core.models.mimo.optimizer import get_mimo_optimizer  # noqa: F401
    except ImportError:
        return False
    return True


def float16_module_per_module():
    """Whether MimoModel.sharded_state_dict unwraps a Float16Module around a module (0.19, with
    Megatron-LM's heterogeneous MIMO training, which wraps each bf16/fp16 module in one). Before,
    its keys keep the wrapper's "module." that load_state_dict's keys have not, and megatron-core's
    MIMO tests cast the model to its dtype instead: so does this adapter there."""
    from megatron.core.models.mimo.model.base import MimoModel
    return "Float16Module" in inspect.getsource(MimoModel.sharded_state_dict)


def _grid_has_views():
    """megatron-core 0.19's HyperCommGrid factors expert parallelism into a view of its own."""
    from megatron.core.hyper_comm_grid import HyperCommGrid
    return hasattr(HyperCommGrid, "register_view")


@dataclass
class Module:
    """One module of the job on this rank: its spec, its MIMO key, its grid and, where this rank
    is in it, its process groups."""
    spec: Any               # job.ModuleSpec
    key: str                # the MIMO key: the encoder's job name, or "language"
    first_rank: int
    is_language: bool
    grid: Any = None
    pg: Any = None          # ProcessGroupCollection, on the module's own ranks only
    active: bool = False

    @property
    def name(self):
        return self.spec.name

    def job_of(self, job):
        """The job seen as this module's own (gpt.transformer_config, optimizer_config)."""
        return dataclasses.replace(job, module=self.spec)


def _pg_rank(group):
    return group.rank() if group is not None else 0


def _pg_size(group):
    return group.size() if group is not None else 1


class MimoFramework(GptFramework):
    """megatron-core's MIMO training job (see the module docstring); GptFramework's contract
    (the parameter table and the layout checkpointing and observation read: the rank's own
    module's), plus finalize_model_grads(chunks). One instance per build."""

    def __init__(self, bridge=None, raw_torch_adam=False):
        super().__init__(bridge)
        self.raw_torch_adam = raw_torch_adam
        self.modules = []
        self.own = None
        self.mimo = None
        self.embedding_groups = []

    # --- process state ---

    def initialize(self, job):
        from megatron.core.models.mimo.config.role import MIMO_LANGUAGE_MODULE_KEY
        if self.bridge is not None:
            raise AdapterError("NotSupported", "job: 'modules': MIMO jobs are not served with "
                                               "--megatron-bridge")
        if len(job.modules) != 2:
            raise AdapterError("NotSupported", f"job: 'modules' has {len(job.modules)} modules; "
                                               "a MIMO job has an encoder and a language model")
        encoder, language = job.modules
        if encoder.name == MIMO_LANGUAGE_MODULE_KEY:
            raise AdapterError("NotSupported", f"job: 'modules[0].name' = '{encoder.name}' is "
                                               "MIMO's key of the language model")
        self.build_rerun_state_machine(job)
        first = 0
        for i, spec in enumerate(job.modules):
            is_language = i == len(job.modules) - 1
            self.modules.append(Module(spec=spec, first_rank=first, is_language=is_language,
                                       key=MIMO_LANGUAGE_MODULE_KEY if is_language else spec.name))
            first += spec.world_size
        for m in self.modules:  # every rank creates every group, in the same order
            m.grid = self._grid(m)
            m.active = m.grid.is_current_rank_in_grid()
        for m in self.modules:
            m.pg = self._pg_collection(m)
        self.own = next(m for m in self.modules if m.active)
        self.set_random_seed(job)

    def _grid(self, m):
        """The module's HyperCommGrid (gloo) with the groups its model, DDP, optimizer and
        checkpointing read, as megatron-core's MIMO tests create them for this version."""
        from megatron.core.hyper_comm_grid import HyperCommGrid
        s = m.spec
        sizes = {"tp": s.tp, "cp": s.cp, "ep": s.ep, "dp": s.dp, "pp": s.pp}
        order = s.order.split("-")
        if _grid_has_views():
            dims = [d for d in order if d != "ep"]
            grid = HyperCommGrid(shape=[sizes[d] for d in dims], dim_names=dims,
                                 rank_offset=m.first_rank, backend="gloo")
            # Dense here: the expert view relabels the base axes over the same ranks.
            rename = {"tp": "expt_tp", "cp": "ep", "dp": "expt_dp", "pp": "pp"}
            grid.register_view("expert", shape=[sizes[d] for d in dims],
                               dim_names=[rename[d] for d in dims], shared_dims=["pp"])
            for group in (["tp"], ["cp"], ["pp"], ["dp"], ["dp", "cp"], ["tp", "pp"],
                          ["tp", "cp", "dp", "pp"]):
                grid.create_pg(group)
            for group in (["ep"], ["expt_dp"], ["expt_tp", "ep", "pp"]):
                grid.create_pg(group, view="expert")
            return grid
        grid = HyperCommGrid(shape=[sizes[d] for d in order], dim_names=order,
                             rank_offset=m.first_rank, backend="gloo")
        for group in (["tp"], ["cp"], ["pp"], ["dp"], ["dp", "cp"], ["ep"], ["tp", "pp"],
                      ["tp", "ep", "pp"], ["dp", "ep"], ["tp", "cp", "ep", "pp", "dp"]):
            grid.create_pg(group)
        return grid

    def _pg_collection(self, m):
        """The module's ProcessGroupCollection on its own ranks (None elsewhere); the language
        model's word and position embedding groups are made per pipeline line on every rank (a
        collective), as Megatron-LM's MIMO topology does."""
        import torch.distributed as dist
        from megatron.core.parallel_state import (default_embedding_ranks,
                                                  default_position_embedding_ranks)
        from megatron.core.process_groups_config import ProcessGroupCollection
        g = m.grid
        embd = pos_embd = None
        if m.is_language:
            own_line = (tuple(dist.get_process_group_ranks(g.get_pg("pp")))
                        if m.grid.is_current_rank_in_grid() else ())
            for line in g.get_rank_enum("pp"):
                emb_group = dist.new_group(ranks=default_embedding_ranks(list(line)))
                pos_group = dist.new_group(ranks=default_position_embedding_ranks(list(line)))
                self.embedding_groups += [emb_group, pos_group]
                if tuple(line) == own_line:
                    if dist.get_rank() in default_embedding_ranks(list(line)):
                        embd = emb_group
                    if dist.get_rank() in default_position_embedding_ranks(list(line)):
                        pos_embd = pos_group
        if not m.grid.is_current_rank_in_grid():
            return None
        pg = ProcessGroupCollection()
        pg.tp, pg.cp, pg.pp = g.get_pg("tp"), g.get_pg("cp"), g.get_pg("pp")
        pg.dp, pg.dp_cp = g.get_pg("dp"), g.get_pg(["dp", "cp"])
        pg.mp = g.get_pg(["tp", "pp"])
        if _grid_has_views():
            pg.ep = g.get_pg("ep", view="expert")
            pg.expt_dp = g.get_pg("expt_dp", view="expert")
            pg.tp_ep_pp = g.get_pg(["expt_tp", "ep", "pp"], view="expert")
            pg.intra_dist_opt = g.get_pg(["tp", "cp", "dp", "pp"])
        else:
            pg.ep = g.get_pg("ep")
            pg.expt_dp = g.get_pg(["dp", "ep"])
            pg.tp_ep_pp = g.get_pg(["tp", "ep", "pp"])
            pg.intra_dist_opt = g.get_pg(["tp", "cp", "ep", "pp", "dp"])
        pg.embd, pg.pos_embd = embd, pos_embd
        return pg

    def set_random_seed(self, job):
        """Megatron-LM's _set_random_seed with the module's process groups (its heterogeneous MIMO
        builder's configure_module_rng): seed + the module's offset + 100 x its pipeline rank for
        python, numpy and torch, then the CUDA RNG tracker with its TP rank (expert TP = TP)."""
        from megatron.core import tensor_parallel
        if job.seed <= 0:
            raise ValueError(f"Seed ({job.seed}) should be a positive integer.")
        pg = self.own.pg
        offset = LANGUAGE_SEED_OFFSET if self.own.is_language else ENCODER_SEED_OFFSET
        seed = job.seed + offset + 100 * _pg_rank(pg.pp)
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        tp_rank = _pg_rank(pg.tp)
        tensor_parallel.model_parallel_cuda_manual_seed(seed, tp_rank=tp_rank,
                                                        ep_rank=_pg_rank(pg.ep), etp_rank=tp_rank)

    def destroy(self):
        """GptFramework's, and every grid's and embedding group's process groups."""
        import torch.distributed as dist
        for m in self.modules:
            if m.grid is not None:
                try:
                    m.grid.destroy()
                except Exception:
                    pass
        for group in self.embedding_groups:
            try:
                if group is not None and dist.get_rank(group=group) >= 0:
                    dist.destroy_process_group(group)
            except Exception:
                pass
        self.modules, self.own, self.mimo, self.embedding_groups = [], None, None, []
        super().destroy()

    # --- model ---

    def _specs(self, job):
        """(the language model's ModuleSpec, the encoder's), with each module's process groups
        where this rank is in it."""
        from megatron.core.models.gpt import GPTModel
        from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
        from megatron.core.models.mimo.submodules.vision import VisionModalitySubmodules
        from megatron.core.models.vision.multimodal_projector import MultimodalProjector
        from megatron.core.tensor_parallel.layers import ColumnParallelLinear, RowParallelLinear
        from megatron.core.transformer.mlp import MLPSubmodules
        from megatron.core.transformer.spec_utils import ModuleSpec
        from megatron.core.transformer.transformer_block import TransformerBlock
        from megatron.core.transformer.transformer_config import TransformerConfig
        encoder, language = self.modules
        lm = language.spec.model
        lm_pg = language.pg
        first_lm = lm_pg is None or _pg_rank(lm_pg.pp) == 0
        last_lm = lm_pg is None or _pg_rank(lm_pg.pp) == _pg_size(lm_pg.pp) - 1
        language_spec = ModuleSpec(module=GPTModel, params=dict(
            config=transformer_config(language.job_of(job)),
            transformer_layer_spec=get_gpt_layer_local_spec(normalization="RMSNorm"),
            vocab_size=lm.vocab_size, max_sequence_length=64, pre_process=first_lm,
            post_process=last_lm, parallel_output=True,
            share_embeddings_and_output_weights=lm.tie_embeddings,
            position_embedding_type="rope", pg_collection=lm_pg))
        em = encoder.spec.model
        enc_pg = encoder.pg
        enc_config = transformer_config(encoder.job_of(job))
        dtype = DTYPES[em.params_dtype]
        # The projector's config as megatron-core's MIMO tests make it (an MLP of the language
        # model's hidden size, with biases and GELU; TP from its tp_group), in the encoder's dtype.
        projector_config = TransformerConfig(
            num_layers=1, hidden_size=lm.hidden_size, num_attention_heads=1,
            ffn_hidden_size=lm.hidden_size, add_bias_linear=True,
            activation_func=torch.nn.functional.gelu, bias_activation_fusion=False,
            use_cpu_initialization=True, params_dtype=dtype, bf16=em.params_dtype == "bf16",
            fp16=em.params_dtype == "fp16")
        encoder_spec = ModuleSpec(
            module=VisionModalitySubmodules, params={"pg_collection": enc_pg},
            submodules={
                "encoders": {ENCODER_KEY_IN_SUBMODULE: ModuleSpec(
                    module=TransformerBlock, params=dict(
                        config=enc_config,
                        spec=get_gpt_layer_local_spec(normalization="RMSNorm"),
                        pg_collection=enc_pg,
                        pre_process=enc_pg is None or _pg_rank(enc_pg.pp) == 0,
                        post_process=(enc_pg is None
                                      or _pg_rank(enc_pg.pp) == _pg_size(enc_pg.pp) - 1)))},
                "input_projections": [ModuleSpec(module=MultimodalProjector, params=dict(
                    config=projector_config,
                    submodules=MLPSubmodules(linear_fc1=ColumnParallelLinear,
                                             linear_fc2=RowParallelLinear),
                    projector_type="mlp", input_size=em.hidden_size,
                    tp_group=enc_pg.tp if enc_pg is not None else None))]})
        return language_spec, encoder_spec

    def build_model(self, job):
        """The MimoModel of both modules (this rank builds its own), tensor-parallel defaults on
        every parameter, the frozen parameters' requires_grad cleared, then Float16Module for
        bf16/fp16 (where MimoModel handles it: float16_module_per_module; else the module cast to
        its dtype, as megatron-core's MIMO tests do) and megatron's DDP over the module's process
        groups (Megatron-LM's wrap_active_modules_with_ddp). Returns [the rank's DDP module]."""
        from megatron.core import tensor_parallel
        from megatron.core.distributed import (DistributedDataParallel,
                                               DistributedDataParallelConfig)
        from megatron.core.models.mimo.config.base_configs import MimoModelConfig
        from megatron.core.models.mimo.model.base import MimoModel
        from megatron.core.transformer.module import Float16Module
        encoder, language = self.modules
        language_spec, encoder_spec = self._specs(job)
        config = MimoModelConfig(
            language_model_spec=language_spec,
            modality_submodules_spec={encoder.key: encoder_spec},
            special_token_ids={encoder.key: language.spec.model.vocab_size - 1},
            module_to_grid_map={encoder.key: encoder.grid, language.key: language.grid})
        self.mimo = mimo = MimoModel(config)
        own = self.own
        module = (mimo.language_model if own.is_language
                  else mimo.modality_submodules[own.key])
        for param in module.parameters():
            tensor_parallel.set_defaults_if_not_set_tensor_model_parallel_attributes(param)
        names = module_param_names(module)
        for param in module.parameters():
            if any(f in full_name(own.name, names[id(param)]) for f in job.frozen):
                param.requires_grad_(False)
        module_config = transformer_config(own.job_of(job))
        if module_config.bf16 or module_config.fp16:
            if float16_module_per_module():
                module = Float16Module(module_config, module)
            else:
                module = module.to(module_config.params_dtype)
        ddp_config = DistributedDataParallelConfig(
            grad_reduce_in_fp32=True, overlap_grad_reduce=False,
            use_distributed_optimizer=job.optimizer.distributed, check_for_nan_in_grad=True,
            bucket_size=None, average_in_collective=False)
        ddp = DistributedDataParallel(config=module_config, ddp_config=ddp_config, module=module,
                                      pg_collection=own.pg)
        if own.is_language:
            mimo.language_model = ddp
        else:
            mimo.modality_submodules[own.key] = ddp
        return [ddp]

    # --- optimizer ---

    def build_optimizer(self, job, model):
        """get_mimo_optimizer(mimo_model, config), the config as gpt.py's optimizer_config makes
        it for the language model; each module's own get_megatron_optimizer call gets the module's
        dtype flags and the job's LR-bound overrides where they differ (see the module
        docstring)."""
        from megatron.core.models.mimo.optimizer import get_mimo_optimizer
        config = self.optimizer_config(self.modules[-1].job_of(job))
        own_config = self.optimizer_config(self.own.job_of(job))
        overrides = None
        if job.optimizer.lr_bounds or job.optimizer.lr_mult:
            overrides = self.module_config_overrides(job, model[0], own_config)
        same = own_config == config and overrides is None
        with (contextlib.nullcontext() if same
              else module_optimizer_arguments(model[0], own_config, overrides)):
            optimizer = get_mimo_optimizer(self.mimo, config)
        if not self.raw_torch_adam:
            for _, module_optimizer in self.module_optimizers(optimizer):
                for leaf in getattr(module_optimizer, "chained_optimizers", None) or [
                        module_optimizer]:
                    step_in_param_groups(leaf)
        return optimizer

    def module_config_overrides(self, job, chunk, config):
        """gpt.py's config_overrides for one module's chunk: megatron's standard overrides plus
        the job's lr_bounds/lr_mult entries, names matched as the job names the parameters."""
        from megatron.core.optimizer import get_standard_config_overrides
        overrides = get_standard_config_overrides(config=config)
        names = module_param_names(chunk)
        full = {k: full_name(self.own.name, v) for k, v in names.items()}
        add_job_overrides(overrides, job, full)
        return overrides

    def finalize_model_grads(self, chunks):
        """Megatron-LM's MIMO gradient finalization: each module over its own process groups."""
        from megatron.core.distributed import finalize_model_grads
        finalize_model_grads(chunks, pg_collection=self.own.pg)

    # --- the run's layout, as checkpointing.py and observe.py read it: the rank's module's ---

    def module_optimizers(self, optimizer):
        """[(module name, its megatron optimizer)] of the modules this rank is in (the
        MimoOptimizer keeps them in module_infos)."""
        out = []
        for m in self.modules:
            info = optimizer.module_infos.get(m.key)
            if info is not None and info.is_active and info.optimizer is not None:
                out.append((m.name, info.optimizer))
        return out

    def data_parallel_group(self):
        """The module's data-parallel (with context-parallel) group."""
        return self.own.pg.dp_cp

    def tensor_parallel_rank(self):
        """This rank's TP rank in its module."""
        return self.own.pg.tp.rank()

    def rng_sharding(self):
        """Megatron-LM's get_rng_state(torch_dist, tp_group, pp_group, dp_cp_group, key_prefix)
        with the module's groups: its (PP, TP) sizes and ranks, its data-parallel (with
        context-parallel) rank, the key prefixed with its MIMO builder's rng_state_key_prefix."""
        pg = self.own.pg
        prefix = "language." if self.own.is_language else "encoder."
        return (f"{prefix}rng_state", (pg.pp.size(), pg.tp.size()), (pg.pp.rank(), pg.tp.rank()),
                pg.dp_cp.rank())

    def sharded_model_state_dict(self, model, **kwargs):
        """MimoModel.sharded_state_dict(**kwargs) (both modules' keys; this rank's module's
        tensors)."""
        return self.mimo.sharded_state_dict(**kwargs)

    def model_to_load(self, model):
        """The MimoModel."""
        return self.mimo

    def parallel_layout(self, args):
        """(TP, PP, DP) of this rank's module in `args` (its entry of mimo_modules); (1, 1, 0)
        where args have no entry of it or the entry lacks one."""
        entry = self.own_module_args(args) or {}
        return (entry.get("tensor_model_parallel_size", 1),
                entry.get("pipeline_model_parallel_size", 1), entry.get("data_parallel_size", 0))

    def check_checkpoint_args(self, ckpt_args, args):
        """Megatron-LM's check_checkpoint_args, for the rank's module first: the checkpoint's
        entry of the module must have its num_layers, hidden_size and num_attention_heads; then
        GptFramework's check of the language model's."""
        saved, now = self.own_module_args(ckpt_args), self.own_module_args(args)
        assert saved is not None, (
            f"module '{now['name']}' is not in the checkpoint's args "
            f"({[e.get('name') for e in getattr(ckpt_args, 'mimo_modules', [])]})")
        for name in ("num_layers", "hidden_size", "num_attention_heads"):
            assert saved[name] == now[name], (
                f"{name} value from checkpoint ({saved[name]}) is not equal to the input argument "
                f"value ({now[name]}) (module '{now['name']}').")
        super().check_checkpoint_args(ckpt_args, args)

    # --- the run ---

    def param_table(self, job, model):
        """params.ParamTable of the module this rank is in (mimo_param_table)."""
        return mimo_param_table(job, self.own, model[0])

    def run_args(self, job):
        """The args a checkpoint stores (the same on every rank): the language model's sizes and
        layout as Megatron-LM's args name them, every module's in `mimo_modules`, the world, the
        data position."""
        from loop import run_args
        language = self.modules[-1]
        args = run_args(language.job_of(job))
        args.world_size = sum(m.spec.world_size for m in self.modules)
        args.fp16 = any(m.spec.model.params_dtype == "fp16" for m in self.modules)
        args.bf16 = any(m.spec.model.params_dtype == "bf16" for m in self.modules)
        args.mimo_modules = [module_args(m) for m in self.modules]
        return args

    def own_module_args(self, args):
        """This rank's module's entry of args.mimo_modules (by name), or None."""
        for entry in getattr(args, "mimo_modules", None) or []:
            if entry.get("name") == self.own.name:
                return entry
        return None


def full_name(module_name, name):
    """A parameter's full name: its module's name, then its name in the module."""
    return f"{module_name}.{name}"


def module_args(m):
    s, model = m.spec, m.spec.model
    return {"name": s.name, "first_rank": m.first_rank, "world_size": s.world_size,
            "tensor_model_parallel_size": s.tp, "pipeline_model_parallel_size": s.pp,
            "data_parallel_size": s.dp, "num_layers": model.num_layers,
            "hidden_size": model.hidden_size, "num_attention_heads": model.num_attention_heads,
            "params_dtype": model.params_dtype}


@contextlib.contextmanager
def module_optimizer_arguments(chunk, config, overrides):
    """While get_mimo_optimizer runs: its get_megatron_optimizer call for `chunk` gets `config`
    and (when given) `overrides`; every other argument is get_mimo_optimizer's."""
    import megatron.core.optimizer as optimizer_module
    original = optimizer_module.get_megatron_optimizer

    def get_megatron_optimizer(*args, **kwargs):
        bound = inspect.signature(original).bind(*args, **kwargs)
        chunks = bound.arguments.get("model_chunks") or []
        if chunks and chunks[0] is chunk:
            bound.arguments["config"] = config
            if overrides is not None:
                bound.arguments["config_overrides"] = overrides
        return original(*bound.args, **bound.kwargs)

    optimizer_module.get_megatron_optimizer = get_megatron_optimizer
    try:
        yield
    finally:
        optimizer_module.get_megatron_optimizer = original


def step_in_param_groups(leaf):
    """STEP_LINE, on one module optimizer's leaf: a Float16OptimizerWithFloat16Params or
    FP32Optimizer over torch's Adam/AdamW (megatron-core's fallback without Apex or Transformer
    Engine), whose step lives in each parameter's state. Its sharded_state_dict makes that step
    'common_step', a plain value of the common state: in a MIMO checkpoint the common state is
    rank 0's, so every other module's step is lost and torch's load_state_dict raises KeyError:
    'step'. FusedAdam keeps the step in its param groups, which the MIMO optimizer saves as a
    ShardedObject of the module. Here the step is moved into the param groups on save and back
    into the parameters' states before load_state_dict; the distributed optimizer is left alone
    (its step already travels in its param groups)."""
    inner = getattr(leaf, "optimizer", None)
    if (not isinstance(inner, (torch.optim.Adam, torch.optim.AdamW))
            or hasattr(leaf, "model_param_group_index_map")):
        return
    sharded_state_dict, load_state_dict = leaf.sharded_state_dict, leaf.load_state_dict

    def torch_state(sd):
        return sd["optimizer"] if "optimizer" in sd and "state" in sd["optimizer"] else sd

    def sharded(*args, **kwargs):
        sd = sharded_state_dict(*args, **kwargs)
        state = torch_state(sd)
        step = state.get("state", {}).pop("common_step", None)
        if step is not None:
            for group in state["param_groups"]:
                group["step"] = step
        return sd

    def load(sd):
        state = torch_state(sd)
        steps = [g.pop("step") for g in state.get("param_groups", []) if "step" in g]
        if steps and "common_step" not in state["state"]:
            state["state"]["common_step"] = steps[0]
        return load_state_dict(sd)

    leaf.sharded_state_dict, leaf.load_state_dict = sharded, load


# ---------------------------------------------------------------------------------------------
# Parameter names and the table


def module_param_names(chunk):
    """{id(param): its name in the module (the GPTModel, or the VisionModalitySubmodules), layers
    numbered globally within the module}: every `layers` list of transformer layers (the language
    model's decoder, the encoder's TransformerBlock) renamed as gpt.py's global_param_names renames
    the decoder's (gpt.names_with_global_layers)."""
    from megatron.core.utils import unwrap_model
    model = unwrap_model(chunk)
    layers = []
    for prefix, sub in model.named_modules():
        block = getattr(sub, "layers", None)
        if not isinstance(block, torch.nn.ModuleList):
            continue
        base = f"{prefix}.layers." if prefix else "layers."
        layers += [(base, i, layer) for i, layer in enumerate(block)
                   if hasattr(layer, "layer_number")]
    return names_with_global_layers(model, layers)


def mimo_param_table(job, own, chunk):
    """params.ParamTable for the module this rank is in (`own`, a Module): its parameters under
    their full names ("<module>.<name in the module>"), placed and counted by the module's TP, DP
    (with CP) and pipeline ranks: the module's DP rank 0 counts it (and its TP rank 0 a parameter
    TP does not split)."""
    from megatron.core.utils import unwrap_model
    from params import ParamTable
    pg = own.pg
    names = module_param_names(chunk)
    return ParamTable(unwrap_model(chunk),
                      {k: full_name(own.name, v) for k, v in names.items()},
                      gated=own.spec.model.gated_linear_unit,
                      tp_rank=_pg_rank(pg.tp), tp_size=_pg_size(pg.tp), dp_rank=_pg_rank(pg.dp_cp),
                      first_stage=_pg_rank(pg.pp) == 0,
                      embedding_name=full_name(own.name, "embedding.word_embeddings.weight"))


def is_mimo(run) -> bool:
    return isinstance(getattr(run, "framework", None), MimoFramework)
