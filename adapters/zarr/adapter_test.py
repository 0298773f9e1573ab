#!/usr/bin/env python3
"""Protocol-level tests of the zarr adapter: a small driver speaks docs/PROTOCOL.md to N rank
processes, as ckptspec's harness does, and checks what comes back. Run with the adapters' venv:
    .venv/bin/python adapters/zarr/adapter_test.py
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import ml_dtypes
import numpy as np

ADAPTER = Path(__file__).with_name("ckptspec_zarr_adapter.py")
BF16 = np.dtype(ml_dtypes.bfloat16)
NP = {"fp32": np.dtype("float32"), "bf16": BF16, "int64": np.dtype("int64")}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Group:
    """N adapter processes; call() sends one request per rank and returns the replies."""

    def __init__(self, world, scratch):
        self.world, self.scratch, self.next_id = world, Path(scratch), 1
        env = dict(os.environ, WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(free_port()), CKPTSPEC_PROTOCOL="1")
        self.procs = [subprocess.Popen([sys.executable, str(ADAPTER)], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, env=dict(env, RANK=str(r), LOCAL_RANK=str(r)))
                      for r in range(world)]
        replies = self.call("hello", [{"protocol": 1, "rank": r, "world_size": world} for r in range(world)])
        assert all(r["ok"] and r["protocol"] == 1 for r in replies), replies
        self.capabilities = replies[0]["capabilities"]

    def call(self, op, per_rank=None):
        rid, self.next_id = self.next_id, self.next_id + 1
        for r, p in enumerate(self.procs):
            req = {"id": rid, "op": op, **(per_rank[r] if per_rank else {})}
            p.stdin.write((json.dumps(req) + "\n").encode())
            p.stdin.flush()
        replies = [json.loads(p.stdout.readline()) for p in self.procs]
        for r, reply in enumerate(replies):
            assert reply["id"] == rid and reply["rank"] == r, reply
        return replies

    def close(self):
        self.call("shutdown")
        for p in self.procs:
            p.wait(10)
            p.stdin.close()
            p.stdout.close()

    def write(self, name, data):
        path = self.scratch / name
        path.write_bytes(data)
        return str(path)


def tensor(key, dtype, gshape, goff, lshape, frag=None, replica=(0,), prepend=0):
    t = {"key": key, "dtype": dtype, "global_shape": list(gshape), "global_offset": list(goff),
         "local_shape": list(lshape), "replica_id": list(replica)}
    if frag is not None:
        t["axis_fragmentations"] = list(frag)
    if prepend:
        t["prepend_axis_num"] = prepend
    return t


def full(dtype, shape, seed):
    return (np.arange(np.prod(shape), dtype=np.float64).reshape(shape) * 0.25 + seed).astype(NP[dtype])


class ZarrAdapterTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = str(Path(self.tmp.name) / "ckpt")
        self.n = 0

    def tearDown(self):
        self.tmp.cleanup()

    def group(self, world):
        g = Group(world, self.tmp.name)
        self.addCleanup(g.close)
        return g

    def entries(self, g, specs, data=None):
        """Tensor entries with files: from `data` (save) or empty paths (load)."""
        out = []
        for s in specs:
            self.n += 1
            e = dict(s, file=str(Path(self.tmp.name) / f"f{self.n}"))
            if data is not None:
                off, shp = e["global_offset"], [1] * e.get("prepend_axis_num", 0) + e["local_shape"]
                box = data[e["key"]][tuple(slice(o, o + n) for o, n in zip(off, shp))]
                Path(e["file"]).write_bytes(np.ascontiguousarray(box).tobytes())
            out.append(e)
        return out

    def save(self, g, per_rank_specs, data, objects=None, validate=True, iteration=10):
        reqs = []
        for r, specs in enumerate(per_rank_specs):
            objs = []
            for o in (objects[r] if objects else []):
                self.n += 1
                objs.append(dict(o, file=g.write(f"o{self.n}", o["bytes"])))
                del objs[-1]["bytes"]
            reqs.append({"directory": self.dir, "iteration": iteration, "validate": validate,
                         "async": False, "assume_constant_structure": False, "layout": {},
                         "tensors": self.entries(g, specs, data), "objects": objs,
                         "common": {"iteration": iteration}})
        return g.call("save", reqs)

    def load(self, g, per_rank_specs, objects=None, strict="assume_ok_unexpected"):
        reqs = [{"directory": self.dir, "iteration": None, "strict": strict,
                 "allow_shape_mismatch": False, "tensors": self.entries(g, specs),
                 "objects": [dict(o, file=str(Path(self.tmp.name) / f"lo{r}_{i}"))
                             for i, o in enumerate(objects[r] if objects else [])]}
                for r, specs in enumerate(per_rank_specs)]
        return reqs, g.call("load", reqs)

    def test_save_then_reshard_on_load(self):
        data = {"w": full("fp32", (4, 6), 1), "b": full("bf16", (4,), 2), "step": full("int64", (2, 1), 3)}
        g = self.group(2)
        specs = [[tensor("w", "fp32", (4, 6), (2 * r, 0), (2, 6), (2, 1)),
                  tensor("b", "bf16", (4,), (0,), (4,), (1,), replica=(r,)),
                  tensor("step", "int64", (2, 1), (r, 0), (1,), (2, 1), prepend=1)] for r in range(2)]
        objects = [[{"key": "rng", "global_shape": [2], "global_offset": [r], "replica_id": [0],
                     "bytes": f"rank {r} rng".encode()}] for r in range(2)]
        replies = self.save(g, specs, data, objects)
        self.assertTrue(all(r["ok"] for r in replies), replies)
        self.assertEqual(Path(self.dir, "latest_checkpointed_iteration.txt").read_text().strip(), "10")
        # Under three ranks: w cut along axis 1, b and step whole on every rank.
        g3 = self.group(3)
        lspecs = [[tensor("w", "fp32", (4, 6), (0, 2 * r), (4, 2), (1, 3)),
                   tensor("b", "bf16", (4,), (0,), (4,), (1,), replica=(r,)),
                   tensor("step", "int64", (2, 1), (1, 0), (1,), (2, 1), prepend=1)] for r in range(3)]
        lobjs = [[{"key": "rng", "global_shape": [2], "global_offset": [r % 2], "replica_id": [0]}]
                 for r in range(3)]
        reqs, replies = self.load(g3, lspecs, lobjs)
        for r, (req, reply) in enumerate(zip(reqs, replies)):
            self.assertTrue(reply["ok"], reply)
            self.assertEqual(reply["iteration"], 10)
            self.assertEqual(reply["common"], {"iteration": 10})
            w, b, step = (Path(t["file"]).read_bytes() for t in req["tensors"])
            self.assertEqual(w, np.ascontiguousarray(data["w"][:, 2 * r:2 * r + 2]).tobytes())
            self.assertEqual(b, data["b"].tobytes())
            self.assertEqual(step, data["step"][1].tobytes())
            self.assertEqual(Path(req["objects"][0]["file"]).read_bytes(), f"rank {r % 2} rng".encode())
        meta = json.loads(Path(self.dir, "iter_0000010", "b", ".zarray").read_text())
        self.assertEqual(meta["dtype"], "bfloat16")
        self.assertEqual(meta["chunks"], [4])
        self.assertEqual(json.loads(Path(self.dir, "iter_0000010", "w", ".zarray").read_text())["chunks"], [2, 6])

    def test_packed_files(self):
        """Protocol revision 4: a rank's entries at ranges of one file (save), its loaded tensors
        written at the ranges laid out in one file (load), objects of a load in files of their own."""
        data = {"w": full("fp32", (4, 6), 1), "b": full("bf16", (4,), 2)}
        g = self.group(2)
        self.assertTrue(g.capabilities["packed"])
        reqs = []
        for r in range(2):
            w = tensor("w", "fp32", (4, 6), (2 * r, 0), (2, 6), (2, 1))
            b = tensor("b", "bf16", (4,), (0,), (4,), (1,), replica=(r,))
            rng = {"key": "rng", "global_shape": [2], "global_offset": [r], "replica_id": [0]}
            parts = [data["w"][2 * r:2 * r + 2].tobytes(), data["b"].tobytes(), f"rank {r} rng".encode()]
            path = g.write(f"r{r}.save", b"junk" + b"".join(parts))  # ranges need not start at 0
            at = [4, 4 + len(parts[0]), 4 + len(parts[0]) + len(parts[1])]
            entries = [dict(e, file=path, offset=o, length=len(p)) for e, o, p in zip((w, b, rng), at, parts)]
            reqs.append({"directory": self.dir, "iteration": 10, "validate": True, "async": False,
                         "assume_constant_structure": False, "layout": {}, "tensors": entries[:2],
                         "objects": entries[2:], "common": {"iteration": 10}})
        self.assertTrue(all(r["ok"] for r in g.call("save", reqs)))
        lw = tensor("w", "fp32", (4, 6), (0, 0), (4, 6), (1, 1))
        gone = tensor("gone", "fp32", (2,), (0,), (2,), (1,))
        lb = tensor("b", "bf16", (4,), (0,), (4,), (1,))
        path = str(Path(self.tmp.name) / "r0.load")
        load = {"directory": self.dir, "iteration": None, "strict": "return_unexpected",
                "allow_shape_mismatch": False,
                "tensors": [dict(lw, file=path, offset=0, length=96), dict(gone, file=path, offset=96, length=8),
                            dict(lb, file=path, offset=104, length=8)],
                "objects": [{"key": "rng", "global_shape": [2], "global_offset": [1], "replica_id": [0],
                             "file": str(Path(self.tmp.name) / "r0.o0")}]}
        (reply,) = self.group(1).call("load", [load])
        self.assertTrue(reply["ok"], reply)
        self.assertEqual(reply["dropped"], ["gone"])
        packed = Path(path).read_bytes()
        self.assertEqual(len(packed), 112)
        self.assertEqual(packed[:96], data["w"].tobytes())
        self.assertEqual(packed[104:], data["b"].tobytes())  # the dropped range is left as it was
        self.assertEqual(Path(self.tmp.name, "r0.o0").read_bytes(), b"rank 1 rng")
        # A range past the end of the file is the request's error, naming the entry.
        bad = dict(reqs[0], iteration=20)
        bad["tensors"] = [dict(bad["tensors"][0], length=10 ** 6)] + bad["tensors"][1:]
        replies = g.call("save", [bad, dict(reqs[1], iteration=20)])
        self.assertEqual(replies[0]["error"]["code"], "InvalidArgument", replies)
        self.assertIn("tensor 'w': bytes [4, 1000004) asked of", replies[0]["error"]["message"])

    def test_irregular_grid(self):
        data = {"buf": full("fp32", (10,), 4)}
        g = self.group(2)
        specs = [[tensor("buf", "fp32", (10,), (0,), (3,))], [tensor("buf", "fp32", (10,), (3,), (7,))]]
        self.assertTrue(all(r["ok"] for r in self.save(g, specs, data)))
        reqs, replies = self.load(self.group(1), [[tensor("buf", "fp32", (10,), (0,), (10,))]])
        self.assertTrue(replies[0]["ok"], replies)
        self.assertEqual(Path(reqs[0]["tensors"][0]["file"]).read_bytes(), data["buf"].tobytes())
        # Finding: the writers' lock directory buf.sync holds an empty .zarray lock file, which
        # Megatron's metadata scan (every strict mode but assume_ok_unexpected) takes for an array.
        _, (reply,) = self.load(self.group(1), [[tensor("buf", "fp32", (10,), (0,), (10,))]],
                                strict="return_all")
        self.assertEqual(reply["error"]["code"], "Corruption")
        self.assertIn("buf.sync/.zarray", reply["error"]["message"])

    def test_validate_refuses_a_gap(self):
        data = {"w": full("fp32", (4,), 1)}
        g = self.group(2)
        specs = [[tensor("w", "fp32", (4,), (2 * r,), (2,), (2,), replica=(r,))] for r in range(2)]
        replies = self.save(g, specs, data)
        for reply in replies:
            self.assertFalse(reply["ok"])
            self.assertEqual(reply["error"]["code"], "InvalidArgument")
            self.assertIn("Invalid access pattern for w", reply["error"]["message"])

    def test_unwritten_region_loads_without_error(self):
        # Without validation, a gap is saved; zarr (fill_value None) returns whatever memory held.
        data = {"w": full("fp32", (4,), 1)}
        g = self.group(2)
        specs = [[tensor("w", "fp32", (4,), (2 * r,), (2,), (2,), replica=(r,))] for r in range(2)]
        self.assertTrue(all(r["ok"] for r in self.save(g, specs, data, validate=False)))
        self.assertFalse(Path(self.dir, "iter_0000010", "w", "1").exists())
        reqs, replies = self.load(self.group(1), [[tensor("w", "fp32", (4,), (0,), (4,), (1,))]])
        self.assertTrue(replies[0]["ok"], replies)
        self.assertEqual(len(Path(reqs[0]["tensors"][0]["file"]).read_bytes()), 16)

    def saved_pair(self):
        """w = [0, 0.25, 0.5, 0.75] saved by two ranks, one chunk file each ("0" and "1")."""
        data = {"w": full("fp32", (4,), 0)}
        specs = [[tensor("w", "fp32", (4,), (2 * r,), (2,), (2,))] for r in range(2)]
        self.assertTrue(all(r["ok"] for r in self.save(self.group(2), specs, data)))
        return data, Path(self.dir, "iter_0000010", "w")

    def test_deleted_chunk_loads_without_error(self):
        # Finding: no chunk index and fill_value None: a lost chunk file is not noticed.
        data, array = self.saved_pair()
        (array / "1").unlink()
        reqs, replies = self.load(self.group(1), [[tensor("w", "fp32", (4,), (0,), (4,), (1,))]])
        self.assertTrue(replies[0]["ok"], replies)
        loaded = Path(reqs[0]["tensors"][0]["file"]).read_bytes()
        self.assertEqual(loaded[:8], data["w"][:2].tobytes())  # the rest is whatever memory held

    def test_flipped_bit_loads_without_error(self):
        # Finding: no checksums (compressor None): a flipped bit comes back as data.
        data, array = self.saved_pair()
        chunk = bytearray((array / "0").read_bytes())
        chunk[0] ^= 1
        (array / "0").write_bytes(bytes(chunk))
        reqs, replies = self.load(self.group(1), [[tensor("w", "fp32", (4,), (0,), (4,), (1,))]])
        self.assertTrue(replies[0]["ok"], replies)
        loaded = Path(reqs[0]["tensors"][0]["file"]).read_bytes()
        self.assertEqual(loaded, bytes(chunk) + data["w"][2:].tobytes())

    def test_truncated_chunk_is_an_error_naming_the_array(self):
        _, array = self.saved_pair()
        (array / "1").write_bytes(b"\0" * 5)
        _, replies = self.load(self.group(1), [[tensor("w", "fp32", (4,), (0,), (4,), (1,))]])
        self.assertFalse(replies[0]["ok"])
        self.assertEqual(replies[0]["error"]["code"], "Corruption")
        self.assertIn(str(array), replies[0]["error"]["message"])

    def test_strict_modes(self):
        data = {"w": full("fp32", (4,), 1), "v": full("fp32", (2,), 2)}
        g = self.group(1)
        self.save(g, [[tensor("w", "fp32", (4,), (0,), (4,), (1,)), tensor("v", "fp32", (2,), (0,), (2,), (1,))]], data)
        want = [[tensor("w", "fp32", (4,), (0,), (4,), (1,)), tensor("x", "fp32", (3,), (0,), (3,), (1,))]]
        _, (reply,) = self.load(g, want, strict="return_all")
        self.assertTrue(reply["ok"], reply)
        self.assertEqual((reply["unexpected"], reply["missing"], reply["dropped"]), (["x"], ["v"], ["x"]))
        _, (reply,) = self.load(g, want, strict="raise_unexpected")
        self.assertEqual(reply["error"]["code"], "InvalidArgument")
        _, (reply,) = self.load(g, want, strict="assume_ok_unexpected")
        self.assertEqual(reply["error"]["code"], "NotFound")
        _, (reply,) = self.load(g, want, strict="log_all")
        self.assertTrue(reply["ok"], reply)
        self.assertEqual(len(reply["warnings"]), 2)

    def test_refuses_to_overwrite_the_tracked_iteration_and_fp8(self):
        data = {"w": full("fp32", (4,), 1)}
        g = self.group(1)
        spec = [[tensor("w", "fp32", (4,), (0,), (4,), (1,))]]
        self.assertTrue(self.save(g, spec, data)[0]["ok"])
        self.assertEqual(self.save(g, spec, data)[0]["error"]["code"], "FailedPrecondition")
        fp8 = [[tensor("q", "fp8_e4m3", (4,), (0,), (4,), (1,))]]
        self.n += 1
        req = {"directory": self.dir, "iteration": 20, "validate": True, "tensors": [
            dict(fp8[0][0], file=g.write("q", b"\0" * 4))], "objects": [], "common": {}}
        self.assertEqual(g.call("save", [req])[0]["error"]["code"], "NotSupported")

    def test_saving_an_older_iteration_again_fails(self):
        # zarr.create refuses an existing array (Megatron: "Array ... already exists").
        data = {"w": full("fp32", (4,), 1)}
        g = self.group(1)
        spec = [[tensor("w", "fp32", (4,), (0,), (4,), (1,))]]
        for it in (10, 20):
            self.assertTrue(self.save(g, spec, data, iteration=it)[0]["ok"])
        (reply,) = self.save(g, spec, data, iteration=10)
        self.assertEqual(reply["error"]["code"], "FailedPrecondition")
        self.assertIn("already exists", reply["error"]["message"])

    def test_load_without_checkpoint(self):
        _, (reply,) = self.load(self.group(1), [[]])
        self.assertEqual(reply["error"]["code"], "NotFound")


if __name__ == "__main__":
    unittest.main()
