#!/usr/bin/env python3
"""Protocol-level tests of the ms-swift framework adapter (docs/PROTOCOL.md, "Framework adapters"),
with the framework adapters' test driver (adapters/megatron_core_framework/framework_driver.py:
two rank processes spoken to as ckptspec's harness does). Run with one ms-swift
release and one megatron-core version:
    adapters/ms_swift_framework/run_with_swift_env.sh . --swift 4.3.0 --mcore 0.18.0 @PYTHON@ \\
        adapters/ms_swift_framework/adapter_test.py

What it shows, per ms-swift x megatron-core version (known() below says what each pair is
expected to do):
  - B01: with ms-swift's apply_wd_to_qk_layernorm (its own _get_param_groups), ms-swift 4.2.3 builds
    param groups without lr_mult, and a resume with optimizer state fails on megatron-core
    0.16-0.18 (`ValueError: Key lr_mult (or pre_lr_mult) not found in param_group`); on 0.19,
    where a missing key matches as None, and with ms-swift 4.3.0 and 4.6.0 (lr_mult = 1), it
    resumes bit for bit (train 3 == train 1, save, reset, build, load, train 2);
  - resume equivalence on megatron-core's own param groups (the option off) over layouts, dtypes,
    the distributed optimizer on and off, frozen parameters and the decoupled LR;
  - --keep-swift-validate-patch: ms-swift 4.2.3 and 4.3.0 cannot save on torch 2.14 (their
    _validate_global_plan replacement returns True: `TypeError: can only join an iterable`); 4.6.0
    saves;
  - the scheduler's sample counts map exactly onto ms-swift's iterations, and a job whose counts
    are not whole iterations is NotSupported;
  - the signatures pass `ckptspec verify-plan` where the binary is built; errors on every rank.
"""
import inspect
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "megatron_core_framework"))
from framework_driver import (FIXED_NAMES, LiveGroupTest, Ranks, job,  # noqa: E402
                              report_timings, use_adapter)

use_adapter(Path(__file__).with_name("ckptspec_ms_swift_framework_adapter.py"))

LR_MULT_ERROR = "Key lr_mult (or pre_lr_mult) not found in param_group"
JOIN_ERROR = "can only join an iterable"


def versions(framework):
    """(ms-swift version, megatron-core version) from hello's library ("ms-swift X on
    megatron-core Y")."""
    words = framework["library"].split()
    return words[1], words[-1]


def torch_joins_validation_errors():
    """Whether the installed torch's DefaultSavePlanner expects _validate_global_plan to return a
    list of errors (torch 2.14) rather than a bool."""
    from torch.distributed.checkpoint import default_planner
    annotation = inspect.signature(default_planner._validate_global_plan).return_annotation
    return annotation not in (bool, "bool")


def known(swift, mcore):
    """What the pair is expected to do: groups_have_lr_mult (ms-swift's own groups), b01 (a resume
    with optimizer state fails on them), b21 (on megatron-core 0.16-0.18 a job with a decoupled LR
    does not resume bit for bit: the groups differ after the load, as they do under the
    megatron-core framework adapter; B21's versions),
    validate_patch_breaks_saves (on this torch)."""
    popped = swift == "4.2.3"  # 4.0.x-4.2.3 pop lr_mult; 4.3.0 (PR #9524) sets 1.0; 4.6.0 rewrites
    raises = mcore.split(".")[:2] in (["0", "16"], ["0", "17"], ["0", "18"])
    old_patch = swift in ("4.2.3", "4.3.0")  # 4.6.0 returns what torch's caller expects
    return {"groups_have_lr_mult": not popped, "b01": popped and raises, "b21": raises,
            "validate_patch_breaks_saves": old_patch and torch_joins_validation_errors()}


def tearDownModule():
    report_timings("seconds per request")


def qk_job(**kw):
    j = job(**kw)
    j["options"] = {"apply_wd_to_qk_layernorm": True}
    return j


class SwiftFrameworkTest(LiveGroupTest):
    """One live group of two ranks for every test (framework_driver.LiveGroupTest)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.swift, cls.mcore = versions(cls.declared)
        cls.known = known(cls.swift, cls.mcore)
        print(f"ms-swift {cls.swift}, megatron-core {cls.mcore}: expected {cls.known}",
              file=sys.stderr)

    def test_hello_declares_ms_swift(self):
        self.assertEqual(self.ranks.capabilities,
                         {"framework": True, "reset": True, "resharding": True})
        d = self.declared
        self.assertTrue(d["library"].startswith("ms-swift "), d["library"])
        self.assertEqual(d["options"], {"apply_wd_to_qk_layernorm": "bool"})
        self.assertEqual(d["load_flags"], ["finetune", "no_load_optim", "no_load_rng"])
        self.assertEqual(d["rerun_modes"], ["disabled"])
        self.assertNotIn("lr_mult", d["optimizer"])
        self.assertNotIn("lr_bounds", d["optimizer"])
        for member, names in FIXED_NAMES.items():
            self.assertLessEqual(set(d[member]), names, member)
        fidelity = "\n".join(d["fidelity"])
        self.assertIn("mcore_bridge is a stub module", fidelity)
        self.assertEqual("_validate_global_plan is put back" in fidelity,
                         self.known["validate_patch_breaks_saves"])

    # --- B01 ---

    def test_b01_lr_mult_and_resume_with_swift_param_groups(self):
        j = qk_job()
        self.ranks.ok("build", job=j)
        groups = self.ranks.observe()[0]["groups"]
        with_lr_mult = [("lr_mult" in g) for g in groups]
        shown = [{k: g.get(k, "absent") for k in ("wd_mult", "lr_mult", "max_lr")}
                 for g in groups]
        print(f"B01 (ms-swift {self.swift}, megatron-core {self.mcore}): groups after the build "
              f"{shown}", file=sys.stderr)
        self.assertEqual(set(with_lr_mult), {self.known["groups_have_lr_mult"]})
        self.ranks.ok("train", steps=1, fault=False)
        d = self.directory()
        self.ranks.ok("save", directory=d, **{"async": False})
        self.ranks.ok("reset")
        self.ranks.ok("build", job=j)
        replies = self.ranks.load(d)
        print(f"B01 (ms-swift {self.swift}, megatron-core {self.mcore}): the resume's load: "
              f"{replies[0].get('error') or 'ok'}", file=sys.stderr)
        if self.known["b01"]:
            self.assertTrue(all(not r["ok"] for r in replies), replies)
            self.assertIn(LR_MULT_ERROR, replies[0]["error"]["message"])
            return
        self.assertTrue(all(r["ok"] for r in replies), replies)
        self.assertEqual([r["iteration"] for r in replies], [1, 1])
        self.ranks.ok("reset")
        obs, _ = self.resume_equivalent(j)
        self.assertEqual(obs[0]["iteration"], 3)

    # --- resume equivalence on megatron-core's groups ---

    def test_resume_is_equivalent_to_training_straight_through(self):
        cases = [dict(), dict(distributed=False), dict(tp=2), dict(pp=2),
                 dict(fmt="fully_reshardable"), dict(dtype="fp32", distributed=False),
                 dict(dtype="fp16"),
                 dict(tp=2, gated_linear_unit=True, add_bias=True, num_query_groups=2,
                      tie_embeddings=False)]
        self.resume_cases(cases)

    def test_frozen_and_decoupled_lr(self):
        for option in (False, True):
            with self.subTest(apply_wd_to_qk_layernorm=option):
                j = job(tie_embeddings=False)
                j["frozen"] = ["word_embeddings"]
                j["optimizer"]["decoupled_lr"] = 2e-3
                j["options"] = {"apply_wd_to_qk_layernorm": option}
                self.ranks.ok("build", job=j)
                self.ranks.ok("train", steps=1, fault=False)
                obs = self.ranks.observe()
                self.ranks.ok("reset")
                bounds = {n: (g["max_lr"], g["min_lr"], g["wd_mult"])
                          for o in obs for g in o["groups"] for n in g["params"]}
                self.assertNotIn("embedding.word_embeddings.weight", bounds)
                self.assertEqual(bounds["output_layer.weight"], (2e-3, 1e-5, 1.0))
                self.assertEqual(bounds["decoder.final_layernorm.weight"], (1e-3, 1e-5, 0.0))
                self.assertEqual(bounds["decoder.layers.0.mlp.linear_fc1.weight"],
                                 (1e-3, 1e-5, 1.0))
                if not (option and self.known["b01"]) and not self.known["b21"]:
                    self.resume_equivalent(j)

    # --- the torch 2.14 save incompatibility ---

    def test_keep_swift_validate_patch(self):
        # megatron-core plans the save on the coordinator only: rank 0 fails there while rank 1
        # waits in a barrier until the process group's timeout (20 s here).
        ranks = Ranks(2, ("--keep-swift-validate-patch", "--pg-timeout", "20"))
        self.addCleanup(ranks.close)
        with tempfile.TemporaryDirectory() as d:
            ranks.ok("build", job=job())
            ranks.ok("train", steps=1, fault=False)
            replies = ranks.call("save", directory=d, **{"async": False})
        print(f"--keep-swift-validate-patch (ms-swift {self.swift}): the save: "
              f"{replies[0].get('error') or 'ok'}", file=sys.stderr)
        if self.known["validate_patch_breaks_saves"]:
            self.assertTrue(all(not r["ok"] for r in replies), replies)
            self.assertIn(JOIN_ERROR, replies[0]["error"]["message"])
        else:
            self.assertTrue(all(r["ok"] for r in replies), replies)

    # --- the scheduler ---

    def test_scheduler_counts_map_exactly(self):
        j = job()
        j["scheduler"].update(lr_warmup_steps=16, lr_decay_steps=400, lr_decay_style="WSD",
                              wsd_decay_steps=200, wd_incr_steps=800, wd_incr_style="linear",
                              start_wd=0.0, end_wd=0.1, init_lr=1e-5)
        self.ranks.ok("build", job=j)
        self.ranks.ok("train", steps=2, fault=False)
        s = self.ranks.observe()[0]["scheduler"]
        self.assertEqual((s["num_steps"], s["lr_warmup_steps"], s["lr_decay_steps"],
                          s["wd_incr_steps"], s["lr_decay_style"], s["wd_incr_style"]),
                         (16, 16, 400, 800, "WSD", "linear"))
        self.assertEqual((s["max_lr"], s["min_lr"], s["start_wd"], s["end_wd"]),
                         (1e-3, 1e-5, 0.0, 0.1))
        self.ranks.ok("reset")
        odd = job()
        odd["scheduler"]["lr_decay_steps"] = 1001  # not a multiple of global_batch_size 8
        replies = self.ranks.call("build", job=odd)
        self.assertTrue(all(not r["ok"] for r in replies), replies)
        self.assertEqual({r["error"]["code"] for r in replies}, {"NotSupported"})
        self.assertIn("scheduler.lr_decay_steps", replies[0]["error"]["message"])

    # --- signatures, errors ---

    def test_signatures_pass_verify_plan(self):
        for case in (dict(), dict(tp=2), dict(fmt="fully_reshardable")):
            with self.subTest(**case):
                self.signatures_verified(job(**case))

    def test_errors_fail_every_rank_alike(self):
        same_error = self.assert_same_error
        same_error(self.ranks.call("observe"), "FailedPrecondition")
        unsupported = job()
        unsupported["optimizer"]["lr_bound_overrides"] = [
            {"name_contains": "linear_fc1", "max_lr": 3e-4, "min_lr": None}]
        same_error(self.ranks.call("build", job=unsupported), "NotSupported")
        rerun = job(rerun="validate_results")
        same_error(self.ranks.call("build", job=rerun), "NotSupported")
        self.ranks.ok("build", job=job())
        same_error(self.ranks.load(self.directory()), "NotFound")
        d = self.directory()
        self.ranks.ok("train", steps=1, fault=False)
        self.ranks.ok("save", directory=d, **{"async": False})
        same_error(self.ranks.call("save", directory=d, **{"async": False}), "FailedPrecondition")
        same_error(self.ranks.load(d, iteration=0), "NotSupported")
        same_error(self.ranks.load(d, flags={"override_scheduler": True}), "NotSupported")
        same_error(self.ranks.load(d, strict="raise_all"), "NotSupported")


if __name__ == "__main__":
    unittest.main()
