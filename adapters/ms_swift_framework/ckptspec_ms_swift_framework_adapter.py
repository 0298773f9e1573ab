#!/usr/bin/env python3
"""ckptspec framework adapter (docs/PROTOCOL.md, "Framework adapters", revision 5): ms-swift's
Megatron trainer on megatron-core.

The megatron-core framework adapter (adapters/megatron_core_framework/) with ms-swift's layer on
top, reusing its modules by import: its Session (the requests, the gloo group, every rank failing
together), GptFramework (model-parallel state, seeds, rerun state machine, the GPTModel in
megatron's DDP), its training loop, observation and CPU shims. What ms-swift replaces
(swift_framework.py, swift_checkpointing.py): the optimizer and scheduler come from ms-swift's own
BaseMegatronTrainer.get_optimizer_and_scheduler with the args ms-swift's trainer would hold for the
job, saves and loads go through ms-swift's save_mcore_checkpoint / load_mcore_checkpoint, and the
run's args (what a checkpoint stores, the data position) are ms-swift's. Its own shims
(swift_shims.py: the mcore_bridge stub, the restore of torch's _validate_global_plan, TorchScript's
view of torch's factories) are reported in hello's framework.fidelity with the CPU shims.

ms-swift, its dependencies, mcore-bridge's dist-info and one megatron-core version must be
importable (adapters/ms_swift_framework/run_with_swift_env.sh --swift VERSION --mcore VERSION).

Requests: hello (with the "framework" member, swift_framework.framework_member), build, train,
save, finalize, load, observe, reset, shutdown. Capabilities: framework, reset, resharding.

--keep-swift-validate-patch leaves ms-swift's replacement of torch's _validate_global_plan in place
(ms-swift before 4.6: every save fails on torch 2.14).
"""
import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))
sys.path.insert(0, str(HERE.parent / "megatron_core_framework"))
sys.path.insert(0, str(HERE))

import ckptspec_megatron_core_framework_adapter as mcore_framework  # noqa: E402
import cpu_shims  # noqa: E402
from ckptspec_adapter_kit import AdapterError  # noqa: E402
from ckptspec_torch_kit import add_pg_timeout_flag  # noqa: E402

ADAPTER = "ms_swift_framework"
CAPABILITIES = {"framework": True, "reset": True, "resharding": True}
STRICT = "assume_ok_unexpected"  # ms-swift's load passes no strict mode: megatron-core's default


class SwiftSession(mcore_framework.Session):
    """The megatron-core framework adapter's Session with SwiftFramework, ms-swift's args as the
    run's, and ms-swift's save and load."""

    def setup(self):
        if self.declared is not None:
            return
        cpu_shims.apply()
        import swift_shims
        swift_shims.apply(keep_validate_patch=self.args.keep_swift_validate_patch)
        import megatron.core
        from ckptspec_torch_kit import GlooGroup
        from swift_framework import SwiftFramework, framework_member, swift_version
        self.group = GlooGroup(self.rank, self.world, self.args.pg_timeout)
        self.framework = SwiftFramework()
        self.declared = framework_member(self.args, cpu_shims.FIDELITY + swift_shims.FIDELITY)
        import swift
        print(f"ms-swift {swift_version()} from {os.path.dirname(swift.__file__)}; megatron-core "
              f"{getattr(megatron.core, '__version__', '?')} from "
              f"{os.path.dirname(megatron.core.__file__)}", file=sys.stderr, flush=True)

    def build(self, req):
        reply = super().build(req)
        self.run.args = self.framework.args  # ms-swift's args: the checkpoint's, the data position
        return reply

    def save_checkpoint(self, run, directory):
        """ms-swift's save (swift_checkpointing.py)."""
        from swift_checkpointing import save
        return save(run, directory, self.group)

    def load(self, req):
        from job import parse_flags
        from swift_checkpointing import load
        run = self.built("load")
        strict = req.get("strict", STRICT)
        if strict != STRICT:
            raise AdapterError("NotSupported", f"load: strict mode '{strict}': capability "
                                               "strict_modes is not declared")
        flags = parse_flags(req.get("flags"), self.declared)
        return {"iteration": load(run, req["directory"], req.get("iteration"), flags,
                                  self.group)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--keep-swift-validate-patch", action="store_true",
                   help="leave ms-swift's replacement of torch's default_planner."
                        "_validate_global_plan in place (ms-swift before 4.6 fails every save on "
                        "torch 2.14)")
    p.add_argument("--max-world-size", type=int, default=4,
                   help="hello's framework.max_world_size (default 4)")
    add_pg_timeout_flag(p, "CKPTSPEC_MCORE_PG_TIMEOUT")
    mcore_framework.serve(p.parse_args(), session_class=SwiftSession, adapter=ADAPTER,
                          capabilities=CAPABILITIES)


if __name__ == "__main__":
    main()
