#!/bin/sh
# Writes the DCP and torch_dist fixtures afresh with the pinned torch environment (and
# megatron-core where installed) into a temporary directory, then checks that ckptspec reads what
# the real third parties write today as it reads the committed corpus/dcp/: every sound fixture
# verifies clean with --data, every corrupt one gives its finding (exit 1; 2 for the unknown
# global), and diff finds the resharded copy the same and the changed one different.
#   check_live_dcp_fixtures.sh REPO_ROOT CKPTSPEC
# Run it through adapters/torch_dcp/run_with_torch_env.sh (ctest does), which skips (exit 77)
# without the torch environment.
set -eu
repo=$1
ckptspec=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python=${CKPTSPEC_PYTHON:-python3}
"$python" "$repo/tools/write_dcp_fixtures.py" "$work" >"$work/write.log" 2>&1 || {
  cat "$work/write.log" >&2
  exit 1
}
grep '^SKIPPED' "$work/write.log" >&2 || true
failed=0
expect() {  # expect EXIT_CODE ARGS...
  want=$1
  shift
  set +e
  "$ckptspec" "$@" >"$work/out.txt" 2>&1
  got=$?
  set -e
  if [ "$got" -ne "$want" ]; then
    echo "FAILED: ckptspec $* exited $got, expected $want:" >&2
    cat "$work/out.txt" >&2
    failed=1
  fi
}
for dir in "$work"/*/; do
  name=$(basename "$dir")
  case $name in
    corrupt_unknown_global) expect 2 verify "$dir" ;;
    corrupt_*) expect 1 verify --data "$dir" ;;
    *) expect 0 verify --data --checksums "$dir" ;;
  esac
done
expect 0 diff "$work/dcp_two_ranks" "$work/dcp_four_ranks_resharded"
expect 1 diff "$work/dcp_two_ranks" "$work/dcp_four_ranks_changed"
if [ -d "$work/torch_dist_mcore" ]; then
  expect 0 diff "$work/torch_dist_mcore" "$repo/corpus/dcp/torch_dist_mcore"
fi
[ "$failed" -eq 0 ] && echo "fresh fixtures: $(ls -d "$work"/*/ | wc -l) checked"
exit "$failed"
