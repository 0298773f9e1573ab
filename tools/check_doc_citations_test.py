#!/usr/bin/env python3
"""check_doc_citations.py on small trees built here: every kind of broken citation is reported
with its file and line, and a tree whose citations all resolve passes."""
import os
import subprocess
import sys
import tempfile
import unittest

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_doc_citations.py")


def tree(files):
    root = tempfile.mkdtemp(prefix="ckptspec-citations-")
    for rel, text in files.items():
        os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
        with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
            f.write(text)
    return root


def run(root):
    p = subprocess.run([sys.executable, CHECKER, root], capture_output=True, text=True)
    return p.returncode, p.stdout


DOCS = {
    "docs/GUIDE.md": "# Guide\n\n## 1. Start\n\n### 1.2 Details\n\n## §3. Symbols\n\n## Verdicts\n",
    "docs/OTHER.md": "# Other\n\nSee GUIDE.md §1.2 and GUIDE.md, \"Verdicts\".\n",
}


class CheckDocCitationsTest(unittest.TestCase):
    def test_resolving_citations_pass(self):
        root = tree(dict(DOCS, **{
            "src/a.cc": "// docs/GUIDE.md §1, docs/GUIDE.md §3, docs/GUIDE.md, \"verdicts\"\n"
                        "// https://example.com/x/README.md is a link, not a citation\n"}))
        code, out = run(root)
        self.assertEqual(code, 0, out)
        self.assertIn("0 unresolved", out)

    def test_each_broken_citation_is_named(self):
        root = tree(dict(DOCS, **{
            "src/a.cc": "// line one\n// GUIDE.md from outside docs/\n",
            "src/b.h": "// docs/MISSING.md\n// docs/GUIDE.md §2\n// docs/GUIDE.md, \"Nowhere\"\n"}))
        code, out = run(root)
        self.assertEqual(code, 1, out)
        self.assertIn("src/a.cc:2: cites GUIDE.md, which the repository lacks", out)
        self.assertIn("src/b.h:1: cites docs/MISSING.md, which the repository lacks", out)
        self.assertIn("src/b.h:2: cites docs/GUIDE.md §2, which has no such section", out)
        self.assertIn("src/b.h:3: cites docs/GUIDE.md, \"Nowhere\", which has no such heading", out)
        self.assertIn("4 unresolved", out)


if __name__ == "__main__":
    unittest.main()
