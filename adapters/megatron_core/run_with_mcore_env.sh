#!/bin/sh
# Runs a command with the torch environment that ci/setup builds (adapters/requirements/
# $CKPTSPEC_TORCH_ENV.txt, default torch-2.14.1) and one megatron-core version beside it on
# PYTHONPATH (adapters/requirements/megatron-core-VERSION.txt, installed by ci/setup with
# --no-deps --target) and, when ci/setup installed it, adapters/requirements/framework-deps.txt's
# directory, or exits 77 -- ctest's SKIP_RETURN_CODE -- with a SKIPPED: line when the torch
# environment or that version is missing or incomplete.
#   run_with_mcore_env.sh REPO_ROOT --mcore VERSION COMMAND ARGS...
#   ("@PYTHON@" in any of them becomes the torch environment's python)
repo=$1
shift
if [ "$1" != "--mcore" ] || [ -z "$2" ]; then
  echo "usage: run_with_mcore_env.sh REPO_ROOT --mcore VERSION COMMAND ARGS..." >&2
  exit 2
fi
version=$2
shift 2
# shellcheck source-path=SCRIPTDIR source=../requirements/env_dir.sh
. "$repo/adapters/requirements/env_dir.sh"
ckptspec_need_env "$repo" "megatron-core-$version" "megatron-core $version" megatron/core \
  "ci/setup builds it"
PYTHONPATH="$ckptspec_env${PYTHONPATH:+:$PYTHONPATH}"
# What the framework adapters need beside megatron-core (einops, for the MIMO models' process
# groups), when ci/setup installed it.
deps_dir=$(ckptspec_env_dir framework-deps "$repo/adapters/requirements/framework-deps.txt")
if [ -f "$deps_dir/.ckptspec-complete" ]; then
  PYTHONPATH="$PYTHONPATH:$deps_dir"
fi
export PYTHONPATH
exec "$repo/adapters/torch_dcp/run_with_torch_env.sh" "$repo" "$@"
