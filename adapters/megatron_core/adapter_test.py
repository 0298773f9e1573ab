#!/usr/bin/env python3
"""Protocol-level tests of the megatron_core adapter: the Python adapters' protocol driver
(adapters/python/ckptspec_protocol_test_driver.py) speaks docs/PROTOCOL.md to N rank processes, as
ckptspec's harness does, and checks what comes back. Run with the torch
environment and one megatron-core version:
    adapters/megatron_core/run_with_mcore_env.sh . --mcore 0.19.2 @PYTHON@ adapters/megatron_core/adapter_test.py
"""
import fcntl
import os
import signal
import sys
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from ckptspec_protocol_test_driver import ProtocolTestCase, full, raw, tensor  # noqa: E402

WORKERS = ("persistent", "temporal")  # --async-worker: megatron-core's two async callers


class MegatronCoreAdapterTest(ProtocolTestCase):
    ADAPTER = Path(__file__).with_name("ckptspec_megatron_core_adapter.py")
    ARGS = ("--pg-timeout", "30")

    def test_capabilities(self):
        self.capabilities_and_their_flags(strict_modes=True)

    def test_regroup_over_stores_the_harness_names(self):
        # The async saves under the second and third groups run on the persistent worker: the
        # regroup between them ends the worker of the old rank, and a new one writes.
        self.regroup_scenario(True)

    def test_regroup_over_the_launchers_store(self):
        self.regroup_scenario(False, "--async-worker", "temporal")

    def test_a_connected_rank_ends_when_the_coordinator_hangs_up(self):
        # With megatron-core's persistent worker (and its fork server) alive: none is left.
        def async_save(g, specs, data):
            self.assertOk(self.save(g, specs, data, iteration=20, **{"async": True}))
            self.assertOk(g.call("finalize"))
        self.coordinator_hangs_up_during_a_collective(before=async_save)

    def poll_until_complete(self, g, first=None):
        """Polls (the first poll with the per-rank updates `first`) until every rank replies
        complete; the replies of every poll. Every rank must say the same at every poll, and
        the tracker must not name a save that is not complete."""
        polls, before = [], self.tracked()
        per_rank = first or [{"tensors": []}] * g.world
        for _ in range(600):
            replies = g.call("poll", per_rank)
            polls.append(replies)
            if not all(r["ok"] for r in replies):
                break
            self.assertEqual(len({r["complete"] for r in replies}), 1, replies)
            if replies[0]["complete"]:
                break
            self.assertEqual(self.tracked(), before, "the tracker moved before completion")
            per_rank = [{"tensors": []}] * g.world
            time.sleep(0.05)
        return polls

    def test_async_save_completes_at_a_poll_a_finalize_or_the_next_save(self):
        data = {"w": full("fp32", (4, 2), 1), "b": full("bf16", (2,), 3)}
        specs = [[tensor("w", "fp32", (4, 2), (2 * r, 0), (2, 2), (2, 1)),
                  tensor("b", "bf16", (2,), (0,), (2,), (1,), replica=(r,))] for r in range(2)]
        for worker in WORKERS:
            with self.subTest(worker=worker):
                self.dir = str(Path(self.tmp.name) / worker)
                g = self.group(2, "--async-worker", worker)
                replies = self.save(g, specs, data, **{"async": True})
                self.assertTrue(all(r["ok"] for r in replies), replies)
                polls = self.poll_until_complete(g)
                self.assertTrue(all(r["ok"] and r["complete"] for r in polls[-1]), polls[-1])
                self.assertEqual(self.tracked(), 10)
                for name in (".metadata", "metadata.json"):
                    self.assertTrue(Path(self.dir, "iter_0000010", name).is_file(), name)
                self.assertEqual([r["complete"] for r in g.call("poll", [{}] * 2)], [True, True])
                reqs, replies = self.load(g, specs)
                for r, (req, reply) in enumerate(zip(reqs, replies)):
                    self.assertEqual(reply["iteration"], 10, reply)
                    self.assertEqual(self.loaded(req, 0), raw(data["w"][2 * r:2 * r + 2]))
                    self.assertEqual(self.loaded(req, 1), raw(data["b"]))
                # On the same worker: a pending save completed by the save after it, and that
                # one by finalize.
                for it in (20, 30):
                    replies = self.save(g, specs, data, iteration=it, **{"async": True})
                    self.assertTrue(all(r["ok"] for r in replies), replies)
                self.assertTrue(all(r["ok"] for r in g.call("finalize")))
                self.assertEqual(self.tracked(), 30)
                _, replies = self.load(g, specs, iteration=20)
                self.assertEqual([r["iteration"] for r in replies], [20, 20], replies)

    def held_write_updated_by_a_poll(self, worker, placement):
        """Saves w (every tensor at `placement`) asynchronously over iteration 5 while rank 0's
        data file is under a read lease (Linux F_SETLEASE), so that its write blocks opening the
        file: polls must find the save incomplete (the tracker on 5); the first poll writes
        w + 100 into the handed-over tensors in place, as a training step does. Then the lease
        is released and polls run until complete. Each rank's loaded bytes and the original w."""
        data = {"w": full("fp32", (4,), 1)}
        specs = [[dict(tensor("w", "fp32", (4,), (2 * r,), (2,), (2,)), placement=placement)]
                 for r in range(2)]
        self.dir = str(Path(self.tmp.name) / f"{worker}-{placement}")
        g = self.group(2, "--async-worker", worker)
        self.assertTrue(all(r["ok"] for r in self.save(g, specs, data, iteration=5)))
        held = Path(self.dir, "iter_0000010", "__0_0.distcp")
        held.parent.mkdir()
        held.touch()
        signal.signal(signal.SIGIO, signal.SIG_IGN)  # the lease-break notice
        fd = os.open(held, os.O_RDONLY)
        self.addCleanup(os.close, fd)
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
        replies = self.save(g, specs, data, **{"async": True})
        self.assertTrue(all(r["ok"] for r in replies), replies)
        updates = []
        for r in range(2):
            path = Path(self.tmp.name) / f"update{r}"
            path.write_bytes(raw(data["w"][2 * r:2 * r + 2] + 100))
            updates.append({"tensors": [{"index": 0, "file": str(path)}]})
        for poll in (updates, [{"tensors": []}] * 2):
            replies = g.call("poll", poll)
            self.assertEqual([(r["ok"], r.get("complete")) for r in replies], [(True, False)] * 2,
                             replies)
            self.assertEqual(self.tracked(), 5)
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
        polls = self.poll_until_complete(g)
        self.assertTrue(all(r["ok"] and r["complete"] for r in polls[-1]), polls[-1])
        self.assertEqual(self.tracked(), 10)
        reqs, replies = self.load(g, specs)
        self.assertEqual([r["iteration"] for r in replies], [10, 10], replies)
        return [self.loaded(req) for req in reqs], data["w"]

    def test_poll_before_completion_and_updates_after_the_save(self):
        # What the training loop writes after the save never reaches the checkpoint: the
        # temporal worker forks before the save replies; a tensor on the device is copied to
        # the host (preload_tensors) before it does.
        for worker, placement in (("temporal", "host"), ("temporal", "device"),
                                  ("persistent", "device")):
            with self.subTest(worker=worker, placement=placement):
                loaded, w = self.held_write_updated_by_a_poll(worker, placement)
                self.assertEqual(loaded, [raw(w[:2]), raw(w[2:])])

    def test_persistent_worker_writes_what_training_wrote_into_host_tensors_after_the_save(self):
        # megatron-core's defect: the persistent worker is handed a host tensor through a
        # torch.multiprocessing queue (its storage moved to shared memory, still the training
        # loop's) and preload_tensors' tensor.to("cpu") copies nothing, so the write, still
        # running after the save replied, saves the values of a later step.
        loaded, w = self.held_write_updated_by_a_poll("persistent", "host")
        self.assertEqual(loaded[0], raw(w[:2] + 100))
        # What docs/FINDINGS.md F25's rerun names.
        print("persistent worker, host tensors: the async save of iteration 10 holds what "
              "training wrote after the save replied", file=sys.stderr)

    def test_failed_async_write_is_the_next_calls_error(self):
        # Rank 1's data file's path is taken by a directory: its write fails at once. The save
        # replies ok (the data is staged); finalize, or the save that arrives while it is
        # pending, replies with the failure on every rank, naming it; nothing is committed, and
        # the group goes on.
        data = {"w": full("fp32", (4,), 1)}
        specs = [[tensor("w", "fp32", (4,), (2 * r,), (2,), (2,))] for r in range(2)]
        for worker in WORKERS:
            for next_call in ("finalize", "save"):
                with self.subTest(worker=worker, next_call=next_call):
                    self.dir = str(Path(self.tmp.name) / f"{worker}-{next_call}")
                    g = self.group(2, "--async-worker", worker)
                    self.assertTrue(all(r["ok"] for r in self.save(g, specs, data, iteration=5)))
                    Path(self.dir, "iter_0000010", "__1_0.distcp").mkdir(parents=True)
                    replies = self.save(g, specs, data, **{"async": True})
                    self.assertTrue(all(r["ok"] for r in replies), replies)
                    if next_call == "finalize":
                        replies = g.call("finalize")
                    else:
                        replies = self.save(g, specs, data, iteration=20)
                    for reply in replies:
                        self.assertFalse(reply["ok"], replies)
                        self.assertEqual(reply["error"]["code"], "IOError", reply)
                        # 0.16: the errno's text; 0.17 on: only the error's class survives
                        self.assertRegex(reply["error"]["message"],
                                         "Worker failure: .*(Is a directory|IsADirectoryError)")
                    self.assertEqual(self.tracked(), 5)
                    self.assertFalse(Path(self.dir, "iter_0000010", ".metadata").exists())
                    self.assertFalse(Path(self.dir, "iter_0000020").exists())
                    replies = self.save(g, specs, data, iteration=20, **{"async": True})
                    self.assertTrue(all(r["ok"] for r in replies), replies)
                    reqs, replies = self.load(g, specs)
                    self.assertEqual([r["iteration"] for r in replies], [20, 20], replies)

    def test_save_then_reshard_on_load(self):
        g, _ = self.save_then_reshard_on_load()  # megatron validates the load's sharding too
        self.assertTrue(Path(self.dir, "iter_0000010", "metadata.json").is_file())
        # The common state alone (empty templates), as the harness reads it first.
        _, replies = self.load(g, [[], []])
        self.assertEqual([r.get("common") for r in replies], [{"iteration": 10}] * 2, replies)

    def test_rank_local_objects_keep_each_ranks_value(self):
        # A rank-local object (no sharding declared) under one key on both ranks becomes a
        # one-shard ShardedObject under the rank's own key: each value comes back to its rank,
        # and megatron's sharding validation of save and load accepts it.
        local = {"key": "rng", "global_shape": [], "global_offset": [], "replica_id": []}
        g = self.group(2)
        objects = [[dict(local, bytes=f"rank {r} rng".encode())] for r in range(2)]
        replies = self.save(g, [[], []], {}, objects)
        self.assertTrue(all(r["ok"] for r in replies), replies)
        reqs, replies = self.load(g, [[], []], [[local], [local]], strict="raise_all")
        self.assertTrue(all(r["ok"] for r in replies), replies)
        got = [Path(req["objects"][0]["file"]).read_bytes() for req in reqs]
        self.assertEqual(got, [b"rank 0 rng", b"rank 1 rng"])

    def test_irregular_grid_and_fully_parallel_load(self):
        data = self.irregular_grid()
        whole = [[tensor("buf", "fp32", (10,), (0,), (10,), replica=(r,))] for r in range(2)]
        reqs, replies = self.load(self.group(2, "--fully-parallel-load"), whole)
        for req, reply in zip(reqs, replies):
            self.assertTrue(reply["ok"], reply)
            self.assertEqual(self.loaded(req), raw(data["buf"]))

    def test_only_main_replicas_are_written(self):
        self.only_main_replicas_are_written()

    def test_invalid_sharding_fails_on_every_rank_at_once(self):
        # validate_sharding_integrity raises on rank 0 only; the gate makes every rank fail now
        # instead of rank 1 waiting in the strategy's collectives until the timeout.
        data = {"w": full("fp32", (4,), 1)}
        g = self.group(2)
        for specs in ([[tensor("w", "fp32", (4,), (0,), (4,), (1,))] for r in range(2)],  # 2 mains
                      [[tensor("w", "fp32", (4,), (2 * r,), (1,), (4,))] for r in range(2)]):  # gaps
            replies = self.save(g, specs, data)
            for reply in replies:
                self.assertFalse(reply["ok"], reply)
                self.assertEqual(reply["error"]["code"], "InvalidArgument", reply)
            self.assertRegex(replies[0]["error"]["message"], "Invalid (sharding|access) pattern")
        self.assertFalse(Path(self.dir, "latest_checkpointed_iteration.txt").exists())
        # The group is still usable.
        specs = [[tensor("w", "fp32", (4,), (2 * r,), (2,), (2,))] for r in range(2)]
        self.assertTrue(all(r["ok"] for r in self.save(g, specs, data)))

    def test_strict_modes(self):
        data = {"w": full("fp32", (4,), 1), "v": full("fp32", (2,), 2)}
        g = self.group(2)
        specs = [[tensor("w", "fp32", (4,), (2 * r,), (2,), (2,)),
                  tensor("v", "fp32", (2,), (0,), (2,), (1,), replica=(r,))] for r in range(2)]
        self.assertTrue(all(r["ok"] for r in self.save(g, specs, data)))
        # rank 1 asks for x (unexpected); nobody asks for v (missing).
        want = [[tensor("w", "fp32", (4,), (2 * r,), (2,), (2,))] for r in range(2)]
        want[1].append(tensor("x", "fp32", (3,), (0,), (3,), (1,)))
        _, replies = self.load(g, want)  # assume_ok_unexpected: DCP's missing key
        self.assertTrue(all(not r["ok"] for r in replies), replies)
        for mode in ("raise_unexpected", "raise_all"):
            _, replies = self.load(g, want, strict=mode)
            self.assertTrue(all(not r["ok"] for r in replies), replies)
            self.assertIn("'x'", replies[1]["error"]["message"])
            self.assertEqual(replies[1]["error"]["code"], "InvalidArgument")
        reqs, replies = self.load(g, want, strict="return_all")
        self.assertTrue(all(r["ok"] for r in replies), replies)
        self.assertEqual([r["unexpected"] for r in replies], [[], ["x"]])
        self.assertEqual([r["missing"] for r in replies], [["v"], ["v"]])
        self.assertEqual([r["dropped"] for r in replies], [[], ["x"]])
        self.assertEqual(self.loaded(reqs[1]), raw(data["w"][2:]))
        _, replies = self.load(g, want, strict="log_all")
        self.assertTrue(all(r["ok"] for r in replies), replies)
        self.assertTrue(any("x" in w for w in replies[1]["warnings"]), replies)
        self.assertTrue(any("v" in w for w in replies[0]["warnings"]), replies)
        for mode in ("ignore_all", "log_unexpected", "return_unexpected"):
            _, replies = self.load(g, want, strict=mode)
            self.assertTrue(all(r["ok"] for r in replies), (mode, replies))
            self.assertEqual(replies[1]["dropped"], ["x"])

    def test_tracker_and_load_without_checkpoint(self):
        self.tracker_and_load_without_checkpoint()

    def test_plan_cache_saves_and_reset(self):
        g = self.group(2)
        self.plan_cache_saves(g)
        self.assertTrue(all(r["ok"] for r in g.call("reset")))
        self.serves_another_directory(g)

    def test_a_key_added_under_the_cached_plan(self):
        # A save under assume_constant_structure adds a key ("b") to the planned save's entries:
        # megatron-core's cached plan saves without it and says nothing (docs/FINDINGS.md F4); with
        # --replan-on-changed-keys every rank drops the plan and the key is saved.
        data = {"w": full("fp32", (4,), 1), "b": full("fp32", (2,), 3)}
        w = [tensor("w", "fp32", (4,), (2 * r,), (2,), (2,)) for r in range(2)]
        b = tensor("b", "fp32", (2,), (0,), (2,), (1,))
        for flags, kept in (((), False), (("--replan-on-changed-keys",), True)):
            with self.subTest(flags=flags):
                self.dir = str(Path(self.tmp.name) / f"added-{kept}")
                g = self.group(2, *flags)
                replies = self.save(g, [[w[r]] for r in range(2)], data, iteration=1,
                                    assume_constant_structure=True)
                self.assertTrue(all(r["ok"] for r in replies), replies)
                grown = [[w[0], b], [w[1]]]
                replies = self.save(g, grown, data, iteration=2, assume_constant_structure=True)
                self.assertTrue(all(r["ok"] for r in replies), replies)
                reqs, replies = self.load(g, grown)
                self.assertEqual(all(r["ok"] for r in replies), kept, replies)
                if kept:
                    self.assertEqual(self.loaded(reqs[0], 1), raw(data["b"]))
                else:
                    self.assertIn("KeyError: \"b from model not in state dict",
                                  replies[0]["error"]["message"])

    def test_a_key_removed_under_the_cached_plan_fails_on_every_rank_at_once(self):
        # A save under assume_constant_structure loses a key ("b") that rank 0's planned save
        # held: megatron-core's cached plan raises on rank 0 only (ValueError: Could not find
        # FQN) while rank 1 goes on into execute_sync's barrier (docs/FINDINGS.md F26). The gate
        # between planning and writing makes both fail at once, and the group stays usable.
        data = {"w": full("fp32", (4,), 1), "b": full("fp32", (2,), 3)}
        w = [tensor("w", "fp32", (4,), (2 * r,), (2,), (2,)) for r in range(2)]
        b = tensor("b", "fp32", (2,), (0,), (2,), (1,))
        g = self.group(2, "--no-async")
        replies = self.save(g, [[w[0], b], [w[1]]], data, iteration=1,
                            assume_constant_structure=True)
        self.assertTrue(all(r["ok"] for r in replies), replies)
        replies = self.save(g, [[w[0]], [w[1]]], data, iteration=2,
                            assume_constant_structure=True)
        for reply in replies:
            self.assertFalse(reply["ok"], reply)
            self.assertIn("Could not find FQN: 'b'", reply["error"]["message"])
        self.assertEqual(self.tracked(), 1)
        # The failed save dropped the plan; the next one plans afresh on the same group.
        replies = self.save(g, [[w[0]], [w[1]]], data, iteration=3,
                            assume_constant_structure=True)
        self.assertTrue(all(r["ok"] for r in replies), replies)

    def test_reset_completes_a_pending_save_and_keeps_the_worker(self):
        # reset finalizes the pending async save (written and tracked before the reply); the
        # next case's async save in another directory runs on the same group and worker.
        data = {"w": full("fp32", (4,), 1)}
        specs = [[tensor("w", "fp32", (4,), (2 * r,), (2,), (2,))] for r in range(2)]
        g = self.group(2)
        replies = self.save(g, specs, data, iteration=5, assume_constant_structure=True,
                            **{"async": True})
        self.assertTrue(all(r["ok"] for r in replies), replies)
        self.assertTrue(all(r["ok"] for r in g.call("reset")))
        self.assertEqual(self.tracked(), 5)
        self.assertTrue(Path(self.dir, "iter_0000005", ".metadata").is_file())

        def poll_until_complete(g):
            polls = self.poll_until_complete(g)
            self.assertTrue(all(r["ok"] and r["complete"] for r in polls[-1]), polls[-1])

        self.serves_another_directory(g, poll_until_complete, **{"async": True})


if __name__ == "__main__":
    unittest.main()
