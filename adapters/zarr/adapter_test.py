#!/usr/bin/env python3
"""Protocol-level tests of the zarr adapter: the Python adapters' protocol driver
(adapters/python/ckptspec_protocol_test_driver.py) speaks docs/PROTOCOL.md to N rank processes, as
ckptspec's harness does, and checks what comes back. Run with the adapters' venv:
    .venv/bin/python adapters/zarr/adapter_test.py
"""
import json
import sys
import unittest
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from ckptspec_protocol_test_driver import ProtocolTestCase, tensor  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)
NP = {"fp32": np.dtype("float32"), "bf16": BF16, "int64": np.dtype("int64")}


def full(dtype, shape, seed):
    """A numpy array of `shape` holding 0.25 * its row-major index + seed, as protocol `dtype`."""
    return (np.arange(np.prod(shape), dtype=np.float64).reshape(shape) * 0.25 + seed).astype(NP[dtype])


def raw(x):
    """An array's elements, raw, in row-major order."""
    return np.ascontiguousarray(x).tobytes()


class ZarrAdapterTest(ProtocolTestCase):
    ADAPTER = Path(__file__).with_name("ckptspec_zarr_adapter.py")
    full_array = staticmethod(full)
    array_bytes = staticmethod(raw)

    def test_save_then_reshard_on_load(self):
        self.save_then_reshard_on_load(fp8=False)
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
            path = self.scratch(f"r{r}.save", b"junk" + b"".join(parts))  # ranges need not start at 0
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
        self.irregular_grid()
        # Finding: the writers' lock directory buf.sync holds an empty .zarray lock file, which
        # Megatron's metadata scan (every strict mode but assume_ok_unexpected) takes for an array.
        _, (reply,) = self.load(self.group(1), [[tensor("buf", "fp32", (10,), (0,), (10,))]],
                                strict="return_all")
        self.assertEqual(reply["error"]["code"], "Corruption")
        self.assertIn("buf.sync/.zarray", reply["error"]["message"])

    def test_only_main_replicas_are_written(self):
        self.only_main_replicas_are_written()

    def test_validate_refuses_a_gap(self):
        for reply in self.gap_is_refused():
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
        self.assertEqual(len(self.loaded(reqs[0])), 16)

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
        loaded = self.loaded(reqs[0])
        self.assertEqual(loaded[:8], data["w"][:2].tobytes())  # the rest is whatever memory held

    def test_flipped_bit_loads_without_error(self):
        # Finding: no checksums (compressor None): a flipped bit comes back as data.
        data, array = self.saved_pair()
        chunk = bytearray((array / "0").read_bytes())
        chunk[0] ^= 1
        (array / "0").write_bytes(bytes(chunk))
        reqs, replies = self.load(self.group(1), [[tensor("w", "fp32", (4,), (0,), (4,), (1,))]])
        self.assertTrue(replies[0]["ok"], replies)
        loaded = self.loaded(reqs[0])
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

    def test_tracker_and_load_without_checkpoint(self):
        self.tracker_and_load_without_checkpoint()

    def test_fp8_is_not_supported(self):
        fp8 = tensor("q", "fp8_e4m3", (4,), (0,), (4,), (1,))
        req = {"directory": self.dir, "iteration": 20, "validate": True,
               "tensors": [dict(fp8, file=self.scratch("q", b"\0" * 4))], "objects": [],
               "common": {}}
        self.assertEqual(self.group(1).call("save", [req])[0]["error"]["code"], "NotSupported")

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



if __name__ == "__main__":
    unittest.main()
