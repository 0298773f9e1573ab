#!/usr/bin/env python3
"""The framework kit's digest is the protocol's (docs/PROTOCOL.md, "Framework adapters",
Digests): the values model/observation_digest_test.cc checks for the C++ side, and the sums over
parts of a parameter; the synthetic gradient depends on its arguments alone. Needs numpy."""
import sys
import unittest
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ckptspec_framework_kit as kit  # noqa: E402


class DigestTest(unittest.TestCase):
    def test_known_values(self):
        # Elements 0, 1, 2 holding 0.0, 1.0, -1.0 (the C++ test's KnownValues).
        d = kit.digest([0, 1, 2], kit.fp32_bits(np.array([0.0, 1.0, -1.0])))
        self.assertEqual(kit.hex_digest(d), "5af0951796dd9fe2")
        self.assertEqual(kit.hex_digest(kit.digest([], [])), "0000000000000000")

    def test_parts_add_up_to_the_whole(self):
        values = np.arange(100, dtype=np.float32) * 0.37
        index = np.arange(100)
        whole = kit.digest(index, kit.fp32_bits(values))
        first = kit.digest(index[::3], kit.fp32_bits(values[::3]))
        rest = np.setdiff1d(index, index[::3])
        second = kit.digest(rest, kit.fp32_bits(values[rest]))
        self.assertEqual(kit.add_digests(first, second), whole)

    def test_bf16_values_digest_as_their_fp32_value(self):
        import ml_dtypes  # noqa: F401  (numpy's bfloat16, where installed)
        values = np.array([1.5, -2.25], dtype=np.float32)
        as_bf16 = values.astype("bfloat16")
        self.assertEqual(kit.digest([0, 1], kit.fp32_bits(as_bf16)),
                         kit.digest([0, 1], kit.fp32_bits(values)))

    def test_mismatched_lengths_are_refused(self):
        with self.assertRaises(ValueError):
            kit.digest([0, 1], [0])


class SyntheticGradientTest(unittest.TestCase):
    def test_a_function_of_its_arguments(self):
        a = kit.synthetic_gradient(7, 3, "decoder.layers.0.mlp.linear_fc1.weight", np.arange(64))
        b = kit.synthetic_gradient(7, 3, "decoder.layers.0.mlp.linear_fc1.weight", np.arange(64))
        self.assertTrue(np.array_equal(a, b))
        self.assertEqual(a.dtype, np.float32)
        self.assertTrue(np.all(np.abs(a) <= 1 / 128))
        # Any slice of the indices gives the same values: no dependence on the layout.
        part = kit.synthetic_gradient(7, 3, "decoder.layers.0.mlp.linear_fc1.weight",
                                      np.arange(32, 64))
        self.assertTrue(np.array_equal(part, a[32:]))
        for other in (kit.synthetic_gradient(8, 3, "decoder.layers.0.mlp.linear_fc1.weight",
                                             np.arange(64)),
                      kit.synthetic_gradient(7, 4, "decoder.layers.0.mlp.linear_fc1.weight",
                                             np.arange(64)),
                      kit.synthetic_gradient(7, 3, "decoder.layers.1.mlp.linear_fc1.weight",
                                             np.arange(64))):
            self.assertFalse(np.array_equal(a, other))


if __name__ == "__main__":
    unittest.main()
