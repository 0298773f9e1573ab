"""Every CPU shim of the megatron-core framework adapter, in one place.

megatron-core's training path (DDP, the optimizers, the rerun state machine, dist_checkpointing)
hard-codes a CUDA device in places. The adapter runs it on CPU tensors with gloo; the shims below
only redirect device placement (and the CUDA RNG to a CPU stand-in) or stand in for what Transformer
Engine / Apex would provide. None of them changes the code under test: param-group construction,
the optimizers' state_dict/load_state_dict/sharded_state_dict, reload_model_params, the scheduler,
the rerun state machine's logic and dist_checkpointing's save/load run unchanged.

Each shim is one function whose docstring names the upstream function that needs it; applying it
appends one line to FIDELITY, which hello's `framework.fidelity` reports and stderr prints once.
apply() applies them all, in order, once per process: the torch-level ones before megatron-core is
imported (some of its modules capture torch factories at import time), the megatron-level ones
after.
"""
import contextlib
import sys

import torch

FIDELITY = []  # one line per applied shim or substitute, in the order applied


def _record(line):
    FIDELITY.append(line)


def _cpu(device):
    """`device` with any CUDA device (a "cuda..." string, a cuda torch.device, a device index)
    read as the CPU."""
    if device is None:
        return None
    if isinstance(device, int) and not isinstance(device, bool):
        return "cpu"
    if str(device).startswith("cuda"):
        return "cpu"
    return device


# ---------------------------------------------------------------------------------------------
# torch-level shims (before megatron-core is imported)


def current_device_is_cpu():
    """torch.cuda.current_device() returns "cpu"; synchronize and empty_cache do nothing.
    Needed by distributed/param_and_grad_buffer.py _ParamAndGradBuffer (its buffers' device),
    optimizer/optimizer.py MegatronOptimizer.get_loss_scale, optimizer/distrib_optimizer.py
    DistributedOptimizer.load_state_dict (its dummy state), rerun_state_machine.py validate_result
    (log lines), dist_checkpointing/strategies/state_dict_saver.py
    save_state_dict_async_finalize and strategies/fully_parallel.py (synchronize)."""
    torch.cuda.current_device = lambda: "cpu"
    torch.cuda.synchronize = lambda *a, **k: None
    torch.cuda.empty_cache = lambda *a, **k: None
    _record("torch.cuda.current_device() is 'cpu'; torch.cuda.synchronize/empty_cache do nothing")


def cuda_rng_on_cpu():
    """The CUDA default generator is a CPU torch.Generator standing in for the device's:
    torch.cuda.get_rng_state/set_rng_state/manual_seed/manual_seed_all (and megatron's
    tensor_parallel/random.py _get_cuda_rng_state/_set_cuda_rng_state, applied after import) read
    and write it. Needed by tensor_parallel/random.py model_parallel_cuda_manual_seed and
    CudaRNGStatesTracker (its tracked states), rerun_state_machine.py _save_state/_restore_state,
    and the RNG state Megatron-LM's checkpointing saves and restores ('cuda_rng_state',
    'rng_tracker_states'). No kernel draws from it (no forward pass runs)."""
    gen = torch.Generator()
    torch.cuda.get_rng_state = lambda device="cuda": gen.get_state()
    torch.cuda.set_rng_state = lambda new_state, device="cuda": gen.set_state(new_state)
    torch.cuda.manual_seed = lambda seed: gen.manual_seed(int(seed))
    torch.cuda.manual_seed_all = lambda seed: gen.manual_seed(int(seed))
    torch.cuda.random.get_rng_state = torch.cuda.get_rng_state
    torch.cuda.random.set_rng_state = torch.cuda.set_rng_state
    cuda_rng_on_cpu.generator = gen
    _record("the CUDA RNG is a CPU torch.Generator standing in for the device's (seeded, saved "
            "and restored as Megatron-LM does; nothing draws from it)")


def device_factories_on_cpu():
    """device="cuda" passed to a torch factory (tensor, empty, zeros, ones, full, *_like, arange,
    randn, rand) creates the tensor on the CPU; pin_memory=True becomes False. Needed by
    optimizer/optimizer.py Float16OptimizerWithFloat16Params/FP32Optimizer.__init__ (found_inf,
    its scale), rerun_state_machine.py RerunStateMachine._reduce_any, optimizer/cpu_offloading/
    hybrid_optimizer.py (pinned CPU grads), distrib_optimizer.py, dist_checkpointing/strategies/
    state_dict_saver.py verify_global_md_reuse and dist_checkpointing/exchange_utils.py."""
    def wrap(name):
        orig = getattr(torch, name)

        def factory(*a, **k):
            if "device" in k:
                k["device"] = _cpu(k["device"])
            if k.get("pin_memory"):
                k["pin_memory"] = False
            return orig(*a, **k)

        factory.__wrapped__ = orig
        setattr(torch, name, factory)

    for name in ("tensor", "empty", "zeros", "ones", "full", "empty_like", "zeros_like",
                 "ones_like", "full_like", "arange", "randn", "rand", "randn_like", "rand_like"):
        wrap(name)
    _record("torch factories: device='cuda' creates on the CPU, pin_memory=True is False")


def tensor_moves_stay_on_cpu():
    """Tensor.cuda() and Tensor.pin_memory() return the tensor; Tensor.to("cuda") stays on the CPU.
    Needed by Megatron-LM's get_model (model.cuda()), optimizer/cpu_offloading/hybrid_optimizer.py
    (_move_new_state_to_right_device, pinned copies), dist_checkpointing/exchange_utils.py
    exchange_loaded_tensors_* (fully-parallel load) and distrib_optimizer.py."""
    torch.Tensor.cuda = lambda self, *a, **k: self
    torch.nn.Module.cuda = lambda self, *a, **k: self
    torch.Tensor.pin_memory = lambda self, *a, **k: self
    orig_to = torch.Tensor.to

    def to(self, *a, **k):
        a = tuple(_cpu(x) if isinstance(x, (str, torch.device)) else x for x in a)
        if "device" in k:
            k["device"] = _cpu(k["device"])
        return orig_to(self, *a, **k)

    torch.Tensor.to = to
    _record("Tensor.cuda()/pin_memory() return the tensor, Tensor.to('cuda') stays on the CPU, "
            "Module.cuda() does nothing")


def streams_are_synchronous():
    """torch.cuda.Stream/Event/current_stream/default_stream/stream() are synchronous no-op
    objects (CPU work is synchronous). Needed by distributed/param_and_grad_buffer.py
    start_grad_sync/finish_grad_sync (torch.cuda.current_stream()), Megatron-LM's get_model (the DDP
    stream) and optimizer/cpu_offloading/hybrid_optimizer.py (its D2H/H2D streams and events)."""
    class Event:
        def __init__(self, *a, **k):
            pass

        def synchronize(self):
            pass

        def wait(self, *a, **k):
            pass

        def query(self):
            return True

        def record(self, *a, **k):
            pass

    class Stream:
        def __init__(self, *a, **k):
            pass

        def wait_event(self, *a, **k):
            pass

        def wait_stream(self, *a, **k):
            pass

        def record_event(self, *a, **k):
            return Event()

        def synchronize(self):
            pass

        def query(self):
            return True

    default = Stream()
    torch.cuda.current_stream = lambda *a, **k: default
    torch.cuda.default_stream = lambda *a, **k: default
    torch.cuda.Stream = Stream
    torch.cuda.Event = Event
    torch.cuda.stream = lambda *a, **k: contextlib.nullcontext()
    _record("torch.cuda.Stream/Event/current_stream/stream() are synchronous no-op objects")


def cuda_type_names():
    """Tensor.type() (no argument) names a CPU tensor 'torch.cuda.<X>Tensor'. Needed by
    optimizer/optimizer.py Float16OptimizerWithFloat16Params.__init__ and
    optimizer/distrib_optimizer.py _build_model_and_main_param_groups, which accept only
    'torch.cuda.FloatTensor', 'torch.cuda.HalfTensor' and 'torch.cuda.BFloat16Tensor' params."""
    orig_type = torch.Tensor.type

    def type_(self, dtype=None, non_blocking=False, **kw):
        if dtype is None and not kw:
            name = orig_type(self)
            if name.startswith("torch.") and not name.startswith("torch.cuda."):
                return "torch.cuda." + name[len("torch."):]
            return name
        return orig_type(self, dtype, non_blocking, **kw)

    torch.Tensor.type = type_
    _record("Tensor.type() names CPU tensors 'torch.cuda.<X>Tensor'")


# ---------------------------------------------------------------------------------------------
# megatron-level shims (after megatron-core is imported)


def megatron_cuda_rng_state():
    """megatron/core/tensor_parallel/random.py _get_cuda_rng_state/_set_cuda_rng_state read and
    write the CPU stand-in of the CUDA generator (cuda_rng_on_cpu) instead of
    torch.cuda.default_generators through torch.cuda._lazy_call, which on a machine without CUDA
    queues the call forever. Needed by CudaRNGStatesTracker.add/fork
    (model_parallel_cuda_manual_seed) and convert_cuda_rng_state (Megatron-LM's RNG restore)."""
    from megatron.core.tensor_parallel import random as tp_random
    gen = cuda_rng_on_cpu.generator

    def get_state(device="cuda", clone=False, graph_safe=False):
        return gen.get_state()

    def set_state(new_state, device=-1, graph_safe=False):
        gen.set_state(new_state)

    tp_random._get_cuda_rng_state = get_state
    tp_random._set_cuda_rng_state = set_state
    _record("megatron tensor_parallel.random _get/_set_cuda_rng_state use the CPU stand-in of the "
            "CUDA generator")


def sharded_tensor_init_on_cpu():
    """dist_checkpointing/mapping.py ShardedTensor.init_data("cuda") allocates on the CPU. Needed by
    dist_checkpointing/exchange_utils.py (the fully-parallel load's exchange buffers)."""
    from megatron.core.dist_checkpointing.mapping import ShardedTensor
    init_data = ShardedTensor.init_data

    def cpu_init_data(self, device, *a, **k):
        return init_data(self, _cpu(device), *a, **k)

    ShardedTensor.init_data = cpu_init_data
    _record("dist_checkpointing ShardedTensor.init_data('cuda') allocates on the CPU")


def hybrid_optimizer_device_params():
    """optimizer/cpu_offloading/hybrid_optimizer.py HybridDeviceOptimizer._get_sub_optimizer_param_
    groups decides by `param.is_cuda` which parameters live on the device and which it offloads
    (it copies an offloaded one with .cpu() and steps the copy on the CPU). On a machine without
    CUDA nothing is "on the device", so it would keep no CPU copies and offload nothing. While that
    function runs, the parameters handed to the HybridDeviceOptimizer report is_cuda True, copies
    made of them with detach/clone/float stay "device" tensors, and .cpu() makes an untagged copy:
    the split and the CPU copies are what a GPU machine gets. Nothing is tagged afterwards."""
    from megatron.core.optimizer.cpu_offloading import hybrid_optimizer as hdo
    real_is_cuda = torch.Tensor.is_cuda  # the C-level descriptor

    def is_cuda(self):
        return getattr(self, "_ckptspec_on_device", False) or real_is_cuda.__get__(self)

    torch.Tensor.is_cuda = property(is_cuda)
    orig_group = hdo.HybridDeviceOptimizer._get_sub_optimizer_param_groups

    def grouped(self, offload_fraction):
        tagged = []

        def tag(t):
            t._ckptspec_on_device = True
            tagged.append(t)
            return t

        def following(name):
            orig = getattr(torch.Tensor, name)

            def method(t, *a, **k):
                out = orig(t, *a, **k)
                if getattr(t, "_ckptspec_on_device", False) and out is not t:
                    tag(out)
                return out
            return orig, method

        def cpu(t, *a, **k):
            if getattr(t, "_ckptspec_on_device", False):
                return saved["clone"](saved["detach"](t))  # a host copy, untagged
            return t

        for group in self.param_groups:
            for p in group["params"]:
                tag(p)
        saved = {}
        try:
            for name in ("detach", "clone", "float"):
                saved[name], method = following(name)
                setattr(torch.Tensor, name, method)
            saved["cpu"] = torch.Tensor.cpu
            torch.Tensor.cpu = cpu
            return orig_group(self, offload_fraction)
        finally:
            for name, orig in saved.items():
                setattr(torch.Tensor, name, orig)
            for t in tagged:
                t._ckptspec_on_device = False

    hdo.HybridDeviceOptimizer._get_sub_optimizer_param_groups = grouped
    _record("HybridDeviceOptimizer: its input parameters count as device tensors while it splits "
            "them, so it makes its CPU copies and device sub-optimizer as on a GPU machine")


def torch_adam_step_passthrough():
    """optimizer/distrib_optimizer.py DistributedOptimizer._set_main_param_and_optimizer_states,
    which the dp_reshardable and fully_reshardable loads call per parameter, with the torch.optim
    Adam fallback (no Apex or Transformer Engine), whose 'step' lives in each parameter's state
    (FusedAdam keeps it in the groups). load_state_dict has just set that step from the loaded
    param groups ("handled separately via param_groups"); this function then copies every key of
    the parameter's state from the loaded tensors, 'step' included: the fully_reshardable load has
    none (KeyError: 'step'), the dp_reshardable load has the template's pre-load step (a
    LocalNonpersistentObject, not loaded), which silently resets the step. The step load_state_dict
    set is passed through unchanged."""
    from megatron.core.optimizer.distrib_optimizer import DistributedOptimizer
    orig = DistributedOptimizer._set_main_param_and_optimizer_states

    def set_states(self, model_param, tensors):
        group_index, group_order = self.model_param_group_index_map[model_param]
        main = self.optimizer.param_groups[group_index]["params"][group_order]
        state = self.optimizer.state.get(main, {})
        if isinstance(state.get("step"), torch.Tensor):
            tensors = dict(tensors, step=state["step"])
        return orig(self, model_param, tensors)

    DistributedOptimizer._set_main_param_and_optimizer_states = set_states
    _record("DistributedOptimizer dp_reshardable/fully_reshardable load, torch fallback: the "
            "'step' load_state_dict set from the loaded groups is kept (megatron copies the "
            "template's pre-load step over it, or raises KeyError: 'step')")


def torch_adam_step_per_param():
    """optimizer/distrib_optimizer.py DistributedOptimizer.load_state_dict, torch.optim branch
    (`if not HAVE_APEX_OR_TE`, the fallback without Apex or Transformer Engine): every parameter's
    state gets the same 'step' tensor (`s["step"] = step` in a loop), and torch's AdamW increments
    each parameter's step in place, so after a load one optimizer step advances the shared step
    once per parameter (a wrong bias correction from the first step on). The branch megatron takes
    with Apex or Transformer Engine for the HybridDeviceOptimizer clones the step per parameter
    (`step.detach().clone()`); FusedAdam keeps one step per group. After load_state_dict, a step
    tensor shared by several parameters' states is cloned per parameter, values unchanged."""
    from megatron.core.optimizer.distrib_optimizer import DistributedOptimizer
    orig = DistributedOptimizer.load_state_dict

    def load_state_dict(self, state_dict):
        result = orig(self, state_dict)
        inner = getattr(self, "optimizer", None)
        optimizers = [inner] + list(getattr(inner, "sub_optimizers", []) or [])
        seen = set()
        for opt in optimizers:
            if opt is None:
                continue
            for state in opt.state.values():
                step = state.get("step") if isinstance(state, dict) else None
                if isinstance(step, torch.Tensor):
                    if id(step) in seen:
                        state["step"] = step.detach().clone()
                    seen.add(id(state["step"]))
        return result

    DistributedOptimizer.load_state_dict = load_state_dict
    _record("DistributedOptimizer.load_state_dict, torch fallback: the one 'step' tensor it gives "
            "every parameter's state is cloned per parameter (torch AdamW increments it in place)")


def enum_unpickling():
    """torch.load(weights_only=True) of the common state (dist_checkpointing's common.pt, or 0.19's
    common_state object) holds the rerun state machine's RerunMode/RerunState members, which
    megatron/core/safe_globals.py allows; Python 3.11 pickles an Enum member as getattr(class,
    name), and torch's weights_only unpickler refuses `getattr` (megatron-core 0.17+ declares
    Python >= 3.12, where this does not arise). `getattr` is added to torch's safe globals."""
    if sys.version_info >= (3, 12):
        return
    torch.serialization.add_safe_globals([getattr])
    _record("torch.load(weights_only): builtins.getattr allowed (Python 3.11 pickles the rerun "
            "state machine's enums through it)")


# ---------------------------------------------------------------------------------------------


def prime_torch_adam_state(optimizer):
    """Before a state dict is built for a save or a load template (DistributedOptimizer's
    state_dict), gives every leaf optimizer without state the state its first step would create
    (the same zeros and step 0 torch's AdamW makes lazily at its first step): with the
    torch.optim AdamW fallback (no Apex or Transformer Engine) the 'step' lives in each parameter's
    state, and DistributedOptimizer.state_dict() asserts exactly one step value (`assert
    len(steps) == 1`), which an unstepped optimizer lacks (FusedAdam keeps the step in its groups
    and needs none). Uses the optimizer's own init_state_fn (moments of zeros) plus step 0; for a
    HybridDeviceOptimizer, each sub-optimizer's torch AdamW state, then its own sync to the
    HybridDeviceOptimizer's state. A no-op for an optimizer that has state, and for a leaf that is
    not a DistributedOptimizer: the non-distributed optimizers (Float16OptimizerWithFloat16Params,
    FP32Optimizer) build their state dicts from an unstepped optimizer as they are, as they do
    over FusedAdam (whose state is created at its first step too); priming them would save
    moments and a step 0 that megatron's `if step:` then drops (KeyError 'step' in torch's
    Adam.__setstate__ at the load)."""
    from megatron.core.optimizer import DistributedOptimizer
    from megatron.core.optimizer.cpu_offloading import HybridDeviceOptimizer
    leaves = getattr(optimizer, "chained_optimizers", None) or [optimizer]
    for leaf in leaves:
        inner = getattr(leaf, "optimizer", None)
        if inner is None or len(inner.state) > 0 or not isinstance(leaf, DistributedOptimizer):
            continue
        if isinstance(inner, HybridDeviceOptimizer):
            for sub in inner.sub_optimizers:
                _prime_adam(sub, None)
            inner._sync_sub_optimizers_state_to_hdo()
            continue
        _prime_adam(inner, getattr(leaf, "init_state_fn", None), getattr(leaf, "config", None))


def _prime_adam(opt, init_state_fn, config=None):
    if init_state_fn is not None:
        init_state_fn(opt, config)
    if not isinstance(opt, (torch.optim.Adam, torch.optim.AdamW)):
        return
    for group in opt.param_groups:
        for p in group["params"]:
            state = opt.state[p]
            state.setdefault("exp_avg", torch.zeros_like(p, memory_format=torch.preserve_format))
            state.setdefault("exp_avg_sq", torch.zeros_like(p, memory_format=torch.preserve_format))
            state.setdefault("step", torch.tensor(0.0))


PRIMING_LINE = ("an unstepped torch AdamW under the DistributedOptimizer gets the zero state and "
                "step 0 of its first step before a save or load state dict is built "
                "(DistributedOptimizer.state_dict "
                "asserts one step; FusedAdam keeps it in the groups)")
SUBSTITUTES = ["torch.optim.AdamW (megatron-core's fallback) in place of Transformer Engine's or "
               "Apex's FusedAdam",
               "local (non-Transformer-Engine) layer spec, CPU initialization, gloo, CPU tensors",
               "synthetic gradients written into main_grad; no forward or backward pass"]

_APPLIED = []


def apply(raw_torch_adam=False):
    """Applies every shim once (torch-level, then megatron-core's import, then megatron-level).
    raw_torch_adam: leave out the two that stand in for FusedAdam's step handling
    (torch_adam_step_passthrough, torch_adam_step_per_param), to show megatron-core's torch
    fallback as it is."""
    if _APPLIED:
        return
    _APPLIED.append(True)
    FIDELITY.extend(SUBSTITUTES)
    for shim in (current_device_is_cpu, cuda_rng_on_cpu, device_factories_on_cpu,
                 tensor_moves_stay_on_cpu, streams_are_synchronous, cuda_type_names,
                 enum_unpickling):
        shim()
    import megatron.core  # noqa: F401  (after the torch-level shims)
    for shim in (megatron_cuda_rng_state, sharded_tensor_init_on_cpu,
                 hybrid_optimizer_device_params):
        shim()
    if not raw_torch_adam:
        torch_adam_step_passthrough()
        torch_adam_step_per_param()
    _record(PRIMING_LINE)
    print("ckptspec megatron-core framework adapter, fidelity (shims and substitutes):\n  "
          + "\n  ".join(FIDELITY), file=sys.stderr, flush=True)
