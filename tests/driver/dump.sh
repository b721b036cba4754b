#!/usr/bin/env bash
# --dump-after=NAME|all to stderr, --ir-dump-dir=DIR to files.
source "$(dirname "$0")/lib.bash"
vadd=$inputs/vadd.tile

check 0 err "IR Dump After fold (kernel vadd__BLOCK_1024)" "$TILEC" "$vadd" --dump-after=all -o /dev/null
for p in cse dce; do
  grep -qF "IR Dump After $p " stderr.txt || fail "--dump-after=all did not dump after $p"
done
check 0 err "IR Dump After cse " "$TILEC" "$vadd" --dump-after=cse -o /dev/null
[ "$(grep -c 'IR Dump After' stderr.txt)" -eq 1 ] || fail "--dump-after=cse dumped more than once"

check 0 out "" "$TILEC" "$vadd" --dump-after=all --ir-dump-dir=dumps/nested -o /dev/null
[ -s dumps/nested/01-vadd__BLOCK_1024-fold.tir ] || fail "no dumps/nested/01-vadd__BLOCK_1024-fold.tir"
[ -s dumps/nested/02-vadd__BLOCK_1024-cse.tir ] || fail "no dumps/nested/02-vadd__BLOCK_1024-cse.tir"
[ -s dumps/nested/03-vadd__BLOCK_1024-dce.tir ] || fail "no dumps/nested/03-vadd__BLOCK_1024-dce.tir"
# without --dump-after, --ir-dump-dir dumps after every pass; each dump parses back
check 0 out "" "$TILEC" "$vadd" --ir-dump-dir=d2 --pass=dce -o /dev/null
[ "$(ls d2 | wc -l)" -eq 1 ] || fail "--ir-dump-dir with --pass=dce wrote $(ls d2 | wc -l) files"
check 0 out "kernel @vadd__BLOCK_1024" "$TILEC" d2/01-vadd__BLOCK_1024-dce.tir -O0
: > notadir
check 1 err "cannot create the dump folder 'notadir/x'" "$TILEC" "$vadd" --ir-dump-dir=notadir/x -o /dev/null
# -O0 runs no pass, so nothing is dumped
check 0 out "" "$TILEC" "$vadd" -O0 --dump-after=all -o /dev/null
grep -q "IR Dump After" stderr.txt && fail "-O0 still ran passes"
finish
