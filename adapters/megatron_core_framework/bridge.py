"""A Megatron-Bridge release's post-load step, run unchanged without importing Megatron-Bridge.

Every megatron.bridge module imports Bridge's model zoo and with it Transformer Engine (CUDA only),
so Bridge cannot be imported here. What the adapter needs of a release is the step its
training/setup.py runs after checkpoint_manager.load: from 0.6.0 on,
sync_hybrid_device_optimizer_fp32_master_copies(optimizer) of megatron/bridge/training/optim.py;
before, nothing. BridgeRelease(directory) reads that function's source from the release installed
in `directory` (pip install --target) with `ast`, and compiles it with the module's own top-level
imports (those of torch, the standard library and megatron.core; none of megatron.bridge) and
module-level names it uses, in a namespace named as the module: the function runs as written.
"""
import ast
from pathlib import Path

SYNC = "sync_hybrid_device_optimizer_fp32_master_copies"


def release_version(root):
    """MAJOR.MINOR.PATCH of megatron/bridge/package_info.py, read without importing it."""
    tree = ast.parse((root / "megatron" / "bridge" / "package_info.py").read_text())
    parts = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in ("MAJOR", "MINOR", "PATCH")
                and isinstance(node.value, ast.Constant)):
            parts[node.targets[0].id] = node.value.value
    return f"{parts.get('MAJOR', '?')}.{parts.get('MINOR', '?')}.{parts.get('PATCH', '?')}"


def _imports_outside_bridge(tree):
    """The module's top-level import statements, but those of megatron.bridge."""
    kept = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            if not any(a.name.startswith("megatron.bridge") for a in node.names):
                kept.append(node)
        elif isinstance(node, ast.ImportFrom):
            if not (node.module or "").startswith("megatron.bridge"):
                kept.append(node)
    return kept


def _module_names(tree, wanted):
    """Top-level assignments of the module to names in `wanted` (its logger)."""
    return [node for node in tree.body if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id in wanted for t in node.targets)]


class BridgeRelease:
    """One installed Megatron-Bridge release (see the module docstring)."""

    def __init__(self, directory, precision_aware=False):
        self.root = Path(directory)
        # Bridge does not require the precision-aware optimizer with CPU offload (Megatron-LM
        # does); a Bridge user may still set it.
        self.precision_aware = precision_aware
        optim = self.root / "megatron" / "bridge" / "training" / "optim.py"
        if not optim.is_file():
            raise FileNotFoundError(f"--megatron-bridge {directory}: no {optim}")
        self.version = release_version(self.root)
        self.sync = self._load_sync(optim)

    def _load_sync(self, path):
        tree = ast.parse(path.read_text(), str(path))
        fn = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == SYNC]
        if not fn:
            return None
        names = {n.id for n in ast.walk(fn[0]) if isinstance(n, ast.Name)}
        namespace = {"__name__": "megatron.bridge.training.optim"}
        for node in _imports_outside_bridge(tree):
            try:
                exec(compile(ast.Module(body=[node], type_ignores=[]), str(path), "exec"),
                     namespace)
            except ImportError:
                pass  # a name this megatron-core lacks; the function does not use it
        body = _module_names(tree, names) + fn
        exec(compile(ast.Module(body=body, type_ignores=[]), str(path), "exec"), namespace)
        return namespace[SYNC]

    def fidelity(self):
        """The hello fidelity line naming what runs after a load."""
        setup = (f"Megatron-Bridge {self.version} optimizer setup (CPU offload "
                 f"{'with' if self.precision_aware else 'without'} the precision-aware optimizer)")
        if self.sync is None:
            return f"{setup}; this release has no post-load step, nothing runs after a load"
        return (f"{setup} and its post-load step {SYNC} (from megatron/bridge/training/optim.py, "
                "compiled from the release's source) after every load")

    def post_load(self, optimizer):
        """setup.py's step after checkpoint_manager.load."""
        if self.sync is not None:
            self.sync(optimizer)
