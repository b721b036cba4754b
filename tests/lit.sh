#!/usr/bin/env bash
# lit.sh FILE: runs the `RUN:` lines of a test file (in `//` or `#` comments),
# the way LLVM's lit does, with these substitutions:
#   %s -> FILE   %S -> FILE's folder   %t -> a scratch path   %tilec -> the tilec binary
#   FileCheck -> LLVM 19's FileCheck
# Each RUN line runs under `bash -o pipefail`; a line ending in `\` continues.
# Environment: TILEC (path to tilec), FILECHECK (path to FileCheck).
set -u
file=$1
: "${TILEC:?set TILEC to the tilec binary}"
: "${FILECHECK:?set FILECHECK to FileCheck}"
dir=$(cd "$(dirname "$file")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tilec-lit.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
runs=$(sed -n -E 's@^[[:space:]]*(//|#)[[:space:]]*RUN:[[:space:]]?(.*)$@\2@p' "$file" |
       awk '{ if (sub(/\\$/, "")) { buf = buf $0 } else { print buf $0; buf = "" } }')
if [ -z "$runs" ]; then
  echo "lit.sh: $file has no RUN: line" >&2
  exit 2
fi
n=0
while IFS= read -r cmd; do
  n=$((n + 1))
  cmd=${cmd//%tilec/$TILEC}
  cmd=${cmd//%s/$file}
  cmd=${cmd//%S/$dir}
  cmd=${cmd//%t/$tmp/t}
  cmd=$(printf '%s' "$cmd" | sed -E "s@(^|[|;&[:space:]])FileCheck([[:space:]])@\1$FILECHECK\2@g")
  if ! bash -o pipefail -c "$cmd"; then
    echo "lit.sh: $file: RUN line $n failed:" >&2
    echo "  $cmd" >&2
    exit 1
  fi
done <<< "$runs"
