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
#include "../passes/pressure.h"
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

/* ptxas's report (nvJitLink's info log) on kernel `name`:
 *   ptxas info    : Compiling entry function 'NAME' for 'sm_90a'
 *   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
 *   ptxas info    : Used 36 registers, used 0 barriers
 * False when the log has no such block. */
bool cg_ptxas_usage(const char *log, const char *name, int *regs, int *spill_st, int *spill_ld)
{
    char head[512];
    snprintf(head, sizeof head, "Compiling entry function '%s'", name);
    const char *p = log ? strstr(log, head) : NULL;
    if (!p) return false;
    const char *end = strstr(p + 1, "Compiling entry function");
    *regs = *spill_st = *spill_ld = 0;
    bool got = false;
    const char *u = strstr(p, "Used ");
    if (u && (!end || u < end)) got = sscanf(u, "Used %d registers", regs) == 1;
    const char *s = strstr(p, "bytes spill stores");
    if (s && (!end || s < end)) {
        const char *q = s;
        while (q > p && q[-1] != ',' && q[-1] != '.') q--;
        sscanf(q, " %d", spill_st);
        sscanf(s, "bytes spill stores, %d bytes spill loads", spill_ld);
    }
    return got;
}

/* The occupancy remark of every kernel: the hint, its estimate, and (with a
 * cubin) what ptxas used. */
static void remark_occupancy(IrModule *m, const CgTarget *t, const CgResult *out, bool ptxas_ran, Diag *d)
{
    for (uint32_t i = 0; i < m->nfuncs && i < out->nfacts; i++) {
        IrFunc *f = m->funcs[i];
        CgOccupancy occ, *o = &occ;
        cg_min_ctas(f, t->arch, out->facts[i].warps, o);
        StrBuf b = {0};
        if (o->min_ctas > 1) sb_printf(&b, "occupancy hint %d CTAs per SM (.minnctapersm)", o->min_ctas);
        else sb_puts(&b, "no occupancy hint");
        if (o->regs)
            sb_printf(&b, ": tiles need about %.0f registers per thread, %d with addressing and temporaries, "
                      "%d threads per CTA", o->peak, o->regs, 32 * out->facts[i].warps);
        else if (o->why)
            sb_printf(&b, " (%s)", o->why);
        int regs, st, ld;
        if (!ptxas_ran) sb_puts(&b, "; ptxas did not run (it runs for a cubin)");
        else if (cg_ptxas_usage(out->info.s, f->name, &regs, &st, &ld))
            sb_printf(&b, "; ptxas used %d registers, %d bytes spill stores, %d bytes spill loads", regs, st, ld);
        diag_remark(d, DIAG_REMARK_occupancy, f->loc, "%s", b.s);
        sb_free(&b);
    }
}

/* The schedule remark of every kernel: the scheduler's prediction (the
 * pressure model on the IR as lowered: passes/pressure.h) next to what ptxas
 * used, when it ran. */
static void remark_schedule(IrModule *m, const CgTarget *t, const CgResult *out, bool ptxas_ran, Diag *d)
{
    for (uint32_t i = 0; i < m->nfuncs && i < out->nfacts; i++) {
        IrFunc *f = m->funcs[i];
        PassPressure pr;
        pass_pressure_init(&pr, f, 32 * out->facts[i].warps);
        double peak = pass_pressure_peak(&pr, f->body);
        pass_pressure_fini(&pr);
        int need = pass_pressure_regs(f, peak), cap = pass_pressure_cap(f, t->arch);
        StrBuf b = {0};
        sb_printf(&b, "predicted: tiles peak at %.0f registers per thread, about %d registers of %d: %s", peak, need,
                  cap, need > cap ? "spills predicted" : "no spills predicted");
        int regs, st, ld;
        if (!ptxas_ran) sb_puts(&b, "; ptxas did not run (it runs for a cubin)");
        else if (cg_ptxas_usage(out->info.s, f->name, &regs, &st, &ld))
            sb_printf(&b, "; ptxas used %d registers, %d bytes spill stores, %d bytes spill loads", regs, st, ld);
        diag_remark(d, DIAG_REMARK_schedule, f->loc, "%s", b.s);
        sb_free(&b);
    }
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
        if (diag_remark_on(d, DIAG_REMARK_occupancy)) remark_occupancy(m, t, out, false, d);
        if (diag_remark_on(d, DIAG_REMARK_schedule)) remark_schedule(m, t, out, false, d);
        char *s = LLVMPrintModuleToString(mod);
        sb_puts(&out->llvm, s);
        LLVMDisposeMessage(s);
        LLVMDisposeModule(mod);
        LLVMContextDispose(ctx);
        return true;
    }
    if (t->keep_llvm) {
        char *s = LLVMPrintModuleToString(mod);
        sb_puts(&out->llvm, s);
        LLVMDisposeMessage(s);
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
    if (ok && upto == CG_EMIT_CUBIN)
        ok = cg_ptx_to_cubin(out->ptx.s, out->ptx.len, t, &out->cubin, &out->cubin_len, &out->info, d);
    if (ok && diag_remark_on(d, DIAG_REMARK_occupancy)) remark_occupancy(m, t, out, upto == CG_EMIT_CUBIN, d);
    if (ok && diag_remark_on(d, DIAG_REMARK_schedule)) remark_schedule(m, t, out, upto == CG_EMIT_CUBIN, d);
    return ok;
}
