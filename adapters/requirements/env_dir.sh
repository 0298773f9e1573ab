# Sourced (POSIX sh) by ci/setup and the torch adapters' run scripts: where the Python environment
# built from requirement files lives (and, for the run scripts, ckptspec_need_env below: that it is
# there). It is outside the clone, named after the files' digest, so that a change of pins builds a
# new environment and an unchanged one is reused:
#   ckptspec_env_dir NAME FILE...
#     -> ${CKPTSPEC_CACHE_DIR:-$HOME/.cache/ckptspec}/envs/NAME-<first 16 hex digits of sha256>
# A complete environment holds the file .ckptspec-complete (ci/setup writes it last).
ckptspec_env_dir() {
  ckptspec_env_name=$1
  shift
  ckptspec_env_digest=$(cat "$@" | sha256sum | cut -c1-16)
  echo "${CKPTSPEC_CACHE_DIR:-$HOME/.cache/ckptspec}/envs/$ckptspec_env_name-$ckptspec_env_digest"
}

# For the run scripts of the adapter tests (it exits the script when the environment is missing):
#   ckptspec_need_env REPO_ROOT NAME WHAT CONTENT HOW
#     sets ckptspec_env to the directory of the environment of
#     REPO_ROOT/adapters/requirements/NAME.txt when that file exists and the environment is
#     complete and has CONTENT (a path inside it); else prints a SKIPPED: line on stderr (WHAT
#     names the environment, HOW says what builds it) and exits 77, ctest's SKIP_RETURN_CODE for
#     those tests.
ckptspec_need_env() {
  ckptspec_requirements="$1/adapters/requirements/$2.txt"
  if [ ! -f "$ckptspec_requirements" ]; then
    echo "SKIPPED: no requirement file $ckptspec_requirements ($3)" >&2
    exit 77
  fi
  ckptspec_env=$(ckptspec_env_dir "$2" "$ckptspec_requirements")
  if [ ! -f "$ckptspec_env/.ckptspec-complete" ] || [ ! -e "$ckptspec_env/$4" ]; then
    echo "SKIPPED: $3 ($ckptspec_env) is missing or incomplete; $5" >&2
    exit 77
  fi
}
