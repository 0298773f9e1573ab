#!/usr/bin/env python3
"""ctest_skip_reasons.py on a ctest summary and log written here: the skipped tests are counted
per reason (GoogleTest's skip message, a runner's SKIPPED: line), and a skipped test whose output
gives none says so."""
import os
import subprocess
import sys
import tempfile
import unittest

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ctest_skip_reasons.py")

SUMMARY = """100% tests passed, 0 tests failed out of 5

The following tests did not run:
\t  2 - Cuda.A (Skipped)
\t  3 - AllDTypes/Cuda.B/fp32  # GetParam() = 1-byte object <00> (Skipped)
\t  4 - torch_adapter_test (Skipped)
\t  5 - silent_test (Skipped)
"""


def block(n, name, output):
    return (f"{n}/5 Testing: {name}\n{n}/5 Test: {name}\nOutput:\n"
            f"----------------------------------------------------------\n{output}\n"
            f"<end of output>\n\"{name}\" end time: now\n")


LOG = (block(1, "Model.Passes", "[ RUN      ] Model.Passes\n[       OK ] Model.Passes")
       + block(2, "Cuda.A", "[ RUN      ] Cuda.A\ndevice/a_test.cc:3: Skipped\nno CUDA device\n"
                            "[  SKIPPED ] Cuda.A (0 ms)")
       + block(3, "AllDTypes/Cuda.B/fp32  # GetParam() = 1-byte object <00>",
               "x_test.cc:9: Skipped\nno CUDA device\n")
       + block(4, "torch_adapter_test", "SKIPPED: the torch environment is not set up (ci/setup)")
       + block(5, "silent_test", ""))


class CtestSkipReasonsTest(unittest.TestCase):
    def test_skips_are_counted_per_reason(self):
        d = tempfile.mkdtemp(prefix="ckptspec-skips-")
        summary, log = os.path.join(d, "out.txt"), os.path.join(d, "LastTest.log")
        with open(summary, "w") as f:
            f.write(SUMMARY)
        with open(log, "w") as f:
            f.write(LOG)
        p = subprocess.run([sys.executable, TOOL, summary, log], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.splitlines(), [
            "2 tests skipped: no CUDA device (Cuda.A, AllDTypes/Cuda.B/fp32)",
            "1 test skipped: no reason in its output (silent_test)",
            "1 test skipped: the torch environment is not set up (ci/setup) "
            "(torch_adapter_test)"])

    def test_nothing_skipped_prints_nothing(self):
        d = tempfile.mkdtemp(prefix="ckptspec-skips-")
        summary = os.path.join(d, "out.txt")
        with open(summary, "w") as f:
            f.write("100% tests passed, 0 tests failed out of 1\n")
        p = subprocess.run([sys.executable, TOOL, summary, summary], capture_output=True,
                           text=True)
        self.assertEqual((p.returncode, p.stdout), (0, ""))


if __name__ == "__main__":
    unittest.main()
