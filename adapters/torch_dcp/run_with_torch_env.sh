#!/bin/sh
# Runs a command with the torch environment that ci/setup builds from
# adapters/requirements/$CKPTSPEC_TORCH_ENV.txt (default torch-2.14.1) under
# ${CKPTSPEC_CACHE_DIR:-$HOME/.cache/ckptspec}/envs/, or exits 77 -- ctest's SKIP_RETURN_CODE for
# the torch_dcp tests -- with a SKIPPED: line when that environment is missing or incomplete.
#   run_with_torch_env.sh REPO_ROOT COMMAND ARGS...   ("@PYTHON@" in any of them becomes its python)
repo=$1
shift
. "$repo/adapters/requirements/env_dir.sh"
env_name=${CKPTSPEC_TORCH_ENV:-torch-2.14.1}
requirements="$repo/adapters/requirements/$env_name.txt"
if [ ! -f "$requirements" ]; then
  echo "SKIPPED: no requirement file $requirements (CKPTSPEC_TORCH_ENV=$env_name)" >&2
  exit 77
fi
dir=$(ckptspec_env_dir "$env_name" "$requirements")
python="$dir/bin/python"
if [ ! -f "$dir/.ckptspec-complete" ] || ! "$python" -c 'import torch.distributed.checkpoint' >/dev/null 2>&1; then
  echo "SKIPPED: the $env_name environment ($dir) is missing or incomplete; ci/setup builds it" \
       "(it needs PyPI and about 5.5 GB; CKPTSPEC_SKIP_TORCH_ENV=1 leaves it out)" >&2
  exit 77
fi
for arg in "$@"; do
  shift
  set -- "$@" "$(printf '%s' "$arg" | sed "s|@PYTHON@|$python|g")"
done
exec "$@"
