#!/usr/bin/env python3
"""Why ctest skipped what it skipped, in ctest's summary rather than only under `ctest -V`.

Reads what ctest printed (its list "The following tests did not run:" names each skipped test)
and ctest's log of the same run (BUILD/Testing/Temporary/LastTest.log, which holds each test's
output), and prints one line per reason with the count of tests skipped for it and their names.
A test's reason is the line GoogleTest prints after "...: Skipped" (GTEST_SKIP() << reason), or
the text after "SKIPPED:" (the runners that exit 77 when an environment is missing).

  ctest_skip_reasons.py CTEST_OUTPUT BUILD/Testing/Temporary/LastTest.log
Prints nothing when nothing was skipped; exit 0, or 2 when a file cannot be read.
"""
import re
import sys

SKIPPED_ENTRY = re.compile(r"^\s*\d+ - (.+?) \(Skipped\)\s*$")
BLOCK_START = re.compile(r"^\d+/\d+ Testing: (.+)$")


def skipped_names(ctest_output):
    return [m.group(1) for m in map(SKIPPED_ENTRY.match, ctest_output) if m]


def reasons_by_test(log):
    """{test name: the reason its output gives for a skip}, for every test of the log whose
    output gives one."""
    reasons, name = {}, None
    for i, line in enumerate(log):
        m = BLOCK_START.match(line)
        if m:
            name = m.group(1)
        elif name and name not in reasons:
            if line.endswith(": Skipped") and i + 1 < len(log) and log[i + 1].strip():
                reasons[name] = log[i + 1].strip()
            elif line.startswith("SKIPPED:"):
                reasons[name] = line[len("SKIPPED:"):].strip()
    return reasons


def read_lines(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read().split("\n")


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        names, log = skipped_names(read_lines(argv[0])), read_lines(argv[1])
    except OSError as e:
        print(f"ctest_skip_reasons: {e}", file=sys.stderr)
        return 2
    reasons = reasons_by_test(log)
    by_reason = {}
    for name in names:
        by_reason.setdefault(reasons.get(name, "no reason in its output"), []).append(name)
    for reason, tests in sorted(by_reason.items(), key=lambda r: (-len(r[1]), r[0])):
        tests = [t.split("  # ")[0] for t in tests]  # without GoogleTest's "  # GetParam() = ..."
        shown = ", ".join(tests[:3]) + (f" and {len(tests) - 3} more" if len(tests) > 3 else "")
        print(f"{len(tests)} test{'s' if len(tests) > 1 else ''} skipped: {reason} ({shown})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
