/* meta_emit.h: IrFunc -> the kernel-metadata blob (format: runtime/meta.h) and
 * the PTX declaration that carries it into the cubin.
 *
 *   CgMeta meta;
 *   if (!cg_meta_build(funcs, facts, n, ir_target_find("sm_90a"), &arena, &meta, diag)) ...;
 *   cg_meta_ptx(&ptx, &meta);     // append to the module's PTX text
 *
 * libtilert finds the array on the host through the cubin's symbol table.
 */
#ifndef TILEC_META_EMIT_H
#define TILEC_META_EMIT_H

#include "../ir/ir.h"

/* One TMA descriptor (CUtensorMap) a kernel takes for a tensor-view parameter;
 * the runtime builds it at launch from the view argument (runtime/tilert.h, TMA).
 * Kernel ABI: the view's PTX parameters (pointer, shape[rank], stride[rank]) are
 * followed by one `.param .align 64 .b8 NAME[128]` per descriptor of that view, in
 * the order the descriptors appear in CgKernelFacts.tma; the kernel marks each
 * grid_constant and hands cp.async.bulk.tensor its generic address (cvta.param).
 * The coordinates the kernel passes to cp.async.bulk.tensor are in the same order
 * as box[]: innermost (the view's last dimension) first.
 * A zeroed CgTmaDesc plus param, rank and box is the plain case: the view's own
 * dtype, element strides 1, no swizzle, no L2 promotion, out-of-bounds zeros.
 * An optional descriptor is one the kernel tests before every use (TMA_READY: a
 * map of 128 zero bytes means none) and has another path without: the launcher then
 * passes zeros where the argument cannot be described instead of failing.  A view's
 * descriptors are all optional or none is (the metadata flags the parameter). */
typedef enum CgTmaSwizzle { CG_TMA_SWIZZLE_NONE = 0, CG_TMA_SWIZZLE_32B, CG_TMA_SWIZZLE_64B, CG_TMA_SWIZZLE_128B } CgTmaSwizzle;
typedef enum CgTmaL2 { CG_TMA_L2_NONE = 0, CG_TMA_L2_64B, CG_TMA_L2_128B, CG_TMA_L2_256B } CgTmaL2;
typedef struct CgTmaDesc {
    uint32_t param;               /* the view parameter's index */
    uint8_t rank;                 /* = the view's rank */
    uint32_t box[5];              /* box extent per dimension, INNERMOST FIRST: box[0] along the last dim */
    uint8_t elem_stride[5];       /* innermost first, 1..8 (0 means 1); elem_stride[0] must be 1 */
    uint8_t swizzle;              /* CgTmaSwizzle: the shared-memory layout TMA writes */
    uint8_t l2_promotion;         /* CgTmaL2 */
    bool oob_nan;                 /* out-of-bounds elements read as NaN (float views only); else zeros */
    bool has_dtype;               /* move elements as `dtype` (same size as the view's) instead of the view's */
    DType dtype;
    bool optional;                /* the kernel runs without it (TMA_READY guards every use) */
} CgTmaDesc;

/* What code generation decided for one kernel. */
typedef struct CgKernelFacts {
    int warps;                    /* threads per block / 32; 1..32 */
    uint32_t smem_static;         /* bytes of static shared memory */
    uint32_t smem_dynamic;        /* bytes of dynamic shared memory the launch must give */
    const CgTmaDesc *tma;         /* the kernel's TMA descriptors (NULL: none); kept by the caller */
    uint32_t ntma;                /* at most 16; the kernel's arch must have IR_TGT_TMA */
} CgKernelFacts;

typedef struct CgMeta {
    const uint8_t *data;          /* in the arena given to cg_meta_build */
    size_t len;
} CgMeta;

/* Builds the blob for kernels[0..n) compiled for target tg.  facts[i] belongs to kernels[i]; with facts NULL the
 * warps come from each IrFunc (which must then be set) and shared memory is 0.
 * Each kernel's grid block (if any) becomes grid code; an op the launcher
 * cannot evaluate, a float or pointer in the grid, or TMA on a target without it is an error
 * reported to d (false returned).  facts[i].tma become the metadata's TMA
 * records; a descriptor that breaks a rule of cuTensorMapEncodeTiled known at
 * compile time (box extents 1..256, innermost box bytes a multiple of 16 and
 * within the swizzle span, element strides 1..8, a float view for NaN fill),
 * names a parameter that is not a view, or disagrees with the view's other
 * descriptors about being optional, is an error naming the kernel, the parameter
 * and the rule. */
bool cg_meta_build(const IrFunc *const *kernels, const CgKernelFacts *facts, uint32_t n, const IrTarget *tg,
                   Arena *a, CgMeta *out, Diag *d);

/* Appends `.visible .global .align 8 .b8 __tilec_meta[N] = {...};` to b. */
void cg_meta_ptx(StrBuf *b, const CgMeta *m);

#endif
