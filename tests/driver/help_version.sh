#!/usr/bin/env bash
# --help lists every option; --version names tilec and its LLVM.
source "$(dirname "$0")/lib.bash"

check 0 out "tilec 0.1.0" "$TILEC" --version
check 0 out "LLVM 19." "$TILEC" --version
"$TILEC" --help >help.txt || fail "--help exited $?"
for opt in "-o FILE" "--emit=tokens|ast|ir" "--kernel NAME" "-D NAME=VALUE" "--pass=NAME" "-O0" \
           "--dump-after=NAME|all" "--ir-dump-dir=DIR" "--diagnostics-color=auto|always|never" "-v " \
           "--version" "--help" "tilec run"; do
  grep -qF -- "$opt" help.txt || fail "tilec --help does not mention $opt"
done
check 0 out "usage: tilec" "$TILEC" -h
"$TILEC" run --help >runhelp.txt || fail "run --help exited $?"
for opt in "NAME=PATH.npy" "NAME=DTYPE[d0,d1,...]" "NAME=VALUE" "--kernel NAME" "--interp" "--device" \
           "--out NAME=PATH.npy" "--grid X[,Y[,Z]]" "--seed N" "-D NAME=VALUE" "-v "; do
  grep -qF -- "$opt" runhelp.txt || fail "tilec run --help does not mention $opt"
done
finish
