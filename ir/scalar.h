/* scalar.h: the language's scalar arithmetic (lang/SEMANTICS.md), one element at a time.
 *
 * The interpreter evaluates every elementwise op on numbers through
 * ir_scalar_eval, and constant folding (passes/fold.c) folds an op by calling
 * the same function on its constant operands: what the interpreter computes
 * is what folding produces, by construction.  Pointers are not scalars here
 * (the interpreter keeps its own encoding of them).
 *
 * An IrScalar is one element of a dtype that travels beside it:
 *   integers  .i, canonical: int_wrap of the dtype (signed sign-extended,
 *             unsigned zero-extended, u64 as its bit pattern, i1 0 or 1)
 *   floats    .f, a double exactly representable in the dtype (fp_round after
 *             every op; an op's result is rounded once).  f32 and f64 NaNs
 *             keep their sign and payload; f16, bf16 and fp8 NaNs are the
 *             format's quiet NaN with the sign kept (fpconv.h).
 */
#ifndef TILEC_SCALAR_H
#define TILEC_SCALAR_H

#include <stdint.h>

#include "ir.h"

typedef union IrScalar {
    int64_t i;
    double f;
} IrScalar;

typedef enum IrScalarStatus {
    IR_SCALAR_OK,
    IR_SCALAR_DIV_ZERO,   /* integer division or remainder by zero: a run-time error */
    IR_SCALAR_NOT_SCALAR, /* the op is not an elementwise op on numbers (ir_scalar_eval) */
} IrScalarStatus;

/* x made canonical for dt: int_wrap (i1: x != 0) or fp_round. */
IrScalar ir_scalar_canon(DType dt, IrScalar x);
/* The value of a CONST of dtype dt with attribute a. */
IrScalar ir_scalar_of_attr(DType dt, const IrAttr *a);

/* The bits of x as memory holds them (dt_bytes(dt) bytes, the rest 0), and back
 * (an i1 byte is true when nonzero). */
uint64_t ir_scalar_bits(DType dt, IrScalar x);
IrScalar ir_scalar_from_bits(DType dt, uint64_t bits);
/* The identical element: equal bits (two NaNs of equal bits are identical). */
bool ir_scalar_same(DType dt, IrScalar a, IrScalar b);

/* Order for max/min, argmax/argmin, sort and topk: integers by value (signed or
 * unsigned as dt is); floats with -0 < +0 and NaN above everything when
 * nan_high (below everything otherwise), NaNs tied.  <0, 0 or >0. */
int ir_scalar_order(DType dt, IrScalar a, IrScalar b, bool nan_high);
/* maximum/minimum: a NaN operand gives the quiet NaN NAN (positive). */
IrScalar ir_scalar_maxmin(DType dt, IrScalar a, IrScalar b, bool want_max);
/* a PRED b; floats: every predicate but ne is false on a NaN operand, -0 == +0. */
bool ir_scalar_cmp(IrCmp pred, DType dt, IrScalar a, IrScalar b);

/* Binary ops ADD SUB MUL DIV REM MAX MIN (integers and floats), AND OR XOR SHL
 * SHR (integers): operands and result of dtype dt.  IR_SCALAR_DIV_ZERO for an
 * integer DIV or REM by 0 (*r untouched). */
IrScalarStatus ir_scalar_binary(IrOpcode opc, DType dt, IrScalar a, IrScalar b, IrScalar *r);
/* Unary ops (NEG NOT ABS FLOOR CEIL and the float math) from an operand of
 * dtype from to a result of dtype to: a float result on an integer operand
 * is computed on the operand converted to `to`. */
IrScalar ir_scalar_unary(IrOpcode opc, DType from, DType to, IrScalar x);
/* a*b + c in dt, rounded once (integers wrap). */
IrScalar ir_scalar_fma(DType dt, IrScalar a, IrScalar b, IrScalar c);
/* `x as to` (SEMANTICS.md, Casts). */
IrScalar ir_scalar_cast(DType from, DType to, IrScalar x);
/* The bits of x (dtype from) read as dtype to, of the same width. */
IrScalar ir_scalar_bitcast(DType from, DType to, IrScalar x);

/* Evaluates elementwise opcode opc (ADD ... MIN, AND ... SHR, CMP with
 * predicate `pred`, the unary ops, FMA, SELECT, CAST, BITCAST) on the operands
 * x[0..nopnd) of dtype dt (SELECT: x[0] is the i1 condition, dt the dtype of
 * x[1] and x[2]; CAST/BITCAST/unary: dt the operand's) into *r of dtype rdt. */
IrScalarStatus ir_scalar_eval(IrOpcode opc, int64_t pred, DType dt, DType rdt, const IrScalar *x, IrScalar *r);

#endif
