"""The protocol driver of the Python adapters' tests: rank processes of an adapter spoken to as
ckptspec's harness speaks to them (docs/PROTOCOL.md), and a TestCase base with the requests and
scenarios that the storage adapters' tests share. Not a test itself; standard library only (the
torch arrays below import torch when called).

  Group(adapter, world, args)   N rank processes, started over pipes (or, with a Coordinator,
                                launched and dialling in: connect mode); call() sends one request
                                to every rank and returns the replies. A rank that has not replied
                                within CALL_DEADLINE_S prints its threads' stacks (SIGUSR1) and is
                                killed with everything it started, and the call fails naming it;
                                close() shuts the ranks down and fails on a process left behind
                                or on anything but replies written to a connected rank's stdout
  Coordinator(directory)        what ckptspec is to ranks that dial in: the listening socket, the
                                coordinator file and the connect handshake
  tensor(...), hello_request(...), group_of(...)
                                a tensor entry's fields, a hello, a hello's group
  full(dtype, shape, seed), raw(x)
                                a torch tensor of known values; a tensor's raw bytes
  ProtocolTestCase              setUp/tearDown, group(), save(), load(), check_loaded() and the
                                scenarios several adapters' tests run (resharding, irregular
                                grids, main replicas, the tracker, the plan cache, regroup,
                                connect mode); a subclass names ADAPTER, and ARGS and ENV for
                                every group it starts
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

# No single request of these tests takes a minute even on two busy cores; a rank that has not
# replied by then is stuck (the gloo timeout is shorter), and the test fails with every rank's
# Python stack instead of waiting for ctest's timeout.
CALL_DEADLINE_S = float(os.environ.get("CKPTSPEC_ADAPTER_TEST_DEADLINE", 180))
TRACKER = "latest_checkpointed_iteration.txt"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def full(dtype, shape, seed):
    """A torch tensor of `shape` holding 0.25 * its row-major index + seed, as protocol `dtype`
    (fp32, bf16, int64 or fp8_e4m3)."""
    import torch
    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16, "int64": torch.int64,
              "fp8_e4m3": torch.float8_e4m3fn}
    x = torch.arange(int(torch.Size(shape).numel()), dtype=torch.float64).reshape(shape) * 0.25
    return (x + seed).to(dtypes[dtype])


def raw(x):
    """A torch tensor's elements, raw, in row-major order."""
    import torch
    x = x.contiguous()
    return x.view(-1).view(torch.uint8).numpy().tobytes()


def tensor(key, dtype, gshape, goff, lshape, frag=None, replica=(0,), prepend=0):
    """A tensor entry's fields (without its file)."""
    t = {"key": key, "dtype": dtype, "global_shape": list(gshape), "global_offset": list(goff),
         "local_shape": list(lshape), "replica_id": list(replica)}
    if frag is not None:
        t["axis_fragmentations"] = list(frag)
    if prepend:
        t["prepend_axis_num"] = prepend
    return t


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
    """N processes of the adapter script `adapter` (started with `args`); call() sends one request
    to each rank of the current group (the processes `order` names, as ranks 0, 1, ...) and
    returns the replies. Each process gets RANK = its index and WORLD_SIZE = N, and `env`. By
    default they are started as ckptspec starts them, over pipes, and say hello as one group
    (`first`: "group", revision 6, over a TCPStore at MASTER_PORT; "env", as an older harness,
    without a group; None: no hello yet). With a Coordinator they are launched as by torchrun or
    srun (MASTER_ADDR:MASTER_PORT is the launcher's store, launch rank 0 hosting it) and dial in
    (connect mode)."""

    def __init__(self, adapter, world, args=(), first="group", coordinator=None, env=None):
        self.world, self.next_id, self.order = world, 1, list(range(world))
        self.master_port = free_port()
        env = dict(os.environ, WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(self.master_port), CKPTSPEC_PROTOCOL="1", **(env or {}))
        if coordinator is not None:
            env.update(coordinator.env())
        # Each rank leads a process group of its own: whatever it starts is ended with it (an
        # orphan holding the test's output pipe would keep ctest waiting).
        self.procs = [subprocess.Popen([sys.executable, str(adapter), *args],
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


class ProtocolTestCase(unittest.TestCase):
    """A storage adapter's protocol tests: each test gets a temporary directory (self.tmp) and a
    checkpoint directory in it (self.dir); its groups are closed after it (Group.close's checks
    included). A subclass names ADAPTER (the script), ARGS (flags every group starts with,
    before a test's own) and ENV (environment of every rank); full_array and array_bytes make
    the arrays of its tests (default: torch's full and raw)."""
    ADAPTER = None
    ARGS = ()
    ENV = {}
    full_array = staticmethod(full)
    array_bytes = staticmethod(raw)

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = str(Path(self.tmp.name) / "ckpt")
        self.n = 0

    def tearDown(self):
        self.tmp.cleanup()

    def group(self, world, *args, **kwargs):
        g = Group(self.ADAPTER, world, (*self.ARGS, *args), env=self.ENV, **kwargs)
        self.addCleanup(g.close)
        return g

    def coordinator(self):
        c = Coordinator(self.tmp.name)
        self.addCleanup(c.listener.close)
        c.publish()
        return c

    def scratch(self, name, data):
        """Writes `data` to the file `name` in the test's temporary directory; its path."""
        path = Path(self.tmp.name) / name
        path.write_bytes(data)
        return str(path)

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
                Path(e["file"]).write_bytes(self.array_bytes(box))
            out.append(e)
        return out

    def save(self, g, per_rank_specs, data, objects=None, iteration=10, overrides=None, **opts):
        """A save of `data` (key -> array) as each rank's tensor entries, and of `objects` (per
        rank, entries with their "bytes"); `opts` replace the request's fields. The replies."""
        reqs = []
        for r, specs in enumerate(per_rank_specs):
            objs = []
            for o in (objects[r] if objects else []):
                self.n += 1
                path = self.scratch(f"o{self.n}", o["bytes"])
                objs.append({k: v for k, v in o.items() if k != "bytes"} | {"file": path})
            reqs.append({"directory": self.dir, "iteration": iteration, "validate": True,
                         "async": False, "assume_constant_structure": False, "layout": {},
                         "tensors": self.entries(specs, data, (overrides or {}).get(r)),
                         "objects": objs, "common": {"iteration": iteration}} | opts)
        return g.call("save", reqs)

    def load(self, g, per_rank_specs, objects=None, strict="assume_ok_unexpected", iteration=None):
        """(the requests, the replies) of a load of each rank's tensor and object entries."""
        reqs = [{"directory": self.dir, "iteration": iteration, "strict": strict,
                 "allow_shape_mismatch": False, "tensors": self.entries(specs),
                 "objects": [dict(o, file=str(Path(self.tmp.name) / f"lo{self.n}_{r}_{i}"))
                             for i, o in enumerate(objects[r] if objects else [])]}
                for r, specs in enumerate(per_rank_specs)]
        return reqs, g.call("load", reqs)

    def loaded(self, req, i=0):
        return Path(req["tensors"][i]["file"]).read_bytes()

    def tracked(self):
        """The iteration the tracker names, None without one."""
        path = Path(self.dir, TRACKER)
        return int(path.read_text()) if path.exists() else None

    def assertOk(self, replies):
        self.assertTrue(all(r["ok"] for r in replies), replies)

    def check_loaded(self, g, specs, data, iteration):
        """Loads `specs` (one list per rank) of `iteration` and checks every tensor's bytes."""
        reqs, replies = self.load(g, specs, iteration=iteration)
        self.assertOk(replies)
        for req in reqs:
            for i, t in enumerate(req["tensors"]):
                box = tuple(slice(o, o + n) for o, n in zip(t["global_offset"], t["local_shape"]))
                self.assertEqual(self.loaded(req, i), self.array_bytes(data[t["key"]][box]),
                                 (iteration, t))

    # --- scenarios that several adapters' tests run ---

    def capabilities_and_their_flags(self, strict_modes):
        """hello's capabilities of a storage adapter over a gloo group
        (ckptspec_torch_kit.storage_capabilities) and the flags that leave each optional one
        undeclared: --no-async (async and poll), --no-plan-cache, --no-reset (reset, and regroup,
        which needs it), --no-regroup."""
        declared = {"resharding": True, "objects": True, "async": True, "checksums": False,
                    "plan_cache": True, "deterministic": False, "strict_modes": strict_modes,
                    "reset": True, "poll": True, "packed": True, "regroup": True}
        self.assertEqual(self.group(1).capabilities, declared)
        for flag, off in (("--no-async", ("async", "poll")), ("--no-plan-cache", ("plan_cache",)),
                          ("--no-reset", ("reset", "regroup")), ("--no-regroup", ("regroup",))):
            self.assertEqual(self.group(1, flag).capabilities,
                             declared | dict.fromkeys(off, False), flag)

    def save_then_reshard_on_load(self, fp8=True):
        """Two ranks save w (fp32, rows cut), b (bf16, replicated), step (int64, a row each on a
        prepended axis), q (fp8, rows cut; unless not fp8) and an object shard each; three ranks
        load w cut along its columns, b and q whole, step's rows and the objects as replicas
        (rank r: row r % 2, replica r // 2). Checks the tracker, every loaded byte, the
        iteration and the common state; returns (the two ranks' group, the data)."""
        data = {"w": self.full_array("fp32", (4, 6), 1), "b": self.full_array("bf16", (4,), 2),
                "step": self.full_array("int64", (2, 1), 3)}
        if fp8:
            data["q"] = self.full_array("fp8_e4m3", (2, 2), 0)
        g = self.group(2)
        specs = [[tensor("w", "fp32", (4, 6), (2 * r, 0), (2, 6), (2, 1)),
                  tensor("b", "bf16", (4,), (0,), (4,), (1,), replica=(r,)),
                  tensor("step", "int64", (2, 1), (r, 0), (1,), (2, 1), prepend=1),
                  tensor("q", "fp8_e4m3", (2, 2), (r, 0), (1, 2), (2, 1))][:len(data)]
                 for r in range(2)]
        objects = [[{"key": "rng", "global_shape": [2], "global_offset": [r], "replica_id": [0],
                     "bytes": f"rank {r} rng".encode()}] for r in range(2)]
        self.assertOk(self.save(g, specs, data, objects))
        self.assertEqual(self.tracked(), 10)
        lspecs = [[tensor("w", "fp32", (4, 6), (0, 2 * r), (4, 2), (1, 3)),
                   tensor("b", "bf16", (4,), (0,), (4,), (1,), replica=(r,)),
                   tensor("step", "int64", (2, 1), (r % 2, 0), (1,), (2, 1), replica=(r // 2,),
                          prepend=1),
                   tensor("q", "fp8_e4m3", (2, 2), (0, 0), (2, 2), (1, 1), replica=(r,))
                   ][:len(data)] for r in range(3)]
        lobjs = [[{"key": "rng", "global_shape": [2], "global_offset": [r % 2],
                   "replica_id": [r // 2]}] for r in range(3)]
        reqs, replies = self.load(self.group(3), lspecs, lobjs)
        for r, (req, reply) in enumerate(zip(reqs, replies)):
            self.assertTrue(reply["ok"], reply)
            self.assertEqual((reply["iteration"], reply["common"]), (10, {"iteration": 10}))
            want = [data["w"][:, 2 * r:2 * r + 2], data["b"], data["step"][r % 2]]
            want += [data["q"]] if fp8 else []
            self.assertEqual([self.loaded(req, i) for i in range(len(data))],
                             [self.array_bytes(x) for x in want])
            self.assertEqual(Path(req["objects"][0]["file"]).read_bytes(),
                             f"rank {r % 2} rng".encode())
        return g, data

    def irregular_grid(self):
        """buf (10 elements) saved by two ranks as 3 + 7 elements (no axis_fragmentations: an
        irregular grid) and loaded whole by one rank; returns the data."""
        data = {"buf": self.full_array("fp32", (10,), 4)}
        g = self.group(2)
        specs = [[tensor("buf", "fp32", (10,), (0,), (3,))],
                 [tensor("buf", "fp32", (10,), (3,), (7,))]]
        self.assertOk(self.save(g, specs, data))
        reqs, replies = self.load(self.group(1), [[tensor("buf", "fp32", (10,), (0,), (10,))]])
        self.assertTrue(replies[0]["ok"], replies)
        self.assertEqual(self.loaded(reqs[0]), self.array_bytes(data["buf"]))
        return data

    def only_main_replicas_are_written(self):
        """Two replicas of w, the non-main one holding other data: the load reads the main one."""
        data = {"w": self.full_array("fp32", (4,), 1)}
        g = self.group(2)
        specs = [[tensor("w", "fp32", (4,), (0,), (4,), (1,), replica=(r,))] for r in range(2)]
        other = {1: {0: self.full_array("fp32", (4,), 100)}}
        self.assertOk(self.save(g, specs, data, overrides=other))
        reqs, replies = self.load(self.group(1), [[tensor("w", "fp32", (4,), (0,), (4,), (1,))]])
        self.assertTrue(replies[0]["ok"], replies)
        self.assertEqual(self.loaded(reqs[0]), self.array_bytes(data["w"]))

    def gap_is_refused(self):
        """Two ranks save w's halves as replicas 0 and 1 (the second half has no main replica):
        every rank's reply is InvalidArgument and the tracker is not written. The replies."""
        data = {"w": self.full_array("fp32", (4,), 1)}
        specs = [[tensor("w", "fp32", (4,), (2 * r,), (2,), (2,), replica=(r,))]
                 for r in range(2)]
        replies = self.save(self.group(2), specs, data)
        for reply in replies:
            self.assertFalse(reply["ok"], reply)
            self.assertEqual(reply["error"]["code"], "InvalidArgument", reply)
        self.assertIsNone(self.tracked())
        return replies

    def tracker_and_load_without_checkpoint(self):
        """A load without a checkpoint is NotFound; a save of the tracked iteration is
        FailedPrecondition; a load without an iteration reads the tracker's, one with an
        iteration that one."""
        g = self.group(1)
        _, (reply,) = self.load(g, [[]])
        self.assertEqual(reply["error"]["code"], "NotFound")
        data = {"w": self.full_array("fp32", (4,), 1)}
        spec = [[tensor("w", "fp32", (4,), (0,), (4,), (1,))]]
        self.assertTrue(self.save(g, spec, data)[0]["ok"])
        self.assertEqual(self.save(g, spec, data)[0]["error"]["code"], "FailedPrecondition")
        self.assertTrue(self.save(g, spec, data, iteration=20)[0]["ok"])
        _, (reply,) = self.load(g, [[]], iteration=10)
        self.assertEqual(reply["iteration"], 10)
        _, (reply,) = self.load(g, [[]])
        self.assertEqual(reply["iteration"], 20)

    def plan_cache_saves(self, g):
        """Three saves of w and v under assume_constant_structure on the two ranks of `g`, each
        loaded back."""
        data = {"w": self.full_array("fp32", (4,), 1), "v": self.full_array("fp32", (2,), 5)}
        specs = [[tensor("w", "fp32", (4,), (2 * r,), (2,), (2,)),
                  tensor("v", "fp32", (2,), (0,), (2,), (1,), replica=(r,))] for r in range(2)]
        for it in (1, 2, 3):
            d = {k: v + it for k, v in data.items()}
            self.assertOk(self.save(g, specs, d, iteration=it, assume_constant_structure=True))
            reqs, replies = self.load(g, specs)
            for r, (req, reply) in enumerate(zip(reqs, replies)):
                self.assertEqual(reply["iteration"], it)
                self.assertEqual(self.loaded(req, 0), self.array_bytes(d["w"][2 * r:2 * r + 2]))
                self.assertEqual(self.loaded(req, 1), self.array_bytes(d["v"]))

    def serves_another_directory(self, g, complete=None, **opts):
        """The next case after a reset: the two ranks of `g` save another tensor under
        assume_constant_structure (and `opts`) in another directory, `complete(g)` (when given)
        completes the save, and each rank loads its part back."""
        self.dir = str(Path(self.tmp.name) / "another")  # the next case's directory
        other = {"w": self.full_array("fp32", (6,), 7)}
        specs = [[tensor("w", "fp32", (6,), (3 * r,), (3,), (2,))] for r in range(2)]
        self.assertOk(self.save(g, specs, other, iteration=1, assume_constant_structure=True,
                                **opts))
        if complete is not None:
            complete(g)
        reqs, replies = self.load(g, specs)
        for r, (req, reply) in enumerate(zip(reqs, replies)):
            self.assertEqual(reply["iteration"], 1)
            self.assertEqual(self.loaded(req, 0), self.array_bytes(other["w"][3 * r:3 * r + 3]))

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
        data = {"w": self.full_array("fp32", (8, 6), 1), "b": self.full_array("bf16", (6,), 2)}
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

    def coordinator_hangs_up_during_a_collective(self, *args, before=None):
        """Two connected ranks save once (`before(g, specs, data)` may add requests); then only
        rank 0 gets a save, which blocks it in the save's agreement with rank 1, and the
        coordinator closes its side of rank 0's connection (shutdown(SHUT_WR), as ckptspec ends
        a rank): rank 0 must exit with status 0 (its launcher must not stop its siblings) within
        a few seconds, not at the gloo timeout, leaving no process of its process group."""
        g = self.group(2, *args, coordinator=self.coordinator(), first=None)
        g.say_hello([([0, 1], group_of("a", False))])
        data = {"w": self.full_array("fp32", (4,), 1)}
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
