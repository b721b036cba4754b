#!/usr/bin/env bash
# tilec tune without a GPU (--interp): the search space of a kernel's tune(...) clause and of
# --space, candidates that do not compile skipped, results that differ rejected, the table
# written deterministically (a golden) and read back by --emit=header --tune-table; the launcher
# by shape compiled into C and C++ programs, its choice per shape checked, and its launches
# through the fake driver (tests/runtime/fake_cuda.c) checked by their grids; tilec_add_kernels()
# with TUNE_TABLE; and the errors of malformed spaces, shapes and tables.
source "$(dirname "$0")/lib.bash"
: "${TILERT_INCLUDE:?set TILERT_INCLUDE to the folder of tilert.h}"
: "${TILERT_LIBS:?set TILERT_LIBS to libtilert.a:libtilert_meta.a}"
read -r -a cc <<<"${CC:-cc}"
cxx=$(command -v g++ || command -v c++ || true)
san=()
for w in "${cc[@]}"; do case $w in -fsanitize=fuzzer*) ;; -fsanitize=*) san+=("$w") ;; esac; done
IFS=: read -r -a rtlibs <<<"$TILERT_LIBS"
strict=(-Wall -Wextra -Wpedantic -Werror -Wshadow -I. -I"$TILERT_INCLUDE")
cp "$inputs/tune_scale.tile" .
s1='x=f32[1000] out=f32[1000] n=1000'
s2='x=f32[100] out=f32[100] n=100'
tune=("$TILEC" tune tune_scale.tile --kernel scale --interp)

# ---- the clause's space: 6 candidates, 2 do not compile, W=3 rejected, BN=128 skipped on n=100
check 0 err "tilec tune: scale: 4 of 6 candidates compiled; 2 shapes" "${tune[@]}" --shape "$s1" --shape "$s2" \
  --poison out -o t.json
diff -u "$inputs/tune_scale.json" t.json || fail "the table differs from tests/driver/inputs/tune_scale.json"
grep -qF "tilec tune: BN=256,W=2: skipped: tune_scale.tile:9:5: error: static assertion failed" stderr.txt ||
  fail "no note on the candidate that does not compile: $(cat stderr.txt)"
grep -qF "tilec tune: shape 2, BN=128,W=2: skipped: tune_scale.tile:6:16: error: kernel 'scale': requires(...) does not hold" \
  stderr.txt || fail "no note on the candidate whose requires(...) fails: $(cat stderr.txt)"
grep -qF "tilec tune: shape 1, BN=64,W=3: rejected: 'out': " stderr.txt || fail "W=3 is not rejected: $(cat stderr.txt)"
# the same inputs give the same bytes, from a shapes file too
printf '# the two shapes\n%s\n\n  %s\n' "$s1" "$s2" > shapes.txt
check 0 out "" "${tune[@]}" --shapes shapes.txt --poison out -o t2.json
cmp -s t.json t2.json || fail "a second run (shapes from a file) wrote another table"
# to standard output, and -v prints every candidate
check 0 out '"tilec_tune_table": 1' "${tune[@]}" --shape "$s1" --poison out -v
grep -qF "tilec tune: shape 1, BN=64,W=2: ok" stderr.txt || fail "-v does not print the passing candidates"

# ---- compiling ignores the tune(...) clause: the same IR without it (same lines and columns)
sed 's/^    tune(.*$//' tune_scale.tile > untuned.tile
"$TILEC" tune_scale.tile --emit=ir | sed 1d > tuned.tir && "$TILEC" untuned.tile --emit=ir | sed 1d > untuned.tir &&
  diff -u untuned.tir tuned.tir >/dev/null || fail "the tune(...) clause changes the IR"
check 0 out "(tune BN (int 64) (int 128) (int 256))" "$TILEC" tune_scale.tile --emit=ast

# ---- the table read back: one specialization chosen for every shape, a plain launcher
check 0 out "" "$TILEC" tune_scale.tile --emit=header --embed --tune-table t.json -o one.h
grep -qF 'tilert_kernel_get(tilec_m, "scale__BN_64__W_2", &tilec_k)' one.h || fail "one.h lacks scale__BN_64__W_2"
grep -qF 'static inline tilert_status scale_launch(' one.h || fail "one.h lacks scale_launch"
grep -q 'scale_tune_entry' one.h && fail "one.h chooses by shape among one specialization"

# ---- --space replaces the clause's values: BN=128 first, so n=1000 takes it and n=100 BN=64
check 0 out "" "${tune[@]}" --space BN=128,64 --space W=2 --shape "$s1" --shape "$s2" --poison out -o two.json
grep -qF '"space": {"BN": ["128", "64"], "W": ["2"]}' two.json || fail "two.json's space: $(grep space two.json)"
[ "$(grep -c '"best": {"BN": "128", "W": "2"}' two.json)" = 1 ] && [ "$(grep -c '"best": {"BN": "64", "W": "2"}' two.json)" = 1 ] ||
  fail "two.json's choices: $(grep best two.json)"
check 0 out "" "$TILEC" tune_scale.tile --emit=header --embed --tune-table two.json -o two.h
for want in 'scale__BN_128_launch(' 'scale__BN_64_launch(' \
            'static inline int scale_tune_entry(tilert_tensor x, tilert_tensor out, int32_t n)' \
            'const int64_t tilec_key[3] = {x.shape[0], out.shape[0], (int64_t)n};' \
            'static inline tilert_status scale_launch(struct CUstream_st *stream, tilert_tensor x, tilert_tensor out,' \
            'scale_launch_grid('; do
  grep -qF -- "$want" two.h || fail "two.h lacks: $want"
done
# the same specializations as a cubin (what a header without --embed loads)
check 0 out "" "$TILEC" tune_scale.tile --emit=cubin --tune-table two.json -o two.cubin

cat > pick.c <<'C'
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include "two.h"
/* entry 0 is n=1000 (BN=128), entry 1 n=100 (BN=64): nearest in piecewise-linear log2 */
static int entry(int64_t n)
{
    tilert_tensor t = tilert_tensor1d((void *)0x100000, TILERT_F32, n);
    return scale_tune_entry(t, t, (int32_t)n);
}
int main(int argc, char **argv)
{
    const int64_t ns[] = {1000, 100, 5000, 10, 300, 400, 1, 1 << 20};
    const int want[] = {0, 1, 0, 1, 1, 0, 1, 0};
    int bad = 0;
    for (int i = 0; i < 8; i++)
        if (entry(ns[i]) != want[i]) bad = printf("n=%lld: entry %d, expected %d\n", (long long)ns[i], entry(ns[i]), want[i]);
    if (argc < 2) return bad ? 1 : 0;
    /* launches through the fake driver: the grid says which specialization ran */
    setenv("TILERT_CUDA_LIBRARY", argv[1], 1);
    void *fake = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    const uint32_t *grid = fake ? (const uint32_t *)dlsym(fake, "fake_grid") : NULL;
    if (!grid) return printf("cannot open the fake driver %s\n", argv[1]), 1;
    const uint32_t want_grid[] = {8, 2, 40, 0, 5, 4, 0, 8192};
    for (int i = 0; i < 8; i++) {
        if (!want_grid[i]) continue;
        tilert_tensor t = tilert_tensor1d((void *)0x100000, TILERT_F32, ns[i]);
        tilert_status s = scale_launch(NULL, t, t, (int32_t)ns[i]);
        if (s != TILERT_OK) bad = printf("n=%lld: %s: %s\n", (long long)ns[i], tilert_status_string(s), tilert_last_error());
        else if (grid[0] != want_grid[i]) bad = printf("n=%lld: grid %u, expected %u\n", (long long)ns[i], grid[0], want_grid[i]);
    }
    /* n=10 takes BN=64, whose requires(n >= BN) fails: the launcher says so, it does not fall back */
    tilert_tensor t = tilert_tensor1d((void *)0x100000, TILERT_F32, 10);
    if (scale_launch(NULL, t, t, 10) != TILERT_ERROR_REQUIRES) bad = printf("n=10 launched\n");
    return bad ? 1 : 0;
}
C
if "${cc[@]}" -std=c17 "${strict[@]}" pick.c "${rtlibs[@]}" -ldl -lpthread -lm -o pick 2>cc.txt; then
  ./pick >run.txt 2>&1 || fail "the launcher's choices: $(cat run.txt)"
  if [ -n "${FAKE_CUDA:-}" ]; then ./pick "$FAKE_CUDA" >run.txt 2>&1 || fail "the launches: $(cat run.txt)"; fi
else
  fail "pick.c does not build: $(head -20 cc.txt)"
fi
if [ -n "$cxx" ]; then
  cp pick.c pick.cpp
  "$cxx" -std=c++17 "${strict[@]}" "${san[@]}" -fsyntax-only pick.cpp 2>cc.txt || fail "two.h does not compile as C++: $(head -20 cc.txt)"
fi

# ---- a stdlib kernel: gemm's tune(...) clause narrowed to two tiles, checked against each other
stdlib=$(cd "$inputs/../../../stdlib" && pwd)
check 0 err "tilec tune: gemm: 2 of 2 candidates compiled; 2 shapes" "$TILEC" tune "$stdlib/gemm.tile" --kernel gemm \
  --interp --space BM=128,64 --space BN=128 --shape 'A=bf16[100,64] B=bf16[64,96] C=bf16[100,96]' \
  --shape 'A=bf16[40,80] B=bf16[80,200] C=bf16[40,200]' --poison C -o gemm.json
[ "$(grep -c '"status": "ok"' gemm.json)" = 4 ] || fail "gemm.json: $(grep status gemm.json)"
grep -qF '"key": ["A.shape[0]", "A.shape[1]", "B.shape[0]", "B.shape[1]", "C.shape[0]", "C.shape[1]"]' gemm.json ||
  fail "gemm.json's key: $(grep '"key": \[\"' gemm.json)"
check 0 out "" "$TILEC" "$stdlib/gemm.tile" --emit=header --tune-table gemm.json -o gemm_tuned.h
grep -qF 'gemm_launch(' gemm_tuned.h || fail "gemm_tuned.h has no gemm_launch"

# ---- tilec_add_kernels(TUNE_TABLE): the build-tree package, a header with the launcher by shape
if [ -n "${CMAKE_COMMAND:-}" ] && [ -n "${BUILD_DIR:-}" ] && [ -f "$BUILD_DIR/TilecConfig.cmake" ]; then
  mkdir -p app
  cp tune_scale.tile two.json app/
  cat > app/CMakeLists.txt <<'CM'
cmake_minimum_required(VERSION 3.20)
project(tuned C)
find_package(Tilec REQUIRED)
add_executable(app main.c)
tilec_add_kernels(TARGET app SOURCES tune_scale.tile TUNE_TABLE two.json ARCH sm_90a)
CM
  cat > app/main.c <<'C'
#include <stdio.h>
#include "tune_scale.h"
int main(void)
{
    tilert_tensor a = tilert_tensor1d(NULL, TILERT_F32, 1000), b = tilert_tensor1d(NULL, TILERT_F32, 100);
    printf("entries %d %d\n", scale_tune_entry(a, a, 1000), scale_tune_entry(b, b, 100));
    return 0;
}
C
  read -r -a ccw <<<"${CC:-cc}"
  check 0 out "" "$CMAKE_COMMAND" -S app -B app/build -DTilec_DIR="$BUILD_DIR" -DCMAKE_C_COMPILER="${ccw[0]}" \
    -DCMAKE_C_FLAGS="${ccw[*]:1}"
  check 0 out "" "$CMAKE_COMMAND" --build app/build
  grep -qF -- "--tune-table" app/build/build.ninja app/build/CMakeFiles/app.dir/build.make 2>/dev/null ||
    fail "the rule does not pass --tune-table"
  if [ -x app/build/app ]; then
    check 0 out "entries 0 1" ./app/build/app
  fi
  # the table is a dependency: touching it remakes the header
  sleep 1; touch app/two.json
  check 0 out "tune_scale.h" "$CMAKE_COMMAND" --build app/build
  sed -i 's/TUNE_TABLE two.json/TUNE_TABLE missing.json/' app/CMakeLists.txt
  check 1 err "TUNE_TABLE missing.json" "$CMAKE_COMMAND" -S app -B app/bad2 -DTilec_DIR="$BUILD_DIR"
fi

# ---- errors: the command line (exit 2), the space and the shapes (exit 1)
check 2 err "say which kernel to tune: --kernel NAME" "$TILEC" tune tune_scale.tile --interp --shape "$s1"
check 2 err "say where to run the candidates: --interp or --device" "$TILEC" tune tune_scale.tile --kernel scale --shape "$s1"
check 2 err "--interp and --device exclude each other" "${tune[@]}" --device --shape "$s1"
check 2 err "no shape: give --shape 'ARG ARG ...' or --shapes FILE" "${tune[@]}"
check 2 err "--space wants NAME=V1,V2,..., not 'BN'" "${tune[@]}" --space BN --shape "$s1"
check 2 err "--space 'BN=64,64' lists '64' twice" "${tune[@]}" --space BN=64,64 --shape "$s1"
check 2 err "--space 'BN=6.4': '6.4' is not an integer or a type name" "${tune[@]}" --space BN=6.4 --shape "$s1"
check 2 err "--space BN is given twice" "${tune[@]}" --space BN=64 --space BN=128 --shape "$s1"
check 2 err "--shape: 'x' is not an argument" "${tune[@]}" --shape "x out=f32[3]"
check 2 err "--shape: an empty shape" "${tune[@]}" --shape "  "
check 2 err "--shape: the shape 'x=f32[1000] out=f32[1000] n=1000' is given twice" "${tune[@]}" --shape "$s1" --shape " $s1"
check 2 err "--shapes: cannot read 'nope.txt'" "${tune[@]}" --shapes nope.txt
printf '# nothing\n\n' > empty.txt
check 2 err "--shapes: 'empty.txt' holds no shape" "${tune[@]}" --shapes empty.txt
printf '%s\noops\n' "$s1" > badshapes.txt
check 2 err "badshapes.txt:2: 'oops' is not an argument" "${tune[@]}" --shapes badshapes.txt
check 2 err "--reference wants auto, interp or first, not 'gpu'" "${tune[@]}" --reference=gpu --shape "$s1"
check 2 err "--runs wants a count in 1..1000000, not '0'" "${tune[@]}" --runs 0 --shape "$s1"
check 2 err "tilec tune takes a .tile source" "$TILEC" tune t.json --kernel scale --interp --shape "$s1"
check 1 err "--space BX: kernel 'scale' has no compile-time parameter 'BX' (it has: BN, W)" "${tune[@]}" --space BX=1 --shape "$s1"
check 1 err "-D BN=64 fixes a parameter the search space varies (BN)" "${tune[@]}" -D BN=64 --shape "$s1"
check 1 err "no kernel named 'scal'" "$TILEC" tune tune_scale.tile --kernel scal --interp --shape "$s1"
check 1 err "no candidate of kernel 'scale' compiled (the first: BN=256,W=2: tune_scale.tile:9:5: error: static assertion" \
  "${tune[@]}" --space BN=256 --shape "$s1"
check 1 err "shape 1 ('x=f32[10] out=f32[10] n=10'): no candidate passed (the first note: tune_scale.tile:6:16: error: kernel 'scale': requires(...) does not hold" \
  "${tune[@]}" --space BN=64,128 --space W=2 --shape 'x=f32[10] out=f32[10] n=10'
check 1 err "no candidate passed (the first note: kernel 'scale' has no parameter 'y'" \
  "${tune[@]}" --shape 'y=f32[10] out=f32[10] n=10'
check 1 err "shapes 1 and 2 have the same key" "${tune[@]}" --space BN=64 --space W=2 --shape "$s1" \
  --shape 'out=f32[1000] x=f32[1000] n=1000'
check 1 err "cannot run on the GPU" env TILERT_CUDA_LIBRARY=/nonexistent/libcuda.so.1 "$TILEC" tune tune_scale.tile \
  --kernel scale --device --shape "$s1"
# the device path through the fake driver, which runs nothing: a poisoned output stays poisoned;
# without --poison the buffers differ from the interpreter's; with --reference=first the first
# candidate has nothing to differ from, and its timing needs CUDA events, which the fake lacks
if [ -n "${FAKE_CUDA:-}" ]; then
  dev=(env TILERT_CUDA_LIBRARY="$FAKE_CUDA" "$TILEC" tune tune_scale.tile --kernel scale --device --shape "$s1")
  check 1 err "shape 1, BN=64,W=2: rejected: left 1000 of 1000 elements of 'out' unwritten" "${dev[@]}" --poison out
  grep -qF "tilec tune: Fake H200 (compute capability 9.0, 132 SMs), compiling for sm_90a" stderr.txt ||
    fail "the device is not named: $(head -3 stderr.txt)"
  check 1 err "rejected: 'out': 986 of 1000 elements differ from the interpreter's run of BN=64,W=2" "${dev[@]}" \
    --space BN=64 --space W=2
  check 1 err "rejected: timing failed: cannot time on the GPU: the CUDA driver has no cuEventCreate" "${dev[@]}" \
    --space BN=64 --space W=2 --reference=first
fi
# the table's errors beside tests/errors/tune
check 2 err "--kernel gemm, but the tuning table 'two.json' tunes 'scale'" "$TILEC" tune_scale.tile --tune-table two.json --kernel gemm
check 2 err "--spec and --tune-table exclude each other" "$TILEC" tune_scale.tile --tune-table two.json --spec BN=64
check 2 err "-D BN=64 fixes a parameter the tuning table 'two.json' chooses" "$TILEC" tune_scale.tile --tune-table two.json -D BN=64
check 0 out "" "$TILEC" tune_scale.tile --emit=ir -o scale.tir
check 2 err "--tune-table sets compile-time parameters of a .tile source" "$TILEC" scale.tir --tune-table two.json
check 1 err "cannot read the tuning table 'nope.json': No such file or directory" "$TILEC" tune_scale.tile --tune-table nope.json
echo '[1, 2]' > arr.json
check 1 err "arr.json:1:1: error: a tuning table is a JSON object" "$TILEC" tune_scale.tile --tune-table arr.json
sed 's/"tilec_tune_table": 1/"tilec_tune_table": 2/' two.json > v2.json
check 1 err "not a tuning table of this tilec: \"tilec_tune_table\": 1 is expected" "$TILEC" tune_scale.tile --tune-table v2.json
sed 's/"key": \[100, 100, 100\]/"key": [1000, 1000, 1000]/' two.json > same.json
check 1 err "entries 1 and 2 have the same key" "$TILEC" tune_scale.tile --tune-table same.json
sed 's/"best": {"BN": "64", "W": "2"}/"best": {"BN": 64}/' two.json > num.json
check 1 err "the entry's \"best\": \"BN\" must name a compile-time parameter and give it an integer or a type name as a string" \
  "$TILEC" tune_scale.tile --tune-table num.json
finish
