# lib.bash: helpers shared by the driver tests (sourced, not run).
# Each test runs in a scratch folder; `check` records failures and goes on,
# `finish` reports them and sets the exit status.
set -u
: "${TILEC:?set TILEC to the tilec binary}"
: "${MKNPY:?set MKNPY to the mknpy helper}"
inputs=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/inputs
scratch=$(mktemp -d "${TMPDIR:-/tmp}/tilec-driver.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
cd "$scratch" || exit 2
failures=0

# check STATUS STREAM TEXT CMD...: runs CMD; its exit status must be STATUS and
# its stdout (STREAM=out) or stderr (STREAM=err) must contain TEXT ("" for any).
check() {
  local want=$1 stream=$2 text=$3
  shift 3
  "$@" >stdout.txt 2>stderr.txt
  local rc=$?
  local file=stdout.txt
  [ "$stream" = err ] && file=stderr.txt
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL: $*"
    echo "  exit status $rc, expected $want; stderr:"
    sed 's/^/    /' stderr.txt | head -20
    failures=$((failures + 1))
  elif [ -n "$text" ] && ! grep -qF -- "$text" "$file"; then
    echo "FAIL: $*"
    echo "  std$stream lacks: $text; it holds:"
    sed 's/^/    /' "$file" | head -20
    failures=$((failures + 1))
  fi
}

# fail MESSAGE: records a failure found by other means.
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed"
    exit 1
  fi
  echo "all checks passed"
  exit 0
}
