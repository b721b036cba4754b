#!/usr/bin/env bash
# --emit=tokens|ast|ir, -o, -D, --kernel, .tir input, -v.
source "$(dirname "$0")/lib.bash"
vadd=$inputs/vadd.tile
kernels=$inputs/kernels.tile

# tokens: one per line with its position; both spellings of the option
check 0 out "2:1 " "$TILEC" "$vadd" --emit=tokens
grep -q "arange" stdout.txt || fail "--emit=tokens does not show 'arange'"
check 0 out "2:1 " "$TILEC" "$vadd" --emit tokens
check 0 out "vadd" "$TILEC" "$vadd" --emit=ast
grep -q "arange" stdout.txt || fail "--emit=ast does not show 'arange'"

# IR is the default; -o FILE and -o - and no -o agree
check 0 out "kernel @vadd__BLOCK_1024" "$TILEC" "$vadd"
cp stdout.txt default.tir
check 0 out "kernel @vadd__BLOCK_1024" "$TILEC" "$vadd" --emit=ir -o -
cmp -s stdout.txt default.tir || fail "-o - differs from standard output"
check 0 out "" "$TILEC" "$vadd" --emit ir -o out.tir
cmp -s out.tir default.tir || fail "-o out.tir differs from standard output"
[ -s stdout.txt ] && fail "-o out.tir also wrote to standard output"
check 1 err "cannot write 'nodir/out.tir'" "$TILEC" "$vadd" -o nodir/out.tir
[ -e nodir/out.tir ] && fail "a failed write left a file"

# -D in both spellings
check 0 out "kernel @vadd__BLOCK_256" "$TILEC" "$vadd" -D BLOCK=256
cp stdout.txt d1.tir
check 0 out "kernel @vadd__BLOCK_256" "$TILEC" "$vadd" -DBLOCK=256
cmp -s stdout.txt d1.tir || fail "-DBLOCK=256 and -D BLOCK=256 differ"
check 0 out "kernel @vadd__BLOCK_128" "$TILEC" "$vadd" -D BLOCK=256 -D BLOCK=128
check 1 err "" "$TILEC" "$vadd" -D NOSUCH=3

# --kernel selects one kernel; an unknown one lists them
check 0 out "scale_rows" "$TILEC" "$kernels" --kernel scale_rows
grep -q "copy_half" stdout.txt && fail "--kernel scale_rows also compiled copy_half"
check 0 out "copy_half" "$TILEC" "$kernels"
grep -q "scale_rows" stdout.txt || fail "without --kernel, scale_rows is missing"
check 1 err "no kernel named 'scale_row'" "$TILEC" "$kernels" --kernel scale_row
grep -qF "did you mean 'scale_rows'?" stderr.txt || fail "no 'did you mean' for --kernel scale_row"
grep -qF "kernels in this file: scale_rows, copy_half, fill_nogrid" stderr.txt || fail "the kernels are not listed"

# .tir in, print -> parse -> print is identical; a .tir runs the passes only when asked (-O)
check 0 out "" "$TILEC" "$kernels" -O0 -o all.tir
check 0 out "" "$TILEC" all.tir -O0 -o again.tir
cmp -s all.tir again.tir || fail ".tir round trip differs"
check 0 out "" "$TILEC" all.tir -O -o opt.tir
check 0 out "" "$TILEC" all.tir -o noopt.tir
cmp -s noopt.tir all.tir || fail "a .tir without -O was changed by passes"
check 0 out "" "$TILEC" "$kernels" -o opt2.tir
cmp -s opt.tir opt2.tir || fail "the passes on the .tir differ from the passes on the .tile"
check 0 out "copy_half" "$TILEC" all.tir --kernel copy_half
grep -q "scale_rows" stdout.txt && fail "--kernel copy_half on a .tir also printed scale_rows"
check 0 out "copy_half" "$TILEC" all.tir --kernel copy_half__BLOCK_64
grep -q "fill_nogrid" stdout.txt && fail "--kernel copy_half__BLOCK_64 on a .tir also printed fill_nogrid"
check 1 err "no kernel named 'nope'" "$TILEC" all.tir --kernel nope
check 0 out "" "$TILEC" all.tir --pass=dce,cse --pass fold

# -v prints the stages
check 0 err "tilec: lower" "$TILEC" "$vadd" -v -o /dev/null
check 0 err "tilec: passes" "$TILEC" "$vadd" -v -o /dev/null

# a source error: exit 1, file:line:col, no output
printf 'kernel k(x: ptr<f32>) { let y = ; }\n' > bad.tile
check 1 err "bad.tile:1:" "$TILEC" bad.tile -o bad.out
[ -e bad.out ] && fail "a failed compile wrote its output"
check 1 err "error" "$TILEC" bad.tile --emit=ast
check 0 err "" "$TILEC" bad.tile --diagnostics-color=never --emit=tokens
check 1 err $'\033[' "$TILEC" bad.tile --diagnostics-color=always
check 1 err "" "$TILEC" bad.tile --diagnostics-color=never
grep -qF $'\033[' stderr.txt && fail "--diagnostics-color=never still wrote colour codes"
finish
