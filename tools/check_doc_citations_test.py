#!/usr/bin/env python3
"""check_doc_citations.py on small trees built here: every kind of broken citation is reported
with its file and line, and a tree whose citations all resolve passes."""
import os
import subprocess
import sys
import tempfile
import unittest

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_doc_citations.py")


def md(text):
    """The test's texts write the markdown extension as '@', so that this file cites nothing."""
    return text.replace("@", ".md")


def tree(files):
    root = tempfile.mkdtemp(prefix="ckptspec-citations-")
    for rel, text in files.items():
        rel = md(rel)
        os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
        with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
            f.write(md(text))
    return root


def run(root):
    p = subprocess.run([sys.executable, CHECKER, root], capture_output=True, text=True)
    return p.returncode, p.stdout


DOCS = {
    "docs/GUIDE@": "# Guide\n\n## 1. Start\n\n### 1.2 Details\n\n## §3. Symbols\n\n## Verdicts\n",
    "docs/OTHER@": "# Other\n\nSee GUIDE@ §1.2 and GUIDE@, \"Verdicts\".\n",
}


class CheckDocCitationsTest(unittest.TestCase):
    def test_resolving_citations_pass(self):
        root = tree(dict(DOCS, **{
            "src/a.cc": "// docs/GUIDE@ §1, docs/GUIDE@ §3, docs/GUIDE@, \"verdicts\"\n"
                        "// https://example.com/x/README@ is a link, not a citation\n"}))
        code, out = run(root)
        self.assertEqual(code, 0, out)
        self.assertIn("0 unresolved", out)

    def test_each_broken_citation_is_named(self):
        root = tree(dict(DOCS, **{
            "src/a.cc": "// line one\n// GUIDE@ from outside docs/\n",
            "src/b.h": "// docs/MISSING@\n// docs/GUIDE@ §2\n// docs/GUIDE@, \"Nowhere\"\n"}))
        code, out = run(root)
        self.assertEqual(code, 1, out)
        self.assertIn(md("src/a.cc:2: cites GUIDE@, which the repository lacks"), out)
        self.assertIn(md("src/b.h:1: cites docs/MISSING@, which the repository lacks"), out)
        self.assertIn(md("src/b.h:2: cites docs/GUIDE@ §2, which has no such section"), out)
        self.assertIn(md("src/b.h:3: cites docs/GUIDE@, \"Nowhere\", which has no such heading"), out)
        self.assertIn("4 unresolved", out)


    def test_known_findings_of_expectations_files_need_a_heading(self):
        root = tree(dict(DOCS, **{
            "docs/FINDINGS@": "# Findings\n\n## F1. One\n\n## F12. Twelve\n",
            "adapters/expectations/a.json":
                '{"known": [{"finding": "F1", "match": "x", "reason": "y"},'
                ' {"finding": "F12", "match": "x", "reason": "y"}]}',
            "adapters/expectations/b.json":
                '{"known": [{"finding": "F2", "match": "x", "reason": "y"}]}'}))
        code, out = run(root)
        self.assertEqual(code, 1, out)
        self.assertIn(md("adapters/expectations/b.json: known finding F2 has no heading in "
                         "docs/FINDINGS@"), out)
        self.assertIn("1 unresolved", out)

if __name__ == "__main__":
    unittest.main()
