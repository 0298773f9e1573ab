#!/bin/sh
# The main job, `ckptspec run` with no arguments (the references and every catalog mutant against
# every property, 100 cases each), once with one worker and once with one per core, side by side
# on the same machine: prints both wall times and their ratio, and checks that the two matrices
# are the same.
#   bench/run_jobs_bench.sh [BUILD_DIR]
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
ckptspec="$build/cli/ckptspec"
jobs=$(nproc)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
seconds() { # seconds since the epoch, with nanoseconds
  date +%s.%N
}
start=$(seconds)
"$ckptspec" run --quiet --jobs 1 >"$work/serial.txt" || true
middle=$(seconds)
"$ckptspec" run --quiet --jobs "$jobs" >"$work/parallel.txt" || true
end=$(seconds)
# The matrix is the report's first lines, up to its legend.
sed -n '1,/^K killed/p' "$work/serial.txt" >"$work/serial.matrix"
sed -n '1,/^K killed/p' "$work/parallel.txt" >"$work/parallel.matrix"
if ! cmp -s "$work/serial.matrix" "$work/parallel.matrix"; then
  echo "the matrices differ:" >&2
  diff "$work/serial.matrix" "$work/parallel.matrix" >&2 || true
  exit 1
fi
awk -v a="$start" -v b="$middle" -v c="$end" -v j="$jobs" 'BEGIN {
  s = b - a; p = c - b;
  printf "ckptspec run, --jobs 1: %.1f s\nckptspec run, --jobs %d: %.1f s\nratio (serial / parallel): %.2f\n", s, j, p, s / p
}'
