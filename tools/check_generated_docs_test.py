#!/usr/bin/env python3
"""check_generated_docs.py on small trees built here, with a stand-in for `ckptspec list
--markdown`: matching regions pass; a changed row, a stale copy, a missing end marker, an unknown
section and a section no document holds are each reported; --update rewrites the regions."""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

CHECKER = Path(__file__).resolve().with_name("check_generated_docs.py")
DOC = "docs/T" + ".md"  # spelled apart: the citation checker reads this file too

COMMAND = textwrap.dedent("""\
    #!/bin/sh
    echo '<!-- begin generated: ckptspec list --markdown, things -->'
    echo '| a | b |'
    echo '<!-- end generated -->'
    """)
HEADER = "// intro\n// | L0 | one |\n// |    | two |\n#pragma once\n"
GOOD = textwrap.dedent("""\
    # T
    <!-- begin generated: ckptspec list --markdown, things -->
    | a | b |
    <!-- end generated -->
    text
    <!-- begin copy: model/rules.h -->
    | L0 | one |
    |    | two |
    <!-- end copy -->
    """)


class CheckGeneratedDocsTest(unittest.TestCase):
    def tree(self, doc):
        root = Path(tempfile.mkdtemp(prefix="ckptspec-generated-"))
        (root / "docs").mkdir()
        (root / "model").mkdir()
        (root / DOC).write_text(doc)
        (root / "model" / "rules.h").write_text(HEADER)
        command = root / "fake_ckptspec"
        command.write_text(COMMAND)
        os.chmod(command, 0o755)
        return root

    def run_checker(self, root, *extra):
        p = subprocess.run([sys.executable, str(CHECKER), str(root / "fake_ckptspec"), str(root),
                            *extra], capture_output=True, text=True)
        return p.returncode, p.stdout

    def test_matching_regions_pass(self):
        self.assertEqual(self.run_checker(self.tree(GOOD)), (0, ""))

    def test_a_changed_row_is_reported_with_a_diff(self):
        code, out = self.run_checker(self.tree(GOOD.replace("| a | b |", "| a | c |")))
        self.assertEqual(code, 1)
        self.assertIn(DOC + ":2: differs from section 'things'", out)
        self.assertIn("-| a | c |", out)
        self.assertIn("+| a | b |", out)

    def test_a_stale_copy_is_reported(self):
        code, out = self.run_checker(self.tree(GOOD.replace("|    | two |", "|    | 2 |")))
        self.assertEqual(code, 1)
        self.assertIn(DOC + ":6: differs from the header table of model/rules.h", out)

    def test_a_missing_end_marker_is_reported(self):
        code, out = self.run_checker(self.tree(GOOD.replace("<!-- end copy -->\n", "")))
        self.assertEqual(code, 1)
        self.assertIn("no '<!-- end copy -->'", out)

    def test_unknown_section_and_missing_source_are_reported(self):
        doc = GOOD.replace("markdown, things -->\n| a", "markdown, other -->\n| a")
        doc = doc.replace("copy: model/rules.h", "copy: model/gone.h")
        code, out = self.run_checker(self.tree(doc))
        self.assertEqual(code, 1)
        self.assertIn("section 'other' of `ckptspec list --markdown` does not exist", out)
        self.assertIn("the header table of model/gone.h does not exist", out)
        self.assertIn("section 'things' of `ckptspec list --markdown` is in no document", out)

    def test_update_rewrites_the_regions(self):
        root = self.tree(GOOD.replace("| a | b |", "| old |").replace("|    | two |", "| x |"))
        self.assertEqual(self.run_checker(root, "--update"), (0, ""))
        self.assertEqual((root / DOC).read_text(), GOOD)
        self.assertEqual(self.run_checker(root), (0, ""))

    def test_bugs_md_must_list_the_catalog_ids(self):
        root = self.tree(GOOD.replace("things", "mutants").replace("| a | b |", "| B01 | x |"))
        (root / "fake_ckptspec").write_text(COMMAND.replace("things", "mutants")
                                            .replace("| a | b |", "| B01 | x |"))
        bugs = root / "docs/BUGS.md"
        bugs.write_text("| B01 | x |\n\n### B01 x\n")
        self.assertEqual(self.run_checker(root), (0, ""))
        bugs.write_text("| B01 | x |\n| B02 | y |\n\n### B01 x\n")
        code, out = self.run_checker(root)
        self.assertEqual(code, 1)
        self.assertIn("docs/BUGS.md: its table list B01 B02; the catalog has B01", out)


if __name__ == "__main__":
    unittest.main()
