#!/usr/bin/env python3
"""check_tree_maps.py on small trees built here: maps naming every folder pass; a folder either
map omits, and a map without its section, are each named."""
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

CHECKER = Path(__file__).resolve().with_name("check_tree_maps.py")
DESIGN = "docs/DESIGN" + ".md"  # spelled apart: the citation checker reads this file too
README = "# P\n\n## Layout of the tree\n\n`model/` (the spec), `docs/`.\n\n## Next\n\n`extra/`\n"
ARCH = "# D\n\n## 3. Architecture\n\n| folder | what |\n|---|---|\n| `model/` | x |\n| `docs/` | y |\n"


class CheckTreeMapsTest(unittest.TestCase):
    def tree(self, readme, design, folders=("model", "docs")):
        root = Path(tempfile.mkdtemp(prefix="ckptspec-maps-"))
        for f in folders:
            (root / f).mkdir(exist_ok=True)
            (root / f / "a.txt").write_text("x")
        (root / "README.md").write_text(readme)
        (root / DESIGN).write_text(design)
        return root

    def run_checker(self, root):
        p = subprocess.run([sys.executable, str(CHECKER), str(root)], capture_output=True,
                           text=True)
        return p.returncode, p.stdout

    def test_maps_naming_every_folder_pass(self):
        self.assertEqual(self.run_checker(self.tree(README, ARCH)), (0, ""))

    def test_a_folder_a_map_omits_is_named(self):
        code, out = self.run_checker(self.tree(README, ARCH, ("model", "docs", "extra")))
        self.assertEqual(code, 1)
        # README names `extra/` only under another heading: that does not count.
        self.assertIn("README.md: `extra/`", out)
        self.assertIn("docs/DESIGN.md: `extra/`", out)

    def test_a_map_without_its_section_is_named(self):
        code, out = self.run_checker(self.tree("# P\n", ARCH))
        self.assertEqual(code, 1)
        self.assertIn("README.md: has no section '## Layout of the tree'", out)


if __name__ == "__main__":
    unittest.main()
