#!/usr/bin/env python3
"""Fails when a table that the documents keep as a copy of a fact held elsewhere differs from it.

Two kinds of marked regions in docs/*.md:

  <!-- begin generated: ckptspec list --markdown, NAME -->    the section NAME of what
  ...                                                         `ckptspec list --markdown` prints
  <!-- end generated -->                                      (the property and mutant catalogs)

  <!-- begin copy: PATH -->                                   the table in the header comment of
  ...                                                         the repository file PATH: its lines
  <!-- end copy -->                                           that begin with "// |", less "// "

Every section the command prints must appear in some document. With --update the regions are
rewritten instead of compared. docs/BUGS.md, written by hand, must list exactly the mutant ids of
the section 'mutants', each in its table and under a heading of its own.

  check_generated_docs.py CKPTSPEC REPO_ROOT [--update]
      exit 0: every region matches (or was rewritten); 1: each one that differs, as DOC:LINE (of
      its begin marker) and a diff; 2: usage
"""
import difflib
import re
import subprocess
import sys
from pathlib import Path

BEGIN = re.compile(r"^<!-- begin (generated: ckptspec list --markdown, ([\w-]+)|copy: (\S+)) -->$")
END_OF = {"generated": "<!-- end generated -->", "copy": "<!-- end copy -->"}


def command_sections(ckptspec):
    """{NAME: its lines between the markers} from `ckptspec list --markdown`."""
    out = subprocess.run([ckptspec, "list", "--markdown"], capture_output=True, text=True,
                         check=True).stdout
    sections, name = {}, None
    for line in out.splitlines():
        m = BEGIN.match(line)
        if m and m.group(2):
            name = m.group(2)
            sections[name] = []
        elif line == END_OF["generated"]:
            name = None
        elif name is not None:
            sections[name].append(line)
    return sections


def header_table(root, path):
    """The lines of PATH's header-comment table (those that begin with "// |"), less "// "."""
    source = root / path
    if not source.is_file():
        return None
    return [line[3:] for line in source.read_text().splitlines() if line.startswith("// |")]


def check_document(doc, root, sections, update, used):
    """The problems of one document (a list of strings); rewrites it when `update`."""
    lines, out, problems, i = doc.read_text().splitlines(), [], [], 0
    name = doc.relative_to(root)
    while i < len(lines):
        out.append(lines[i])
        m = BEGIN.match(lines[i])
        i += 1
        if not m:
            continue
        kind = "generated" if m.group(2) else "copy"
        end = next((j for j in range(i, len(lines)) if lines[j] == END_OF[kind]), None)
        if end is None:
            problems.append(f"{name}:{i}: no '{END_OF[kind]}' after this region's begin marker")
            out += lines[i:]
            break
        if kind == "generated":
            used.add(m.group(2))
            want = sections.get(m.group(2))
            source = f"section '{m.group(2)}' of `ckptspec list --markdown`"
        else:
            want = header_table(root, m.group(3))
            source = f"the header table of {m.group(3)}"
        if want is None:
            problems.append(f"{name}:{i}: {source} does not exist")
            want = lines[i:end]
        elif want != lines[i:end] and not update:
            diff = difflib.unified_diff(lines[i:end], want, f"{name}:{i}", source, lineterm="", n=0)
            problems.append(f"{name}:{i}: differs from {source}:\n" + "\n".join(diff))
        out += want + [lines[end]]
        i = end + 1
    if update and out != lines:
        doc.write_text("\n".join(out) + "\n")
    return problems


def bug_catalog_problems(root, sections):
    """docs/BUGS.md against the ids of section 'mutants': each in one table row and one heading."""
    bugs = root / "docs/BUGS.md"
    if "mutants" not in sections or not bugs.is_file():
        return []
    ids = [m.group(1) for m in (re.match(r"^\| (B\d+) \|", l) for l in sections["mutants"]) if m]
    text = bugs.read_text().splitlines()
    rows = [m.group(1) for m in (re.match(r"^\| (B\d+) \|", l) for l in text) if m]
    heads = [m.group(1) for m in (re.match(r"^### (B\d+) ", l) for l in text) if m]
    problems = []
    for what, listed in (("table", rows), ("headings", heads)):
        if listed != ids:
            problems.append(f"docs/BUGS.md: its {what} list {' '.join(listed) or 'no id'}; the "
                            f"catalog has {' '.join(ids)}")
    return problems


def main(argv):
    args = [a for a in argv[1:] if a != "--update"]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    ckptspec, root, update = args[0], Path(args[1]), "--update" in argv
    sections, used, problems = command_sections(ckptspec), set(), []
    for doc in sorted((root / "docs").glob("*.md")):
        problems += check_document(doc, root, sections, update, used)
    problems += bug_catalog_problems(root, sections)
    for name in sorted(set(sections) - used):
        problems.append(f"section '{name}' of `ckptspec list --markdown` is in no document of docs/")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
