#!/usr/bin/env bash
# Bad code-generation options: exit 2, one line saying what and a hint.
source "$(dirname "$0")/lib.bash"
vadd=$inputs/vadd.tile

check 2 err "unknown GPU arch '--arch=sm_75' (use sm_80, sm_86, sm_89, sm_90 or sm_90a)" \
  "$TILEC" "$vadd" --emit=ptx --arch=sm_75
check 2 err "unknown GPU arch '--arch=sm90a'" "$TILEC" "$vadd" --emit=cubin --arch sm90a
check 2 err "unknown GPU arch '--arch='" "$TILEC" "$vadd" --arch=
check 2 err "option '--arch' needs a value" "$TILEC" "$vadd" --arch
check 2 err "unknown optimization level '-O4' (use -O0, -O1, -O2 or -O3)" "$TILEC" "$vadd" -O4
check 2 err "unknown optimization level '-Ofast'" "$TILEC" "$vadd" -Ofast
check 2 err "--emit wants tokens, ast, ir, llvm, ptx, cubin, header or meta, not 'sass'" "$TILEC" "$vadd" --emit=sass
check 2 err "--embed goes with --emit=header" "$TILEC" "$vadd" --emit=cubin --embed
check 2 err "--cubin-path goes with --emit=header" "$TILEC" "$vadd" --cubin-path=x.cubin
check 2 err "--module-name goes with --emit=header" "$TILEC" "$vadd" --module-name=m
check 2 err "--cubin-path and --embed exclude each other" "$TILEC" "$vadd" --emit=header --embed --cubin-path=x
check 2 err "--module-name wants a C identifier, not '9lives'" "$TILEC" "$vadd" --emit=header --module-name=9lives
"$TILEC" "$vadd" -O0 -o v.tir || fail "making v.tir"
check 2 err "--emit=ast needs a .tile input" "$TILEC" v.tir --emit=ast
# every usage error is two lines
for bad in --arch=sm_75 -O9 --emit=sass --embed; do
  "$TILEC" "$vadd" $bad 2>two.txt
  [ "$(wc -l < two.txt)" -eq 2 ] || fail "usage error for $bad printed $(wc -l < two.txt) lines"
done

# the run and bench commands share the options, and refuse each other's
check 2 err "unknown GPU arch '--arch=sm_70' (use sm_80, sm_86, sm_89, sm_90 or sm_90a)" \
  "$TILEC" run "$vadd" --device --arch=sm_70 n=1
check 2 err "unknown GPU arch '--arch=sm_100a' (use sm_80, sm_86, sm_89, sm_90 or sm_90a)" \
  "$TILEC" bench "$vadd" --arch=sm_100a n=1
# the help texts print the table too
check 0 out "--arch=sm_80|sm_86|sm_89|sm_90|sm_90a" "$TILEC" run --help
check 0 out "(--device) the arch to compile for (default: the GPU's)" "$TILEC" run --help
check 0 out "the GPU to compile for (default: sm_90a)" "$TILEC" --help
check 2 err "--runs is an option of tilec bench" "$TILEC" run "$vadd" --interp --runs 5 n=1
check 2 err "--out is an option of tilec run" "$TILEC" bench "$vadd" --out x=x.npy n=1
check 2 err "--interp is an option of tilec run" "$TILEC" bench "$vadd" --interp n=1
check 2 err "--runs wants a count in 1..1000000, not '0'" "$TILEC" bench "$vadd" --runs 0 n=1
check 2 err "--warmup wants a count in 0..1000000, not 'x'" "$TILEC" bench "$vadd" --warmup x n=1
check 2 err "no input file" "$TILEC" bench
check 0 out "usage: tilec bench" "$TILEC" bench --help
for opt in "--runs N" "--warmup N" "--no-flush" "--bytes EXPR" "--flops EXPR" "x=f32[4096,4096]"; do
  grep -qF -- "$opt" stdout.txt || fail "tilec bench --help does not mention $opt"
done
check 0 out "" "$TILEC" --help
for opt in "--emit=tokens|ast|ir|llvm|ptx|cubin|header" "--arch=sm_80|sm_86|sm_89|sm_90|sm_90a" "-O0, -O1, -O2, -O3" \
           "-g " "-lineinfo" "--no-lineinfo" "--embed" "--cubin-path=PATH" "--module-name=NAME" "tilec bench" \
           "STEM.cubin" "layout"; do
  grep -qF -- "$opt" stdout.txt || fail "tilec --help does not mention $opt"
done
finish
