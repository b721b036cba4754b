#!/usr/bin/env bash
# --emit=header [--embed]: a header that compiles as C and C++ with -Wall -Wextra -Werror,
# links with libtilert alone, and fails clearly at run time without a GPU.
source "$(dirname "$0")/lib.bash"
: "${TILERT_INCLUDE:?set TILERT_INCLUDE to the folder of tilert.h}"
: "${TILERT_LIBS:?set TILERT_LIBS to libtilert.a:libtilert_meta.a}"
read -r -a cc <<<"${CC:-cc}"   # may carry flags: "cc -fsanitize=address,undefined"
cxx=$(command -v c++ || command -v g++ || command -v clang++ || true)
IFS=: read -r -a rtlibs <<<"$TILERT_LIBS"
vadd=$inputs/vadd.tile
kernels=$inputs/kernels.tile
flags=(-Wall -Wextra -Werror -Wshadow -I. -I"$TILERT_INCLUDE")
cflags=(-Wstrict-prototypes -Wmissing-prototypes)

# has HEADER TEXT: the header holds TEXT, with line breaks and runs of spaces read as one space
has() { tr -s ' \n' '  ' < "$1" | grep -qF -- "$2"; }

# compiles HEADER as C (c99, c17) and C++ (c++11, c++17), included twice, with a main that calls CALL
compiles() {
  local hdr=$1 call=$2
  printf '#include "%s"\n#include "%s"\nint main(void) { return (%s) == TILERT_OK ? 0 : 1; }\n' \
    "$hdr" "$hdr" "$call" > use_$hdr.c
  for std in c99 c17; do
    "${cc[@]}" -std=$std -pedantic "${flags[@]}" "${cflags[@]}" -c use_$hdr.c -o use.o 2>cc.txt \
      || { fail "$hdr does not compile as $std:"; sed 's/^/    /' cc.txt | head -20; }
  done
  if [ -n "$cxx" ]; then
    cp use_$hdr.c use_$hdr.cpp
    for std in c++11 c++17; do
      "$cxx" -std=$std "${flags[@]}" -Wmissing-declarations -c use_$hdr.cpp -o use.o 2>cc.txt \
        || { fail "$hdr does not compile as $std:"; sed 's/^/    /' cc.txt | head -20; }
    done
  fi
}

# --embed: the cubin inside; include guards, extern "C", typed parameters
check 0 out "" "$TILEC" "$vadd" --emit=header --embed -o vadd.h
for want in '#ifndef TILEC_VADD_H' 'extern "C" {' \
            'static inline tilert_status vadd_launch(struct CUstream_st *stream, float *x, float *y, float *out, int32_t n)' \
            'vadd_launch_grid(struct CUstream_st *stream, const uint32_t grid[3], float *x' \
            'tilert_kernel_get(tilec_m, "vadd__BLOCK_1024", &tilec_k)' 'tilert_module_load_data(' \
            '127,69,76,70,' 'BLOCK=1024'; do
  has vadd.h "$want" || fail "vadd.h lacks: $want"
done
grep -q "set_cubin_path" vadd.h && fail "an embedded header has set_cubin_path"
compiles vadd.h "vadd_launch(NULL, NULL, NULL, NULL, 4)"
# to stdout without -o; the module name follows -o, else the input
check 0 out "#ifndef TILEC_VADD_H" "$TILEC" "$vadd" --emit=header --embed
check 0 out "" "$TILEC" "$vadd" --emit=header --embed -o other-name.h
grep -q "#ifndef TILEC_OTHER_NAME_H" other-name.h || fail "-o other-name.h: guard not TILEC_OTHER_NAME_H"
grep -q "other_name_module(tilert_module \*\*out)" other-name.h || fail "-o other-name.h: no other_name_module()"
check 0 out "mymod_unload(void)" "$TILEC" "$vadd" --emit=header --module-name=mymod
# the embedded bytes are the cubin's
check 0 out "" "$TILEC" "$vadd" --emit=cubin -o vadd.cubin
size=$(wc -c < vadd.cubin)
grep -qF "static const unsigned char image[$size]" vadd.h || fail "the embedded image is not $size bytes"
first=$(od -An -tu1 -w24 -N24 vadd.cubin | tr -s ' ' | sed 's/^ //; s/ /,/g'),
grep -qF -- "$first" vadd.h || fail "the embedded image does not start like vadd.cubin ($first)"

# linked with libtilert alone, it runs and reports the missing GPU (or, with one, launches)
printf '%s\n' '#include <stdio.h>' '#include "vadd.h"' \
  'int main(void) {' \
  '    tilert_status s = vadd_launch(NULL, NULL, NULL, NULL, 0);' \
  '    printf("%s: %s\n", tilert_status_string(s), tilert_last_error());' \
  '    return s == TILERT_OK ? 0 : 3;' '}' > run_vadd.c
if "${cc[@]}" "${flags[@]}" run_vadd.c "${rtlibs[@]}" -ldl -lpthread -lm -o run_vadd 2>cc.txt; then
  ./run_vadd > run.txt; rc=$?
  if [ $rc -eq 3 ]; then
    grep -qE "TILERT_ERROR_(NO_DRIVER|NO_DEVICE|ARG_)" run.txt || fail "without a GPU: $(cat run.txt)"
  elif [ $rc -ne 0 ]; then
    fail "run_vadd exited $rc: $(cat run.txt)"
  fi
else
  fail "run_vadd does not link:"; sed 's/^/    /' cc.txt | head
fi

# without --embed: the cubin from a file, the default path, set_cubin_path
check 0 out "" "$TILEC" "$vadd" --emit=header -o vadd_file.h
grep -qF 'static char vadd_file_tilec_path[4096] = "vadd.cubin";' vadd_file.h || fail "vadd_file.h: default path"
grep -qF 'tilert_module_load_file(vadd_file_tilec_path' vadd_file.h || fail "vadd_file.h does not load the file"
compiles vadd_file.h "vadd_file_set_cubin_path(\"k.cubin\") == TILERT_OK ? vadd_launch(NULL, NULL, NULL, NULL, 4) : TILERT_OK"
check 0 out 'tilec_path[4096] = "/opt/k \"1\".cubin"' "$TILEC" "$vadd" --emit=header '--cubin-path=/opt/k "1".cubin'
printf '%s\n' '#include <stdio.h>' '#include "vadd_file.h"' \
  'int main(int argc, char **argv) {' \
  '    if (argc > 1 && vadd_file_set_cubin_path(argv[1]) != TILERT_OK) return 4;' \
  '    tilert_status s = vadd_launch(NULL, NULL, NULL, NULL, 0);' \
  '    printf("%s: %s\n", tilert_status_string(s), tilert_last_error());' \
  '    return s == TILERT_OK ? 0 : 3;' '}' > run_file.c
if "${cc[@]}" "${flags[@]}" run_file.c "${rtlibs[@]}" -ldl -lpthread -lm -o run_file 2>cc.txt; then
  ./run_file missing/none.cubin > run.txt
  grep -qE "TILERT_ERROR_(IO|NO_DRIVER|NO_DEVICE)" run.txt || fail "a missing cubin: $(cat run.txt)"
  grep -q "TILERT_ERROR_IO" run.txt && { grep -q "none.cubin" run.txt || fail "the I/O error does not name the file"; }
else
  fail "run_file does not link:"; sed 's/^/    /' cc.txt | head
fi

# several kernels; one without grid(...) has only _launch_grid; tensors, f16 pointers, f32 scalars
check 0 out "" "$TILEC" "$kernels" --emit=header --embed -o kernels.h
for want in 'scale_rows_launch(struct CUstream_st *stream, tilert_tensor x, tilert_tensor y, float a)' \
            'copy_half_launch(struct CUstream_st *stream, void *x, void *out, int32_t n)' \
            'fill_nogrid_launch_grid(struct CUstream_st *stream, const uint32_t grid[3], int32_t *out, int32_t v)' \
            'tilert_arg_tensor(x)' 'tilert_arg_ptr((void *)x, TILERT_F16)' 'tilert_arg_f32(a)' \
            'tilert_module *module;' 'tilert_kernel *kernels[3];'; do
  has kernels.h "$want" || fail "kernels.h lacks: $want"
done
grep -q "fill_nogrid_launch(" kernels.h && fail "fill_nogrid has no grid clause, yet a _launch"
compiles kernels.h "fill_nogrid_launch_grid(NULL, (const uint32_t[3]){1, 1, 1}, NULL, 3)"

# parameter names that are C/C++ keywords or the function's own become NAME_
check 0 out "" "$TILEC" "$inputs/names.tile" --emit=header --embed -o names.h
for want in 'float *stream_' 'tilert_tensor class_' 'int32_t grid_' 'float new_' 'int8_t int8' 'uint64_t big' \
            'bool flag' 'uint8_t small' 'double wide' 'void *names_kernel_' 'tilert_arg_bool(flag ? 1 : 0)' \
            'tilert_arg_bits(TILERT_F8E4M3, (uint64_t)small)' 'tilert_arg_u64((uint64_t)big)' \
            'tilert_arg_i64((int64_t)int8)' 'tilert_arg_f64(wide)'; do
  has names.h "$want" || fail "names.h lacks: $want"
done
compiles names.h "names_kernel(NULL)"

# two specializations of one kernel (a .tir holding both) are told apart by symbol
"$TILEC" "$vadd" -D BLOCK=256 -O0 -o a.tir && "$TILEC" "$vadd" -D BLOCK=512 -O0 -o b.tir || fail "making the .tir"
cat a.tir b.tir > two.tir
check 0 out "" "$TILEC" two.tir --emit=header --embed -o two.h
grep -q "vadd__BLOCK_256_launch(" two.h && grep -q "vadd__BLOCK_512_launch(" two.h \
  || fail "two specializations are not named by symbol"
compiles two.h "vadd__BLOCK_256_launch(NULL, NULL, NULL, NULL, 1)"
finish
