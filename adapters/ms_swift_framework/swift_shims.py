"""The ms-swift framework adapter's own shims, in one place (the megatron-core framework adapter's
CPU shims, adapters/megatron_core_framework/cpu_shims.py, apply first and unchanged).

Each shim is one function whose docstring names what needs it; applying it appends one line to
FIDELITY, which hello's `framework.fidelity` reports. apply() applies them in order, once per
process: TorchScript's view of torch's factories and the mcore_bridge stub before ms-swift is
imported, ms-swift's import (swift.megatron's init_megatron_env, with all of its patches), then the
restore of torch's _validate_global_plan where ms-swift's replacement does not fit the installed
torch (unless --keep-swift-validate-patch).
"""
import inspect
import sys
import types

FIDELITY = []  # one line per applied shim, in the order applied


def _record(line):
    FIDELITY.append(line)


def mcore_bridge_stub():
    """mcore_bridge (ms-swift's Hugging Face <-> megatron-core weight converter, a hard dependency
    of swift.megatron) imports Transformer Engine, a CUDA-only library, at import time (its patcher,
    its LoRA tuner, its model modules), so it cannot be imported here. None of it is on the path the
    adapter drives (the optimizer, the scheduler, save_mcore_checkpoint, load_mcore_checkpoint): it
    converts Hugging Face weights and builds ms-swift's models, which the adapter builds as the
    megatron-core framework adapter does. A stub module takes its place in sys.modules, holding the
    names ms-swift imports from it -- swift/megatron/init.py (_patch_mcore_bridge: GPTBridge,
    __version__), trainers/base.py and utils/ (set_random_seed, split_cp_inputs, unwrap_model,
    LoraParallelLinear, ModelConfig, get_mcore_model, hf_to_mcore_config), arguments/
    megatron_args.py (mcore_bridge.model: get_mcore_model_type, get_model_meta). `unwrap_model`,
    which save_mcore_checkpoint and load_mcore_checkpoint call, is megatron-core's own (what
    mcore_bridge.utils.unwrap_model delegates to); every other name raises if called. ms-swift 4.2.3
    and 4.3.0 check mcore-bridge's installed version at import (its dist-info, which
    run_with_swift_env.sh puts on the path)."""
    from megatron.core.utils import unwrap_model

    def absent(name):
        def call(*a, **k):
            raise NotImplementedError(f"mcore_bridge.{name} is stubbed (it needs Transformer "
                                      "Engine)")
        return call

    bridge = types.ModuleType("mcore_bridge")
    bridge.__version__ = "stub"
    bridge.__path__ = []
    bridge.GPTBridge = type("GPTBridge", (), {"save_weights": absent("GPTBridge.save_weights"),
                                              "load_weights": absent("GPTBridge.load_weights")})
    bridge.LoraParallelLinear = type("LoraParallelLinear", (), {})
    bridge.ModelConfig = type("ModelConfig", (), {})
    bridge.unwrap_model = unwrap_model
    for name in ("set_random_seed", "split_cp_inputs", "get_mcore_model", "hf_to_mcore_config"):
        setattr(bridge, name, absent(name))
    model = types.ModuleType("mcore_bridge.model")
    model.get_mcore_model_type = absent("model.get_mcore_model_type")
    model.get_model_meta = absent("model.get_model_meta")
    bridge.model = model
    sys.modules["mcore_bridge"] = bridge
    sys.modules["mcore_bridge.model"] = model
    _record("mcore_bridge is a stub module (the real one imports Transformer Engine); only "
            "unwrap_model, megatron-core's own, is on the driven path")


def jit_script_sees_torch_factories():
    """ms-swift 4.6.0 compiles functions with @torch.jit.script when `import swift.megatron` imports
    swift.model (swift/sequence_parallel/zigzag_ring_attn.py). The megatron-core framework
    adapter's CPU shim device_factories_on_cpu has replaced torch's tensor factories (torch.empty,
    torch.zeros, ...) with Python wrappers, which TorchScript tries to compile as Python and cannot
    (`TypeError: module, class, method, function, traceback, frame, or code object was expected,
    got builtin_function_or_method`): the import fails. While torch.jit.script runs, torch's own
    factories are back in place, so that a function is compiled exactly as on a GPU machine (its
    TorchScript calls the ATen operators, which the wrappers never reach); the wrappers return
    afterwards. Nothing that ms-swift scripts is on the driven path. Reported only where
    torch.jit.script was called."""
    import torch
    script = torch.jit.script

    def unwrapped_factories():
        return {name: f for name, f in vars(torch).items()
                if callable(f) and getattr(f, "__module__", None) == "cpu_shims"
                and hasattr(f, "__wrapped__")}

    def scripting(*a, **k):
        wrappers = unwrapped_factories()
        for name, f in wrappers.items():
            setattr(torch, name, f.__wrapped__)
        try:
            return script(*a, **k)
        finally:
            for name, f in wrappers.items():
                setattr(torch, name, f)
            if not scripting.reported:
                scripting.reported = True
                _record("torch.jit.script compiles with torch's own tensor factories (the CPU "
                        "shims' wrappers are not TorchScript): ms-swift 4.6 scripts functions at "
                        "import, none on the driven path")

    scripting.reported = False
    torch.jit.script = scripting


def validate_patch_breaks_saves(torch_validate, swift_validate):
    """Whether ms-swift's replacement of default_planner._validate_global_plan returns what the
    installed torch's caller does not expect: torch 2.14's DefaultSavePlanner._create_global_plan
    joins the returned list of errors ('; '.join(...)); ms-swift before 4.6 returns True."""
    if swift_validate is torch_validate:
        return False
    try:
        result = swift_validate([], None)
    except Exception:
        return False
    annotation = inspect.signature(torch_validate).return_annotation
    wants_bool = annotation in (bool, "bool")
    return isinstance(result, bool) != wants_bool


def restore_torch_validate_global_plan(torch_validate):
    """ms-swift before 4.6 (swift/megatron/init.py, _patch_validate_non_overlapping_shards_metadata,
    run by `import swift.megatron`) replaces torch.distributed.checkpoint.default_planner.
    _validate_global_plan with `return True` ("too slow"). torch 2.14's
    DefaultSavePlanner._create_global_plan expects a list of error messages and runs
    `'; '.join(True)` on it, so every dist_checkpointing save (save_mcore_checkpoint's) fails with
    `TypeError: can only join an iterable`: ms-swift 4.2.3 and 4.3.0 cannot save a Megatron
    checkpoint on torch 2.14 (ms-swift 4.6.0 returns what the installed torch expects, and is left
    alone). Where the replacement does not fit the installed torch, torch's own function is put
    back, so that the rest of the save path can be tested; --keep-swift-validate-patch leaves
    ms-swift's in place to show the incompatibility. ms-swift's other patch in that function (a
    no-op validate_non_overlapping_shards_metadata) stays."""
    from torch.distributed.checkpoint import default_planner
    if not validate_patch_breaks_saves(torch_validate, default_planner._validate_global_plan):
        return
    default_planner._validate_global_plan = torch_validate
    _record("torch's default_planner._validate_global_plan is put back after `import "
            "swift.megatron` (ms-swift's `return True` fails every save on torch 2.14: TypeError: "
            "can only join an iterable)")


_APPLIED = []


def apply(keep_validate_patch=False):
    """The stub, ms-swift's import (its init_megatron_env patches), then the restore (unless
    keep_validate_patch). After cpu_shims.apply (megatron-core imported)."""
    if _APPLIED:
        return
    _APPLIED.append(True)
    jit_script_sees_torch_factories()
    mcore_bridge_stub()
    from torch.distributed.checkpoint import default_planner
    torch_validate = default_planner._validate_global_plan
    import swift.megatron  # noqa: F401  (swift/megatron/init.py: init_megatron_env())
    if keep_validate_patch:
        if validate_patch_breaks_saves(torch_validate, default_planner._validate_global_plan):
            _record("--keep-swift-validate-patch: ms-swift's _validate_global_plan replacement, "
                    "which does not fit this torch, is left in place (saves fail)")
    else:
        restore_torch_validate_global_plan(torch_validate)
    print("ckptspec ms-swift framework adapter, ms-swift shims:\n  " + "\n  ".join(FIDELITY),
          file=sys.stderr, flush=True)
