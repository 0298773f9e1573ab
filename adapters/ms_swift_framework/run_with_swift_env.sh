#!/bin/sh
# Runs a command with one ms-swift release, the packages `import swift.megatron` needs
# (adapters/requirements/ms-swift-deps.txt), mcore-bridge's dist-info (mcore-bridge-1.6.5.txt) and
# one megatron-core version on PYTHONPATH, beside the torch environment
# (adapters/megatron_core/run_with_mcore_env.sh, which adds megatron-core and framework-deps), each
# the directory ci/setup installs with CKPTSPEC_SWIFT_ENVS=1; or exits 77 -- ctest's
# SKIP_RETURN_CODE -- with a SKIPPED: line when any of them is missing or incomplete.
#   run_with_swift_env.sh REPO_ROOT --swift VERSION --mcore VERSION COMMAND ARGS...
#   ("@PYTHON@" in any of them becomes the torch environment's python)
repo=$1
shift
if [ "$1" != "--swift" ] || [ -z "$2" ] || [ "$3" != "--mcore" ] || [ -z "$4" ]; then
  echo "usage: run_with_swift_env.sh REPO_ROOT --swift VERSION --mcore VERSION COMMAND ARGS..." >&2
  exit 2
fi
swift_version=$2
mcore_version=$4
shift 4
# shellcheck source-path=SCRIPTDIR source=../requirements/env_dir.sh
. "$repo/adapters/requirements/env_dir.sh"
dirs=""
# NAME WHAT CONTENT: the directory of adapters/requirements/NAME.txt's environment, appended to
# $dirs, or exit 77 (ckptspec_need_env).
need() {
  ckptspec_need_env "$repo" "$1" "$2" "$3" "CKPTSPEC_SWIFT_ENVS=1 ci/setup builds it"
  dirs="$dirs${dirs:+:}$ckptspec_env"
}
need "ms-swift-$swift_version" "ms-swift $swift_version" swift/megatron
need ms-swift-deps "ms-swift's dependencies" transformers
need mcore-bridge-1.6.5 "mcore-bridge's dist-info" mcore_bridge-1.6.5.dist-info
PYTHONPATH="$dirs${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONPATH
exec "$repo/adapters/megatron_core/run_with_mcore_env.sh" "$repo" --mcore "$mcore_version" "$@"
