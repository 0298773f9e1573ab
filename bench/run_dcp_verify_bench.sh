#!/bin/sh
# Writes the inputs of dcp_verify_bench with the torch environment (once: they are kept in
# WORK_DIR, default /tmp/ckptspec-dcp-bench) and runs it.
#   bench/run_dcp_verify_bench.sh [BUILD_DIR] [WORK_DIR]
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
work=${2:-/tmp/ckptspec-dcp-bench}
mkdir -p "$work"
run="$repo/adapters/torch_dcp/run_with_torch_env.sh $repo"
[ -f "$work/large.metadata" ] ||
  $run @PYTHON@ "$repo/tools/write_dcp_metadata_bench_input.py" "$work/large.metadata" --target-mib 200
[ -f "$work/data/.metadata" ] ||
  $run @PYTHON@ "$repo/tools/write_dcp_data_bench_input.py" "$work/data" --gib 1
$run env CKPTSPEC_DCP_METADATA="$work/large.metadata" CKPTSPEC_DCP_DATA="$work/data" \
  CKPTSPEC_PYTHON=@PYTHON@ "$build/bench/dcp_verify_bench"
