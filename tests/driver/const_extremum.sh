#!/usr/bin/env bash
# maximum and minimum of compile-time numbers are compile-time numbers (like a + b): a const and
# a parameter default may use them (the review of session 14: they were i32 values there, and
# "must be a compile-time integer"); integers stay integers, a float operand gives a float.
source "$(dirname "$0")/lib.bash"
cat > mm.tile <<'T'
const C = maximum(3, 5);
const F = minimum(2, 0.5);
kernel k<A: int = maximum(2, C - 1), B: int = minimum(16, 2 * C), N: int = maximum(-7, minimum(C, 4))>(
    x: ptr<f32>) grid(1)
{
    print("sum", sum(zeros<f32>([A]) + B + N * 100, 0));
    print("f", F + maximum(1, 2));
}
T
for o in -O0 -O3; do
  check 0 out "" "$TILEC" run mm.tile --kernel k --interp $o x=f32[1]
  grep -q "sum: 1640$" stdout.txt || fail "$o: A = 4, B = 10, N = 4 expected: $(tr '\n' ' ' < stdout.txt)"
  grep -q "f: 2.5$" stdout.txt || fail "$o: F = 0.5, maximum(1, 2) = 2 expected: $(tr '\n' ' ' < stdout.txt)"
done
# the spec names the folded values
"$TILEC" mm.tile --emit=ir -o ir.txt || fail "--emit=ir"
grep -q 'spec(A = "4", B = "10", N = "4")' ir.txt || fail "spec: $(grep spec ir.txt)"
# a bool is not a number here
cat > bad.tile <<'T'
kernel k<A: int = maximum(true, 2)>(x: ptr<f32>) grid(1) { store(x, 1.0); }
T
check 1 err "compile-time integer" "$TILEC" bad.tile --emit=ir -o ir2.txt
finish
