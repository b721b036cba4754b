#!/usr/bin/env bash
# Smaller command-line conveniences (issue 15): nvcc's spellings, one
# --ir-dump-dir sequence for both pass pipelines, -v printing ptxas's report
# once, --list-kernels, --emit=meta and --save-temps.
source "$(dirname "$0")/lib.bash"
vadd=$inputs/vadd.tile
kernels=$inputs/kernels.tile

# nvcc spellings: -arch=ARCH and -arch ARCH (not -a), -lineinfo, -use_fast_math
check 0 out ".target sm_80" "$TILEC" "$vadd" -arch=sm_80 --emit=ptx -o -
check 0 out ".target sm_86" "$TILEC" "$vadd" -arch sm_86 --emit=ptx -o -
check 2 err "unknown GPU arch '--arch=sm_99'" "$TILEC" "$vadd" -arch=sm_99 --emit=ptx
check 0 out "" "$TILEC" "$vadd" -use_fast_math -lineinfo --emit=ptx -o fast.ptx
check 0 out "" "$TILEC" "$vadd" --fast-math --lineinfo --emit=ptx -o fast2.ptx
cmp -s fast.ptx fast2.ptx || fail "-use_fast_math -lineinfo differ from --fast-math --lineinfo"
check 0 out "" "$TILEC" run "$vadd" --interp -use_fast_math -arch=sm_80 x=f32[8] y=f32[8] out=f32[8] n=8

# --ir-dump-dir: the canonical and the backend pipelines number their dumps as one sequence
check 0 out "" "$TILEC" "$vadd" --ir-dump-dir=dd --emit=ptx -o /dev/null
[ "$(ls dd | grep -c '^01-')" -eq 1 ] || fail "two or more 01- dumps: $(ls dd | tr '\n' ' ')"
[ "$(ls dd | cut -c1-2 | sort -u | wc -l)" -eq "$(ls dd | wc -l)" ] || fail "dump numbers repeat: $(ls dd | tr '\n' ' ')"
[ -s dd/04-vadd__BLOCK_1024-pipeline_latency.tir ] || fail "the backend dumps do not follow the canonical ones: $(ls dd | tr '\n' ' ')"
[ -s dd/10-vadd__BLOCK_1024-layout.tir ] || fail "no dd/10-vadd__BLOCK_1024-layout.tir: $(ls dd | tr '\n' ' ')"

# -v: ptxas's report once per kernel
check 0 err "Used " "$TILEC" "$vadd" --emit=cubin -v -o v.cubin
[ "$(grep -ci 'used [0-9]* registers' stderr.txt)" -eq 1 ] || fail "-v printed the register count $(grep -ci 'used [0-9]* registers' stderr.txt) times"
grep -q "spill stores" stderr.txt || fail "-v lost the spills"

# --list-kernels: source names (.tile), symbols (.tir); nothing compiled
check 0 out "" "$TILEC" "$kernels" --list-kernels
printf 'scale_rows\ncopy_half\nfill_nogrid\n' | diff -u - stdout.txt || fail "--list-kernels on a .tile"
check 0 out "" "$TILEC" "$vadd" --emit=ir -o v.tir
check 0 out "vadd__BLOCK_1024" "$TILEC" v.tir --list-kernels
check 2 err "--save-temps goes with" "$TILEC" "$vadd" --emit=header --save-temps

# --emit=meta: JSON of every kernel
check 0 out '"symbol": "vadd__BLOCK_1024"' "$TILEC" "$vadd" --emit=meta -o -
grep -qF '{"name": "x", "type": "ptr<f32>"}' stdout.txt || fail "meta lacks the parameters"
grep -qF '"specialization": {"BLOCK": "1024"}' stdout.txt || fail "meta lacks the specialization"
grep -qF '"grid": true, "warps": 4, "threads": 128' stdout.txt || fail "meta lacks grid and threads"
grep -qF '"shared_memory": {"static": 0, "dynamic": 0}' stdout.txt || fail "meta lacks shared memory"
grep -qE '"registers": [1-9][0-9]*, "spill_stores": 0, "spill_loads": 0' stdout.txt || fail "meta lacks registers"
check 0 out '"grid": false' "$TILEC" "$kernels" --emit=meta -o -
if command -v python3 >/dev/null; then
  python3 -c 'import json,sys; d=json.load(open("stdout.txt")); assert len(d["kernels"]) == 3' || fail "meta is not JSON"
fi

# --save-temps: IR, LLVM, PTX and cubin of one compilation, in the current folder
mkdir -p st
check 0 out "" "$TILEC" "$vadd" --emit=ptx --save-temps -o st/out.ptx
for f in vadd.tir vadd.ll vadd.ptx vadd.cubin; do [ -s $f ] || fail "--save-temps wrote no $f"; done
[ "$(ls st)" = out.ptx ] || fail "--save-temps wrote beside -o: $(ls st | tr '\n' ' ')"
cmp -s st/out.ptx vadd.ptx || fail "the saved PTX is not the PTX written"
grep -q "^define .*vadd__BLOCK_1024" vadd.ll || fail "the saved LLVM IR has no kernel"
grep -q "#linear" vadd.tir || fail "the saved IR is not the laid-out IR the backend lowered"
check 0 out "" "$TILEC" vadd.tir --emit=ir -o /dev/null
rm -f vadd.tir vadd.ll vadd.ptx vadd.cubin
check 0 out "kernel @vadd__BLOCK_1024" "$TILEC" "$vadd" --save-temps --emit=ir
[ -s vadd.cubin ] && [ -s vadd.ll ] || fail "--save-temps --emit=ir did not compile to the end"
finish
