/* tma.h: the arguments of cuTensorMapEncodeTiled for one TMA descriptor of a
 * kernel (metadata: meta.h) and one tensor argument, with every rule of the
 * driver checked first.  No CUDA here: tilert.c hands the result to the
 * driver (a thin wrapper), and the tests check this part without a GPU.
 *
 * Dimension order: the driver's, innermost first.  TMA dimension i runs along
 * tensor dimension rank-1-i, so a row-major [rows, cols] tensor has
 * dims = {cols, rows} and strides = {row stride in bytes}.  The tensor's
 * innermost dimension must be contiguous (stride 1): TMA has no stride there.
 */
#ifndef TILERT_TMA_H
#define TILERT_TMA_H

#include <stddef.h>
#include <stdint.h>

#include "meta.h"
#include "tilert.h"

/* CUtensorMapDataType values (cuda.h; tilert.c checks they agree). */
enum {
    TILERT_CU_TMA_UINT8 = 0, TILERT_CU_TMA_UINT16 = 1, TILERT_CU_TMA_UINT32 = 2, TILERT_CU_TMA_INT32 = 3,
    TILERT_CU_TMA_UINT64 = 4, TILERT_CU_TMA_INT64 = 5, TILERT_CU_TMA_FLOAT16 = 6, TILERT_CU_TMA_FLOAT32 = 7,
    TILERT_CU_TMA_FLOAT64 = 8, TILERT_CU_TMA_BFLOAT16 = 9
};

/* Exactly what cuTensorMapEncodeTiled takes besides the output.  Every byte is
 * set (no padding), so two of them compare with memcmp: the launcher's cache key. */
typedef struct tilert_tma_encode {
    uint32_t data_type;                          /* CUtensorMapDataType */
    uint32_t rank;                               /* 1..5 */
    uint64_t address;                            /* globalAddress */
    uint64_t dims[TILERT_TMA_MAX_RANK];          /* globalDim, innermost first; unused entries 0 */
    uint64_t strides[TILERT_TMA_MAX_RANK - 1];   /* globalStrides in bytes: strides[i] belongs to dims[i + 1] */
    uint32_t box[TILERT_TMA_MAX_RANK];           /* boxDim */
    uint32_t elem_strides[TILERT_TMA_MAX_RANK];  /* elementStrides */
    uint32_t interleave, swizzle, l2_promotion, oob_fill;
} tilert_tma_encode;

/* The data type the driver is told for elements of dtype dt (fp8, i8, i1: UINT8;
 * i16/u16: UINT16; i32: INT32; ...). */
uint32_t tilert_tma_data_type(tilert_dtype dt);

/* Fills *out for descriptor d of tensor parameter p and tensor argument t (of
 * p's dtype and rank, already checked).  TILERT_OK, or:
 *   TILERT_ERROR_BAD_METADATA  d itself breaks a rule (tilert_meta_check_tma)
 *   TILERT_ERROR_ARG_ALIGN     the address is not 16-byte aligned
 *   TILERT_ERROR_ARG_VALUE     a dimension is 0 or above 2^32; the innermost
 *                              dimension is not contiguous; a stride is negative,
 *                              not a multiple of 16 bytes, or not below 2^40 bytes
 * with the rule and the values in err ("needs the base address 16-byte aligned,
 * got 0x...8"), the caller adding the kernel and argument.  A dimension of
 * extent 1 has its stride ignored (only coordinate 0 is in bounds): an unusable
 * one there is replaced by the packed value. */
tilert_status tilert_tma_prepare(const tilert_meta_param *p, const tilert_meta_tma *d, const tilert_tensor *t,
                                 tilert_tma_encode *out, char *err, size_t errlen);

/* "dims {75, 100} strides {320} box {32, 16} elementStrides {1, 1} type 7 swizzle 0 ...": for messages. */
void tilert_tma_format(const tilert_tma_encode *e, char *buf, size_t len);

#endif
