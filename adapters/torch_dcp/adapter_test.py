#!/usr/bin/env python3
"""Protocol-level tests of the torch_dcp adapter: the Python adapters' protocol driver
(adapters/python/ckptspec_protocol_test_driver.py) speaks docs/PROTOCOL.md to N rank processes, as
ckptspec's harness does, and checks what comes back. Run with the torch environment:
    adapters/torch_dcp/run_with_torch_env.sh . @PYTHON@ adapters/torch_dcp/adapter_test.py
"""
import os
import signal
import socket
import subprocess
import sys
import time
import unittest
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from ckptspec_protocol_test_driver import (CALL_DEADLINE_S, Coordinator,  # noqa: E402
                                           ProtocolTestCase, free_port, full, group_of,
                                           hello_request, raw, tensor)


class TorchDcpAdapterTest(ProtocolTestCase):
    ADAPTER = Path(__file__).with_name("ckptspec_torch_dcp_adapter.py")
    ENV = {"CKPTSPEC_DCP_PG_TIMEOUT": "20"}

    def test_capabilities(self):
        self.capabilities_and_their_flags(strict_modes=False)

    def test_save_then_reshard_on_load(self):
        self.save_then_reshard_on_load()
        self.assertTrue(Path(self.dir, "iter_0000010", ".metadata").is_file())

    def test_irregular_grid(self):
        self.irregular_grid()

    def test_only_main_replicas_are_written(self):
        self.only_main_replicas_are_written()

    def test_duplicate_main_chunk_is_deduplicated_silently(self):
        # Two ranks hand DCP the same (key, offset) chunk with different bytes: the planner's
        # dedup_save_plans keeps one copy (the rank with the least planned storage) and raises
        # nothing; the other copy is dropped.
        data = {"w": full("fp32", (4,), 1)}
        g = self.group(2)
        specs = [[tensor("w", "fp32", (4,), (0,), (4,), (1,))] for r in range(2)]
        other = {1: {0: torch.zeros(4)}}
        self.assertTrue(all(r["ok"] for r in self.save(g, specs, data, overrides=other)))
        reqs, replies = self.load(self.group(1), [[tensor("w", "fp32", (4,), (0,), (4,), (1,))]])
        self.assertTrue(replies[0]["ok"], replies)
        kept = self.loaded(reqs[0])
        self.assertIn(kept, (raw(data["w"]), raw(torch.zeros(4))))
        # What docs/FINDINGS.md F3's rerun names.
        print("two main chunks of 'w' at offset (0,) with different bytes: saved without an "
              f"error; the load returns rank {0 if kept == raw(data['w']) else 1}'s",
              file=sys.stderr)

    def test_differing_duplicates_are_refused_when_asked(self):
        # --refuse-differing-duplicates: the same two chunks are refused on every rank, naming the
        # chunk and the ranks; identical copies still save.
        data = {"w": full("fp32", (4,), 1)}
        g = self.group(2, "--refuse-differing-duplicates")
        specs = [[tensor("w", "fp32", (4,), (0,), (4,), (1,))] for r in range(2)]
        replies = self.save(g, specs, data, overrides={1: {0: torch.zeros(4)}})
        self.assertTrue(all(not r["ok"] for r in replies), replies)
        for r in replies:
            self.assertIn("chunk of 'w' at offset [0] is handed to DCP by ranks 0 and 1 with "
                          "different bytes", r["error"]["message"])
        self.dir = str(Path(self.tmp.name) / "ckpt-identical")
        self.assertTrue(all(r["ok"] for r in self.save(g, specs, data)))
        # An object under one key with different bytes on two ranks, likewise.
        shard = {"key": "o", "global_shape": [1], "global_offset": [0], "replica_id": [0]}
        self.dir = str(Path(self.tmp.name) / "ckpt-objects")
        replies = self.save(g, [[], []], {}, [[dict(shard, bytes=f"rank {r}".encode())]
                                              for r in range(2)])
        self.assertTrue(all(not r["ok"] for r in replies), replies)
        self.assertIn("is handed to DCP by ranks 0 and 1 with different bytes",
                      replies[0]["error"]["message"])

    def test_an_object_key_twice_on_one_rank_is_refused(self):
        # Two object entries of one rank under one key cannot both be a state dict's value: the
        # adapter refuses the save rather than keep the second.
        shard = {"key": "o", "global_shape": [1], "global_offset": [0], "replica_id": [0]}
        g = self.group(1)
        replies = self.save(g, [[]], {}, [[dict(shard, bytes=b"a"), dict(shard, bytes=b"b")]])
        self.assertFalse(replies[0]["ok"], replies)
        self.assertIn("is handed over twice by rank 0", replies[0]["error"]["message"])

    def test_rank_local_objects_keep_each_ranks_value(self):
        # A rank-local object (no sharding declared) under one key on both ranks: by default each
        # rank's value goes to DCP under a key of its own and comes back to its rank; with
        # --rank-local plain DCP gets one plain value per key and dedup_save_plans keeps one
        # rank's, which both ranks then load (docs/FINDINGS.md F7).
        local = {"key": "rng", "global_shape": [], "global_offset": [], "replica_id": []}
        objects = [[dict(local, bytes=f"rank {r} rng".encode())] for r in range(2)]
        for mode, distinct in (("by-rank", True), ("plain", False)):
            with self.subTest(mode=mode):
                self.dir = str(Path(self.tmp.name) / f"ckpt-{mode}")
                g = self.group(2, "--rank-local", mode)
                replies = self.save(g, [[], []], {}, objects)
                self.assertTrue(all(r["ok"] for r in replies), replies)
                reqs, replies = self.load(g, [[], []], [[local], [local]])
                self.assertTrue(all(r["ok"] for r in replies), replies)
                got = [Path(req["objects"][0]["file"]).read_bytes() for req in reqs]
                if distinct:
                    self.assertEqual(got, [b"rank 0 rng", b"rank 1 rng"])
                else:
                    self.assertEqual(got[0], got[1])

    def test_gap_is_refused_by_the_planner(self):
        self.gap_is_refused()

    def test_missing_key_and_strict_modes(self):
        data = {"w": full("fp32", (4,), 1)}
        g = self.group(1)
        self.assertTrue(self.save(g, [[tensor("w", "fp32", (4,), (0,), (4,), (1,))]], data)[0]["ok"])
        want = [[tensor("w", "fp32", (4,), (0,), (4,), (1,)), tensor("x", "fp32", (3,), (0,), (3,), (1,))]]
        _, (reply,) = self.load(g, want)
        self.assertEqual(reply["error"]["code"], "NotFound", reply)
        self.assertIn("Missing key", reply["error"]["message"])
        _, (reply,) = self.load(g, want, strict="return_all")
        self.assertEqual(reply["error"]["code"], "NotSupported", reply)
        wrong = [[tensor("w", "fp32", (5,), (0,), (5,), (1,))]]
        _, (reply,) = self.load(g, wrong)
        self.assertEqual(reply["error"]["code"], "InvalidArgument", reply)

    def test_tracker_and_load_without_checkpoint(self):
        self.tracker_and_load_without_checkpoint()

    def test_async_save_commits_at_finalize(self):
        data = {"w": full("fp32", (4, 2), 1)}
        g = self.group(2)
        specs = [[tensor("w", "fp32", (4, 2), (2 * r, 0), (2, 2), (2, 1))] for r in range(2)]
        replies = self.save(g, specs, data, **{"async": True})
        self.assertTrue(all(r["ok"] for r in replies), replies)
        self.assertTrue(all(r["ok"] for r in g.call("finalize")))
        self.assertEqual(Path(self.dir, "latest_checkpointed_iteration.txt").read_text().strip(), "10")
        # A load right after an async save finalizes it first.
        self.assertTrue(all(r["ok"] for r in self.save(g, specs, data, iteration=20, **{"async": True})))
        reqs, replies = self.load(g, specs)
        for r, (req, reply) in enumerate(zip(reqs, replies)):
            self.assertEqual(reply["iteration"], 20, reply)
            self.assertEqual(self.loaded(req), raw(data["w"][2 * r:2 * r + 2]))

    def poll_updates_after_async_save(self, *args):
        """Saves w asynchronously, writes w + 100 into the handed-over tensors through a poll
        update (protocol revision 3), polls until complete; each rank's loaded bytes."""
        data = {"w": full("fp32", (4, 2), 1)}
        g = self.group(2, *args)
        specs = [[tensor("w", "fp32", (4, 2), (2 * r, 0), (2, 2), (2, 1))] for r in range(2)]
        self.assertTrue(all(r["ok"] for r in self.save(g, specs, data, **{"async": True})))
        polls = []
        for r in range(2):
            path = Path(self.tmp.name) / f"update{r}"
            path.write_bytes(raw(data["w"][2 * r:2 * r + 2] + 100))
            polls.append({"tensors": [{"index": 0, "file": str(path)}]})
        replies = g.call("poll", polls)
        self.assertTrue(all(r["ok"] for r in replies), replies)
        for _ in range(200):
            if all(r["complete"] for r in replies):
                break
            self.assertEqual(len({r["complete"] for r in replies}), 1, replies)
            time.sleep(0.05)
            replies = g.call("poll", [{"tensors": []}] * 2)
            self.assertTrue(all(r["ok"] for r in replies), replies)
        self.assertTrue(all(r["complete"] for r in replies), replies)
        self.assertEqual(Path(self.dir, "latest_checkpointed_iteration.txt").read_text().strip(), "10")
        self.assertEqual([r["complete"] for r in g.call("poll", [{}] * 2)], [True, True])
        reqs, replies = self.load(g, specs)
        return data, [self.loaded(req) for req in reqs]

    def test_poll_updates_never_reach_the_staged_copy(self):
        data, loaded = self.poll_updates_after_async_save()
        self.assertEqual(loaded, [raw(data["w"][2 * r:2 * r + 2]) for r in range(2)])

    def test_plan_cache_saves(self):
        self.plan_cache_saves(self.group(2))

    def test_reset_completes_a_pending_save_and_serves_another_directory(self):
        data = {"w": full("fp32", (4,), 1)}
        g = self.group(2)
        specs = [[tensor("w", "fp32", (4,), (2 * r,), (2,), (2,))] for r in range(2)]
        replies = self.save(g, specs, data, iteration=5, assume_constant_structure=True, **{"async": True})
        self.assertTrue(all(r["ok"] for r in replies), replies)
        replies = g.call("reset")
        self.assertTrue(all(r["ok"] for r in replies), replies)
        reqs, replies = self.load(g, specs)
        self.assertEqual([r["iteration"] for r in replies], [5, 5], replies)
        first = self.dir
        self.serves_another_directory(g)
        self.assertNotEqual(first, self.dir)

    # --- regroup and connect mode (protocol revision 6) ---

    def test_regroup_over_stores_the_harness_names(self):
        self.regroup_scenario(True)

    def test_regroup_over_the_launchers_store(self):
        self.regroup_scenario(False)

    def test_hello_without_group_keeps_the_environments_rendezvous(self):
        # An older harness: no group; ranks and MASTER_ADDR:MASTER_PORT of the environment.
        g = self.group(2, first="env")
        data = {"w": full("fp32", (4,), 1)}
        specs = [[tensor("w", "fp32", (4,), (2 * r,), (2,), (2,))] for r in range(2)]
        self.assertOk(self.save(g, specs, data))
        self.check_loaded(g, specs, data, iteration=10)

    def test_a_hello_that_cannot_regroup_is_refused(self):
        g = self.group(1)
        data = {"w": full("fp32", (4,), 1)}
        spec = [[tensor("w", "fp32", (4,), (0,), (4,), (1,))]]
        for bad, what in (({"name": "a/b"}, 'has no "name"'),
                          ({"name": "a", "store": "127.0.0.1"}, "is not HOST:PORT"),
                          ({"name": "a", "store": "h:70000"}, "is not HOST:PORT")):
            (reply,) = g.exchange([0], "hello", [hello_request(0, 1, bad)])
            self.assertEqual(reply["error"]["code"], "InvalidArgument", reply)
            self.assertIn(what, reply["error"]["message"])
        (reply,) = g.exchange([0], "hello", [hello_request(1, 1, group_of("x", True))], [0])
        self.assertIn("not a rank 0..world_size-1", reply["error"]["message"])
        self.assertOk(self.save(g, spec, data))
        # After a save, only a reset opens the way to another group.
        (reply,) = g.exchange([0], "hello", [hello_request(0, 1, group_of("y", True))])
        self.assertEqual(reply["error"]["code"], "FailedPrecondition", reply)
        g.regroup([0], "z")
        self.check_loaded(g, spec, data, iteration=10)
        # Over the launcher's store (here RANK 0 of WORLD_SIZE 1 of the start environment), a
        # group's keys stay: its name is not taken twice.
        g.regroup([0], "launched", store=False)
        self.check_loaded(g, spec, data, iteration=10)
        self.assertOk(g.call("reset"))
        (reply,) = g.exchange([0], "hello", [hello_request(0, 1, group_of("launched", False))])
        self.assertIn("a group over the launcher's store needs a new name",
                      reply["error"]["message"])

    def test_a_rank_without_regroup_keeps_its_rank(self):
        # --no-regroup: the driver sends no second hello with another rank (Group.regroup
        # refuses to), and the adapter refuses one; the group serves on as it started.
        g = self.group(2, "--no-regroup")
        self.assertRaises(AssertionError, g.regroup, [1, 0], "swapped")
        replies = g.exchange([0, 1], "hello", [hello_request(1 - r, 2, group_of("x", True))
                                               for r in range(2)])
        for reply in replies:
            self.assertIn("does not regroup", reply["error"]["message"])
        data = {"w": full("fp32", (4,), 1)}
        specs = [[tensor("w", "fp32", (4,), (2 * r,), (2,), (2,))] for r in range(2)]
        self.assertOk(self.save(g, specs, data))
        self.check_loaded(g, specs, data, iteration=10)

    def connecting_rank(self, coordinator, **env):
        """One launched rank (RANK 0 of 1) dialling in, run to its end: (exit status, stdout,
        stderr)."""
        env = dict(os.environ, RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(free_port()), **coordinator.env()) | env
        p = subprocess.Popen([sys.executable, str(self.ADAPTER)], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True, env=env)
        self.addCleanup(lambda: p.poll() is None and os.killpg(p.pid, signal.SIGKILL))
        return p

    def test_connect_mode_refuses_a_wrong_token(self):
        coordinator = Coordinator(self.tmp.name)
        self.addCleanup(coordinator.listener.close)
        coordinator.publish(token="0" * 32)  # not the coordinator's
        p = self.connecting_rank(coordinator)
        self.assertIsNone(coordinator.admit())
        out, err = p.communicate(timeout=CALL_DEADLINE_S)
        self.assertEqual((p.returncode, out), (1, b""), err)
        self.assertIn("refused this rank (FailedPrecondition): token refused", err.decode())

    def test_connect_mode_names_what_is_missing(self):
        coordinator = Coordinator(self.tmp.name)
        for published, says in ((False, "does not exist after 1 s"),
                                (True, "refused the connection for 1 s")):
            if published:
                coordinator.publish()
                coordinator.listener.close()  # nothing listens there
            p = self.connecting_rank(coordinator, CKPTSPEC_CONNECT_TIMEOUT="1")
            out, err = p.communicate(timeout=CALL_DEADLINE_S)
            self.assertEqual((p.returncode, out), (1, b""), err)
            self.assertIn(says, err.decode())

    def test_connect_mode_serves_requests_over_the_socket(self):
        g = self.group(2, coordinator=self.coordinator(), first=None)
        g.say_hello([([0, 1], group_of("a", False))])
        data = {"w": full("fp32", (4,), 1)}
        specs = [[tensor("w", "fp32", (4,), (2 * r,), (2,), (2,))] for r in range(2)]
        self.assertOk(self.save(g, specs, data))
        self.check_loaded(g, specs, data, iteration=10)
        # The end of the requests (ckptspec's shutdown(SHUT_WR) at the end of a run) is the end
        # of stdin: every rank leaves with status 0, closing its end, and nothing else behind.
        for sock in g.sockets:
            sock.shutdown(socket.SHUT_WR)
        self.assertEqual([p.wait(CALL_DEADLINE_S) for p in g.procs], [0, 0])
        self.assertEqual([rw.read() for rw, _ in g.channels], [b"", b""])
        self.assertEqual(g.wait_until_gone(), [])
        self.assertEqual([p.stdout.read() for p in g.procs], [b"", b""])

    def test_a_connected_rank_ends_when_the_coordinator_hangs_up(self):
        self.coordinator_hangs_up_during_a_collective()


if __name__ == "__main__":
    unittest.main()
