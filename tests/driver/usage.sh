#!/usr/bin/env bash
# Bad command lines exit 2 with one line saying what and a hint; unreadable inputs exit 1.
source "$(dirname "$0")/lib.bash"
vadd=$inputs/vadd.tile

check 2 err "no input file" "$TILEC"
check 2 err "tilec --help" "$TILEC"
check 2 err "unknown option '--frobnicate'" "$TILEC" "$vadd" --frobnicate
check 2 err "unknown option '-q'" "$TILEC" "$vadd" -q
check 2 err "option '-o' needs a value" "$TILEC" "$vadd" -o
check 2 err "needs a value" "$TILEC" "$vadd" --emit
check 2 err "more than one input file" "$TILEC" "$vadd" "$vadd"
check 2 err "--emit wants tokens, ast, ir, llvm, ptx, cubin, header or meta, not 'bytes'" "$TILEC" "$vadd" --emit=bytes
check 2 err "-D wants NAME=VALUE, not 'BLOCK'" "$TILEC" "$vadd" -D BLOCK
check 2 err "-D wants NAME=VALUE, not '1X=3'" "$TILEC" "$vadd" -D1X=3
check 2 err "-D wants NAME=VALUE, not 'BLOCK='" "$TILEC" "$vadd" -DBLOCK=
check 2 err "unknown pass 'fodl'; did you mean 'fold'?" "$TILEC" "$vadd" --pass=fodl
check 2 err "unknown pass 'zzzzzzzz' (passes: fold, cse, dce" "$TILEC" "$vadd" --pass=zzzzzzzz
check 2 err "--dump-after: unknown pass 'everything'" "$TILEC" "$vadd" --dump-after=everything
check 2 err "--diagnostics-color wants auto, always or never, not 'blue'" "$TILEC" "$vadd" --diagnostics-color=blue
check 2 err "unknown optimization level '-O7'" "$TILEC" "$vadd" -O7
check 2 err "unknown kind of input" "$TILEC" vadd.c
check 1 err "cannot read 'missing.tile': No such file or directory" "$TILEC" missing.tile
mkdir dir.tile
check 1 err "cannot read 'dir.tile': is a directory" "$TILEC" dir.tile
check 0 out "" "$TILEC" "$vadd" -O0 -o vadd.tir
check 2 err "--emit=tokens needs a .tile input" "$TILEC" vadd.tir --emit=tokens
check 2 err "a .tir is already specialized" "$TILEC" vadd.tir -D BLOCK=64
# usage errors print exactly two lines: what, and the hint
"$TILEC" "$vadd" --emit=bytes 2>two.txt
[ "$(wc -l < two.txt)" -eq 2 ] || fail "a usage error printed $(wc -l < two.txt) lines"

# tilec run
check 2 err "no input file" "$TILEC" run
check 2 err "say where to run the kernel: --interp or --device" "$TILEC" run "$vadd" --kernel vadd n=4
check 2 err "--interp and --device exclude each other" "$TILEC" run "$vadd" --interp --device n=4
check 2 err "'x.npy' is not an argument binding" "$TILEC" run "$vadd" --interp x.npy
check 2 err "--grid wants X[,Y[,Z]]" "$TILEC" run "$vadd" --interp --grid 0
check 2 err "--grid wants X[,Y[,Z]]" "$TILEC" run "$vadd" --interp --grid 1,2,3,4
check 2 err "--grid wants X[,Y[,Z]]" "$TILEC" run "$vadd" --interp --grid 2x
check 2 err "--seed wants a non-negative integer" "$TILEC" run "$vadd" --interp --seed -1
check 2 err "--out wants NAME=PATH.npy" "$TILEC" run "$vadd" --interp --out o.npy
check 2 err "tilec run --help" "$TILEC" run "$vadd" --interp --bogus
check 1 err "kernel 'vadd' needs an argument for: x, y, out" "$TILEC" run "$vadd" --kernel vadd --device n=4
finish
