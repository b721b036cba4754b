/* fuzz_frontend.c: a libFuzzer target over the whole frontend.
 *
 * For one input it runs, in order:
 *   1. ast_dump_tokens, ast_parse, ast_dump (also on a partial tree);
 *   2. for every kernel declared in the file (at most MAX_KERNELS), fe_lower of
 *      that kernel alone with its default parameters;
 *   3. on each module that lowered: ir_verify_module, then the text round trip
 *      print -> ir_parse -> print, which must give the same text;
 *   4. the default pass pipeline (pass_run_pipeline), then the same verify and
 *      round trip on the result; then the backend passes for sm_90a
 *      (pass_run_backend: software pipelining, layout assignment), verify and
 *      round trip again;
 *   5. a differential test of the passes: each kernel small enough (no op over
 *      INTERP_MAX_COST elements or multiply-adds, little printing) runs in the
 *      reference interpreter before and after the passes, on the same
 *      deterministic arguments (scalars, 1024-element buffers, 8^N views; at most
 *      2x2x2 programs, INTERP_MAX_STEPS ops).  When the run before the passes
 *      succeeds, the run after them must succeed too and leave the same bytes in
 *      every buffer (NaN equal to NaN) and print the same text.
 * An input that starts with "// tilec IR" is textual IR instead (what
 * `tilec FILE.tir` reads): ir_parse, and when that succeeds ir_verify_module;
 * on valid IR, steps 3 to 5 as above.
 * A user error anywhere is fine (the input is malformed).  What is not fine,
 * and stops the fuzzer with __builtin_trap: IR from a successful lowering or
 * pass that does not verify, printed IR that does not parse back, a round
 * trip that changes the text, or passes that change what a kernel computes.
 * Crashes, sanitizer reports, leaks and hangs are caught by libFuzzer itself.
 * Diagnostics go nowhere (Diag.out = NULL, no capture) so that the fuzzer runs
 * quietly and fast.
 *
 * Built without libFuzzer (gcc builds), fuzz_replay.c provides a main() that
 * replays files and folders given on the command line, so the seed corpus is
 * replayed by every build, sanitized or not.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/ast.h"
#include "frontend/frontend.h"
#include "ir/fpconv.h"
#include "ir/interp.h"
#include "ir/ir.h"
#include "passes/pass.h"

enum {
    MAX_INPUT = 1 << 16,        /* longer inputs are ignored: they only slow the search */
    MAX_KERNELS = 16,           /* kernels lowered per input */
    INTERP_MAX_COST = 1 << 14,  /* elements (or dot multiply-adds) of the largest op interpreted */
    INTERP_MAX_PRINT = 64,      /* elements printed by one print op */
    INTERP_MAX_STEPS = 2000,    /* ops executed per run (before the passes; twice that after) */
    INTERP_PTR_ELEMS = 1024,    /* elements behind each pointer argument */
    INTERP_VIEW_DIM = 8,        /* each dimension of each view argument */
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void quiet_diag(Diag *d, const char *file, const char *src, size_t len)
{
    diag_init(d, file, src, len, NULL, DIAG_COLOR_NEVER);
    d->capture = false;
}

/* The module's verified text, in *text (caller frees); traps if m is invalid. */
static void verified_text(IrModule *m, const char *stage, StrBuf *text)
{
    Diag d;
    quiet_diag(&d, "fuzz.tir", NULL, 0);
    if (!ir_verify_module(m, &d, stage)) __builtin_trap();
    diag_free(&d);
    ir_print_module(text, m);
}

/* print -> parse -> print must be the identity on printed text. */
static void round_trip(const StrBuf *text)
{
    const char *s = text->s ? text->s : "";
    size_t n = text->len;
    Diag d;
    quiet_diag(&d, "fuzz.tir", s, n);
    IrModule *back = ir_parse("fuzz.tir", s, n, &d);
    if (!back || d.nerrors) __builtin_trap();
    diag_free(&d);
    quiet_diag(&d, "fuzz.tir", s, n);
    if (!ir_verify_module(back, &d, "ir_parse")) __builtin_trap();
    diag_free(&d);
    StrBuf again = {0};
    ir_print_module(&again, back);
    if (again.len != n || (n && memcmp(again.s, s, n) != 0)) __builtin_trap();
    sb_free(&again);
    ir_module_free(back);
}

/* ---- step 5: the interpreter before and after the passes ---------------------- */

typedef struct Run {            /* one kernel's arguments, and what a run left in them */
    bool active;                /* the kernel is small enough to interpret */
    bool ok;                    /* the run finished without an error */
    InterpBuf *bufs;
    uint32_t nbufs;
    InterpArg *args;
    uint32_t grid[3];
    char *printed;              /* what `print` wrote */
    size_t nprinted;
} Run;

static int64_t numel_of(IrFunc *f, IrVal v)
{
    IrType t = ir_vty(f, v);
    return t.kind == TY_TILE ? ir_ty_numel(t) : 1;
}

/* Small enough to interpret twice per input at fuzzing speed. */
static bool cheap_enough(IrFunc *f)
{
    for (uint32_t i = 0; i < f->nops; i++) {
        const IrOp *op = &f->ops[i];
        if (op->dead) continue;
        int64_t cost = 0;
        for (uint32_t r = 0; r < op->nres; r++) cost = TL_MAX(cost, numel_of(f, ir_res(op, r)));
        int64_t printed = 0;
        for (uint32_t k = 0; k < op->nopnd; k++) {
            cost = TL_MAX(cost, numel_of(f, ir_opnd(f, op, k)));
            printed += numel_of(f, ir_opnd(f, op, k));
        }
        if (op->opc == IR_DOT) {
            IrType a = ir_vty(f, ir_opnd(f, op, 0)), b = ir_vty(f, ir_opnd(f, op, 1));
            cost = (int64_t)a.dims[0] * a.dims[1] * b.dims[1];
        }
        if (cost > INTERP_MAX_COST || (op->opc == IR_PRINT && printed > INTERP_MAX_PRINT)) return false;
    }
    return true;
}

/* Deterministic arguments; the grid from the kernel's clause (or `grid`), at most 2x2x2. */
static void run_setup(IrFunc *f, Run *r, const uint32_t *grid)
{
    uint32_t n = f->nparams ? f->nparams : 1;
    r->bufs = tl_xcalloc(n, sizeof *r->bufs);
    r->args = tl_xcalloc(n, sizeof *r->args);
    r->nbufs = 0;
    for (uint32_t k = 0; k < f->nparams; k++) {
        IrType t = f->params[k].ty;
        InterpArg *a = &r->args[k];
        int64_t elems = INTERP_PTR_ELEMS;
        if (t.kind == TY_VIEW) {
            a->kind = IARG_VIEW;
            int64_t stride = 1;
            for (int d = t.rank - 1; d >= 0; d--) {
                a->shape[d] = INTERP_VIEW_DIM;
                a->stride[d] = stride;
                stride *= INTERP_VIEW_DIM;
            }
            elems = stride;
        } else if (t.isptr) {
            a->kind = IARG_PTR;
        } else {
            a->kind = IARG_SCALAR;
            a->i = 3 + (int64_t)k;
            a->f = 0.75 + (double)k;
            continue;
        }
        size_t bytes = (size_t)elems * (size_t)dt_bytes((DType)t.dt);
        unsigned char *data = tl_xmalloc(bytes);
        for (size_t i = 0; i < bytes; i++) data[i] = (unsigned char)(((i + 1) * 2654435761u + k) >> 13);
        a->buf = r->nbufs;
        r->bufs[r->nbufs++] = (InterpBuf){.data = data, .bytes = bytes, .name = f->params[k].name};
    }
    if (grid) {
        memcpy(r->grid, grid, sizeof r->grid);
        return;
    }
    Diag d;
    quiet_diag(&d, "fuzz", NULL, 0);
    if (!f->grid || !interp_grid(f, r->args, r->grid, &d)) r->grid[0] = r->grid[1] = r->grid[2] = 1;
    diag_free(&d);
    for (int i = 0; i < 3; i++) r->grid[i] = TL_MIN(r->grid[i], 2u);
}

static void run_kernel(IrFunc *f, Run *r, uint64_t max_steps)
{
    FILE *out = open_memstream(&r->printed, &r->nprinted);
    if (!out) __builtin_trap();
    InterpOptions opt = {.print_out = out, .max_steps = max_steps};
    Diag d;
    quiet_diag(&d, "fuzz", NULL, 0);
    r->ok = interp_run(f, r->bufs, r->nbufs, r->args, r->grid, &opt, &d);
    diag_free(&d);
    fclose(out);
    for (size_t i = 0; i + 4 <= r->nprinted; i++) /* "-nan" and "nan" are one NaN */
        if (memcmp(r->printed + i, "-nan", 4) == 0) r->printed[i] = ' ';
}

static void run_free(Run *r)
{
    for (uint32_t i = 0; i < r->nbufs; i++) free(r->bufs[i].data);
    free(r->bufs);
    free(r->args);
    free(r->printed);
    memset(r, 0, sizeof *r);
}

static bool same_results(IrFunc *f, const Run *a, const Run *b)
{
    if (a->nprinted != b->nprinted || (a->nprinted && memcmp(a->printed, b->printed, a->nprinted) != 0))
        return false;
    for (uint32_t k = 0; k < f->nparams; k++) {
        IrType t = f->params[k].ty;
        if (a->args[k].kind == IARG_SCALAR) continue;
        const InterpBuf *x = &a->bufs[a->args[k].buf], *y = &b->bufs[b->args[k].buf];
        size_t w = (size_t)dt_bytes((DType)t.dt);
        for (size_t i = 0; i < x->bytes; i += w) {
            const unsigned char *p = (const unsigned char *)x->data + i, *q = (const unsigned char *)y->data + i;
            if (memcmp(p, q, w) == 0) continue;
            if (dt_is_float((DType)t.dt) && isnan(fp_load((DType)t.dt, p)) && isnan(fp_load((DType)t.dt, q)))
                continue;
            return false;
        }
    }
    return true;
}

/* Steps 3, 4 and 5 on a module known to be valid; frees it. */
static void check_module(IrModule *m, const char *stage, const char *src, size_t len)
{
    StrBuf text = {0};
    verified_text(m, stage, &text);
    round_trip(&text);
    sb_free(&text);

    Run *before = tl_xcalloc(m->nfuncs ? m->nfuncs : 1, sizeof *before);
    for (uint32_t i = 0; i < m->nfuncs; i++) {
        if (!cheap_enough(m->funcs[i])) continue;
        before[i].active = true;
        run_setup(m->funcs[i], &before[i], NULL);
        run_kernel(m->funcs[i], &before[i], INTERP_MAX_STEPS);
    }

    Diag d;
    PassDump dump = {.after = NULL, .nafter = 0, .dir = NULL, .out = NULL};
    quiet_diag(&d, "fuzz.tile", src, len);
    (void)pass_run_pipeline(m, NULL, 0, &dump, &d); /* false only on a dump I/O error: no dumps here */
    diag_free(&d);

    verified_text(m, "pipeline", &text);
    round_trip(&text);
    sb_free(&text);

    quiet_diag(&d, "fuzz.tile", src, len);
    m->target = ir_target_default(); /* the backend passes of the default target: software pipelining too */
    (void)pass_run_backend(m, &dump, &d);
    diag_free(&d);
    verified_text(m, "backend passes", &text);
    round_trip(&text);
    sb_free(&text);

    for (uint32_t i = 0; i < m->nfuncs; i++) {
        if (before[i].active && before[i].ok) {
            Run after = {0};
            run_setup(m->funcs[i], &after, before[i].grid);
            run_kernel(m->funcs[i], &after, 2 * INTERP_MAX_STEPS);
            if (!after.ok || !same_results(m->funcs[i], &before[i], &after)) __builtin_trap();
            run_free(&after);
        }
        run_free(&before[i]);
    }
    free(before);
    ir_module_free(m);
}

static void lower_one(const Ast *ast, const char *kernel, const char *src, size_t len)
{
    Diag d;
    quiet_diag(&d, "fuzz.tile", src, len);
    FeOptions opts = {.defines = NULL, .ndefines = 0, .kernel = kernel};
    IrModule *m = fe_lower(ast, &opts, &d);
    if (m && d.nerrors) __builtin_trap(); /* fe_lower returns NULL whenever it reported an error */
    diag_free(&d);
    if (m) check_module(m, "frontend", src, len);
}

/* Textual IR, as `tilec FILE.tir` reads it: parse, verify, then as a lowered module. */
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
        check_module(m, "ir_parse", src, len);
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
    if (size >= sizeof tir_magic - 1 && memcmp(src, tir_magic, sizeof tir_magic - 1) == 0) {
        ir_input(src, size);
        free(src);
        return 0;
    }

    Diag d;
    StrBuf out = {0};
    quiet_diag(&d, "fuzz.tile", src, size);
    (void)ast_dump_tokens(&out, "fuzz.tile", src, size, &d);
    diag_free(&d);
    sb_free(&out);

    quiet_diag(&d, "fuzz.tile", src, size);
    Ast *ast = ast_parse("fuzz.tile", src, size, &d);
    bool parsed = ast && d.nerrors == 0;
    diag_free(&d);
    if (ast) {
        ast_dump(&out, ast);
        sb_free(&out);
    }
    if (parsed) {
        uint32_t nk = 0;
        for (uint32_t i = 0; i < ast->ndecls && nk < MAX_KERNELS; i++) {
            const AstNode *k = ast->decls[i];
            if (k->kind != AST_KERNEL) continue;
            nk++;
            lower_one(ast, k->name, src, size);
        }
    }
    ast_free(ast);
    free(src);
    return 0;
}
