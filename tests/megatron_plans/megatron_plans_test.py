"""Plan dumps of real megatron-core objects through `ckptspec verify-plan`.

  megatron_plans_test.py CKPTSPEC WORKDIR {flag|pass}

Two gloo ranks on CPU dump signatures with tools/megatron_signature.py from
  gpt_tp1, gpt_tp2   GPTModel.sharded_state_dict() (local layer spec, SwiGLU, CPU initialization)
                     with tensor parallelism 1 and 2 (data parallelism 2 and 1)
  rsm_steady         a TP 2 GPTModel's state dict with a real RerunStateMachine's state_dict()
                     after two clean iterations, stored as Megatron-LM's checkpointing.py does
  rsm_fault          the same after a real fault: the machine's error injector fails every
                     validation until it asks to checkpoint and exit
then runs `ckptspec verify-plan` (P4, P5, P11) on each, which must pass, and
`verify-plan rsm_fault --against rsm_steady` (P6), which must fail ("flag": megatron-core
0.16.1, where a steady machine saves None and a fault one a ShardedObject: the class of B04,
docs/MUTANTS.md)
or pass ("pass": 0.19.2, where both save the object).
"""
import datetime, os, socket, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def cpu_patches():
    """The CUDA calls on these paths, redirected to the CPU (one place, every patch listed):
    torch.cuda.current_device (rerun_state_machine.py's validate_result and its logging),
    torch.cuda.get_rng_state / set_rng_state (RerunStateMachine._save_state / _restore_state),
    RerunStateMachine._reduce_any (an all_reduce of a tensor made on device='cuda')."""
    from megatron.core import rerun_state_machine as R
    torch.cuda.current_device = lambda: "cpu"
    torch.cuda.get_rng_state = lambda *a, **k: torch.get_rng_state()
    torch.cuda.set_rng_state = lambda *a, **k: None

    def _reduce_any(self, value):
        t = torch.tensor(value if isinstance(value, list) else [value], dtype=torch.int32)
        dist.all_reduce(t)
        flags = tuple(x > 0 for x in t.tolist())
        return flags if isinstance(value, list) else flags[0]
    R.RerunStateMachine._reduce_any = _reduce_any


def gpt_state_dict(tp):
    from megatron.core import parallel_state as ps
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.transformer_config import TransformerConfig
    ps.destroy_model_parallel()
    ps.initialize_model_parallel(tensor_model_parallel_size=tp, pipeline_model_parallel_size=1)
    cfg = TransformerConfig(num_layers=2, hidden_size=64, num_attention_heads=4,
                            use_cpu_initialization=True, tensor_model_parallel_size=tp,
                            params_dtype=torch.float32, gated_linear_unit=True)
    model = GPTModel(config=cfg, transformer_layer_spec=get_gpt_layer_local_spec(),
                     vocab_size=128, max_sequence_length=32)
    return {"model": model.sharded_state_dict(), "iteration": 7, "checkpoint_version": 3.0}


def rerun_state(fault):
    from megatron.core import rerun_state_machine as R
    injector = (R.RerunErrorInjector(1, R.RerunDiagnostic.PERSISTENT_ERROR) if fault
                else R.RerunErrorInjector())
    rsm = R.RerunStateMachine(mode=R.RerunMode.VALIDATE_RESULTS, error_injector=injector)
    loss = torch.tensor(1.0)
    for _ in range(2 if not fault else 5):  # the training loop's protocol
        while rsm.should_run_forward_backward(None):
            rsm.validate_result(loss * 2, torch.isnan, "loss is NaN", fatal=True)
        if rsm.should_checkpoint_and_exit()[0]:
            break
    if fault:
        assert rsm.state == R.RerunState.WILL_RERUN_FROM_CHECKPOINT, rsm.state
    return rsm.state_dict(None, "torch_dist")


def check_common_state():
    """The common-state rules of tools/megatron_signature.py on a hand-made state dict."""
    import megatron_signature as sig
    from megatron.core.dist_checkpointing.mapping import (
        LocalNonpersistentObject, ShardedTensor, ShardedTensorFactory)

    def chunk(key):
        return ShardedTensor.from_rank_offsets(key, torch.zeros(2))

    factory = ShardedTensorFactory("fc1", torch.zeros(4), lambda k, t, r, *a: {
        "w": ShardedTensor.from_rank_offsets(k + ".w", t[:2]),
        "v": ShardedTensor.from_rank_offsets(k + ".v", t[2:])}, lambda sub: None)
    sd = {"none": None, "empty_dict": {}, "empty_list": [], "only_sharded": {"w": chunk("a")},
          "fc1": factory, "local": LocalNonpersistentObject(object()),
          "mixed": [chunk("b"), 1, {}, {"x": chunk("c")}, None], "pair": (1, None),
          "inf": float("inf"), "nan": float("nan"), "obj": object()}
    got = sig.rank_signature(sd, 0)
    want_common = {"none": None, "empty_dict": {}, "empty_list": [], "mixed": [1, {}, None],
                   "pair": [1, None], "inf": "inf", "nan": "nan", "obj": "<object object>"}
    assert got["common"] == want_common, got["common"]
    assert sorted(t["key"] for t in got["tensors"]) == ["a", "b", "c", "fc1.v", "fc1.w"], got
    assert isinstance(sd["fc1"], ShardedTensorFactory)  # the state dict is left as it was
    print("common-state rules: OK")


def rank_main(rank, world, port, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    t = time.time()
    cpu_patches()
    import megatron_signature as sig
    if rank == 0:
        print(f"rank 0: process group and imports {time.time() - t:.1f} s", flush=True)
    for case in ("gpt_tp1", "gpt_tp2", "rsm_steady", "rsm_fault"):
        t = time.time()
        if case.startswith("gpt"):
            sd = gpt_state_dict(int(case[-1]))
        else:
            sd = gpt_state_dict(2)
            sd["rerun_state_machine"] = rerun_state(case == "rsm_fault")
        sig.dump_signature(sd, os.path.join(out, case + ".json"))
        if rank == 0:
            print(f"rank 0: {case} built and dumped in {time.time() - t:.1f} s", flush=True)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def verify(ckptspec, *args):
    p = subprocess.run([ckptspec, "verify-plan", *args], capture_output=True, text=True)
    print(f"$ ckptspec verify-plan {' '.join(os.path.basename(a) for a in args)}  -> exit {p.returncode}")
    print((p.stdout + p.stderr).rstrip())
    return p.returncode


def main():
    ckptspec, out, expect = sys.argv[1], sys.argv[2], sys.argv[3]
    import megatron.core
    print(f"megatron-core {megatron.core.__version__}, torch {torch.__version__}")
    check_common_state()
    os.makedirs(out, exist_ok=True)
    start = time.time()
    mp.spawn(rank_main, args=(2, free_port(), out), nprocs=2, join=True)
    print(f"dumped 4 signatures in {time.time() - start:.1f} s")
    failures = []
    for case in ("gpt_tp1", "gpt_tp2", "rsm_steady", "rsm_fault"):
        if verify(ckptspec, os.path.join(out, case + ".json")) != 0:
            failures.append(f"{case}: verify-plan fails (P4, P5, P11 must pass)")
    rc = verify(ckptspec, os.path.join(out, "rsm_fault.json"),
                "--against", os.path.join(out, "rsm_steady.json"))
    if (rc != 0) != (expect == "flag"):
        failures.append(f"rsm_fault --against rsm_steady: exit {rc}, expected P6 to "
                        + ("flag the structure change" if expect == "flag" else "pass"))
    for f in failures:
        print("FAILED:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
