#!/bin/sh
# Runs a command as adapters/torch_dcp/run_with_torch_env.sh does (the torch environment ci/setup
# builds; "@PYTHON@" becomes its python) with the megatron-core directory ci/setup installs beside
# it from adapters/requirements/MEGATRON_CORE.txt on PYTHONPATH; or exits 77 (ctest's
# SKIP_RETURN_CODE for these tests) with a SKIPPED: line when either is missing or incomplete.
#   run_with_megatron_env.sh REPO_ROOT MEGATRON_CORE COMMAND ARGS...
repo=$1
mcore=$2
shift 2
# shellcheck source-path=SCRIPTDIR source=../../adapters/requirements/env_dir.sh
. "$repo/adapters/requirements/env_dir.sh"
ckptspec_need_env "$repo" "$mcore" "$mcore" megatron/core \
  "ci/setup installs it beside the torch environment (CKPTSPEC_SKIP_TORCH_ENV=1 leaves it out)"
PYTHONPATH="$ckptspec_env${PYTHONPATH:+:$PYTHONPATH}" \
  exec "$repo/adapters/torch_dcp/run_with_torch_env.sh" "$repo" "$@"
