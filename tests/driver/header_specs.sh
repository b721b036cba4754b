#!/usr/bin/env bash
# Headers for libraries: several specializations (--spec) in one module, cubin and header, with
# launchers named apart (K__P_V) and, where only type parameters differ, K_launch choosing one
# from the arguments' dtypes (tilert_kernel_select); two specializations in one translation unit
# under -Wall -Wextra -Wpedantic -Werror as C and C++; --embed-c (the cubin in a .c); several archs
# in one header (--arch=sm_80,sm_89,sm_90a).
source "$(dirname "$0")/lib.bash"
: "${TILERT_INCLUDE:?set TILERT_INCLUDE to the folder of tilert.h}"
: "${TILERT_LIBS:?set TILERT_LIBS to libtilert.a:libtilert_meta.a}"
read -r -a cc <<<"${CC:-cc}"
cxx=$(command -v g++ || command -v c++ || true)
# the sanitizer flags of $CC (a sanitized build's libtilert needs their runtime at link time), for C++
san=()
for w in "${cc[@]}"; do case $w in -fsanitize=fuzzer*) ;; -fsanitize=*) san+=("$w") ;; esac; done
IFS=: read -r -a rtlibs <<<"$TILERT_LIBS"
scale=$inputs/scale.tile
strict=(-Wall -Wextra -Wpedantic -Werror -Wshadow -I. -I"$TILERT_INCLUDE")
nodrv=/nonexistent/libcuda.so.1

# builds PROGRAM from SOURCES as C (c17) and, with a C++ compiler, the .c files as C++ too
build() {
  local out=$1; shift
  "${cc[@]}" -std=c17 "${strict[@]}" "$@" "${rtlibs[@]}" -ldl -lpthread -lm -o "$out" 2>cc.txt ||
    { fail "$out does not build as C:"; sed 's/^/    /' cc.txt | head -20; return 1; }
  if [ -n "$cxx" ]; then
    local objs=() f
    for f in "$@"; do
      cp "$f" "cxx_$f.cpp" && "$cxx" -std=c++17 "${strict[@]}" "${san[@]}" -c "cxx_$f.cpp" -o "cxx_$f.o" 2>cc.txt ||
        { fail "$f does not compile as C++:"; sed 's/^/    /' cc.txt | head -20; return 1; }
      objs+=("cxx_$f.o")
    done
    "$cxx" "${san[@]}" "${objs[@]}" "${rtlibs[@]}" -ldl -lpthread -lm -o "$out.cxx" 2>cc.txt ||
      { fail "$out does not link as C++:"; sed 's/^/    /' cc.txt | head -20; return 1; }
  fi
}
# runs PROGRAM with the driver forced missing: the no-GPU error, exit 77
no_gpu() {
  TILERT_CUDA_LIBRARY=$nodrv "$1" >run.txt 2>&1
  local rc=$?
  [ $rc -eq 77 ] || fail "$1 exited $rc without a driver (expected 77): $(cat run.txt)"
  grep -qF "TILERT_ERROR_NO_DRIVER: no CUDA driver: cannot open $nodrv" run.txt || fail "$1: $(cat run.txt)"
}

# ---- int parameters: two specializations, launchers named by the parameter that differs
check 0 out "" "$TILEC" "$scale" --spec BN=64 --spec BN=128 --emit=header --embed -o bn.h
for want in 'scale__BN_64_launch(struct CUstream_st *stream, tilert_tensor x,' \
            'scale__BN_128_launch(' 'scale__BN_64_launch_grid(' 'tilert_kernel *kernels[2];' \
            'tilert_kernel_get(tilec_m, "scale__T_f32__BN_64", &tilec_k)' \
            'tilert_kernel_get(tilec_m, "scale__T_f32__BN_128", &tilec_k)'; do
  grep -qF -- "$want" bn.h || fail "bn.h lacks: $want"
done
grep -q "scale_launch(" bn.h && fail "BN does not show in the arguments, yet bn.h has a choosing scale_launch"
cat > two.c <<'C'
#include <stdio.h>
#include "bn.h"
int main(void)
{
    tilert_tensor t = tilert_tensor1d(NULL, TILERT_F32, 0);
    tilert_status a = scale__BN_64_launch(NULL, t, t, 0);
    tilert_status b = scale__BN_128_launch(NULL, t, t, 0);
    printf("%s: %s\n", tilert_status_string(b), tilert_last_error());
    if (a != b) return 1;
    return a == TILERT_ERROR_NO_DRIVER || a == TILERT_ERROR_NO_DEVICE ? 77 : a == TILERT_OK ? 0 : 1;
}
C
build two two.c && no_gpu ./two

# ---- type parameters: K_launch chooses by the tensors' dtypes; checked on the module without a driver
check 0 out "" "$TILEC" "$scale" --spec T=f16 --spec T=bf16 --spec T=f32 --emit=header --embed -o ty.h
for want in 'scale__T_f16_launch(' 'scale__T_bf16_launch(' 'scale__T_f32_launch(' \
            'static inline tilert_status scale_launch(struct CUstream_st *stream, tilert_tensor x, tilert_tensor out,' \
            'scale_launch_grid(' 'tilert_kernel_select(tilec_ks, 3, tilec_args, 3, &tilec_i)'; do
  grep -qF -- "$want" ty.h || fail "ty.h lacks: $want"
done
cat > choose.c <<'C'
#include <stdio.h>
#include <string.h>
#include "ty.h"
/* which of the module's kernels takes (x, out, n) of dtype dt; -1 and the message when none or several */
static int pick(tilert_kernel *const *ks, int n, tilert_dtype dt, tilert_dtype dt_out)
{
    tilert_arg args[3] = {tilert_arg_tensor(tilert_tensor1d(NULL, dt, 16)),
                          tilert_arg_tensor(tilert_tensor1d(NULL, dt_out, 16)), tilert_arg_i32(16)};
    int i = -1;
    tilert_status s = tilert_kernel_select(ks, n, args, 3, &i);
    if (s != TILERT_OK) printf("%s: %s\n", tilert_status_string(s), tilert_last_error());
    return s == TILERT_OK ? i : -1;
}
int main(void)
{
    size_t size = 0;
    const void *image = ty_tilec_image(&size);
    tilert_module *m;
    if (tilert_module_inspect_data(image, size, &m) != TILERT_OK) return printf("%s\n", tilert_last_error()), 1;
    const char *syms[3] = {"scale__T_f16__BN_128", "scale__T_bf16__BN_128", "scale__T_f32__BN_128"};
    tilert_kernel *ks[3];
    for (int i = 0; i < 3; i++)
        if (tilert_kernel_get(m, syms[i], &ks[i]) != TILERT_OK) return printf("%s\n", tilert_last_error()), 1;
    int ok = pick(ks, 3, TILERT_F16, TILERT_F16) == 0 && pick(ks, 3, TILERT_BF16, TILERT_BF16) == 1 &&
             pick(ks, 3, TILERT_F32, TILERT_F32) == 2;
    ok = ok && pick(ks, 3, TILERT_F16, TILERT_F32) == -1 && strstr(tilert_last_error(), "no specialization");
    ok = ok && pick(ks, 2, TILERT_F32, TILERT_F32) == -1;
    /* the same kernel twice: the arguments do not determine it */
    tilert_kernel *same[2] = {ks[2], ks[2]};
    ok = ok && pick(same, 2, TILERT_F32, TILERT_F32) == -1 && strstr(tilert_last_error(), "do not determine");
    tilert_module_unload(m);
    /* the choosing launcher itself needs the driver */
    tilert_tensor t = tilert_tensor1d(NULL, TILERT_BF16, 0);
    tilert_status s = scale_launch(NULL, t, t, 0);
    printf("%s: %s\n", tilert_status_string(s), tilert_last_error());
    if (!ok) return 1;
    return s == TILERT_ERROR_NO_DRIVER || s == TILERT_ERROR_NO_DEVICE ? 77 : s == TILERT_OK ? 0 : 1;
}
C
build choose choose.c && { no_gpu ./choose; grep -q "do not determine\|no specialization" run.txt ||
  fail "choose printed no refusal: $(cat run.txt)"; }

# ---- both at once: names carry every parameter that differs; no chooser (BN differs too)
check 0 out "" "$TILEC" "$scale" --spec T=f16,BN=64 --spec T=bf16,BN=64 --spec T=bf16,BN=128 --emit=header --embed -o mix.h
for want in 'scale__T_f16__BN_64_launch(' 'scale__T_bf16__BN_64_launch(' 'scale__T_bf16__BN_128_launch('; do
  grep -qF -- "$want" mix.h || fail "mix.h lacks: $want"
done
grep -q "scale_launch(" mix.h && fail "mix.h has a choosing scale_launch though BN differs"

# ---- --embed-c: the bytes in a .c, declared by the header; two translation units share them
check 0 out "" "$TILEC" "$scale" --spec BN=64 --spec BN=128 --emit=header --embed-c=bn_image.c -o bnc.h
grep -q "127,69,76,70," bnc.h && fail "--embed-c left the cubin bytes in the header"
grep -q "127,69,76,70," bn_image.c || fail "bn_image.c lacks the cubin bytes"
grep -qF "extern const unsigned char bnc_tilec_cubin[];" bnc.h || fail "bnc.h does not declare the cubin"
[ "$(wc -c < bnc.h)" -lt 20000 ] || fail "bnc.h is $(wc -c < bnc.h) bytes: the cubin is still in it"
check 0 out "" "$TILEC" "$scale" --spec BN=64 --spec BN=128 --emit=cubin -o bn.cubin
grep -qF "bnc_tilec_cubin[$(wc -c < bn.cubin)]" bn_image.c || fail "bn_image.c's array is not the cubin's size"
sed 's/"bn.h"/"bnc.h"/' two.c > twoc.c
printf '#include "bnc.h"\nint other(void);\nint other(void) { return bnc_module(NULL) == TILERT_OK; }\n' > other.c
build twoc twoc.c other.c bn_image.c && no_gpu ./twoc

# ---- several archs in one header (with two specializations): one image per arch, the right one
# of each arch; the loader picks by the device (tilert_module_load_best, tests/runtime fakedrv)
check 0 out "" "$TILEC" "$scale" --spec BN=64 --spec BN=128 --arch=sm_80,sm_89,sm_90a --emit=header --embed -o ma.h
for want in 'ma_tilec_image_sm_80(size_t *size)' 'ma_tilec_image_sm_89(size_t *size)' \
            'ma_tilec_image_sm_90a(size_t *size)' 'tilert_module_load_best(tilec_images, tilec_sizes, 3, &tilec_m, NULL)' \
            '--embed --arch=sm_80,sm_89,sm_90a' 'scale__BN_64_launch(' 'scale__BN_128_launch('; do
  grep -qF -- "$want" ma.h || fail "ma.h lacks: $want"
done
for a in sm_80 sm_89 sm_90a; do
  check 0 out "" "$TILEC" "$scale" --spec BN=64 --spec BN=128 --arch=$a --emit=cubin -o $a.cubin
  grep -qF "image[$(wc -c < $a.cubin)]" ma.h || fail "ma.h has no $a image of $a.cubin's size"
done
cat > archs.c <<'C'
#include <stdio.h>
#include <string.h>
#include "ma.h"
/* each image is the module for its arch, with both specializations */
static int is(const void *img, size_t n, const char *arch)
{
    tilert_module *m;
    tilert_kernel *k;
    if (tilert_module_inspect_data(img, n, &m) != TILERT_OK) return 0;
    int ok = strcmp(tilert_module_arch(m), arch) == 0 && tilert_module_kernel_count(m) == 2 &&
             tilert_kernel_get(m, "scale__T_f32__BN_64", &k) == TILERT_OK;
    tilert_module_unload(m);
    return ok;
}
int main(void)
{
    size_t n80, n89, n90;
    const void *a = ma_tilec_image_sm_80(&n80), *b = ma_tilec_image_sm_89(&n89), *c = ma_tilec_image_sm_90a(&n90);
    if (!is(a, n80, "sm_80") || !is(b, n89, "sm_89") || !is(c, n90, "sm_90a")) return printf("images\n"), 1;
    tilert_tensor t = tilert_tensor1d(NULL, TILERT_F32, 0);
    tilert_status s = scale__BN_64_launch(NULL, t, t, 0);
    printf("%s: %s\n", tilert_status_string(s), tilert_last_error());
    return s == TILERT_ERROR_NO_DRIVER || s == TILERT_ERROR_NO_DEVICE ? 77 : s == TILERT_OK ? 0 : 1;
}
C
build archs archs.c && no_gpu ./archs
# and with --embed-c: every image in the .c
check 0 out "" "$TILEC" "$scale" --arch=sm_80,sm_90a --emit=header --embed-c=mac_image.c -o mac.h
grep -qF "mac_tilec_cubin_sm_80[" mac_image.c && grep -qF "mac_tilec_cubin_sm_90a[" mac_image.c ||
  fail "mac_image.c lacks an arch's image"
grep -q "127,69,76,70," mac.h && fail "--embed-c with several archs left bytes in the header"
cat > macmain.c <<'C'
#include <stdio.h>
#include "mac.h"
int main(void)
{
    tilert_tensor t = tilert_tensor1d(NULL, TILERT_F32, 0);
    tilert_status s = scale_launch(NULL, t, t, 0);
    printf("%s: %s\n", tilert_status_string(s), tilert_last_error());
    return s == TILERT_ERROR_NO_DRIVER || s == TILERT_ERROR_NO_DEVICE ? 77 : 1;
}
C
build macmain macmain.c mac_image.c && no_gpu ./macmain

# ---- errors
check 2 err "--spec wants NAME=VALUE[,NAME=VALUE...], not 'BN'" "$TILEC" "$scale" --spec BN
check 2 err "--spec 'BN=1,BN=2' sets BN twice" "$TILEC" "$scale" --spec BN=1,BN=2
check 1 err "--spec 'BN=64': the same specialization as an earlier --spec" "$TILEC" "$scale" --spec BN=64 --spec BN=64
check 1 err "--spec 'BX=64': BX: no kernel has a compile-time parameter named 'BX'" "$TILEC" "$scale" --spec BX=64
check 0 out "" "$TILEC" "$scale" --emit=ir -o scale.tir
check 2 err "--spec sets compile-time parameters of a .tile source" "$TILEC" scale.tir --spec BN=64
check 2 err "--cubin-path and --embed exclude each other" "$TILEC" "$scale" --emit=header --embed-c=x.c --cubin-path=y
check 2 err "--embed goes with --emit=header" "$TILEC" "$scale" --emit=cubin --embed-c=x.c
check 2 err "several archs (--arch=sm_80,...) go with --emit=header --embed or --embed-c" \
  "$TILEC" "$scale" --arch=sm_80,sm_90a --emit=cubin
check 2 err "unknown GPU arch 'sm_75' in '--arch=sm_80,sm_75'" "$TILEC" "$scale" --arch=sm_80,sm_75 --emit=header --embed
check 2 err "--arch=sm_80,sm_80 names sm_80 twice" "$TILEC" "$scale" --arch=sm_80,sm_80 --emit=header --embed
finish
