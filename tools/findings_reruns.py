#!/usr/bin/env python3
"""The rerun and control commands of docs/FINDINGS.md, read from the document itself and run.

Every entry "## F<n>. ..." of docs/FINDINGS.md holds, as list items:

  - **Confirmed by** (KIND[; KIND]): ...       KIND is one of CONFIRMED_KINDS
  - **Rerun** (exit N; the output names `TEXT`): then one or more commands, each a line of its
    own that is the command in backticks and nothing else
  - **Control** (exit 0; WHAT IT REMOVES): then one or more commands, the same way

A rerun reproduces the entry when it exits N and its output (stdout and stderr) contains TEXT;
a control holds when it exits 0 and its output contains no TEXT of its entry (the same command
with the defect's trigger removed: the fixed release, or the flag that triggers it left out). Commands
run from the repository root under /bin/bash; `build/` in a command is the build directory
(--build-dir). A command whose runner exits 77 (its pinned environment is not set up) is
skipped, and said so.

  findings_reruns.py ROOT --check            the entries' form only (no command runs)
  findings_reruns.py ROOT --list             one line per command
  findings_reruns.py ROOT --run [F1 F6 ...] [--build-dir DIR] [--log-dir DIR] [--timeout S]
                                             runs them; --json FILE writes the results;
                                             --first-row runs one command per item
Exit status: 0 when every entry is well-formed (--check) or every run command did what its entry
says (--run, skipped ones aside; an entry that is not well-formed is not run and counts as
wrong); 1 otherwise; 2 on bad arguments.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

FINDINGS = "docs/FINDINGS.md"
CONFIRMED_KINDS = ("property through the adapter", "plan dump", "protocol test")
HEADING = re.compile(r"^## (F\d+)\. (.*)$")
ITEM = re.compile(r"^- \*\*([A-Za-z ]+)\*\*(.*)$")
RERUN_HEAD = re.compile(r"^ \(exit (\d+); the output names `([^`]+)`\)")
CONTROL_HEAD = re.compile(r"^ \(exit 0; ")
CONFIRMED_HEAD = re.compile(r"^ \(([^)]+)\):")
# The items that hold commands: how each must open, and that form in words.
HEADS = {"Rerun": (RERUN_HEAD, "(exit N; the output names `TEXT`)"),
         "Control": (CONTROL_HEAD, "(exit 0; WHAT IT REMOVES)")}
SKIPPED = 77


class Entry:
    def __init__(self, ident, line):
        self.ident, self.line = ident, line
        self.kinds = []
        self.reruns = []    # (command, exit status, text)
        self.controls = []  # command
        self.problems = []


def entry_items(lines):
    """Yields (name, the item's lines, line number) for each "- **Name**..." item of an entry;
    the first line is what follows the name."""
    name, text, start = None, [], 0
    for number, line in lines:
        m = ITEM.match(line)
        if m or not line.startswith("  ") and line.strip():
            if name:
                yield name, text, start
            name, text, start = (m.group(1), [m.group(2)], number) if m else (None, [], 0)
        elif name:
            text.append(line.strip())
    if name:
        yield name, text, start


def commands_in(lines):
    """The commands of an item: each continuation line that is one backtick span and nothing
    else."""
    return [line[1:-1] for line in lines[1:] if re.fullmatch(r"`[^`]+`", line)]


def parse(path):
    """The entries of the findings document at `path`, each with the problems of its form."""
    entries, current, body = [], None, []
    with open(path, encoding="utf-8") as f:
        numbered = list(enumerate(f.read().split("\n"), 1))
    for number, line in numbered + [(len(numbered) + 1, "## end")]:
        if line.startswith("## "):
            if current:
                read_entry(current, body)
                entries.append(current)
            m = HEADING.match(line)
            current, body = (Entry(m.group(1), number) if m else None), []
        elif current:
            body.append((number, line))
    return entries


def read_entry(entry, body):
    for name, lines, line in entry_items(body):
        where = f"{FINDINGS}:{line}: {entry.ident}"
        text = " ".join(lines)
        if name == "Confirmed by":
            m = CONFIRMED_HEAD.match(text)
            kinds = [k.strip() for k in m.group(1).split(";")] if m else []
            bad = [k for k in kinds if k not in CONFIRMED_KINDS]
            if not kinds or bad:
                entry.problems.append(f"{where}: 'Confirmed by' must open with its kind in "
                                      f"parentheses, one or more of {', '.join(CONFIRMED_KINDS)} "
                                      f"separated by ';' (got {bad or 'none'})")
            entry.kinds = kinds
        elif name in HEADS:
            head, form = HEADS[name]
            m = head.match(text)
            commands = commands_in(lines)
            if not m:
                entry.problems.append(f"{where}: '{name}' must open with {form}")
            elif not commands:
                entry.problems.append(f"{where}: '{name}' has no command (a line that is one "
                                      "span in backticks and nothing else)")
            elif name == "Rerun":
                entry.reruns += [(c, int(m.group(1)), m.group(2)) for c in commands]
            else:
                entry.controls += commands
    for field, present in (("Confirmed by", entry.kinds), ("Rerun", entry.reruns),
                           ("Control", entry.controls)):
        if not present and not any(f"'{field}'" in p for p in entry.problems):
            entry.problems.append(f"{FINDINGS}:{entry.line}: {entry.ident} has no '{field}' item")


def with_build_dir(command, build_dir):
    """`command` with its build/ paths in `build_dir`."""
    if build_dir == "build":
        return command
    return re.sub(r"(?<![\w/.-])build/", build_dir.rstrip("/") + "/", command).replace(
        "--test-dir build ", f"--test-dir {build_dir} ")


def run_command(root, command, timeout, log_path):
    """(exit status, output, seconds); exit status None when the command ran past `timeout`."""
    start = time.monotonic()
    # A session of its own, so that a command past its time is ended with every process it started.
    child = subprocess.Popen(["/bin/bash", "-c", command], cwd=root, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = child.communicate(timeout=timeout)
        status = child.returncode
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        out, _ = child.communicate()
        status = None
    output = out.decode("utf-8", "replace")
    seconds = time.monotonic() - start
    if log_path:
        with open(log_path, "w", encoding="utf-8") as f:
            f.write(f"$ {command}\n{output}\n[exit {status}, {seconds:.0f} s]\n")
    return status, output, seconds


def judge(role, status, output, expected_status, texts):
    """(verdict, why): verdict is "ok", "skipped" or "WRONG". A rerun must name its one text, a
    control none of its entry's reruns' texts."""
    if status == SKIPPED:
        return "skipped", "its environment is not set up (exit 77)"
    if status is None:
        return "WRONG", "ran past the time limit"
    named = any(text in output for text in texts)
    if role == "rerun":
        if status == expected_status and named:
            return "ok", f"exit {status}, names the reason"
        return "WRONG", (f"exit {status} (expected {expected_status})" if status != expected_status
                         else "the output does not name the reason")
    if status == 0 and not named:
        return "ok", "exit 0"
    return "WRONG", f"exit {status}" if status != 0 else "passes but names the rerun's reason"


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("root")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--list", action="store_true")
    mode.add_argument("--run", nargs="*", metavar="ID")
    p.add_argument("--build-dir", default="build")
    p.add_argument("--log-dir")
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--json")
    p.add_argument("--first-row", action="store_true",
                   help="run only the first command of each rerun and control item (one release "
                        "of the matrix: a quick check; ci/nightly runs every row)")
    args = p.parse_args(argv)
    entries = parse(os.path.join(args.root, FINDINGS))
    problems = [q for e in entries for q in e.problems]
    if not entries:
        problems.append(f"{FINDINGS}: no entry '## F<n>. ...'")
    for q in problems:
        print(q)
    if args.check:
        if not problems:
            print(f"{len(entries)} entries, each with its kind, rerun and control")
        return 1 if problems else 0
    if args.list:
        for e in entries:
            for command, status, text in e.reruns:
                print(f"{e.ident} rerun (exit {status}, names {text!r}): {command}")
            for command in e.controls:
                print(f"{e.ident} control (exit 0): {command}")
        return 0
    wanted = set(args.run)
    unknown = wanted - {e.ident for e in entries}
    if unknown:
        print(f"no such entry: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    if args.log_dir:
        os.makedirs(args.log_dir, exist_ok=True)
    results, wrong = [], 0
    for e in entries:
        if wanted and e.ident not in wanted:
            continue
        if e.problems:  # printed above; its commands are not run
            wrong += 1
            continue
        texts = [t for _, _, t in e.reruns]
        if args.first_row:
            e.reruns = [r for k, r in enumerate(e.reruns) if k == 0 or r[2] != e.reruns[k - 1][2]]
            e.controls = e.controls[:1]
        jobs = [("rerun", c, s, [t]) for c, s, t in e.reruns] + [("control", c, 0, texts)
                                                                 for c in e.controls]
        for k, (role, command, expected, reason) in enumerate(jobs):
            log = os.path.join(args.log_dir, f"{e.ident}-{k}-{role}.log") if args.log_dir else None
            status, output, seconds = run_command(
                args.root, with_build_dir(command, args.build_dir), args.timeout, log)
            verdict, why = judge(role, status, output, expected, reason)
            wrong += verdict == "WRONG"
            print(f"{e.ident} {role}: {verdict}: {why} ({seconds:.0f} s)", flush=True)
            results.append({"entry": e.ident, "role": role, "command": command, "exit": status,
                            "seconds": round(seconds, 1), "verdict": verdict, "why": why,
                            "log": log})
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"format": "ckptspec.findings_reruns", "version": 1, "results": results},
                      f, indent=1)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
