#!/usr/bin/env python3
"""Fails when a C++ or CUDA source of the repository is not formatted as .clang-format says.

  check_format.py REPO_ROOT [CLANG_FORMAT]
      exit 0: every *.cc, *.h, *.cu and *.cuh file is formatted; 1: the files clang-format would
      change, one per line; 77: no clang-format (the test is then reported as skipped); 2: usage

CLANG_FORMAT defaults to clang-format-14 (the version ci/setup installs: another version may
format differently). `clang-format-14 -i FILE` formats a file in place.
"""
import shutil
import subprocess
import sys

SUFFIXES = (".cc", ".h", ".cu", ".cuh")
BATCH = 50


def sources(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, check=True).stdout
    return [p for p in out.decode().split("\0") if p.endswith(SUFFIXES)]


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    root, tool = argv[1], argv[2] if len(argv) == 3 else "clang-format-14"
    if shutil.which(tool) is None:
        print(f"SKIPPED: {tool} is not installed (ci/setup installs it)")
        return 77
    files, unformatted = sources(root), []
    for i in range(0, len(files), BATCH):
        batch = files[i:i + BATCH]
        p = subprocess.run([tool, "--dry-run", "--Werror", "--style=file", *batch], cwd=root,
                           capture_output=True, text=True)
        if p.returncode != 0:
            unformatted += sorted({line.split(":")[0] for line in p.stderr.splitlines()
                                   if ": error:" in line})
    for f in unformatted:
        print(f"{f}: not formatted (clang-format-14 -i {f})")
    print(f"check_format: {len(files)} files, {len(unformatted)} not formatted")
    return 1 if unformatted else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
