/* compile.c: one module's kernels, from layout-annotated tile IR to LLVM IR,
 * PTX and a cubin (cg.h).
 *
 * 1. One LLVM context and module for the whole IR module; each kernel is
 *    lowered into it (lower.c) with its own scratch arena, wiped after.
 * 2. --emit=llvm stops here and prints the module.
 * 3. LLVM's pipeline and the NVPTX backend write PTX (target.c); the kernel
 *    metadata (runtime/meta.h, codegen/meta_emit.c) is appended as the global
 *    byte array __tilec_meta, so it travels inside the cubin.
 * 4. nvJitLink turns the PTX into a cubin (jitlink.c).
 */
#include "cg.h"

#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>

#include "../ir/ir.h"
#include "lower_int.h"
#include "meta_emit.h"

void cg_result_free(CgResult *r)
{
    sb_free(&r->llvm);
    sb_free(&r->ptx);
    sb_free(&r->info);
    free(r->cubin);
    for (uint32_t i = 0; r->facts && i < r->nfacts; i++) free((void *)r->facts[i].tma);
    free(r->facts);
    memset(r, 0, sizeof *r);
}

bool cg_compile_module(IrModule *m, const CgTarget *t, CgEmit upto, CgResult *out, Diag *d)
{
    memset(out, 0, sizeof *out);
    TL_ASSERT(t->arch, "codegen");
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(m->file, ctx);
    out->facts = tl_xcalloc(m->nfuncs ? m->nfuncs : 1, sizeof *out->facts);
    out->nfacts = m->nfuncs;
    bool ok = true;
    for (uint32_t i = 0; i < m->nfuncs && ok; i++) {
        Arena scratch;
        arena_init(&scratch);
        ok = cg_lower_func(m->funcs[i], t, ctx, mod, &scratch, &out->facts[i], d);
        arena_free(&scratch);
    }
    if (!ok) {
        LLVMDisposeModule(mod);
        LLVMContextDispose(ctx);
        return false;
    }
    if (upto == CG_EMIT_LLVM) {
        char *s = LLVMPrintModuleToString(mod);
        sb_puts(&out->llvm, s);
        LLVMDisposeMessage(s);
        LLVMDisposeModule(mod);
        LLVMContextDispose(ctx);
        return true;
    }
    ok = cg_emit_ptx(mod, t, &out->ptx, d); /* consumes mod */
    LLVMContextDispose(ctx);
    if (!ok) return false;
    Arena a;
    arena_init(&a);
    CgMeta meta;
    ok = cg_meta_build((const IrFunc *const *)m->funcs, out->facts, m->nfuncs, t->arch, &a, &meta, d);
    if (ok) {
        sb_putc(&out->ptx, '\n');
        cg_meta_ptx(&out->ptx, &meta);
    }
    arena_free(&a);
    if (!ok || upto == CG_EMIT_PTX) return ok;
    return cg_ptx_to_cubin(out->ptx.s, out->ptx.len, t, &out->cubin, &out->cubin_len, &out->info, d);
}
