/* fpconv.h: bit-exact conversions between the narrow float formats and
 * double/float.  To narrow formats: round to nearest, ties to even.  f16/bf16
 * overflow to inf; fp8 (e4m3 "fn": no inf, max 448; e5m2: max 57344) saturate
 * to the largest finite value of the sign; NaN stays NaN in every format.
 * Used by the interpreter, by constant folding and by the .npy reader. */
#ifndef TILEC_FPCONV_H
#define TILEC_FPCONV_H

#include <stdint.h>

#include "ir.h"

uint16_t fp_to_f16(double x);
uint16_t fp_to_bf16(double x);
uint8_t fp_to_f8e4m3(double x);
uint8_t fp_to_f8e5m2(double x);
double fp_from_f16(uint16_t h);
double fp_from_bf16(uint16_t h);
double fp_from_f8e4m3(uint8_t b);
double fp_from_f8e5m2(uint8_t b);
/* Rounds x to the nearest value representable in float type dt (f64: x itself). */
double fp_round(DType dt, double x);
/* Reads/writes one element of dtype dt at p (little endian) as bits <-> double or int64. */
double fp_load(DType dt, const void *p);
void fp_store(DType dt, void *p, double x);
/* Float -> integer type dt: truncates toward zero, saturating at dt's range;
 * NaN gives 0; to i1: x != 0.  (The result is canonical as int_wrap makes it.) */
int64_t fp_to_int(DType dt, double x);
/* Integer v (unsigned when is_unsigned: v's bits are a uint64) -> float type dt,
 * rounded once to nearest even. */
double fp_from_int(DType dt, int64_t v, bool is_unsigned);
/* Wraps an integer to dt's width (sign- or zero-extended back to 64 bits; i1 -> 0/1). */
int64_t int_wrap(DType dt, int64_t v);

#endif
