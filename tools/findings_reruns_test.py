#!/usr/bin/env python3
"""findings_reruns.py on small findings documents built here: every defect of an entry's form is
named with its line, and --run judges reruns and controls by exit status and named text, a
deadline and a missing environment included."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "findings_reruns.py")


def tree(findings):
    root = tempfile.mkdtemp(prefix="ckptspec-findings-")
    os.makedirs(os.path.join(root, "docs"))
    with open(os.path.join(root, *"docs/FINDINGS.md".split("/")), "w", encoding="utf-8") as f:
        f.write(findings)
    return root


def run(root, *args):
    p = subprocess.run([sys.executable, TOOL, root, *args], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def entry(ident, rerun, control, kind="property through the adapter", status=1,
          text="Boom: the defect"):
    return (f"## {ident}. A defect\n\n- **Kind:** finding.\n- **Confirmed by** ({kind}): P1.\n"
            f"- **Rerun** (exit {status}; the output names `{text}`):\n  `{rerun}`\n"
            f"- **Control** (exit 0; the flag left out):\n  `{control}`\n"
            "- **Upstream:** none.\n\n")


GOOD = ("# Findings\n\n" + entry("F1", "echo 'Boom: the defect'; exit 1", "echo fine")
        + entry("F2", "echo 'Boom: the defect seen'", "true", kind="plan dump; protocol test",
                status=0) + "## Not yet confirmed\n\n- **Something** else.\n")


class FindingsRerunsTest(unittest.TestCase):
    def test_well_formed_entries_pass_the_check(self):
        code, out = run(tree(GOOD), "--check")
        self.assertEqual(code, 0, out)
        self.assertIn("2 entries, each with its kind, rerun and control", out)

    def test_each_defect_of_form_is_named(self):
        bad = ("# Findings\n\n"
               "## F1. No control, a kind of its own\n\n- **Confirmed by** (a hunch): P1.\n"
               "- **Rerun** (exit 1; the output names `X`):\n  `false`\n\n"
               "## F2. A rerun without its text, a control without a command\n\n"
               "- **Confirmed by** (protocol test): t.\n- **Rerun** (exit 1):\n  `false`\n"
               "- **Control** (exit 0; nothing): `true` on the same line\n  `--flag` in words\n\n"
               "## F3. Nothing\n\n- **Kind:** finding.\n")
        code, out = run(tree(bad), "--check")
        self.assertEqual(code, 1, out)
        self.assertIn("docs/FINDINGS.md:5: F1: 'Confirmed by' must open with its kind", out)
        self.assertIn("(got ['a hunch'])", out)
        self.assertIn("docs/FINDINGS.md:3: F1 has no 'Control' item", out)
        self.assertIn("docs/FINDINGS.md:12: F2: 'Rerun' must open with (exit N; the output names",
                      out)
        self.assertIn("docs/FINDINGS.md:14: F2: 'Control' has no command", out)
        self.assertIn("F3 has no 'Confirmed by' item", out)
        self.assertIn("F3 has no 'Rerun' item", out)
        self.assertIn("F3 has no 'Control' item", out)

    def test_reruns_and_controls_are_judged_by_status_and_text(self):
        doc = ("# Findings\n\n"
               + entry("F1", "echo 'Boom: the defect'; exit 1", "echo fine")
               + entry("F2", "echo 'a deadline'; exit 1", "echo 'Boom: the defect'")
               + entry("F3", "echo 'Boom: the defect'; exit 2", "exit 1")
               + entry("F4", "sleep 30", "exit 77")
               + entry("F5", "echo 'Boom: the defect'; exit 1", "echo build/cli/ckptspec"))
        root = tree(doc)
        report = os.path.join(root, "report.json")
        code, out = run(root, "--run", "--timeout", "2", "--json", report,
                        "--log-dir", os.path.join(root, "logs"), "--build-dir", "build-x")
        self.assertEqual(code, 1, out)
        self.assertIn("F1 rerun: ok: exit 1, names the reason", out)
        self.assertIn("F1 control: ok: exit 0", out)
        self.assertIn("F2 rerun: WRONG: the output does not name the reason", out)
        self.assertIn("F2 control: WRONG: passes but names the rerun's reason", out)
        self.assertIn("F3 rerun: WRONG: exit 2 (expected 1)", out)
        self.assertIn("F3 control: WRONG: exit 1", out)
        self.assertIn("F4 rerun: WRONG: ran past the time limit", out)
        self.assertIn("F4 control: skipped: its environment is not set up (exit 77)", out)
        with open(report, encoding="utf-8") as f:
            results = json.load(f)["results"]
        self.assertEqual(len(results), 10)
        with open(results[-1]["log"], encoding="utf-8") as f:
            self.assertIn("build-x/cli/ckptspec", f.read())  # build/ is the --build-dir

    def test_only_the_entries_asked_for_run(self):
        code, out = run(tree(GOOD), "--run", "F2")
        self.assertEqual(code, 0, out)
        self.assertNotIn("F1", out)
        self.assertIn("F2 rerun: ok: exit 0, names the reason", out)
        code, out = run(tree(GOOD), "--run", "F9")
        self.assertEqual(code, 2, out)
        self.assertIn("no such entry: F9", out)


    def test_first_row_runs_one_command_per_item(self):
        doc = GOOD.replace("  `echo fine`\n", "  `echo fine`\n  `exit 3`\n").replace(
            "  `echo 'Boom: the defect'; exit 1`\n",
            "  `echo 'Boom: the defect'; exit 1`\n  `exit 4`\n")
        root = tree(doc)
        code, out = run(root, "--run", "F1")
        self.assertEqual(code, 1, out)
        self.assertIn("F1 rerun: WRONG: exit 4 (expected 1)", out)
        self.assertIn("F1 control: WRONG: exit 3", out)
        code, out = run(root, "--run", "F1", "--first-row")
        self.assertEqual(code, 0, out)
        self.assertEqual(out.count("F1 rerun: ok"), 1, out)
        self.assertEqual(out.count("F1 control: ok"), 1, out)


if __name__ == "__main__":
    unittest.main()
