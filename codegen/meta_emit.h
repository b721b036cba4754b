/* meta_emit.h: IrFunc -> the kernel-metadata blob (format: runtime/meta.h) and
 * the PTX declaration that carries it into the cubin.
 *
 *   CgMeta meta;
 *   if (!cg_meta_build(funcs, facts, n, "sm_90a", &arena, &meta, diag)) ...;
 *   cg_meta_ptx(&ptx, &meta);     // append to the module's PTX text
 *
 * libtilert finds the array on the host through the cubin's symbol table.
 */
#ifndef TILEC_META_EMIT_H
#define TILEC_META_EMIT_H

#include "../ir/ir.h"

/* What code generation decided for one kernel. */
typedef struct CgKernelFacts {
    int warps;                    /* threads per block / 32; 1..32 */
    uint32_t smem_static;         /* bytes of static shared memory */
    uint32_t smem_dynamic;        /* bytes of dynamic shared memory the launch must give */
} CgKernelFacts;

typedef struct CgMeta {
    const uint8_t *data;          /* in the arena given to cg_meta_build */
    size_t len;
} CgMeta;

/* Builds the blob for kernels[0..n) compiled for `arch` ("sm_80", "sm_89",
 * "sm_90", "sm_90a").  facts[i] belongs to kernels[i]; with facts NULL the
 * warps come from each IrFunc (which must then be set) and shared memory is 0.
 * Each kernel's grid block (if any) becomes grid code; an op the launcher
 * cannot evaluate, a float or pointer in the grid, or a bad arch is an error
 * reported to d (false returned). */
bool cg_meta_build(const IrFunc *const *kernels, const CgKernelFacts *facts, uint32_t n, const char *arch, Arena *a,
                   CgMeta *out, Diag *d);

/* Appends `.visible .global .align 8 .b8 __tilec_meta[N] = {...};` to b. */
void cg_meta_ptx(StrBuf *b, const CgMeta *m);

#endif
