#!/usr/bin/env python3
"""Protocol-level tests of the megatron-core framework adapter's MIMO jobs (two non-colocated
modules, "vision" then "language": mimo.py), with the framework adapters' driver
(framework_driver.py). Run with the torch
environment and one megatron-core version:
    adapters/megatron_core/run_with_mcore_env.sh . --mcore 0.18.0 @PYTHON@ \\
        adapters/megatron_core_framework/mimo_adapter_test.py

What it shows, per version:
  - hello declares max_modules 2 where megatron-core has get_mimo_optimizer (0.17.0+), else 1
    (then every other test skips);
  - B02, the MIMO optimizer's checkpointing (docs/BUGS.md): vision on rank 0, language on rank 1,
    the distributed optimizer, fully_reshardable. On 0.17.1 the save succeeds but its common state
    differs per rank (each rank's MimoOptimizer state dict keeps its own module's empty
    'optimizer' wrapper and sharding type; `ckptspec verify-plan` fails it on P11), and the load
    fails on rank 1 (the rank that does not own rank 0's module) with KeyError: 'optimizer',
    every rank replying the error. From 0.18.0 the common state is the same on every rank and the
    job resumes bit for bit;
  - resume equivalence where the version has no B02 (train 3 == train 1, save, reset, build,
    load, train 2: every digest, group, scheduler, RNG, data position and rerun field on every
    rank): the distributed optimizer in both formats and the Float16 optimizer, bf16/fp16/fp32
    and modules of different dtypes, LR-bound overrides with frozen parameters and the decoupled
    LR, the rerun state machine with a cached plan, and on four ranks TP and PP inside modules;
  - resharding inside a module (vision DP2 -> TP2, fully_reshardable) on four ranks;
  - observations: module-prefixed names, layers numbered globally within a module under PP,
    each element counted once over the world, groups named per module.
Each request's seconds are printed at the end (two-module jobs).
"""
import copy
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from framework_driver import LiveGroupTest, job, report_timings, summed  # noqa: E402

# Per version: B02 (the non-colocated distributed optimizer's fully_reshardable save keeps each
# module's wrapper and sharding type in a common state per rank, the load fails on rank 1; the
# param groups' replica id ignores the TP rank), "dp_keys" (the distributed optimizer's
# dp_reshardable save gives both modules' buffers the same keys; fixed by the 'mimo.<module>.'
# prefix of 0.19) and B21 (groups that differ only in LR bounds collapse on load, docs/BUGS.md).
KNOWN = {"0.17.1": {"B02": True, "dp_keys": True, "B21": True},
         "0.18.0": {"B02": False, "dp_keys": True, "B21": True},
         "0.19.2": {"B02": False, "dp_keys": False, "B21": False}}


def mimo_job(vision=None, language=None, distributed=True, fmt="fully_reshardable",
             rerun="disabled", constant=False):
    """A two-module job: `vision` and `language` are dicts of module fields (world_size, tp, pp)
    and model fields (anything else); by default one rank each, a small model each."""
    j = job(distributed=distributed, fmt=fmt, rerun=rerun, constant=constant)
    base = j["modules"][0]
    modules = []
    for name, fields, model in (
            ("vision", vision or {}, dict(hidden_size=16, num_attention_heads=2,
                                          num_query_groups=2, ffn_hidden_size=32)),
            ("language", language or {}, {})):
        m = copy.deepcopy(base)
        m["name"] = name
        m["model"].update(model)
        for key, value in fields.items():
            if key in ("world_size", "tp", "pp"):
                m[key] = value
            else:
                m["model"][key] = value
        m["world_size"] = fields.get("world_size", 1)
        m["dp"] = m["world_size"] // (m["tp"] * m["pp"])
        modules.append(m)
    j["modules"] = modules
    return j


def tearDownModule():
    report_timings("seconds per request (two-module jobs)")


def common_states(replies):
    return [r["signature"]["common"] for r in replies]


class MimoTestBase(LiveGroupTest):
    """One live group of WORLD ranks for every test (framework_driver.LiveGroupTest); every test
    skips where megatron-core has no MIMO optimizer."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.version = cls.ranks.version
        known = KNOWN.get(cls.version, {})
        cls.b02, cls.dp_keys, cls.b21 = known.get("B02"), known.get("dp_keys"), known.get("B21")

    def setUp(self):
        if self.declared["max_modules"] < 2:
            self.skipTest(f"megatron-core {self.version} has no MIMO optimizer")
        super().setUp()

    def resume_equivalent(self, j, k=1, m=2):
        """LiveGroupTest's, after a reset (an earlier subtest's failure may leave a job built)."""
        self.ranks.call("reset")
        return super().resume_equivalent(j, k, m)

    def skipped(self, j):
        """Whether a resume of `j` is not expected to work here: B02, or the dp_reshardable keys
        (their own tests), or a format not declared."""
        distributed, fmt = j["optimizer"]["distributed"], j["optimizer"]["format"]
        if fmt not in self.declared["optimizer_formats"]:
            return True
        o = j["optimizer"]
        if self.b21 and (o["lr_bound_overrides"] or o["decoupled_lr"] is not None):
            return True
        if not distributed and self.b02 and any(m["tp"] > 1 for m in j["modules"]):
            return True
        return distributed and ((fmt == "fully_reshardable" and self.b02)
                                or (fmt == "dp_reshardable" and self.dp_keys))


class MimoTwoRankTest(MimoTestBase):
    """vision on rank 0, language on rank 1."""

    def test_hello_declares_two_modules(self):
        d = self.declared
        self.assertEqual(d["max_modules"], 2)
        self.assertTrue(any(line.startswith("MIMO jobs") for line in d["fidelity"]))

    def test_b02_noncolocated_distributed_optimizer_fully_reshardable(self):
        if "fully_reshardable" not in self.declared["optimizer_formats"]:
            self.skipTest("fully_reshardable is not declared")
        j = mimo_job()
        if self.b02 is False or self.b02 is None:
            _, saved = self.resume_equivalent(j)
            common = common_states(saved)
            # What remains per rank: MimoOptimizer.sharded_state_dict gives a module the rank is
            # not in an empty dict, which the common state keeps, while the rank's own module's
            # dict, all of it sharded, leaves it.
            self.assertEqual(common[0]["optimizer"], {"language": {}})
            self.assertEqual(common[1]["optimizer"], {"vision": {}})
            self.assertEqual({k: v for k, v in common[0].items() if k != "optimizer"},
                             {k: v for k, v in common[1].items() if k != "optimizer"})
            checked = self.verify_plan(saved)
            if checked is not None:
                self.assertNotEqual(checked[0], 0, checked[1])
                self.assertIn("P11 common state: 1 violation", checked[1])
            print(f"B02 ({self.version}): the job resumes bit for bit; the common state's "
                  f"optimizer per rank {[c['optimizer'] for c in common]}; verify-plan: "
                  f"{checked and checked[1].strip()}", file=sys.stderr)
            return
        d, saved = self.train_and_save(j)
        common = common_states(saved)
        self.assertNotEqual(common[0], common[1])
        self.assertEqual(sorted(common[0]["optimizer"]["vision"]),
                         ["optimizer", "param_state_sharding_type"])
        self.assertEqual(common[0]["optimizer"]["language"], {})
        self.assertEqual(common[1]["optimizer"]["vision"], {})
        self.assertEqual(sorted(common[1]["optimizer"]["language"]),
                         ["optimizer", "param_state_sharding_type"])
        checked = self.verify_plan(saved)
        if checked is not None:
            self.assertNotEqual(checked[0], 0, checked[1])
            self.assertIn("P11 common state: 1 violation", checked[1])
        self.ranks.ok("reset")
        self.ranks.ok("build", job=j)
        replies = self.ranks.load(d)
        self.assertTrue(all(not r["ok"] for r in replies), replies)
        self.assertEqual(replies[1]["error"]["message"], "KeyError: 'optimizer'")
        self.assertEqual(replies[0]["error"]["message"], "rank 1 failed: KeyError: 'optimizer'")
        print(f"B02 ({self.version}): the common state's optimizer per rank "
              f"{[c['optimizer'] for c in common]}; verify-plan: {checked and checked[1].strip()}; "
              f"the load: {replies[0]['error']['message']}", file=sys.stderr)

    def test_distributed_optimizer_dp_reshardable_keys(self):
        # Each module's DistributedOptimizer names its dp_reshardable buffers by their indices
        # ("optimizer.distributed.dp_group_idx_0.gbuf_idx_0..."): before 0.19 prefixed them with
        # "mimo.<module>.", both modules save the same keys with different shapes.
        j = mimo_job(fmt="dp_reshardable")
        if not self.dp_keys:
            self.resume_equivalent(j)
            return
        _, replies = self.train_and_save(j, ok=False)
        self.assertTrue(all(not r["ok"] for r in replies), replies)
        self.assertIn("optimizer.distributed.dp_group_idx_0.gbuf_idx_0",
                      replies[0]["error"]["message"])
        print(f"dp_reshardable ({self.version}): the save fails: "
              f"{replies[0]['error']['message'][:300]}", file=sys.stderr)

    def test_fp32_optimizer_param_groups_in_the_common_state(self):
        # An fp32 module without the distributed optimizer gets an FP32Optimizer, whose state
        # dict has no 'optimizer' wrapper: the MIMO optimizer does not route its param groups
        # through a ShardedObject, they stay in the common state, which is rank 0's (vision's).
        # The language module's load finds none, in every version.
        j = mimo_job(vision=dict(params_dtype="fp32"), language=dict(params_dtype="fp32"),
                     distributed=False)
        d, saved = self.train_and_save(j)
        common = common_states(saved)
        self.assertIn("param_groups", common[0]["optimizer"]["vision"])
        self.assertIn("param_groups", common[1]["optimizer"]["language"])
        self.ranks.ok("reset")
        self.ranks.ok("build", job=j)
        replies = self.ranks.load(d)
        self.assertTrue(all(not r["ok"] for r in replies), replies)
        self.assertTrue(replies[0]["error"]["message"].startswith("rank 1 failed: "), replies)
        print(f"FP32Optimizer param groups ({self.version}): the load fails: "
              f"{replies[0]['error']['message'][:200]}", file=sys.stderr)

    def test_resume_is_equivalent_to_training_straight_through(self):
        cases = {
            "float16 optimizer": mimo_job(distributed=False),
            # vision's FP32Optimizer keeps its groups in the common state, which is rank 0's.
            "fp32 vision, bf16 language": mimo_job(vision=dict(params_dtype="fp32"),
                                                   distributed=False),
            "fp16": mimo_job(vision=dict(params_dtype="fp16"),
                             language=dict(params_dtype="fp16")),
            "fp32 fully_reshardable": mimo_job(vision=dict(params_dtype="fp32"),
                                               language=dict(params_dtype="fp32")),
            "rerun machine, cached plan": mimo_job(rerun="validate_results", constant=True),
        }
        overrides = mimo_job(language=dict(tie_embeddings=False, gated_linear_unit=True,
                                           add_bias=True),
                             vision=dict(gated_linear_unit=True))
        overrides["frozen"] = ["final_layernorm"]
        overrides["optimizer"]["lr_bound_overrides"] = [
            {"name_contains": "linear_fc1", "max_lr": 3e-4, "min_lr": 3e-5}]
        overrides["optimizer"]["decoupled_lr"] = 2e-3
        cases["lr bounds, frozen, decoupled lr"] = overrides
        for name, j in cases.items():
            if self.skipped(j):
                continue
            with self.subTest(case=name):
                straight, _ = self.resume_equivalent(j)
                self.assertEqual(straight[0]["iteration"], 3)
                self.assertEqual(straight[1]["scheduler"], straight[0]["scheduler"])

    def test_observation_names_counts_and_groups(self):
        j = mimo_job(language=dict(tie_embeddings=False))
        j["frozen"] = ["word_embeddings"]
        j["optimizer"]["lr_bound_overrides"] = [
            {"name_contains": "linear_proj", "max_lr": 3e-4, "min_lr": None}]
        self.ranks.ok("build", job=j)
        self.ranks.ok("train", steps=1, fault=False)
        vision, language = self.ranks.observe()
        self.assertTrue(all(n.startswith("vision.") for n in vision["model"]))
        self.assertTrue(all(n.startswith("language.") for n in language["model"]))
        self.assertIn("vision.encoders.clip_encoder.layers.1.self_attention.linear_qkv"
                      ".layer_norm_weight", vision["model"])
        self.assertIn("vision.input_projections.0.encoder.linear_fc1.weight", vision["model"])
        self.assertIn("language.output_layer.weight", language["model"])
        self.assertNotIn("language.embedding.word_embeddings.weight", language["exp_avg"])
        self.assertEqual({g["optimizer"] for g in vision["groups"]}, {"vision.0"})
        self.assertEqual({g["optimizer"] for g in language["groups"]}, {"language.0"})
        bounds = {p: (g["max_lr"], g["min_lr"]) for o in (vision, language)
                  for g in o["groups"] for p in g["params"]}
        self.assertEqual(bounds["vision.encoders.clip_encoder.layers.0.self_attention"
                                ".linear_proj.weight"], (3e-4, 1e-5))
        self.assertEqual(bounds["language.decoder.layers.0.mlp.linear_fc1.weight"],
                         (1e-3, 1e-5))
        self.assertEqual(vision["scheduler"], language["scheduler"])
        self.assertEqual(vision["consumed_samples"], 8)


class MimoFourRankTest(MimoTestBase):
    """Modules of two ranks each: TP, PP and DP inside a module."""
    WORLD = 4

    def test_resume_with_parallel_modules(self):
        cases = {
            "vision TP2, language PP2": mimo_job(
                vision=dict(world_size=2, tp=2),
                language=dict(world_size=2, pp=2, tie_embeddings=False)),
            "vision PP2, language TP2, float16 optimizer": mimo_job(
                vision=dict(world_size=2, pp=2), language=dict(world_size=2, tp=2),
                distributed=False),
            "vision PP2, language DP2, float16 optimizer": mimo_job(
                vision=dict(world_size=2, pp=2), language=dict(world_size=2),
                distributed=False),
            "vision TP2, float16 optimizer": mimo_job(
                vision=dict(world_size=2, tp=2), language=dict(world_size=2),
                distributed=False),
            "vision DP2, language DP2, dp_reshardable": mimo_job(
                vision=dict(world_size=2), language=dict(world_size=2), fmt="dp_reshardable"),
        }
        for name, j in cases.items():
            if self.skipped(j):
                continue
            with self.subTest(case=name):
                straight, saved = self.resume_equivalent(j)
                names = {n for o in straight for n in o["model"]}
                modules = j["modules"]
                if modules[0]["pp"] == 2:
                    self.assertIn("vision.encoders.clip_encoder.layers.1.mlp.linear_fc2.weight",
                                  names)
                if modules[1]["pp"] == 2:
                    self.assertIn("language.decoder.layers.1.mlp.linear_fc2.weight", names)
                checked = self.verify_plan(saved)
                if checked is not None:  # P11: the per-rank residue (test_b02_...'s)
                    self.assertIn("P4 sharding integrity: OK", checked[1])
                    self.assertIn("P5 key injectivity: OK", checked[1])
                    self.assertIn("P11 common state: 1 violation", checked[1])

    def test_b02_param_groups_replica_id_ignores_tp(self):
        # B02's other half, non-colocated: in a module of TP 2, both TP ranks save the module's
        # param groups ShardedObject as its main replica ((0, pp, dp) before 0.18).
        j = mimo_job(vision=dict(world_size=2, tp=2), language=dict(world_size=2),
                     distributed=False)
        if not self.b02:
            self.resume_equivalent(j)
            return
        _, replies = self.train_and_save(j, ok=False)
        self.assertTrue(all(not r["ok"] for r in replies), replies)
        message = " ".join(r["error"]["message"] for r in replies)
        self.assertIn("Duplicate ShardedObject keys", message)
        self.assertIn("optimizer.mimo.vision.param_groups", message)
        print(f"B02 TP2 ({self.version}): the save fails: "
              f"{[r['error']['message'][:160] for r in replies]}", file=sys.stderr)

    def test_tied_embeddings_with_language_pp2_cannot_save(self):
        # LanguageModule.tie_embeddings_and_output_weights_state_dict takes the replica id of the
        # last stage's copy of the word embeddings from parallel_state's data-parallel rank, which
        # a MIMO run (process groups per module) never initializes: every version.
        j = mimo_job(vision=dict(world_size=2), language=dict(world_size=2, pp=2))
        _, replies = self.train_and_save(j, ok=False)
        self.assertTrue(all(not r["ok"] for r in replies), replies)
        self.assertRegex(replies[0]["error"]["message"],
                         "AssertionError: data parallel group with .* is not initialized")
        self.assertTrue(replies[0]["error"]["message"].startswith("rank 3 failed"), replies)

    def test_resharding_inside_a_module(self):
        if self.b02 or "fully_reshardable" not in self.declared["optimizer_formats"]:
            self.skipTest("B02 (fully_reshardable with the distributed optimizer)")
        d = self.directory()
        saved_job = mimo_job(vision=dict(world_size=2), language=dict(world_size=2))
        self.ranks.ok("build", job=saved_job)
        self.ranks.ok("train", steps=2, fault=False)
        saved = self.ranks.observe()
        self.ranks.ok("save", directory=d, **{"async": False})
        self.ranks.ok("reset")
        self.ranks.ok("build", job=mimo_job(vision=dict(world_size=2, tp=2),
                                            language=dict(world_size=2)))
        self.ranks.ok("load", directory=d, iteration=None, flags={},
                      strict="assume_ok_unexpected")
        loaded = self.ranks.observe()
        for kind in ("model", "main", "exp_avg", "exp_avg_sq"):
            self.assertEqual(summed(saved, kind), summed(loaded, kind), kind)


if __name__ == "__main__":
    unittest.main()
