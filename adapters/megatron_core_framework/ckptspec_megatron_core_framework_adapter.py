#!/usr/bin/env python3
"""ckptspec framework adapter (docs/PROTOCOL.md, "Framework adapters", revision 5): megatron-core.

One process per rank, a gloo default process group over MASTER_ADDR:MASTER_PORT (kept across
reset), CPU tensors. The megatron-core version is whichever `megatron` the interpreter imports
(PYTHONPATH: adapters/megatron_core/run_with_mcore_env.sh --mcore VERSION); einops must be
importable too. The adapter owns the whole training job and drives megatron-core's own objects in
Megatron-LM's order (gpt.py: the model, optimizer, scheduler and rerun state machine; loop.py:
the training loop; checkpointing.py: save and load as megatron/training/checkpointing.py does them
for torch_dist; observe.py: the observation). A job of two modules is megatron-core's MIMO model
(mimo.py: its framework gives checkpointing.py and observe.py the rank's module's layout), where
megatron-core has it. Its CPU shims are all in cpu_shims.py and reported in hello's
framework.fidelity.

Requests: hello (with the "framework" member, features.py), build, train, save, finalize, load,
observe, reset, shutdown. Capabilities: framework, reset, resharding, plan_cache, strict_modes.

--megatron-bridge DIR (a Megatron-Bridge release installed with pip --target) sets the optimizer up
as that release does and runs its post-load step after every load (bridge.py);
--megatron-bridge-precision-aware adds the precision-aware optimizer to Bridge's CPU offload.
"""
import argparse
import gc
import logging
import os
import sys
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))
sys.path.insert(0, str(HERE))

import cpu_shims  # noqa: E402
from errors import attempt  # noqa: E402
from ckptspec_adapter_kit import STRICT_MODES, AdapterError  # noqa: E402
from ckptspec_adapter_kit import serve as serve_requests  # noqa: E402
from ckptspec_torch_kit import add_pg_timeout_flag  # noqa: E402

ADAPTER = "megatron_core_framework"
CAPABILITIES = {"framework": True, "reset": True, "resharding": True, "plan_cache": True,
                "strict_modes": True}


class Session:
    """The adapter's state between requests: at most one built run (loop.Run)."""

    def __init__(self, args, rank, world):
        self.args, self.rank, self.world = args, rank, world
        self.bridge = None
        self.group = None
        self.framework = None
        self.declared = None
        self.run = None
        self.active = None  # the framework of the job being built or built (a MIMO job's own)

    # --- hello ---

    def setup(self):
        """megatron-core is imported (after the torch-level shims) and the declaration computed
        at the first hello."""
        if self.declared is not None:
            return
        cpu_shims.apply(raw_torch_adam=self.args.raw_torch_adam)
        import megatron.core
        from ckptspec_torch_kit import GlooGroup
        from bridge import BridgeRelease
        from features import framework_member
        from gpt import GptFramework
        if self.args.megatron_bridge:
            self.bridge = BridgeRelease(self.args.megatron_bridge,
                                        self.args.megatron_bridge_precision_aware)
        self.group = GlooGroup(self.rank, self.world, self.args.pg_timeout)
        self.framework = GptFramework(self.bridge)
        self.declared = framework_member(self.args, self.bridge, cpu_shims.FIDELITY)
        print(f"megatron-core {getattr(megatron.core, '__version__', '?')} from "
              f"{os.path.dirname(megatron.core.__file__)}; {self.declared['library']}",
              file=sys.stderr, flush=True)

    def hello(self, req):
        self.setup()
        return {"framework": self.declared}

    # --- build ---

    def build(self, req):
        from job import parse_job
        from loop import Run, enter_loop
        self.setup()
        if self.run is not None:
            raise AdapterError("FailedPrecondition", "build: a job is already built; reset first")
        self.group.ensure()
        job, error = attempt(lambda: parse_job(req.get("job"), self.declared, self.world))
        self.group.agree(error)
        fw = self.framework_for(job)
        self.active = fw
        try:
            _, error = attempt(lambda: fw.initialize(job))
            self.group.agree(error)
            model, error = attempt(lambda: fw.build_model(job))
            self.group.agree(error)

            def optimizer_and_scheduler():
                optimizer = fw.build_optimizer(job, model)
                flags = dict.fromkeys(("override_scheduler", "use_checkpoint_scheduler"), False)
                return optimizer, fw.build_scheduler(job, optimizer, flags)

            built, error = attempt(optimizer_and_scheduler)
            self.group.agree(error)
            optimizer, scheduler = built
            self.run = Run(job=job, framework=fw, model=model, optimizer=optimizer,
                           scheduler=scheduler, table=fw.param_table(job, model),
                           args=fw.run_args(job))
            enter_loop(self.run)
        except Exception:
            self.forget()
            raise
        return {}

    def framework_for(self, job):
        """The framework of `job`: megatron-core's MIMO model for a job of several modules (a
        fresh mimo.MimoFramework per build), else the GPT framework."""
        if len(job.modules) > 1:
            from mimo import MimoFramework
            return MimoFramework(self.bridge, raw_torch_adam=self.args.raw_torch_adam)
        return self.framework

    def built(self, op):
        if self.run is None:
            raise AdapterError("FailedPrecondition", f"{op}: no job is built")
        return self.run

    # --- train, save, load, observe ---

    def train(self, req):
        from loop import train
        run = self.built("train")
        steps, fault = req.get("steps", 1), bool(req.get("fault", False))
        if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
            raise AdapterError("InvalidArgument", "train: 'steps' must be an integer >= 0")
        reply, error = attempt(lambda: train(run, steps, fault, self.group))
        self.group.agree(error)
        return reply

    def save(self, req):
        run = self.built("save")
        if req.get("async"):
            raise AdapterError("NotSupported", "save: async saves are not declared")
        return self.save_checkpoint(run, req["directory"])

    def save_checkpoint(self, run, directory):
        """The framework's save of `run` into `directory` (checkpointing.py: Megatron-LM's)."""
        from checkpointing import save_checkpoint
        return save_checkpoint(run, directory, self.group)

    def load(self, req):
        from checkpointing import load_checkpoint
        from job import parse_flags
        run = self.built("load")
        strict = req.get("strict", "assume_ok_unexpected")
        if strict not in STRICT_MODES:
            raise AdapterError("InvalidArgument", f"load: unknown strict mode '{strict}'")
        flags = parse_flags(req.get("flags"), self.declared)

        def scheduler():
            # Megatron-LM knows --override-opt_param-scheduler and --use-checkpoint-opt_param-
            # scheduler before it builds the scheduler: the scheduler is made again with them.
            run.scheduler = run.framework.build_scheduler(run.job, run.optimizer, flags)

        _, error = attempt(scheduler)
        self.group.agree(error)
        iteration = load_checkpoint(run, req["directory"], req.get("iteration"), flags, strict,
                                    self.group)
        return {"iteration": iteration}

    def observe(self, req):
        from observe import observe
        run = self.built("observe")
        obs, error = attempt(lambda: observe(run))
        self.group.agree(error)
        return {"observation": obs}

    def finalize(self, req):
        return {}  # saves are synchronous

    # --- reset ---

    def forget(self):
        """Drops the run and megatron's process-wide state (model-parallel groups, the rerun
        state machine, the RNG tracker); the default process group stays."""
        self.run = None
        framework, self.active = self.active or self.framework, None
        if framework is not None:
            framework.destroy()
        if self.group is not None:
            destroy_process_groups(keep=[self.group.async_pg])
        gc.collect()

    def reset(self, req):
        if self.group is not None:
            self.group.refuse_reset_if_broken()
        self.forget()
        return {}


def destroy_process_groups(keep=()):
    """Destroys every process group but the default one and `keep`: megatron's
    destroy_model_parallel forgets its groups (initialize_model_parallel's, and the gloo ones it
    asks for) without destroying most of them, and each gloo group keeps its threads (two or more)
    for the life of the process; a process that serves many jobs through reset would pile them up
    (thousands of threads after a few hundred builds), where a training process builds its groups
    once. Local to this rank (no collective)."""
    import torch.distributed as dist
    from torch.distributed import distributed_c10d as c10d
    if not dist.is_initialized():
        return
    kept = {id(dist.group.WORLD)} | {id(g) for g in keep if g is not None}
    for pg in list(c10d._world.pg_map):
        if id(pg) not in kept:
            dist.destroy_process_group(pg)


def serve(args, session_class=None, adapter=ADAPTER, capabilities=CAPABILITIES):
    """Serves requests with a Session (or `session_class`, a subclass: another framework adapter
    built on this one, adapters/ms_swift_framework/) under `adapter`'s name and capabilities."""
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    logging.basicConfig(stream=sys.stderr, level=logging.ERROR)
    session = (session_class or Session)(args, rank, world)
    from errors import from_exception as to_error
    ops = {"build": session.build, "train": session.train, "save": session.save,
           "finalize": session.finalize, "load": session.load, "observe": session.observe,
           "reset": session.reset}

    def unexpected(e):
        if session.group is not None:
            session.group.check(e)

    if serve_requests(rank, adapter, capabilities, ops, to_error, unexpected,
                      hello=session.hello) == "shutdown":
        os._exit(0)  # no teardown of the gloo group: a peer may already be gone
    if session.group is not None:
        session.group.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--megatron-bridge", metavar="DIR",
                   help="a Megatron-Bridge release installed with pip --target: set the optimizer "
                        "up as it does and run its post-load step after every load")
    p.add_argument("--megatron-bridge-precision-aware", action="store_true",
                   help="with --megatron-bridge: CPU offload with the precision-aware optimizer "
                        "(which Bridge allows but does not require)")
    p.add_argument("--max-world-size", type=int, default=4,
                   help="hello's framework.max_world_size (default 4)")
    p.add_argument("--lr-mult-identity-only", action="store_true",
                   help="declare lr_mult although megatron-core's scheduler does not apply it "
                        "(the job's lr_mult becomes a param-group identity field only)")
    p.add_argument("--raw-torch-adam", action="store_true",
                   help="leave out the shims that stand in for FusedAdam's step handling (the "
                        "torch AdamW fallback's KeyError 'step' and shared step after a load)")
    p.add_argument("--undeclare", action="append", metavar="FEATURE",
                   help="leave a declared feature out of hello's framework member (repeatable), "
                        "so that no job asks for it: to look for one defect where another, "
                        "already found, would answer first (e.g. lr_bounds)")
    add_pg_timeout_flag(p, "CKPTSPEC_MCORE_PG_TIMEOUT")
    serve(p.parse_args())


if __name__ == "__main__":
    main()
