#!/usr/bin/env python3
"""Fails when a file of the repository cites a document the repository lacks.

A citation is a file name with the markdown extension (`docs/PROTOCOL.md`), outside a URL. It must
name a file of the tree, either from the repository root or from the citing file's directory (so
docs/ may cite its siblings by their bare names, and code must give the path from the root). A citation followed by a
section, `docs/DESIGN.md §4.3` or `docs/PROTOCOL.md, "Revisions"`, must also name a heading of
that document: one whose number is that section, or whose title contains the quoted words.
An expectations file's known findings (adapters/expectations/*.json, `"known": [{"finding": "F9",
...}]`) cite docs/FINDINGS.md the same way: each id must be the number of one of its headings.

  check_doc_citations.py REPO_ROOT    exit 0: every citation resolves; 1: each one that does not,
                                      as FILE:LINE: what is wrong; 2: usage
"""
import json
import os
import re
import subprocess
import sys

CITATION = re.compile(
    r"(?<![\w./-])((?:[\w.-]+/)*[\w-]+\.md)\b"            # the document
    r"(?:(?:,| ) ?§ ?(\d+(?:\.\d+)*)"                      # a numbered section, or
    r"|,? \"([^\"\n]{1,80})\")?")                          # a quoted heading
URL = re.compile(r"\w+://\S+")
SKIPPED_DIRS = {".git", ".venv", "__pycache__"}


def tracked_files(root):
    """The files of the tree: git's list when the tree is a clone, else a walk without build
    directories."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True,
                             check=True).stdout
        return [p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x not in SKIPPED_DIRS and not x.startswith("build")]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return files


def headings(path):
    """The heading lines of a markdown file, without their leading #s."""
    with open(path, encoding="utf-8") as f:
        return [line.lstrip("#").strip() for line in f if line.startswith("#")]


def has_section(heads, number):
    return any(re.match("§?" + re.escape(number) + r"(\.|\s|$)", h) for h in heads)


def has_titled(heads, title):
    return any(title.lower() in h.lower() for h in heads)


def check(root):
    problems, cited = [], 0
    files = sorted(tracked_files(root))
    for rel in files:
        path = os.path.join(root, rel)
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue  # binary data, or a file the clone does not have
        for number, line in enumerate(lines, 1):
            text = URL.sub(" ", line)
            for m in CITATION.finditer(text):
                doc, section, title = m.groups()
                cited += 1
                candidates = [os.path.join(root, doc), os.path.join(os.path.dirname(path), doc)]
                target = next((c for c in candidates if os.path.isfile(c)), None)
                where = f"{rel}:{number}"
                if target is None:
                    problems.append(f"{where}: cites {doc}, which the repository lacks")
                elif section and not has_section(headings(target), section):
                    problems.append(f"{where}: cites {doc} §{section}, which has no such section")
                elif title and target.endswith(".md") and not has_titled(headings(target), title):
                    problems.append(f"{where}: cites {doc}, \"{title}\", which has no such heading")
    findings = os.path.join(root, FINDINGS)
    heads = headings(findings) if os.path.isfile(findings) else None
    for rel in files:
        if rel.startswith("adapters/expectations/") and rel.endswith(".json"):
            cited += check_known_findings(root, rel, heads, problems)
    return problems, cited


FINDINGS = "docs/FINDINGS.md"


def check_known_findings(root, rel, heads, problems):
    """Appends to `problems` each known finding of the expectations file `rel` that docs/FINDINGS.md
    (its headings `heads`, None when the repository lacks it) has no heading for; returns how many
    it cites."""
    try:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            known = json.load(f).get("known", [])
    except (OSError, ValueError, AttributeError):
        return 0  # an expectations file that does not read is ckptspec's error to report
    for entry in known:
        finding = entry.get("finding", "") if isinstance(entry, dict) else ""
        if heads is None:
            problems.append(f"{rel}: known finding {finding} cites {FINDINGS}, which the "
                            f"repository lacks")
        elif not has_section(heads, finding):
            problems.append(f"{rel}: known finding {finding} has no heading in {FINDINGS}")
    return len(known)


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    problems, cited = check(argv[1])
    for p in problems:
        print(p)
    print(f"check_doc_citations: {cited} citations, {len(problems)} unresolved")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
