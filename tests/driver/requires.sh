#!/usr/bin/env bash
# requires(cond, "message") clauses: `tilec run` refuses arguments that break one with
# an error naming its message (interpreter and device alike: the check runs before
# either), --grid does not bypass them, and the generated header documents them.
source "$(dirname "$0")/lib.bash"
src=$inputs/requires.tile
run() { "$TILEC" run "$src" --diagnostics-color=never "$@"; }

check 0 err "" run --interp x=f32[60,3] y=f32[60,3] n=60
check 0 err "" run --interp x=f32[5,3] y=f32[5,3] n=7
check 1 err "requires.tile:4:39: error: kernel 'scale': requires(...) does not hold: x and y must have the same shape" \
  run --interp x=f32[5,3] y=f32[4,3] n=5
check 1 err "requires(...) does not hold: x and y must have the same shape" run --interp x=f32[5,3] y=f32[5,4] n=5
check 1 err "requires(...) does not hold: n must be in 1..100" run --interp x=f32[5,3] y=f32[5,3] n=0
check 1 err "requires(...) does not hold: n must be in 1..100" run --interp x=f32[5,3] y=f32[5,3] n=101
check 1 err "requires(...) does not hold: above 50, n must divide the rows" run --interp x=f32[61,3] y=f32[61,3] n=60
check 1 err "requires(...) does not hold: n must be in 1..100" run --interp --grid 1 x=f32[5,3] y=f32[5,3] n=0
check 1 err "requires(...) does not hold: n must be in 1..100" run --device x=f32[5,3] y=f32[5,3] n=0
# only the first failure is reported
run --interp x=f32[5,3] y=f32[4,3] n=0 2>stderr.txt
[ "$(grep -c 'error:' stderr.txt)" = 1 ] || fail "more than one requires error: $(cat stderr.txt)"

# the IR round trip keeps the clauses and their messages
"$TILEC" "$src" --emit=ir -o a.tir && "$TILEC" a.tir --emit=ir -o b.tir || fail "emit/parse the IR"
diff <(tail -n +2 a.tir) <(tail -n +2 b.tir) >/dev/null || fail "the requires block does not round-trip"
grep -qF 'requires("x and y must have the same shape", "n must be in 1..100", "above 50, n must divide the rows") {' a.tir \
  || fail "the printed requires block lacks its messages"

# the header says what the launcher checks; the cubin compiles
check 0 err "" "$TILEC" "$src" --emit=header -o r.h
grep -qF ' *   - above 50, n must divide the rows */' r.h || fail "the header does not list the requires clauses"
check 0 err "" "$TILEC" "$src" --emit=cubin --arch=sm_90a -o r.cubin
finish
