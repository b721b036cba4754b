#!/usr/bin/env bash
# The same bits at every -O and through the IR text (issue 14, defects 3-5): each kernel of
# inputs/bits.tile runs in the interpreter at -O0 and -O3, and from the .tir printed at -O0 and
# at -O3 (run without further passes); the outputs must be identical files with the expected bits.
source "$(dirname "$0")/lib.bash"
bits=$inputs/bits.tile

# last_words FILE SIZE COUNT: the last COUNT words of SIZE bytes of FILE, in hex
last_words() { tail -c $(($2 * $3)) "$1" | od -An -v -tx"$2" | tr -s ' \n' ' ' | sed 's/^ //; s/ $//'; }

# same KERNEL OUT ARGS...: runs KERNEL four ways, writing buffer OUT; all four .npy files must match
same() {
  local k=$1 o=$2
  shift 2
  check 0 out "" "$TILEC" run "$bits" --kernel "$k" -O0 --interp "$@" --grid 1 --out "$o=$k-O0.npy"
  check 0 out "" "$TILEC" run "$bits" --kernel "$k" -O3 --interp "$@" --grid 1 --out "$o=$k-O3.npy"
  for lvl in O0 O3; do
    check 0 out "" "$TILEC" "$bits" --kernel "$k" -"$lvl" --emit=ir -o "$k-$lvl.tir"
    check 0 out "" "$TILEC" run "$k-$lvl.tir" -O0 --interp "$@" --grid 1 --out "$o=$k-$lvl-tir.npy"
  done
  for f in "$k-O3.npy" "$k-O0-tir.npy" "$k-O3-tir.npy"; do
    cmp -s "$k-O0.npy" "$f" || fail "$k: $f differs from -O0: $(last_words "$f" 4 1) vs $(last_words "$k-O0.npy" 4 1)"
  done
}

# expect FILE SIZE COUNT WORDS: the last words of FILE
expect() {
  local got
  got=$(last_words "$1" "$2" "$3")
  [ "$got" = "$4" ] || fail "$1: got $got, expected $4"
}

same nan_sign o o=i32[1] o64=i64[1] o16=i16[1]
expect nan_sign-O0.npy 4 1 "ffc00000"
same nan_sign o64 o=i32[1] o64=i64[1] o16=i16[1]
expect nan_sign-O0.npy 8 1 "fff8000000000000"
same nan_sign o16 o=i32[1] o64=i64[1] o16=i16[1]
expect nan_sign-O0.npy 2 1 "fe00"
# the NaN constant is printed by its bits once folded
grep -q "const 0xffc00000 : f32" nan_sign-O3.tir || fail "nan_sign: no 0xffc00000 constant in the -O3 IR"

# 0/0 is a NaN of the host's choosing (x86: negative); maximum/minimum of it are +NaN
same max_nan o x=f32[1] o=i32[3]
n=$(last_words max_nan-O0.npy 4 3)
case $n in
  *" 7fc00000 7fc00000") ;;
  *) fail "max_nan: got $n, expected maximum and minimum 7fc00000" ;;
esac

args=(s32=0xffc12345 s64=0x7ff0000000000001 o=i32[3] o64=i64[5])
same identities o "${args[@]}"
expect identities-O0.npy 4 3 "ffc12345 ffc12345 00000000"
same identities o64 "${args[@]}"
expect identities-O0.npy 8 5 "7ff8000000000001 7ff8000000000001 7ff8000000000001 7ff8000000000001 7ff0000000000001"

same literals o a=u64[1] o=u64[3] s=i64[2]
a=$(last_words literals-O0.npy 8 3)
same literals s a=u64[1] o=u64[3] s=i64[2]
expect literals-O0.npy 8 2 "8000000000000000 7fffffffffffffff"
case $a in
  *" ffffffffffffffff 8000000000000005") ;;
  *) fail "literals: o is $a" ;;
esac
finish
