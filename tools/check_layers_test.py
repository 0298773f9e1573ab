#!/usr/bin/env python3
"""check_layers.py on small trees built here: includes the table allows pass; an include of a
folder a row does not list is named, with its file and line; folders outside the table and
headers outside the repository are not checked."""
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

CHECKER = Path(__file__).resolve().with_name("check_layers.py")


class CheckLayersTest(unittest.TestCase):
    def tree(self, files):
        root = Path(tempfile.mkdtemp(prefix="ckptspec-layers-"))
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        return root

    def run_checker(self, root):
        p = subprocess.run([sys.executable, str(CHECKER), str(root)], capture_output=True,
                           text=True)
        return p.returncode, p.stdout

    def test_allowed_includes_pass(self):
        root = self.tree({
            "model/status.h": "#pragma once\n#include <string>\n",
            "base/env.h": '#include "model/status.h"\n#include "base/other.h"\n',
            "ondisk/read.cc": '#include "base/env.h"\n#include "formats/x.h"\n',
            "cli/main.cc": '#include "targets/reference/engine.h"\n',
            "targets/reference/engine.h": "",
            "formats/x.h": "",
        })
        self.assertEqual(self.run_checker(root), (0, ""))

    def test_a_forbidden_include_is_named(self):
        root = self.tree({
            "ondisk/contents.cc": '// reads\n#include "targets/reference/engine.h"\n',
            "model/a_test.cc": '#include "generators/run_gen.h"\n',
            "targets/reference/engine.h": "",
            "generators/run_gen.h": "",
        })
        code, out = self.run_checker(root)
        self.assertEqual(code, 1)
        self.assertIn("ondisk/contents.cc:2: ondisk/ may not include targets/reference/engine.h",
                      out)
        self.assertIn("model/a_test.cc:1: model/ may not include generators/run_gen.h", out)


if __name__ == "__main__":
    unittest.main()
