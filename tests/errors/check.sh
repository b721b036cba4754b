#!/usr/bin/env bash
# check.sh [--bless] FILE.tile: a diagnostic golden test (cproc style).
# Runs `tilec FILE.tile` from FILE's folder with colour off, expects exit
# status 1 and compares stderr with FILE.err (diff -u).  A first line
# `// ARGS: ...` in the .tile adds arguments to tilec.  --bless rewrites FILE.err.
set -u
bless=0
if [ "${1:-}" = "--bless" ]; then bless=1; shift; fi
file=$1
: "${TILEC:?set TILEC to the tilec binary}"
dir=$(dirname "$file"); base=$(basename "$file"); stem=${base%.*}
args=$(sed -n -E '1s@^//[[:space:]]*ARGS:[[:space:]]*(.*)$@\1@p' "$file")
cd "$dir" || exit 2
out=$(mktemp); trap 'rm -f "$out"' EXIT
# shellcheck disable=SC2086
"$TILEC" "$base" --emit=ir -o /dev/null --diagnostics-color=never $args 2>"$out" >/dev/null
rc=$?
if [ $bless = 1 ]; then cp "$out" "$stem.err"; echo "blessed $dir/$stem.err"; exit 0; fi
if [ $rc -ne 1 ]; then
  echo "check.sh: $file: expected exit status 1, got $rc" >&2; cat "$out" >&2; exit 1
fi
diff -u "$stem.err" "$out" || { echo "check.sh: $file: diagnostics differ (re-bless with tests/bless.sh)" >&2; exit 1; }
