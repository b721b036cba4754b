/* fuzz_backend.c: a libFuzzer target over the passes and code generation, to PTX.
 *
 * For one input (tile source, or textual IR when it starts with "// tilec IR",
 * as in fuzz_frontend.c) it runs what `tilec FILE --emit=ptx` runs:
 *   1. the front end: ast_parse, then fe_lower of each kernel declared (at most
 *      MAX_KERNELS), alone, with its default parameters; or ir_parse and
 *      ir_verify_module for IR text;
 *   2. the default canonical pass pipeline (pass_run_pipeline), then
 *      ir_verify_module;
 *   3. for each target of TARGETS (sm_90a at -O3, sm_80 at -O3 or, for inputs of
 *      even length, at -O0), on a fresh copy of that module (its printed text
 *      parsed back): the backend passes for the target (pass_run_backend:
 *      software pipelining, rematerialisation, layouts), ir_verify_module, then
 *      code generation to PTX (cg_compile_module up to CG_EMIT_PTX: lowering to
 *      LLVM IR, LLVM's verifier, the optimisation pipeline and the NVPTX
 *      backend).  ptxas never runs: no CUDA toolkit call, so the target is fast
 *      and runs where no toolkit is installed.
 * Modules with a kernel over MAX_TILE_ELEMS elements in one tile value or
 * MAX_KERNEL_ELEMS in all are skipped at step 3 (each costs seconds in LLVM;
 * the frontend target, and `tilec --emit=cubin` of the stdlib in CI, cover
 * them).
 * A user error anywhere is fine: the compiler refused the input with a
 * diagnostic.  What is not fine, and stops the fuzzer with __builtin_trap: a
 * stage that fails without reporting an error, IR after a successful pass that
 * does not verify, printed IR that does not parse back, and PTX that lacks the
 * .target line or an .entry of a kernel.  An abort (LLVM's "Cannot select",
 * its module verifier through tl_fatal, an internal error of a pass),
 * sanitizer reports, leaks and hangs are caught by libFuzzer itself.
 * Diagnostics go nowhere (Diag.out = NULL, no capture; TILEC_FUZZ_DIAG=1 prints them).
 *
 * Built without libFuzzer (gcc builds), fuzz_replay.c provides a main() that
 * replays files and folders, so every build replays the corpus through here.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cg.h"
#include "frontend/ast.h"
#include "frontend/frontend.h"
#include "ir/ir.h"
#include "passes/pass.h"

enum {
    MAX_INPUT = 1 << 16,        /* longer inputs are ignored: they only slow the search */
    MAX_KERNELS = 8,            /* kernels lowered per input */
    MAX_TILE_ELEMS = 1 << 14,   /* elements of the largest tile value of a kernel compiled */
    MAX_KERNEL_ELEMS = 1 << 16, /* elements of all tile values of a kernel compiled */
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* TILEC_FUZZ_DIAG=1 prints the diagnostics (to see why an input was refused). */
static FILE *diag_out(void)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("TILEC_FUZZ_DIAG");
        on = e && *e && strcmp(e, "0") != 0;
    }
    return on ? stderr : NULL;
}

static void quiet_diag(Diag *d, const char *file, const char *src, size_t len)
{
    diag_init(d, file, src, len, diag_out(), DIAG_COLOR_NEVER);
    d->capture = false;
}

/* traps unless m verifies */
static void must_verify(IrModule *m, const char *stage)
{
    Diag d;
    quiet_diag(&d, "fuzz.tir", NULL, 0);
    if (!ir_verify_module(m, &d, stage)) __builtin_trap();
    diag_free(&d);
}

/* Whether f is cheap enough to compile at fuzzing speed: no tile value of more
 * than MAX_TILE_ELEMS elements, and at most MAX_KERNEL_ELEMS elements over all
 * its tile values (LLVM's time grows with both; a 128x128 fp8 dot on sm_80
 * takes 20 s at -O3). */
static bool small_enough(const IrFunc *f)
{
    int64_t total = 0;
    for (uint32_t v = 1; v < f->nvals; v++) {
        IrType t = f->vals[v].ty;
        if (t.kind != TY_TILE) continue;
        int64_t n = ir_ty_numel(t);
        if (n > MAX_TILE_ELEMS) return false;
        total += n;
    }
    return total <= MAX_KERNEL_ELEMS;
}

/* PTX for target t must name the target and have an .entry per kernel. */
static void check_ptx(const IrModule *m, const CgTarget *t, const StrBuf *ptx)
{
    StrBuf want = {0};
    sb_printf(&want, ".target %s", t->arch->name);
    if (!ptx->s || !strstr(ptx->s, want.s)) __builtin_trap();
    for (uint32_t i = 0; i < m->nfuncs; i++) {
        want.len = 0;
        sb_printf(&want, ".entry %s(", m->funcs[i]->name);
        if (!strstr(ptx->s, want.s)) __builtin_trap();
    }
    sb_free(&want);
}

/* Step 3 for one target on the module's printed text. */
static void compile_for(const StrBuf *text, const char *arch, int opt_level)
{
    Diag d;
    quiet_diag(&d, "fuzz.tir", text->s, text->len);
    IrModule *m = ir_parse("fuzz.tir", text->s, text->len, &d);
    if (!m || d.nerrors) __builtin_trap(); /* the printer wrote text its parser refuses */
    diag_free(&d);
    must_verify(m, "ir_parse");
    bool small = true;
    for (uint32_t i = 0; i < m->nfuncs; i++) small &= small_enough(m->funcs[i]);
    if (!small) {
        if (diag_out()) fprintf(diag_out(), "fuzz_backend: too large to compile at fuzzing speed: skipped\n");
        ir_module_free(m);
        return;
    }
    m->target = ir_target_find(arch);
    if (!m->target) __builtin_trap();

    PassDump dump = {.after = NULL, .nafter = 0, .dir = NULL, .out = NULL};
    quiet_diag(&d, "fuzz.tir", text->s, text->len);
    bool ok = pass_run_backend(m, &dump, &d);
    if (!ok && d.nerrors == 0) __builtin_trap(); /* no dumps: false means an error was reported */
    ok = ok && d.nerrors == 0;
    diag_free(&d);
    if (ok) {
        must_verify(m, "backend passes");
        CgTarget t = {.arch = m->target, .opt_level = opt_level, .lineinfo = true};
        CgResult r;
        quiet_diag(&d, "fuzz.tir", text->s, text->len);
        ok = cg_compile_module(m, &t, CG_EMIT_PTX, &r, &d);
        if (!ok && d.nerrors == 0) __builtin_trap(); /* refused without saying why */
        if (ok && d.nerrors == 0) check_ptx(m, &t, &r.ptx);
        diag_free(&d);
        cg_result_free(&r);
    }
    ir_module_free(m);
}

/* Steps 2 and 3 on a module known to be valid; frees it. */
static void backend(IrModule *m, const char *src, size_t len)
{
    Diag d;
    PassDump dump = {.after = NULL, .nafter = 0, .dir = NULL, .out = NULL};
    quiet_diag(&d, "fuzz.tile", src, len);
    bool ok = pass_run_pipeline(m, NULL, 0, &dump, &d);
    if (!ok && d.nerrors == 0) __builtin_trap();
    ok = ok && d.nerrors == 0;
    diag_free(&d);
    if (ok) {
        must_verify(m, "pipeline");
        StrBuf text = {0};
        ir_print_module(&text, m);
        compile_for(&text, "sm_90a", 3);
        compile_for(&text, "sm_80", len % 2 ? 3 : 0);
        sb_free(&text);
    }
    ir_module_free(m);
}

static void tile_input(const char *src, size_t size)
{
    Diag d;
    quiet_diag(&d, "fuzz.tile", src, size);
    Ast *ast = ast_parse("fuzz.tile", src, size, &d);
    bool parsed = ast && d.nerrors == 0;
    diag_free(&d);
    if (parsed) {
        uint32_t nk = 0;
        for (uint32_t i = 0; i < ast->ndecls && nk < MAX_KERNELS; i++) {
            const AstNode *k = ast->decls[i];
            if (k->kind != AST_KERNEL) continue;
            nk++;
            quiet_diag(&d, "fuzz.tile", src, size);
            FeOptions opts = {.defines = NULL, .ndefines = 0, .kernel = k->name};
            IrModule *m = fe_lower(ast, &opts, &d);
            if (m && d.nerrors) __builtin_trap(); /* fe_lower returns NULL whenever it reported an error */
            diag_free(&d);
            if (!m) continue;
            must_verify(m, "frontend");
            backend(m, src, size);
        }
    }
    ast_free(ast);
}

static void ir_input(const char *src, size_t len)
{
    Diag d;
    quiet_diag(&d, "fuzz.tir", src, len);
    IrModule *m = ir_parse("fuzz.tir", src, len, &d);
    bool parsed = m && d.nerrors == 0;
    diag_free(&d);
    if (!parsed) {
        if (m) ir_module_free(m);
        return;
    }
    quiet_diag(&d, "fuzz.tir", src, len);
    bool valid = ir_verify_module(m, &d, "ir_parse");
    diag_free(&d);
    if (valid)
        backend(m, src, len);
    else
        ir_module_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT) return 0;
    char *src = malloc(size + 1);
    if (!src) return 0;
    if (size) memcpy(src, data, size);
    src[size] = '\0';
    static const char tir_magic[] = "// tilec IR";
    if (size >= sizeof tir_magic - 1 && memcmp(src, tir_magic, sizeof tir_magic - 1) == 0)
        ir_input(src, size);
    else
        tile_input(src, size);
    free(src);
    return 0;
}
