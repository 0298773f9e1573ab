#!/bin/sh
# Runs a command with the Python adapters' virtual environment (.venv/ at the repository root,
# made by ci/setup), or exits 77 -- ctest's SKIP_RETURN_CODE for the zarr tests -- when that
# environment is missing or lacks the adapter's requirements.
#   run_with_venv.sh REPO_ROOT COMMAND ARGS...   ("@PYTHON@" in any of them becomes the venv's python)
repo=$1
shift
python="$repo/.venv/bin/python"
if ! "$python" -c 'import zarr, numpy, ml_dtypes' >/dev/null 2>&1; then
  echo "SKIPPED: $python with zarr, numpy and ml_dtypes is missing; ci/setup creates it" >&2
  exit 77
fi
for arg in "$@"; do
  shift
  set -- "$@" "$(printf '%s' "$arg" | sed "s|@PYTHON@|$python|g")"
done
exec "$@"
