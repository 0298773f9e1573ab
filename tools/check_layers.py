#!/usr/bin/env python3
"""Fails when a file includes a header of a folder its own folder may not reach: the layering of
the foundation. Each folder of LAYERS may include headers of its own folder and of the folders its
row lists, nothing else of the repository (system and third-party headers are not checked); the
folders LAYERS does not name are compositions of the others and are not restricted. The rule
holds for tests too: a test that needs more belongs to the folder whose code it composes.

  check_layers.py REPO_ROOT
      exit 0: every include follows LAYERS; 1: each one that does not, as FILE:LINE: FOLDER may
      not include HEADER; 2: usage
"""
import re
import subprocess
import sys
from pathlib import Path

# folder -> the other folders its files may include. The order is the build's: each row names
# only folders above it. docs/DESIGN.md §3 "Dependencies point one way" says why each edge exists.
LAYERS = {
    "model": (),
    "base": ("model",),
    "formats": ("model",),
    "generators": ("model",),
    "device": ("model",),
    "ondisk": ("model", "base", "formats", "device"),
    "crash": ("model", "base"),
    "targets": ("model", "base", "generators", "device"),
}
SOURCE_SUFFIXES = (".h", ".cc", ".c", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def tracked_sources(root):
    """The C, C++ and CUDA files of the tree, relative to root."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, text=True,
                             check=True).stdout.splitlines()
        files = [Path(f) for f in out]
    except (OSError, subprocess.CalledProcessError):
        files = [p.relative_to(root) for p in root.rglob("*") if p.is_file()]
    return sorted(f for f in files if f.suffix in SOURCE_SUFFIXES and
                  not str(f).startswith(("build", ".")) and (root / f).is_file())


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(argv[1])
    folders = {p.name for p in root.iterdir() if p.is_dir()}
    problems = []
    for f in tracked_sources(root):
        own = f.parts[0]
        if own not in LAYERS:
            continue
        allowed = {own, *LAYERS[own]}
        for n, line in enumerate((root / f).read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m or "/" not in m.group(1):
                continue
            target = m.group(1).split("/", 1)[0]
            if target in folders and target not in allowed:
                problems.append(f"{f}:{n}: {own}/ may not include {m.group(1)}")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
