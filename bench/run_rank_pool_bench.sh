#!/bin/bash
# Cases per second of a real adapter's P1 and P2 with and without the rank pool, side by side in
# one run: `--no-regroup` (a group of processes per world size, the harness before rank pools)
# against the default (one pool of ranks regrouped per case: docs/PROTOCOL.md, "Processes"), at
# worlds of at most MAX_WORLD ranks, SMALL and LARGE cases per property, the modes alternating.
# The marginal rate, (LARGE - SMALL) / (t_LARGE - t_SMALL), leaves out what a run pays once (the
# probe, starting the first ranks, shutting them down). Run it with the adapter's environment:
#   adapters/torch_dcp/run_with_torch_env.sh . bench/run_rank_pool_bench.sh BUILD_DIR \
#       "@PYTHON@ adapters/torch_dcp/ckptspec_torch_dcp_adapter.py" [MAX_WORLD SMALL LARGE]
set -eu
build=$1
adapter=$2
max_world=${3:-4}
small=${4:-10}
large=${5:-40}
ckptspec="$build/cli/ckptspec"
seconds() { date +%s.%N; }
declare -A took
for property in P1 P2; do
  for budget in "$small" "$large"; do
    for mode in no-regroup regroup; do
      flag=""
      [ "$mode" = no-regroup ] && flag=" --no-regroup"
      start=$(seconds)
      "$ckptspec" run --quiet --adapter "$adapter$flag" --properties "$property" \
        --budget "$budget" --max-world "$max_world" --seed 1 >/dev/null
      took[$property.$budget.$mode]=$(awk -v a="$start" -v b="$(seconds)" 'BEGIN {print b - a}')
    done
  done
  for mode in no-regroup regroup; do
    awk -v p="$property" -v m="$mode" -v s="$small" -v l="$large" \
      -v ts="${took[$property.$small.$mode]}" -v tl="${took[$property.$large.$mode]}" 'BEGIN {
      printf "%s %-10s %d cases %.1f s (%.2f cases/s), %d cases %.1f s (%.2f cases/s), marginal %.2f cases/s\n",
        p, m, s, ts, s / ts, l, tl, l / tl, (l - s) / (tl - ts)
    }'
  done
  awk -v p="$property" -v a="${took[$property.$large.no-regroup]}" \
    -v b="${took[$property.$large.regroup]}" -v l="$large" -v s="$small" \
    -v c="${took[$property.$small.no-regroup]}" -v d="${took[$property.$small.regroup]}" 'BEGIN {
    printf "%s ratio (rank pool / no-regroup): whole run of %d cases %.2f, marginal %.2f\n",
      p, l, a / b, (a - c) / (b - d)
  }'
done
