#!/usr/bin/env python3
"""Protocol-level tests of the torch_dcp adapter: a small driver speaks docs/PROTOCOL.md to N rank
processes, as ckptspec's harness does, and checks what comes back. Run with the torch environment:
    adapters/torch_dcp/run_with_torch_env.sh . @PYTHON@ adapters/torch_dcp/adapter_test.py
"""
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

import torch

ADAPTER = Path(__file__).with_name("ckptspec_torch_dcp_adapter.py")
DT = {"fp32": torch.float32, "bf16": torch.bfloat16, "int64": torch.int64,
      "fp8_e4m3": torch.float8_e4m3fn}
# No single request of these tests takes a minute even on two busy cores; a rank that has not
# replied by then is stuck (the gloo timeout is shorter), and the test fails with every rank's
# Python stack instead of waiting for ctest's timeout.
CALL_DEADLINE_S = float(os.environ.get("CKPTSPEC_ADAPTER_TEST_DEADLINE", 180))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def raw(x):
    x = x.contiguous()
    return x.view(-1).view(torch.uint8).numpy().tobytes()


def hello_request(rank, world, group=None):
    """A hello (revision 6 with a group: {"name": ..., ["store": "HOST:PORT"]}; else as an older
    harness sends it, without one)."""
    req = {"protocol": 1, "rank": rank, "world_size": world}
    return req | {"revision": 6, "group": group} if group is not None else req


def group_of(name, store):
    """A hello's group: with store, a TCPStore at a free port that the group's rank 0 hosts;
    without, the launcher's store."""
    return {"name": name} | ({"store": f"127.0.0.1:{free_port()}"} if store else {})


class Coordinator:
    """What ckptspec is to ranks that dial in (connect mode): a socket listening on 127.0.0.1,
    the coordinator file that names it and a token, and the connect handshake."""

    def __init__(self, directory):
        self.token = secrets.token_hex(16)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(CALL_DEADLINE_S)
        self.path = Path(directory) / f"coordinator-{self.token[:8]}.json"

    def env(self):
        return {"CKPTSPEC_COORDINATOR_FILE": str(self.path), "CKPTSPEC_CONNECT_TIMEOUT": "60"}

    def publish(self, token=None):
        """Writes the coordinator file (atomically) naming the address and `token` (default:
        the one accepted)."""
        host, port = self.listener.getsockname()
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"address": f"{host}:{port}", "token": token or self.token}))
        os.replace(tmp, self.path)

    def accept(self, world):
        """{launch rank: (socket, read-write file)} of `world` ranks admitted."""
        connections = {}
        while len(connections) < world:
            admitted = self.admit()
            if admitted is not None:
                connections[admitted[0]] = admitted[1:]
        return connections

    def admit(self):
        """The next connection's (launch rank, socket, read-write file) when its connect line
        names the token (the reply: {"ok": true}); else None, the connection refused (the reply
        names the token) and closed."""
        sock, _ = self.listener.accept()
        sock.settimeout(None)
        rw = sock.makefile("rwb")
        hello = json.loads(rw.readline())
        assert hello["op"] == "connect" and hello["protocol"] == 1, hello
        assert hello["pid"] > 0 and hello["host"] == socket.gethostname(), hello
        ok = hello["token"] == self.token
        reply = {"ok": True} if ok else {
            "ok": False, "error": {"code": "FailedPrecondition",
                                   "message": "token refused: not this coordinator's token"}}
        rw.write((json.dumps(reply) + "\n").encode())
        rw.flush()
        if ok:
            return hello["rank"], sock, rw
        rw.close()
        sock.close()
        return None


class Group:
    """N adapter processes; call() sends one request to each rank of the current group (the
    processes `order` names, as ranks 0, 1, ...) and returns the replies. Each process gets
    RANK = its index and WORLD_SIZE = N. By default they are started as ckptspec starts them,
    over pipes, and say hello as one group (`first`: "group", revision 6, over a TCPStore at
    MASTER_PORT; "env", as an older harness, without a group; None: no hello yet). With a
    Coordinator they are launched as by torchrun or srun (MASTER_ADDR:MASTER_PORT is the
    launcher's store, launch rank 0 hosting it) and dial in (connect mode)."""

    def __init__(self, world, args=(), first="group", coordinator=None, env=None):
        self.world, self.next_id, self.order = world, 1, list(range(world))
        self.master_port = free_port()
        env = dict(os.environ, WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(self.master_port), CKPTSPEC_PROTOCOL="1",
                   CKPTSPEC_DCP_PG_TIMEOUT="20", **(env or {}))
        if coordinator is not None:
            env.update(coordinator.env())
        # Each rank leads a process group of its own: whatever it starts is ended with it (an
        # orphan holding the test's output pipe would keep ctest waiting).
        self.procs = [subprocess.Popen([sys.executable, str(ADAPTER), *args],
                                       stdin=subprocess.PIPE if coordinator is None
                                       else subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, start_new_session=True,
                                       env=dict(env, RANK=str(r), LOCAL_RANK=str(r)))
                      for r in range(world)]
        self.sockets = []
        if coordinator is None:
            self.channels = [(p.stdin, p.stdout) for p in self.procs]
        else:
            connections = coordinator.accept(world)
            self.sockets = [connections[r][0] for r in range(world)]
            self.channels = [(connections[r][1],) * 2 for r in range(world)]
        self.capabilities = None
        if first is not None:
            store = {"name": "g0", "store": f"127.0.0.1:{self.master_port}"}
            self.say_hello([(self.order, store if first == "group" else None)])

    def say_hello(self, groups):
        """One hello to the processes of each (order, group): the k-th of `order` as rank k of
        len(order) in `group` (None: no group). The first one becomes the current group; returns
        the capabilities, which every process must declare alike."""
        indices = [i for order, _ in groups for i in order]
        requests = [hello_request(k, len(order), group)
                    for order, group in groups for k in range(len(order))]
        replies = self.exchange(indices, "hello", requests,
                                [k for order, _ in groups for k in range(len(order))])
        assert all(r["ok"] and r["protocol"] == 1 for r in replies), replies
        assert all(r["capabilities"] == replies[0]["capabilities"] for r in replies), replies
        self.order, self.world = list(groups[0][0]), len(groups[0][0])
        self.capabilities = replies[0]["capabilities"]
        return self.capabilities

    def regroup(self, order, name, store=True):
        """Moves the processes `order` into a new group named `name`, as its ranks 0, 1, ...: a
        reset to the current group, then hello with the new group (revision 6), as the harness
        does. Only to processes that declared regroup."""
        assert self.capabilities.get("regroup"), "a second hello only where regroup is declared"
        replies = self.call("reset")
        assert all(r["ok"] for r in replies), replies
        return self.say_hello([(order, group_of(name, store))])

    def call(self, op, per_rank=None):
        return self.exchange(self.order, op, per_rank)

    def exchange(self, indices, op, per_rank=None, ranks=None):
        """Sends request `op` (per_rank[k] added) to the k-th process of `indices`; returns the
        replies, each of the request's id and rank ranks[k] (default k; "any": not checked)."""
        rid, self.next_id = self.next_id, self.next_id + 1
        self.send(indices, {"id": rid, "op": op}, per_rank)
        replies = [json.loads(line) for line in self.read_replies(indices, op)]
        for k, reply in enumerate(replies):
            assert reply["id"] == rid, reply
            if ranks != "any":
                assert reply["rank"] == (k if ranks is None else ranks[k]), reply
        return replies

    def send(self, indices, request, per_rank=None):
        for k, i in enumerate(indices):
            writer = self.channels[i][0]
            writer.write((json.dumps(request | (per_rank[k] if per_rank else {})) + "\n").encode())
            writer.flush()

    def read_replies(self, indices, op):
        """One line from every process of `indices`, or, past CALL_DEADLINE_S, an AssertionError
        naming the ranks that did not reply, after each process has dumped its threads' stacks
        to stderr (SIGUSR1: see ckptspec_adapter_kit.serve) and been killed."""
        lines = [None] * len(indices)

        def read(k):
            lines[k] = self.channels[indices[k]][1].readline()

        readers = [threading.Thread(target=read, args=(k,), daemon=True)
                   for k in range(len(indices))]
        for t in readers:
            t.start()
        end = time.monotonic() + CALL_DEADLINE_S
        for t in readers:
            t.join(max(0.0, end - time.monotonic()))
        silent = [k for k in range(len(indices)) if readers[k].is_alive() or not lines[k]]
        if silent:
            for p in self.procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGUSR1)
            time.sleep(2)
            self.kill_groups()
            raise AssertionError(f"'{op}': no reply from rank(s) {silent} within "
                                 f"{CALL_DEADLINE_S:.0f} s (their stacks are on stderr)")
        return lines

    def kill_groups(self):
        """SIGKILL to every rank's process group (the rank and what it started), then reaps."""
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()

    def left_behind(self, procs=None):
        """The live processes of the process groups of `procs` (default: every rank's), as
        'PID (NAME)' (Linux /proc)."""
        groups, found = {p.pid for p in (procs or self.procs)}, []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                text = stat.read_text()
            except OSError:
                continue
            name, fields = text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()
            if int(fields[2]) in groups and fields[0] != "Z":  # fields: state, ppid, pgrp, ...
                found.append(f"{stat.parent.name} ({name})")
        return found

    def wait_until_gone(self, procs=None, seconds=5):
        """left_behind(procs) once it is empty or `seconds` have passed (a helper such as
        multiprocessing's resource tracker may take a moment)."""
        end = time.monotonic() + seconds
        while (left := self.left_behind(procs)) and time.monotonic() < end:
            time.sleep(0.1)
        return left

    def close(self):
        """Shuts every process down (unless a missed deadline killed them), the idle ones too,
        and fails when one left a process behind (an orphan that holds the harness's pipes) or
        wrote anything but replies to stdout; ends all of them either way."""
        left, extra = [], []
        if all(p.poll() is None for p in self.procs):
            everyone = list(range(len(self.procs)))
            self.exchange(everyone, "shutdown", ranks="any")
            for p in self.procs:
                p.wait(20)
            left = self.wait_until_gone()
            if self.sockets:
                extra = [p.stdout.read() for p in self.procs]
        self.kill_groups()
        for p in self.procs:
            for pipe in (p.stdin, p.stdout):
                if pipe is not None:
                    pipe.close()
        for (rw, _), sock in zip(self.channels if self.sockets else [], self.sockets):
            rw.close()
            sock.close()
        assert not left, f"processes left behind after shutdown: {', '.join(left)}"
        assert not any(extra), f"a connected rank wrote to stdout: {extra}"


def tensor(key, dtype, gshape, goff, lshape, frag=None, replica=(0,), prepend=0):
    t = {"key": key, "dtype": dtype, "global_shape": list(gshape), "global_offset": list(goff),
         "local_shape": list(lshape), "replica_id": list(replica)}
    if frag is not None:
        t["axis_fragmentations"] = list(frag)
    if prepend:
        t["prepend_axis_num"] = prepend
    return t


def full(dtype, shape, seed):
    x = torch.arange(int(torch.Size(shape).numel()), dtype=torch.float64).reshape(shape) * 0.25 + seed
    return x.to(DT[dtype])


class TorchDcpAdapterTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = str(Path(self.tmp.name) / "ckpt")
        self.n = 0

    def tearDown(self):
        self.tmp.cleanup()

    def group(self, world, *args, **kwargs):
        g = Group(world, args, **kwargs)
        self.addCleanup(g.close)
        return g

    def coordinator(self):
        c = Coordinator(self.tmp.name)
        self.addCleanup(c.listener.close)
        c.publish()
        return c

    def entries(self, specs, data=None, override=None):
        """Tensor entries with files: from `data` (save; `override[i]` replaces entry i's bytes)
        or fresh paths (load)."""
        out = []
        for i, s in enumerate(specs):
            self.n += 1
            e = dict(s, file=str(Path(self.tmp.name) / f"f{self.n}"))
            if data is not None:
                off, shp = e["global_offset"], [1] * e.get("prepend_axis_num", 0) + e["local_shape"]
                box = data[e["key"]][tuple(slice(o, o + n) for o, n in zip(off, shp))]
                if override and i in override:
                    box = override[i]
                Path(e["file"]).write_bytes(raw(box))
            out.append(e)
        return out

    def save(self, g, per_rank_specs, data, objects=None, iteration=10, overrides=None, **opts):
        reqs = []
        for r, specs in enumerate(per_rank_specs):
            objs = []
            for o in (objects[r] if objects else []):
                self.n += 1
                path = Path(self.tmp.name) / f"o{self.n}"
                path.write_bytes(o["bytes"])
                objs.append({k: v for k, v in o.items() if k != "bytes"} | {"file": str(path)})
            reqs.append({"directory": self.dir, "iteration": iteration, "validate": True,
                         "async": False, "assume_constant_structure": False, "layout": {},
                         "tensors": self.entries(specs, data, (overrides or {}).get(r)),
                         "objects": objs, "common": {"iteration": iteration}} | opts)
        return g.call("save", reqs)

    def load(self, g, per_rank_specs, objects=None, strict="assume_ok_unexpected", iteration=None):
        reqs = [{"directory": self.dir, "iteration": iteration, "strict": strict,
                 "allow_shape_mismatch": False, "tensors": self.entries(specs),
                 "objects": [dict(o, file=str(Path(self.tmp.name) / f"lo{self.n}_{r}_{i}"))
                             for i, o in enumerate(objects[r] if objects else [])]}
                for r, specs in enumerate(per_rank_specs)]
        return reqs, g.call("load", reqs)

    def loaded(self, req, i=0):
        return Path(req["tensors"][i]["file"]).read_bytes()

    def test_capabilities(self):
        g = self.group(1)
        self.assertEqual(g.capabilities, {"resharding": True, "objects": True, "async": True,
                                          "checksums": False, "plan_cache": True,
                                          "deterministic": False, "strict_modes": False,
                                          "reset": True, "poll": True, "packed": True,
                                          "regroup": True})
        off = self.group(1, "--no-reset").capabilities
        self.assertEqual((off["reset"], off["regroup"]), (False, False))  # regroup needs reset
        self.assertFalse(self.group(1, "--no-async").capabilities["poll"])
        self.assertFalse(self.group(1, "--no-regroup").capabilities["regroup"])

    def test_save_then_reshard_on_load(self):
        data = {"w": full("fp32", (4, 6), 1), "b": full("bf16", (4,), 2),
                "step": full("int64", (2, 1), 3), "q": full("fp8_e4m3", (2, 2), 0)}
        g = self.group(2)
        specs = [[tensor("w", "fp32", (4, 6), (2 * r, 0), (2, 6), (2, 1)),
                  tensor("b", "bf16", (4,), (0,), (4,), (1,), replica=(r,)),
                  tensor("step", "int64", (2, 1), (r, 0), (1,), (2, 1), prepend=1),
                  tensor("q", "fp8_e4m3", (2, 2), (r, 0), (1, 2), (2, 1))] for r in range(2)]
        objects = [[{"key": "rng", "global_shape": [2], "global_offset": [r], "replica_id": [0],
                     "bytes": f"rank {r} rng".encode()}] for r in range(2)]
        replies = self.save(g, specs, data, objects)
        self.assertTrue(all(r["ok"] for r in replies), replies)
        self.assertEqual(Path(self.dir, "latest_checkpointed_iteration.txt").read_text().strip(), "10")
        self.assertTrue(Path(self.dir, "iter_0000010", ".metadata").is_file())
        # Under three ranks: w cut along axis 1, b, step and q whole on every rank.
        g3 = self.group(3)
        lspecs = [[tensor("w", "fp32", (4, 6), (0, 2 * r), (4, 2), (1, 3)),
                   tensor("b", "bf16", (4,), (0,), (4,), (1,), replica=(r,)),
                   tensor("step", "int64", (2, 1), (1, 0), (1,), (2, 1), prepend=1),
                   tensor("q", "fp8_e4m3", (2, 2), (0, 0), (2, 2), (1, 1), replica=(r,))]
                  for r in range(3)]
        lobjs = [[{"key": "rng", "global_shape": [2], "global_offset": [r % 2], "replica_id": [0]}]
                 for r in range(3)]
        reqs, replies = self.load(g3, lspecs, lobjs)
        for r, (req, reply) in enumerate(zip(reqs, replies)):
            self.assertTrue(reply["ok"], reply)
            self.assertEqual(reply["iteration"], 10)
            self.assertEqual(reply["common"], {"iteration": 10})
            w, b, step, q = (self.loaded(req, i) for i in range(4))
            self.assertEqual(w, raw(data["w"][:, 2 * r:2 * r + 2]))
            self.assertEqual(b, raw(data["b"]))
            self.assertEqual(step, raw(data["step"][1]))
            self.assertEqual(q, raw(data["q"]))
            self.assertEqual(Path(req["objects"][0]["file"]).read_bytes(), f"rank {r % 2} rng".encode())

    def test_irregular_grid(self):
        data = {"buf": full("fp32", (10,), 4)}
        g = self.group(2)
        specs = [[tensor("buf", "fp32", (10,), (0,), (3,))], [tensor("buf", "fp32", (10,), (3,), (7,))]]
        self.assertTrue(all(r["ok"] for r in self.save(g, specs, data)))
        reqs, replies = self.load(self.group(1), [[tensor("buf", "fp32", (10,), (0,), (10,))]])
        self.assertTrue(replies[0]["ok"], replies)
        self.assertEqual(self.loaded(reqs[0]), raw(data["buf"]))

    def test_only_main_replicas_are_written(self):
        data = {"w": full("fp32", (4,), 1)}
        g = self.group(2)
        specs = [[tensor("w", "fp32", (4,), (0,), (4,), (1,), replica=(r,))] for r in range(2)]
        other = {1: {0: torch.zeros(4)}}  # the non-main replica holds other data
        self.assertTrue(all(r["ok"] for r in self.save(g, specs, data, overrides=other)))
        reqs, replies = self.load(self.group(1), [[tensor("w", "fp32", (4,), (0,), (4,), (1,))]])
        self.assertTrue(replies[0]["ok"], replies)
        self.assertEqual(self.loaded(reqs[0]), raw(data["w"]))

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
        data = {"w": full("fp32", (4,), 1)}
        g = self.group(2)
        specs = [[tensor("w", "fp32", (4,), (2 * r,), (2,), (2,), replica=(r,))] for r in range(2)]
        replies = self.save(g, specs, data)
        for reply in replies:
            self.assertFalse(reply["ok"], reply)
            self.assertEqual(reply["error"]["code"], "InvalidArgument", reply)
        self.assertFalse(Path(self.dir, "latest_checkpointed_iteration.txt").exists())

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
        g = self.group(1)
        _, (reply,) = self.load(g, [[]])
        self.assertEqual(reply["error"]["code"], "NotFound")
        data = {"w": full("fp32", (4,), 1)}
        spec = [[tensor("w", "fp32", (4,), (0,), (4,), (1,))]]
        self.assertTrue(self.save(g, spec, data)[0]["ok"])
        self.assertEqual(self.save(g, spec, data)[0]["error"]["code"], "FailedPrecondition")
        self.assertTrue(self.save(g, spec, data, iteration=20)[0]["ok"])
        _, (reply,) = self.load(g, [[]], iteration=10)
        self.assertEqual(reply["iteration"], 10)
        _, (reply,) = self.load(g, [[]])
        self.assertEqual(reply["iteration"], 20)

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
        data = {"w": full("fp32", (4,), 1), "v": full("fp32", (2,), 5)}
        g = self.group(2)
        specs = [[tensor("w", "fp32", (4,), (2 * r,), (2,), (2,)),
                  tensor("v", "fp32", (2,), (0,), (2,), (1,), replica=(r,))] for r in range(2)]
        for it in (1, 2, 3):
            d = {k: v + it for k, v in data.items()}
            replies = self.save(g, specs, d, iteration=it, assume_constant_structure=True)
            self.assertTrue(all(r["ok"] for r in replies), replies)
            reqs, replies = self.load(g, specs)
            for r, (req, reply) in enumerate(zip(reqs, replies)):
                self.assertEqual(reply["iteration"], it)
                self.assertEqual(self.loaded(req, 0), raw(d["w"][2 * r:2 * r + 2]))
                self.assertEqual(self.loaded(req, 1), raw(d["v"]))

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
        self.dir = str(Path(self.tmp.name) / "another")  # the next case's directory
        other = {"w": full("fp32", (6,), 7)}
        specs = [[tensor("w", "fp32", (6,), (3 * r,), (3,), (2,))] for r in range(2)]
        replies = self.save(g, specs, other, iteration=1, assume_constant_structure=True)
        self.assertTrue(all(r["ok"] for r in replies), replies)
        reqs, replies = self.load(g, specs)
        for r, (req, reply) in enumerate(zip(reqs, replies)):
            self.assertEqual(reply["iteration"], 1)
            self.assertEqual(self.loaded(req, 0), raw(other["w"][3 * r:3 * r + 3]))
        self.assertNotEqual(first, self.dir)

    # --- regroup and connect mode (protocol revision 6) ---

    def pool(self, store, *args):
        """Four processes started once, as ckptspec starts them (store: groups over a TCPStore
        the harness names) or launched and dialling in (no store: groups over the launcher's
        store). Their first hello: processes 0 and 1 as group "a", 2 and 3 as "idle" (a group
        never formed); "a" is the current group."""
        g = self.group(4, *args, first=None,
                       coordinator=None if store else self.coordinator())
        g.say_hello([([0, 1], group_of("a", store)), ([2, 3], group_of("idle", store))])
        return g

    def regroup_scenario(self, store, *args):
        """Saves asynchronously under processes {0, 1} as ranks 0, 1; loads (resharded) and
        saves asynchronously under all four; loads both checkpoints (resharded) and saves and loads
        rank-local objects under processes 3, 1, 2 as ranks 0, 1, 2; every loaded byte is
        checked."""
        g = self.pool(store, *args)
        self.assertTrue(g.capabilities["regroup"])
        data = {"w": full("fp32", (8, 6), 1), "b": full("bf16", (6,), 2)}
        rows = [[tensor("w", "fp32", (8, 6), (4 * r, 0), (4, 6), (2, 1)),
                 tensor("b", "bf16", (6,), (0,), (6,), (1,), replica=(r,))] for r in range(2)]
        self.assertOk(self.save(g, rows, data, iteration=10, **{"async": True}))
        self.assertOk(g.call("finalize"))  # processes 0 and 1 have a history that 2 and 3 lack
        g.regroup([0, 1, 2, 3], "b", store)
        quarters = [[tensor("w", "fp32", (8, 6), (2 * r, 0), (2, 6), (4, 1)),
                     tensor("b", "bf16", (6,), (0,), (6,), (1,), replica=(r,))] for r in range(4)]
        self.check_loaded(g, quarters, data, iteration=10)
        later = {k: v + 100 for k, v in data.items()}
        self.assertOk(self.save(g, quarters, later, iteration=20, **{"async": True}))
        self.assertOk(g.call("finalize"))
        g.regroup([3, 1, 2], "c", store)
        columns = [[tensor("w", "fp32", (8, 6), (0, 2 * r), (8, 2), (1, 3)),
                    tensor("b", "bf16", (6,), (0,), (6,), (1,), replica=(r,))] for r in range(3)]
        self.check_loaded(g, columns, later, iteration=20)
        self.check_loaded(g, columns, data, iteration=10)
        local = {"key": "rng", "global_shape": [], "global_offset": [], "replica_id": []}
        objects = [[dict(local, bytes=f"rank {r} of c".encode())] for r in range(3)]
        self.assertOk(self.save(g, columns, later, objects, iteration=30, **{"async": True}))
        reqs, replies = self.load(g, columns, [[local]] * 3)
        self.assertEqual([r["iteration"] for r in replies], [30] * 3, replies)
        self.assertEqual([Path(req["objects"][0]["file"]).read_bytes() for req in reqs],
                         [f"rank {r} of c".encode() for r in range(3)])
        return g

    def assertOk(self, replies):
        self.assertTrue(all(r["ok"] for r in replies), replies)

    def check_loaded(self, g, specs, data, iteration):
        """Loads `specs` (one list per rank) of `iteration` and checks every tensor's bytes."""
        reqs, replies = self.load(g, specs, iteration=iteration)
        self.assertOk(replies)
        for req in reqs:
            for i, t in enumerate(req["tensors"]):
                box = tuple(slice(o, o + n) for o, n in zip(t["global_offset"], t["local_shape"]))
                self.assertEqual(self.loaded(req, i), raw(data[t["key"]][box]), (iteration, t))

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
        p = subprocess.Popen([sys.executable, str(ADAPTER)], stdin=subprocess.DEVNULL,
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

    def coordinator_hangs_up_during_a_collective(self, *args, before=None):
        """Two connected ranks save once (`before(g, specs, data)` may add requests); then only
        rank 0 gets a save, which blocks it in the save's agreement with rank 1, and the
        coordinator closes its side of rank 0's connection (shutdown(SHUT_WR), as ckptspec ends
        a rank): rank 0 must exit with status 0 (its launcher must not stop its siblings) within
        a few seconds, not at the gloo timeout, leaving no process of its process group."""
        g = self.group(2, *args, coordinator=self.coordinator(), first=None)
        g.say_hello([([0, 1], group_of("a", False))])
        data = {"w": full("fp32", (4,), 1)}
        specs = [[tensor("w", "fp32", (4,), (2 * r,), (2,), (2,))] for r in range(2)]
        self.assertOk(self.save(g, specs, data))
        if before is not None:
            before(g, specs, data)
        request = {"directory": self.dir, "iteration": 99, "validate": True, "async": False,
                   "assume_constant_structure": False, "layout": {}, "objects": [],
                   "tensors": self.entries(specs[0], data), "common": {}}
        g.send([0], {"id": 999, "op": "save"}, [request])
        time.sleep(2)  # in the agreement, waiting for rank 1
        self.assertIsNone(g.procs[0].poll(), "rank 0 did not wait for rank 1")
        g.sockets[0].shutdown(socket.SHUT_WR)
        start = time.monotonic()
        code = g.procs[0].wait(CALL_DEADLINE_S)
        self.assertLess(time.monotonic() - start, 5)
        self.assertEqual(code, 0)
        self.assertEqual(g.channels[0][1].read(), b"")  # no reply, and the rank's end is closed
        self.assertEqual(g.wait_until_gone([g.procs[0]]), [])
        self.assertEqual(g.procs[0].stdout.read(), b"")


if __name__ == "__main__":
    unittest.main()
