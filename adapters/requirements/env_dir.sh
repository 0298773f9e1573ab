# Sourced (POSIX sh) by ci/setup and the torch adapters' run scripts: where the Python environment
# built from requirement files lives. It is outside the clone, named after the files' digest, so
# that a change of pins builds a new environment and an unchanged one is reused:
#   ckptspec_env_dir NAME FILE...
#     -> ${CKPTSPEC_CACHE_DIR:-$HOME/.cache/ckptspec}/envs/NAME-<first 16 hex digits of sha256>
# A complete environment holds the file .ckptspec-complete (ci/setup writes it last).
ckptspec_env_dir() {
  ckptspec_env_name=$1
  shift
  ckptspec_env_digest=$(cat "$@" | sha256sum | cut -c1-16)
  echo "${CKPTSPEC_CACHE_DIR:-$HOME/.cache/ckptspec}/envs/$ckptspec_env_name-$ckptspec_env_digest"
}
