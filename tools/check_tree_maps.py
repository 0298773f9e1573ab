#!/usr/bin/env python3
"""Fails when a map of the tree omits a top-level folder: README.md's section "Layout of the tree"
and the table of docs/DESIGN.md's section "3. Architecture" must each name every top-level folder
of the repository (as `name/`), so that a folder added without a word in either is caught.

The folders are those git tracks (hidden ones, such as .ci/, are left out); outside a git
checkout, the directories of REPO_ROOT that hold a file, less the hidden ones and build*/.

  check_tree_maps.py REPO_ROOT
      exit 0: both maps name every folder; 1: each folder a map omits, as MAP: `name/`; 2: usage
"""
import re
import subprocess
import sys
from pathlib import Path

# Each map: the file, and the heading of the section that holds it.
MAPS = (("README.md", "## Layout of the tree"), ("docs/DESIGN.md", "## 3. Architecture"))


def top_level_folders(root):
    """The repository's top-level folders, sorted."""
    try:
        files = subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True,
                               text=True, check=True).stdout.splitlines()
        folders = {f.split("/", 1)[0] for f in files if "/" in f}
    except (OSError, subprocess.CalledProcessError):
        folders = {p.name for p in root.iterdir() if p.is_dir() and any(p.iterdir())}
        folders = {f for f in folders if not f.startswith("build")}
    return sorted(f for f in folders if not f.startswith("."))


def section(text, heading):
    """The lines of `text` under `heading` up to the next heading of its level or higher."""
    lines, out, level = text.splitlines(), None, heading.split(" ", 1)[0]
    for line in lines:
        if out is None:
            if line.strip() == heading:
                out = []
            continue
        m = re.match(r"^(#+) ", line)
        if m and len(m.group(1)) <= len(level):
            break
        out.append(line)
    return out


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(argv[1])
    folders, problems = top_level_folders(root), []
    for path, heading in MAPS:
        doc = root / path
        lines = section(doc.read_text(), heading) if doc.is_file() else None
        if lines is None:
            problems.append(f"{path}: has no section '{heading}'")
            continue
        named = set(re.findall(r"`([\w.-]+)/`", "\n".join(lines)))
        problems += [f"{path}: `{f}/`" for f in folders if f not in named]
    for p in problems:
        print(p)
    if problems:
        print(f"check_tree_maps: {len(problems)} folder(s) missing from a map of the tree")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
