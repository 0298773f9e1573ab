"""The job of a `build` request (docs/PROTOCOL.md, "Framework adapters", build), read and checked
against what the adapter declared in hello. Standard library only. Members the harness's reader
(model/framework_job.cc) treats as optional default as there (model/model_config.h,
model/param_groups.h); the overrides' earlier names `lr_mult`/`lr_bounds` and a model's flat
`first_stage_layers`/`last_stage_layers` are read too.

parse_job(job, declared, world) -> Job, or raises AdapterError: NotSupported for a job outside the
declared features (naming the member), InvalidArgument for an invalid one (a missing member, a
wrong type, sizes that do not divide).
"""
from dataclasses import dataclass, field
from typing import List, Optional

from ckptspec_adapter_kit import AdapterError

ORDER_TOKENS = {"tp", "cp", "ep", "dp", "pp"}
LR_DECAY_STYLES = ("constant", "linear", "cosine", "inverse-square-root", "WSD")
WSD_STYLES = ("linear", "cosine", "exponential", "minus_sqrt")
WD_INCR_STYLES = ("constant", "linear", "cosine")
LOAD_FLAGS = ("finetune", "no_load_optim", "no_load_rng", "override_scheduler",
              "use_checkpoint_scheduler")


@dataclass
class ModelSpec:
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    num_query_groups: int  # resolved: 0 in the job means one per head
    ffn_hidden_size: int   # resolved: 0 in the job means 4 x hidden
    vocab_size: int
    gated_linear_unit: bool
    add_bias: bool
    tie_embeddings: bool
    params_dtype: str      # "fp32", "bf16", "fp16"
    first_stage_layers: Optional[int]  # None: an even split
    last_stage_layers: Optional[int]


@dataclass
class ModuleSpec:
    name: str
    world_size: int
    tp: int
    pp: int
    cp: int
    ep: int
    etp: int
    order: str
    model: ModelSpec

    @property
    def dp(self):
        return self.world_size // (self.tp * self.cp * self.pp)


@dataclass
class LrMult:
    name_contains: str
    lr_mult: float


@dataclass
class LrBound:
    name_contains: str
    max_lr: float
    min_lr: Optional[float]  # None: the scheduler's


@dataclass
class OptimizerSpec:
    distributed: bool
    weight_decay: float
    beta1: float
    beta2: float
    eps: float
    cpu_offload_fraction: float
    lr_mult: List[LrMult]
    lr_bounds: List[LrBound]
    decoupled_lr: Optional[float]
    decoupled_min_lr: Optional[float]
    format: str


@dataclass
class SchedulerSpec:
    init_lr: float
    max_lr: float
    min_lr: float
    lr_warmup_steps: int
    lr_decay_steps: int
    lr_decay_style: str
    wsd_decay_steps: int
    lr_wsd_decay_style: str
    start_wd: float
    end_wd: float
    wd_incr_steps: int
    wd_incr_style: str


@dataclass
class Job:
    seed: int
    module: ModuleSpec
    frozen: List[str]
    optimizer: OptimizerSpec
    scheduler: SchedulerSpec
    global_batch_size: int
    rerun_mode: str
    assume_constant_structure: bool
    options: dict = field(default_factory=dict)
    # Every module, in rank order (a multi-module job: non-colocated modules on consecutive
    # rank ranges, mimo.py); `module` is the first.
    modules: List[ModuleSpec] = field(default_factory=list)

    def param_name(self, megatron_name):
        """A parameter's full name: the module's name, then megatron's (global layer index)."""
        prefix = f"{self.module.name}." if self.module.name else ""
        return prefix + megatron_name


class _Reader:
    """Typed access to one JSON object, errors naming the member's path."""

    def __init__(self, obj, path):
        if not isinstance(obj, dict):
            raise AdapterError("InvalidArgument", f"job: {path or 'job'} must be an object")
        self.obj, self.path = obj, path

    def where(self, key):
        return f"{self.path}.{key}" if self.path else key

    def get(self, key, kinds, what, optional=False, default=None):
        if key not in self.obj:
            if optional:
                return default
            raise AdapterError("InvalidArgument", f"job: missing member '{self.where(key)}'")
        value = self.obj[key]
        if value is None and optional:
            return default
        if isinstance(value, bool) and bool not in kinds:
            raise AdapterError("InvalidArgument", f"job: '{self.where(key)}' must be {what}")
        if not isinstance(value, kinds):
            raise AdapterError("InvalidArgument", f"job: '{self.where(key)}' must be {what}, got "
                                                  f"{type(value).__name__}")
        return value

    def int(self, key, minimum=None, **kw):
        value = self.get(key, (int,), "an integer", **kw)
        if value is not None and minimum is not None and value < minimum:
            raise AdapterError("InvalidArgument", f"job: '{self.where(key)}' = {value} must be "
                                                  f">= {minimum}")
        return value

    def float(self, key, **kw):
        value = self.get(key, (int, float), "a number", **kw)
        return None if value is None else float(value)

    def bool(self, key, **kw):
        return self.get(key, (bool,), "true or false", **kw)

    def str(self, key, **kw):
        return self.get(key, (str,), "a string", **kw)

    def list(self, key, **kw):
        return self.get(key, (list,), "an array", **kw)

    def sub(self, key):
        return _Reader(self.get(key, (dict,), "an object"), self.where(key))


def _refuse(member, why):
    raise AdapterError("NotSupported", f"job: '{member}' {why}")


def _invalid(member, why):
    raise AdapterError("InvalidArgument", f"job: '{member}' {why}")


def _model(r, declared):
    """The module's model (model/model_config.h's members and defaults; pipeline_split as an
    object {first_stage_layers, last_stage_layers}, -1 for an even split)."""
    heads = r.int("num_attention_heads", 1)
    hidden = r.int("hidden_size", 1)
    groups = r.int("num_query_groups", 0, optional=True, default=0) or heads
    ffn = r.int("ffn_hidden_size", 0, optional=True, default=0) or 4 * hidden
    dtype = r.str("params_dtype", optional=True, default="bf16")
    m = ModelSpec(num_layers=r.int("num_layers", 1), hidden_size=hidden,
                  num_attention_heads=heads, num_query_groups=groups, ffn_hidden_size=ffn,
                  vocab_size=r.int("vocab_size", 1),
                  gated_linear_unit=r.bool("gated_linear_unit", optional=True, default=False),
                  add_bias=r.bool("add_bias", optional=True, default=False),
                  tie_embeddings=r.bool("tie_embeddings", optional=True, default=True),
                  params_dtype=dtype, first_stage_layers=None, last_stage_layers=None)
    split = r.sub("pipeline_split") if "pipeline_split" in r.obj else r
    first = split.int("first_stage_layers", optional=True, default=-1)
    last = split.int("last_stage_layers", optional=True, default=-1)
    if hidden % heads:
        _invalid(r.where("hidden_size"), f"= {hidden} is not divisible by num_attention_heads "
                                         f"= {heads}")
    if heads % groups:
        _invalid(r.where("num_query_groups"), f"= {groups} does not divide num_attention_heads "
                                              f"= {heads}")
    features = declared["model"]
    for flag, feature, member in ((m.gated_linear_unit, "gated_linear_unit", "gated_linear_unit"),
                                  (m.add_bias, "add_bias", "add_bias"),
                                  (not m.tie_embeddings, "untied_embeddings", "tie_embeddings"),
                                  (groups != heads, "query_groups", "num_query_groups")):
        if flag and feature not in features:
            _refuse(r.where(member), f"needs model feature '{feature}', which this adapter does "
                                     "not declare")
    if dtype not in declared["dtypes"]:
        _refuse(r.where("params_dtype"), f"= '{dtype}' is not among the declared dtypes "
                                         f"{declared['dtypes']}")
    if r.int("num_experts", 0, optional=True, default=0):
        _refuse(r.where("num_experts"), "> 0 needs model feature 'moe', which this adapter does "
                                        "not declare")
    if first != -1 or last != -1:
        if "pipeline_split" not in features:
            _refuse(r.where("pipeline_split"), "needs model feature 'pipeline_split', which this "
                                               "adapter does not declare")
        for value, name in ((first, "first_stage_layers"), (last, "last_stage_layers")):
            if value < -1:
                _invalid(split.where(name), f"= {value} must be >= 0, or -1 (unset)")
        m.first_stage_layers = None if first == -1 else first
        m.last_stage_layers = None if last == -1 else last
    return m


def _module(r, declared, world):
    tp, pp = r.int("tp", 1), r.int("pp", 1)
    cp, ep = r.int("cp", 1, optional=True, default=1), r.int("ep", 1, optional=True, default=1)
    etp = r.int("etp", 1, optional=True, default=1)
    ws = r.int("world_size", 1)
    order = r.str("order", optional=True, default="tp-cp-ep-dp-pp")
    for size, name in ((tp, "tp"), (pp, "pp"), (cp, "cp"), (ep, "ep"), (etp, "etp")):
        parallel = "ep" if name == "etp" else name
        # Expert TP equal to TP is Megatron's default (expert_tensor_parallel_size unset), which
        # the harness sends with every TP > 1 job: it needs no expert parallelism of its own.
        if name == "etp" and size == tp:
            continue
        if size > 1 and parallel not in declared["parallelism"]:
            _refuse(r.where(name), f"= {size}: this adapter declares parallelism "
                                   f"{declared['parallelism']}")
    if set(order.split("-")) != ORDER_TOKENS or len(order.split("-")) != 5:
        _invalid(r.where("order"), f"= '{order}' is not an order of tp, cp, ep, dp, pp")
    if world is not None and ws != world:  # None: one of several modules (_check_modules)
        _invalid(r.where("world_size"), f"= {ws}, but this group has {world} ranks")
    if ws > declared["max_world_size"]:
        _refuse(r.where("world_size"), f"= {ws} exceeds max_world_size "
                                       f"{declared['max_world_size']}")
    if ws % (tp * cp * pp):
        _invalid(r.where("world_size"), f"= {ws} is not divisible by tp * cp * pp = "
                                        f"{tp * cp * pp}")
    model = _model(r.sub("model"), declared)
    name = r.str("name", optional=True, default="")
    dp = r.int("dp", 1, optional=True)
    if dp is not None and dp * tp * cp * pp != ws:
        _invalid(r.where("dp"), f"= {dp}, but world_size / (tp * cp * pp) = "
                                f"{ws // (tp * cp * pp)}")
    spec = ModuleSpec(name=name, world_size=ws, tp=tp, pp=pp, cp=cp, ep=ep, etp=etp,
                      order=order, model=model)
    _check_divisible(spec, r.where("model"))
    return spec


def _check_divisible(spec, where):
    """Megatron's size constraints for tensor and pipeline parallelism."""
    m = spec.model
    for value, name in ((m.num_attention_heads, "num_attention_heads"),
                        (m.num_query_groups, "num_query_groups"),
                        (m.ffn_hidden_size, "ffn_hidden_size"), (m.vocab_size, "vocab_size")):
        if value % spec.tp:
            _invalid(f"{where}.{name}", f"= {value} is not divisible by tp = {spec.tp}")
    fixed = (m.first_stage_layers or 0) + (m.last_stage_layers or 0)
    middle = spec.pp - (m.first_stage_layers is not None) - (m.last_stage_layers is not None)
    rest = m.num_layers - fixed
    if rest < 0 or (middle > 0 and rest % middle) or (middle == 0 and rest):
        _invalid(f"{where}.num_layers", f"= {m.num_layers} does not split over pp = {spec.pp} "
                                        f"stages (first {m.first_stage_layers}, last "
                                        f"{m.last_stage_layers})")


def _entries(r, key, legacy):
    """The readers of list member `key` (or, absent, of its earlier name `legacy`)."""
    if key not in r.obj and legacy in r.obj:
        key = legacy
    return [_Reader(x, f"{r.where(key)}[{i}]")
            for i, x in enumerate(r.list(key, optional=True, default=[]))]


def _optimizer(r, declared, scheduler_min_lr):
    features = declared["optimizer"]
    lr_mult = [LrMult(e.str("name_contains"), e.float("lr_mult"))
               for e in _entries(r, "lr_mult_overrides", "lr_mult")]
    bounds = [LrBound(e.str("name_contains"), e.float("max_lr"),
                      e.float("min_lr", optional=True))
              for e in _entries(r, "lr_bound_overrides", "lr_bounds")]
    o = OptimizerSpec(distributed=r.bool("distributed", optional=True, default=False),
                      weight_decay=r.float("weight_decay", optional=True, default=0.01),
                      beta1=r.float("beta1", optional=True, default=0.9),
                      beta2=r.float("beta2", optional=True, default=0.999),
                      eps=r.float("eps", optional=True, default=1e-8),
                      cpu_offload_fraction=r.float("cpu_offload_fraction", optional=True,
                                                   default=0.0),
                      lr_mult=lr_mult, lr_bounds=bounds,
                      decoupled_lr=r.float("decoupled_lr", optional=True),
                      decoupled_min_lr=r.float("decoupled_min_lr", optional=True),
                      format=r.str("format", optional=True, default="dp_reshardable"))
    for flag, feature, member in ((o.distributed, "distributed", "distributed"),
                                  (o.cpu_offload_fraction > 0, "cpu_offload",
                                   "cpu_offload_fraction"),
                                  (bool(o.lr_mult), "lr_mult", "lr_mult_overrides"),
                                  (bool(o.lr_bounds), "lr_bounds", "lr_bound_overrides"),
                                  (o.decoupled_lr is not None, "decoupled_lr", "decoupled_lr")):
        if flag and feature not in features:
            _refuse(r.where(member), f"needs optimizer feature '{feature}', which this adapter "
                                     "does not declare")
    if not 0.0 <= o.cpu_offload_fraction <= 1.0:
        _invalid(r.where("cpu_offload_fraction"), f"= {o.cpu_offload_fraction} is not in [0, 1]")
    if o.cpu_offload_fraction > 0 and not o.distributed:
        _refuse(r.where("cpu_offload_fraction"), "> 0 needs the distributed optimizer (megatron-"
                                                 "core offloads only the distributed optimizer's "
                                                 "shards)")
    if o.decoupled_min_lr is not None and o.decoupled_lr is None:
        _invalid(r.where("decoupled_min_lr"), "is set without decoupled_lr")
    if o.format not in declared["optimizer_formats"]:
        _refuse(r.where("format"), f"= '{o.format}' is not among the declared optimizer formats "
                                   f"{declared['optimizer_formats']}")
    for i, b in enumerate(o.lr_bounds):
        low = scheduler_min_lr if b.min_lr is None else b.min_lr
        if b.max_lr < low:
            _invalid(f"{r.where('lr_bound_overrides')}[{i}]", f"max_lr {b.max_lr} < min_lr {low}")
    return o


def _scheduler(r):
    s = SchedulerSpec(init_lr=r.float("init_lr"), max_lr=r.float("max_lr"),
                      min_lr=r.float("min_lr"), lr_warmup_steps=r.int("lr_warmup_steps", 0),
                      lr_decay_steps=r.int("lr_decay_steps", 1),
                      lr_decay_style=r.str("lr_decay_style"),
                      wsd_decay_steps=r.int("wsd_decay_steps", 0, optional=True, default=0),
                      lr_wsd_decay_style=r.str("lr_wsd_decay_style", optional=True,
                                               default="linear"),
                      start_wd=r.float("start_wd"), end_wd=r.float("end_wd"),
                      wd_incr_steps=r.int("wd_incr_steps", 0),
                      wd_incr_style=r.str("wd_incr_style"))
    for value, names, member in ((s.lr_decay_style, LR_DECAY_STYLES, "lr_decay_style"),
                                 (s.lr_wsd_decay_style, WSD_STYLES, "lr_wsd_decay_style"),
                                 (s.wd_incr_style, WD_INCR_STYLES, "wd_incr_style")):
        if value not in names:
            _invalid(r.where(member), f"= '{value}' is not one of {list(names)}")
    if not 0.0 <= s.min_lr <= s.max_lr or s.init_lr > s.max_lr:
        _invalid(r.where("max_lr"), f"needs 0 <= min_lr ({s.min_lr}) <= max_lr ({s.max_lr}) and "
                                    f"init_lr ({s.init_lr}) <= max_lr")
    if s.lr_warmup_steps >= s.lr_decay_steps:
        _invalid(r.where("lr_warmup_steps"), f"= {s.lr_warmup_steps} must be < lr_decay_steps "
                                             f"= {s.lr_decay_steps}")
    if not 0.0 <= s.start_wd <= s.end_wd:
        _invalid(r.where("start_wd"), f"needs 0 <= start_wd ({s.start_wd}) <= end_wd "
                                      f"({s.end_wd})")
    if s.wd_incr_style == "constant" and s.start_wd != s.end_wd:
        _invalid(r.where("wd_incr_style"), "constant needs start_wd == end_wd")
    if s.lr_decay_style == "WSD" and not 0 < s.wsd_decay_steps <= s.lr_decay_steps:
        _invalid(r.where("wsd_decay_steps"), f"= {s.wsd_decay_steps} must be in (0, "
                                             f"lr_decay_steps]")
    return s


def _check_modules(specs, world):
    """Several non-colocated modules: each named (its name prefixes its parameters' names), names
    distinct, their ranks together the group's."""
    names = [m.name for m in specs]
    for i, name in enumerate(names):
        if not name:
            _invalid(f"modules[{i}].name", "must be set in a job of several modules")
        if any(c in name for c in "./ "):
            _invalid(f"modules[{i}].name", f"= '{name}' must not contain '.', '/' or spaces")
        if name in names[:i]:
            _invalid(f"modules[{i}].name", f"= '{name}' names an earlier module too")
    total = sum(m.world_size for m in specs)
    if total != world:
        _invalid("modules", f"have {total} ranks together, but this group has {world} ranks")


def parse_job(job, declared, world):
    """The build request's job as a Job (see the module docstring)."""
    r = _Reader(job, "")
    modules = r.list("modules")
    if not modules:
        _invalid("modules", "is empty")
    if len(modules) > declared["max_modules"]:
        _refuse("modules", f"has {len(modules)} modules; this adapter declares max_modules "
                           f"{declared['max_modules']}")
    specs = [_module(_Reader(m, f"modules[{i}]"), declared, None if len(modules) > 1 else world)
             for i, m in enumerate(modules)]
    if len(specs) > 1:
        _check_modules(specs, world)
    module = specs[0]
    frozen = r.list("frozen", optional=True, default=[])
    if not all(isinstance(f, str) for f in frozen):
        _invalid("frozen", "must be an array of strings")
    if frozen and "frozen" not in declared["optimizer"]:
        _refuse("frozen", "needs optimizer feature 'frozen', which this adapter does not declare")
    scheduler = _scheduler(r.sub("scheduler"))
    optimizer = _optimizer(r.sub("optimizer"), declared, scheduler.min_lr)
    rerun_mode = r.str("rerun_mode")
    if rerun_mode not in declared["rerun_modes"]:
        _refuse("rerun_mode", f"= '{rerun_mode}' is not among the declared rerun modes "
                              f"{declared['rerun_modes']}")
    constant = r.bool("assume_constant_structure", optional=True, default=False)
    options = r.get("options", (dict,), "an object", optional=True, default={})
    for key, value in options.items():
        kind = declared["options"].get(key)
        if kind is None:
            _invalid(f"options.{key}", "is not an option this adapter declares")
        if kind == "bool" and not isinstance(value, bool):
            _invalid(f"options.{key}", "must be true or false")
    return Job(seed=r.int("seed"), module=module, frozen=list(frozen), optimizer=optimizer,
               scheduler=scheduler, global_batch_size=r.int("global_batch_size", 1),
               rerun_mode=rerun_mode, assume_constant_structure=constant, options=dict(options),
               modules=specs)


def parse_flags(flags, declared):
    """The load request's flags as a dict of the five names (absent: false). A flag set that the
    adapter did not declare is NotSupported."""
    if flags is None:
        flags = {}
    if not isinstance(flags, dict):
        raise AdapterError("InvalidArgument", "load: 'flags' must be an object")
    out = {}
    for name, value in flags.items():
        if name not in LOAD_FLAGS:
            raise AdapterError("InvalidArgument", f"load: unknown flag '{name}'")
        if not isinstance(value, bool):
            raise AdapterError("InvalidArgument", f"load: flag '{name}' must be true or false")
        if value and name not in declared["load_flags"]:
            raise AdapterError("NotSupported", f"load: flag '{name}' is not declared")
    for name in LOAD_FLAGS:
        out[name] = bool(flags.get(name, False))
    return out
