"""The protocol driver that the framework adapters' tests share (adapter_test.py and
mimo_adapter_test.py here, adapters/ms_swift_framework/adapter_test.py): rank processes of a
framework adapter spoken to as ckptspec's harness does (the Python adapters' protocol driver's
Group, adapters/python/ckptspec_protocol_test_driver.py), small jobs in the protocol's form, and a
TestCase base that keeps one live group for all of a class's tests. Not a test itself.

  use_adapter(path)         the adapter script every Ranks starts (default: the megatron-core
                            framework adapter)
  Ranks(world, args)        a live group: one request per call, the seconds of each recorded
  job(...), summed(...)     a one-module job; a copy's digests summed over the ranks
  env_dir(name), ckptspec_binary()
                            an environment ci/setup built; the ckptspec CLI
  LiveGroupTest             setUpClass/tearDownClass/setUp/directory for one group per class, and
                            the checks the drivers repeat (resume_equivalent, resume_cases,
                            signatures_verified, ...)
  report_timings(title)     the recorded seconds per request, on stderr (a tearDownModule)
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "adapters" / "python"))
from ckptspec_protocol_test_driver import Group  # noqa: E402

MASK = (1 << 64) - 1
TIMINGS = {}  # (world, op) -> [seconds of each call]
# The names a framework member may declare (docs/PROTOCOL.md, hello's framework).
FIXED_NAMES = {
    "parallelism": {"tp", "pp", "cp", "ep"}, "dtypes": {"fp32", "bf16", "fp16"},
    "model": {"gated_linear_unit", "add_bias", "untied_embeddings", "query_groups", "moe",
              "pipeline_split"},
    "optimizer": {"distributed", "cpu_offload", "lr_mult", "lr_bounds", "decoupled_lr", "frozen"},
    "optimizer_formats": {"dp_reshardable", "fully_reshardable"},
    "load_flags": {"finetune", "no_load_optim", "no_load_rng", "override_scheduler",
                   "use_checkpoint_scheduler"},
    "rerun_modes": {"disabled", "validate_results", "report_determinism_stats"}}


# The adapter script every Ranks starts (use_adapter).
ADAPTER = Path(__file__).with_name("ckptspec_megatron_core_framework_adapter.py")


def use_adapter(path):
    """Every Ranks made from now on starts the adapter script `path`."""
    global ADAPTER
    ADAPTER = Path(path)


def env_dir(name):
    """adapters/requirements/env_dir.sh's directory of the environment NAME, or None."""
    req = REPO / "adapters" / "requirements" / f"{name}.txt"
    if not req.is_file():
        return None
    digest = hashlib.sha256(req.read_bytes()).hexdigest()[:16]
    root = Path(os.environ.get("CKPTSPEC_CACHE_DIR", Path.home() / ".cache" / "ckptspec"))
    d = root / "envs" / f"{name}-{digest}"
    return d if (d / ".ckptspec-complete").is_file() else None


def ckptspec_binary():
    """The ckptspec CLI: $CKPTSPEC_BINARY (ctest sets it), else build/cli/ckptspec, else None."""
    candidates = [Path(os.environ["CKPTSPEC_BINARY"])] if os.environ.get("CKPTSPEC_BINARY") else []
    for p in candidates + [REPO / "build" / "cli" / "ckptspec"]:
        if p.is_file() and os.access(p, os.X_OK):
            return p
    return None


def job(tp=1, pp=1, dtype="bf16", distributed=True, fmt="dp_reshardable", rerun="disabled",
        constant=False, offload=0.0, **model):
    """A small job in the protocol's form (2 ranks, 2 layers, hidden 32, vocab 64)."""
    split = {"first_stage_layers": model.pop("first_stage_layers", -1),
             "last_stage_layers": model.pop("last_stage_layers", -1)}
    m = {"num_layers": 2, "hidden_size": 32, "num_attention_heads": 4, "num_query_groups": 4,
         "ffn_hidden_size": 64, "vocab_size": 64, "gated_linear_unit": False, "add_bias": False,
         "tie_embeddings": True, "num_experts": 0, "moe_ffn_hidden_size": 0, "moe_layer_freq": 1,
         "params_dtype": dtype, "pipeline_split": split}
    m.update(model)
    return {"seed": 7,
            "modules": [{"name": "", "world_size": 2, "tp": tp, "pp": pp, "dp": 2 // (tp * pp),
                         "cp": 1, "ep": 1, "etp": 1, "order": "tp-cp-ep-dp-pp", "model": m}],
            "frozen": [],
            "optimizer": {"distributed": distributed, "weight_decay": 0.01, "beta1": 0.9,
                          "beta2": 0.999, "eps": 1e-8, "cpu_offload_fraction": offload,
                          "lr_mult_overrides": [], "lr_bound_overrides": [],
                          "decoupled_lr": None, "decoupled_min_lr": None, "format": fmt},
            "scheduler": {"init_lr": 0.0, "max_lr": 0.001, "min_lr": 1e-05,
                          "lr_warmup_steps": 0, "lr_decay_steps": 1000,
                          "lr_decay_style": "cosine", "wsd_decay_steps": 0,
                          "lr_wsd_decay_style": "linear", "start_wd": 0.01, "end_wd": 0.01,
                          "wd_incr_steps": 1000, "wd_incr_style": "constant"},
            "global_batch_size": 8, "rerun_mode": rerun, "assume_constant_structure": constant,
            "options": {}}


def summed(observations, kind):
    """Per parameter, the digests of one copy summed over the ranks (layout-independent)."""
    out = {}
    for o in observations:
        for name, d in o[kind].items():
            out[name] = (out.get(name, 0) + int(d, 16)) & MASK
    return out


class Ranks:
    """A group of adapter processes (the protocol driver's Group) with one request per call and
    the seconds each op took (TIMINGS; each on stderr too with CKPTSPEC_TEST_TRACE set)."""

    def __init__(self, world=2, args=()):
        start = time.monotonic()
        self.group = Group(ADAPTER, world, ("--pg-timeout", "60", *args))
        TIMINGS.setdefault((world, "start+hello"), []).append(time.monotonic() - start)
        self.world = world
        replies = self.group.call("hello", [{"protocol": 1, "rank": r, "world_size": world,
                                             "revision": 5} for r in range(world)])
        self.framework = replies[0]["framework"]
        self.version = self.framework["library"].split()[1]
        self.capabilities = self.group.capabilities

    def call(self, op, **fields):
        start = time.monotonic()
        replies = self.group.call(op, [dict(fields) for _ in range(self.world)])
        TIMINGS.setdefault((self.world, op), []).append(time.monotonic() - start)
        if os.environ.get("CKPTSPEC_TEST_TRACE"):
            print(f"  {op}: {time.monotonic() - start:.3f} s", file=sys.stderr)
        return replies

    def ok(self, op, **fields):
        replies = self.call(op, **fields)
        for r in replies:
            assert r["ok"], (op, r)
        return replies

    def observe(self):
        return [r["observation"] for r in self.ok("observe")]

    def load(self, directory, flags=None, strict="assume_ok_unexpected", iteration=None):
        return self.call("load", directory=directory, iteration=iteration, flags=flags or {},
                         strict=strict)

    def close(self):
        self.group.close()


def report_timings(title):
    """Prints the seconds per request recorded so far (per world size and op) under `title`."""
    lines = [f"  {world} ranks {op:12s} {len(v):4d} calls  mean {sum(v) / len(v):7.3f} s  "
             f"max {max(v):7.3f} s" for (world, op), v in sorted(TIMINGS.items())]
    if lines:
        print(f"\n{title}:\n" + "\n".join(lines), file=sys.stderr)


class LiveGroupTest(unittest.TestCase):
    """One live group of WORLD ranks (started with ARGS) for every test of a class, reset after
    each test, as the harness keeps live groups; each test gets a temporary directory."""
    WORLD = 2
    ARGS = ()

    @classmethod
    def setUpClass(cls):
        cls.ranks = Ranks(cls.WORLD, cls.ARGS)
        cls.declared = cls.ranks.framework

    @classmethod
    def tearDownClass(cls):
        cls.ranks.close()

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.addCleanup(lambda: self.ranks.ok("reset"))
        self.n = 0

    def directory(self):
        """A new checkpoint directory under the test's temporary directory."""
        self.n += 1
        return str(Path(self.tmp.name) / f"ckpt{self.n}")

    def supported(self, j):
        """Whether the declaration covers the features of `j`, a one-module job."""
        o, m = j["optimizer"], j["modules"][0]["model"]
        d = self.declared
        return ((not o["distributed"] or "distributed" in d["optimizer"])
                and (o["cpu_offload_fraction"] == 0 or "cpu_offload" in d["optimizer"])
                and m["params_dtype"] in d["dtypes"] and o["format"] in d["optimizer_formats"]
                and j["rerun_mode"] in d["rerun_modes"])

    def train_and_save(self, j, steps=1, ok=True):
        """Builds `j`, trains `steps` and saves into a new directory (the save must succeed on
        every rank unless not `ok`). Returns (the directory, the save's replies)."""
        d = self.directory()
        self.ranks.ok("build", job=j)
        self.ranks.ok("train", steps=steps, fault=False)
        save = self.ranks.ok if ok else self.ranks.call
        return d, save("save", directory=d, **{"async": False})

    def resume_equivalent(self, j, k=1, m=2):
        """train k + m == train k, save, reset, build, load, train m: every member of every
        rank's observation the same. Returns (the straight run's observations, the save's
        replies)."""
        self.ranks.ok("build", job=j)
        self.ranks.ok("train", steps=k + m, fault=False)
        straight = self.ranks.observe()
        self.ranks.ok("reset")
        d, saved = self.train_and_save(j, steps=k)
        self.ranks.ok("reset")
        self.ranks.ok("build", job=j)
        replies = self.ranks.ok("load", directory=d, iteration=None, flags={},
                                strict="assume_ok_unexpected")
        self.assertEqual([r["iteration"] for r in replies], [k] * self.ranks.world)
        self.ranks.ok("train", steps=m, fault=False)
        resumed = self.ranks.observe()
        self.ranks.ok("reset")
        for rank, (a, b) in enumerate(zip(straight, resumed)):
            for member in a:
                self.assertEqual(a[member], b.get(member), f"rank {rank}: {member}")
        return straight, saved

    def resume_cases(self, cases):
        """resume_equivalent of job(**case) for every case the declaration covers, each a subtest:
        the straight run's 3 iterations are 24 samples and 24 scheduler steps."""
        for case in cases:
            j = job(**case)
            if not self.supported(j):
                continue
            with self.subTest(**case):
                obs, _ = self.resume_equivalent(j)
                self.assertEqual(obs[0]["iteration"], 3)
                self.assertEqual(obs[0]["consumed_samples"], 24)
                self.assertEqual(obs[0]["scheduler"]["num_steps"], 24)

    def assert_same_error(self, replies, code):
        """Every rank failed with `code`."""
        self.assertTrue(all(not r["ok"] for r in replies), replies)
        self.assertEqual({r["error"]["code"] for r in replies}, {code}, replies)

    def signatures_verified(self, j):
        """Builds `j`, trains a step, saves and resets; the save's signatures must name the ranks
        in order and pass `ckptspec verify-plan` (where the binary is built). Returns them."""
        _, replies = self.train_and_save(j)
        self.ranks.ok("reset")
        signatures = [r["signature"] for r in replies]
        self.assertEqual([s["rank"] for s in signatures], list(range(self.ranks.world)))
        checked = self.verify_plan(replies)
        if checked is not None:
            self.assertEqual(checked[0], 0, checked[1])
        return signatures

    def verify_plan(self, replies):
        """`ckptspec verify-plan` of a save's signatures: (returncode, output), or None without
        the binary."""
        binary = ckptspec_binary()
        if binary is None:
            return None
        path = Path(self.tmp.name) / f"signature{self.n}.json"
        path.write_text(json.dumps({"format": "ckptspec.signature", "version": 1,
                                    "ranks": [r["signature"] for r in replies]}))
        result = subprocess.run([str(binary), "verify-plan", str(path)], capture_output=True,
                                text=True)
        return result.returncode, result.stdout + result.stderr
