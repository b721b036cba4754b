/* test_cgremat.c: free values (ir_free_values) converted to another layout
 * never go through shared memory (issue 9).
 *
 * For every op ops.def marks IR_REMAT, a kernel builds a free [32, 32] tile V
 * whose expression holds that op (on top of the aranges, reshapes,
 * expand_dims, broadcasts and splats every case starts from), adds a splat
 * to it and stores the sum through free pointers.  The sum is put in the
 * mma.sync accumulator layout by hand, everything else keeps the layout
 * pass's blocked layouts, so codegen must bring V (and the pointers) into a
 * layout with other threads.  The LLVM IR must hold no shared-memory access
 * and no barrier; it then runs on the host (each GPU thread in turn: without
 * barriers or shuffles nothing couples them) and must store what the
 * interpreter stores.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/ExecutionEngine.h>
#include <llvm-c/Target.h>

#include "codegen/lower_int.h"
#include "ir/interp.h"
#include "passes/pass.h"

/* The lines defining %V : tile<T>[32, 32] from %R (32 i + j), %I (i), %J (j),
 * %B (i + 1) and %F (R / 100 + 0.25, f32), for opcode opc; *t gets T. */
static const char *case_body(IrOpcode opc, const char **t, char *buf, size_t n)
{
    *t = "i32";
    switch (opc) {
    case IR_CONST: case IR_SPLAT:
        return "  %k = const -7 : i32\n  %V = splat %k : tile<i32>[32, 32]\n";
    case IR_ARANGE: case IR_ADDPTR: /* the store's pointers are addptr of splat and arange, rebuilt too */
        return "  %V = add %R, %B : tile<i32>[32, 32]\n";
    case IR_EXPAND_DIMS: case IR_BROADCAST:
        return "  %h = const 1000 : i32\n  %H = splat %h : tile<i32>[32, 32]\n"
               "  %q = mul %I, %H : tile<i32>[32, 32]\n  %V = add %q, %J : tile<i32>[32, 32]\n";
    case IR_RESHAPE:
        return "  %h = const 1000 : i32\n  %H = splat %h : tile<i32>[32, 32]\n"
               "  %q = mul %I, %H : tile<i32>[32, 32]\n  %q2 = add %q, %J : tile<i32>[32, 32]\n"
               "  %r1 = reshape %q2 : tile<i32>[8, 128]\n  %r2 = reshape %r1 : tile<i32>[4, 16, 16]\n"
               "  %V = reshape %r2 : tile<i32>[32, 32]\n";
    case IR_CMP:
        return "  %c = cmp le %J, %I : tile<i1>[32, 32]\n  %V = select %c, %R, %B : tile<i32>[32, 32]\n";
    case IR_SELECT:
        return "  %c = cmp gt %J, %I : tile<i1>[32, 32]\n  %V = select %c, %B, %R : tile<i32>[32, 32]\n";
    case IR_NOT:
        return "  %V = not %R : tile<i32>[32, 32]\n";
    case IR_CAST:
        *t = "f32";
        return "  %V = cast %R : tile<f32>[32, 32]\n";
    case IR_BITCAST:
        return "  %V = bitcast %F : tile<i32>[32, 32]\n";
    case IR_FMA:
        *t = "f32";
        return "  %V = fma %F, %F, %F : tile<f32>[32, 32]\n";
    default:
        break;
    }
    const char *name = ir_opinfo[opc].name;
    if (ir_opinfo[opc].min_opnd == 2 && opc != IR_ADDPTR) { /* integer binary: negative values too */
        snprintf(buf, n,
                 "  %%m = const 500 : i32\n  %%M = splat %%m : tile<i32>[32, 32]\n"
                 "  %%Rm = sub %%R, %%M : tile<i32>[32, 32]\n  %%V = %s %%Rm, %%B : tile<i32>[32, 32]\n", name);
        return buf;
    }
    if (ir_opinfo[opc].min_opnd == 1) { /* float unary: on (0.25, 10.5], or shifted by -5 where defined */
        *t = "f32";
        bool positive = opc == IR_LOG || opc == IR_LOG2 || opc == IR_SQRT || opc == IR_RSQRT;
        snprintf(buf, n,
                 "  %%five = const %s : f32\n  %%Five = splat %%five : tile<f32>[32, 32]\n"
                 "  %%G = sub %%F, %%Five : tile<f32>[32, 32]\n  %%V = %s %%G : tile<f32>[32, 32]\n",
                 positive ? "0" : "5", name);
        return buf;
    }
    fail_msg("no case for the recomputable op %s: add one", name);
    return NULL;
}

static char *kernel_text(IrOpcode opc, const char **t)
{
    char buf[512];
    const char *body = case_body(opc, t, buf, sizeof buf);
    StrBuf b = {0};
    sb_printf(&b,
              "kernel @t \"t\"(%%o: ptr<%s>) warps(4) {\n"
              "  %%a = arange : tile<i32>[1024]\n"
              "  %%R = reshape %%a : tile<i32>[32, 32]\n"
              "  %%c32 = arange : tile<i32>[32]\n"
              "  %%e0 = expand_dims %%c32 {axis = 0} : tile<i32>[1, 32]\n"
              "  %%J = broadcast %%e0 : tile<i32>[32, 32]\n"
              "  %%e1 = expand_dims %%c32 {axis = 1} : tile<i32>[32, 1]\n"
              "  %%I = broadcast %%e1 : tile<i32>[32, 32]\n"
              "  %%one = const 1 : i32\n"
              "  %%One = splat %%one : tile<i32>[32, 32]\n"
              "  %%B = add %%I, %%One : tile<i32>[32, 32]\n"
              "  %%Rf = cast %%R : tile<f32>[32, 32]\n"
              "  %%s = const 0.01 : f32\n"
              "  %%S = splat %%s : tile<f32>[32, 32]\n"
              "  %%q4 = const 0.25 : f32\n"
              "  %%Q4 = splat %%q4 : tile<f32>[32, 32]\n"
              "  %%Fm = mul %%Rf, %%S : tile<f32>[32, 32]\n"
              "  %%F = add %%Fm, %%Q4 : tile<f32>[32, 32]\n"
              "%s"
              "  %%z = const 3 : %s\n"
              "  %%Z = splat %%z : tile<%s>[32, 32]\n"
              "  %%W = add %%V, %%Z : tile<%s>[32, 32]\n"
              "  %%po = splat %%o : tile<ptr<%s>>[1024]\n"
              "  %%pa = addptr %%po, %%a : tile<ptr<%s>>[1024]\n"
              "  %%P = reshape %%pa : tile<ptr<%s>>[32, 32]\n"
              "  store %%P, %%W\n"
              "  return\n}\n",
              *t, body, *t, *t, *t, *t, *t, *t);
    return b.s;
}

static int32_t host_tid;
static int32_t read_tid(void) { return host_tid; }

static void run_host(LLVMModuleRef mod, LLVMContextRef ctx, IrFunc *f, void *o)
{
    static bool init;
    if (!init) {
        LLVMLinkInMCJIT();
        LLVMInitializeNativeTarget();
        LLVMInitializeNativeAsmPrinter();
        init = true;
    }
    LLVMValueRef tid = NULL;
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
        const char *name = LLVMGetValueName(fn);
        if (strncmp(name, "llvm.nvvm.", 10)) continue;
        if (strcmp(name, "llvm.nvvm.read.ptx.sreg.tid.x")) fail_msg("a free value needs only tid, not %s", name);
        LLVMSetValueName2(fn, "host_read_tid", strlen("host_read_tid"));
        tid = fn;
    }
    LLVMValueRef kfn = LLVMGetNamedFunction(mod, f->name);
    LLVMSetFunctionCallConv(kfn, LLVMCCallConv);
    char *triple = LLVMGetDefaultTargetTriple();
    LLVMSetTarget(mod, triple);
    LLVMDisposeMessage(triple);
    char *err = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &err)) fail_msg("bad LLVM IR: %s", err);
    LLVMDisposeMessage(err);
    LLVMExecutionEngineRef ee;
    struct LLVMMCJITCompilerOptions opt;
    LLVMInitializeMCJITCompilerOptions(&opt, sizeof opt);
    opt.OptLevel = 1;
    if (LLVMCreateMCJITCompilerForModule(&ee, mod, &opt, sizeof opt, &err)) fail_msg("JIT: %s", err);
    if (tid) LLVMAddGlobalMapping(ee, tid, (void *)read_tid);
    void (*fn)(void *) = (void (*)(void *))(uintptr_t)LLVMGetFunctionAddress(ee, f->name);
    assert_non_null(fn);
    for (host_tid = 0; host_tid < 32 * f->warps; host_tid++) fn(o);
    LLVMDisposeExecutionEngine(ee); /* owns the module */
    LLVMContextDispose(ctx);
}

static void one_op(IrOpcode opc)
{
    const char *t;
    char *text = kernel_text(opc, &t);
    Diag d;
    diag_init(&d, "t.tir", text, strlen(text), stderr, DIAG_COLOR_NEVER);
    IrModule *m = ir_parse("t.tir", text, strlen(text), &d);
    if (!m) fprintf(stderr, "%s", text);
    assert_non_null(m);
    assert_true(ir_verify_module(m, &d, "test"));
    IrFunc *f = m->funcs[0];
    PassCtx cx = {&d, false};
    pass_layout(f, &cx);

    /* V must be free; the sum goes into the mma.sync accumulator layout */
    uint8_t *fr = tl_xcalloc(f->nvals, 1);
    ir_free_values(f, fr);
    IrBlock *B = ir_blk(f, f->body);
    IrOp *st = ir_op(f, B->ops[B->nops - 2]);
    assert_int_equal(st->opc, IR_STORE);
    IrVal w = ir_opnd(f, st, 1), v = ir_opnd(f, ir_op(f, ir_def(f, w)), 0);
    assert_true(fr[v] && fr[w] && fr[ir_opnd(f, st, 0)]);
    bool seen = false;
    for (uint32_t i = 0; i < B->nops; i++) {
        IrOp *op = ir_op(f, B->ops[i]);
        seen |= op->opc == opc;
        if (op->nres == 1 && ir_vty(f, ir_res(op, 0)).rank > 0) assert_true(fr[ir_res(op, 0)]);
    }
    assert_true(seen);
    free(fr);
    Layout A = layout_mma_acc(ir_vty(f, w), 2, 2);
    assert_false(layout_eq(&A, &f->layouts[f->val_layout[v]]));
    VEC_PUSH(f->layouts, f->nlayouts, f->layoutcap, A);
    f->val_layout[w] = f->nlayouts - 1;

    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("t", ctx);
    Arena scratch;
    arena_init(&scratch);
    CgKernelFacts facts;
    const CgTarget sm90a = {.arch = ir_target_find("sm_90a"), .opt_level = 3};
    assert_true(cg_lower_func(f, &sm90a, ctx, mod, &scratch, &facts, &d));
    arena_free(&scratch);
    char *ll = LLVMPrintModuleToString(mod);
    /* the scratch area is declared in every module; nothing may use it */
    const char *decl = strstr(ll, "@__tilec_smem");
    if (facts.smem_dynamic || (decl && strstr(decl + 1, "@__tilec_smem")) || strstr(ll, "barrier")) {
        fprintf(stderr, "%s\n%s", text, ll);
        fail_msg("%s: the free value went through shared memory", ir_opinfo[opc].name);
    }
    LLVMDisposeMessage(ll);

    int es = 4;
    void *want = calloc(1024, (size_t)es), *got = calloc(1024, (size_t)es);
    InterpBuf buf = {want, 1024 * (size_t)es, "o"};
    InterpArg arg = {.kind = IARG_PTR, .buf = 0};
    uint32_t grid[3] = {1, 1, 1};
    InterpOptions io = {0};
    assert_true(interp_run(f, &buf, 1, &arg, grid, &io, &d));
    run_host(mod, ctx, f, got);
    for (int i = 0; i < 1024; i++) {
        uint32_t a, b;
        memcpy(&a, (char *)want + 4 * i, 4);
        memcpy(&b, (char *)got + 4 * i, 4);
        if (a == b) continue;
        if (!strcmp(t, "f32")) {
            float x, y;
            memcpy(&x, &a, 4);
            memcpy(&y, &b, 4);
            if (fabsf(x - y) <= 1e-5f * fabsf(x) || (isnan(x) && isnan(y))) continue;
            fprintf(stderr, "%s", text);
            fail_msg("%s: element %d: interpreter %.9g, codegen %.9g", ir_opinfo[opc].name, i, x, y);
        }
        fprintf(stderr, "%s", text);
        fail_msg("%s: element %d: interpreter %#x, codegen %#x", ir_opinfo[opc].name, i, a, b);
    }
    free(want);
    free(got);
    ir_module_free(m);
    diag_free(&d);
    free(text);
}

static void every_remat_op(void **state)
{
    (void)state;
    int n = 0;
    for (int opc = 0; opc < IR_NUM_OPS; opc++) {
        if (!(ir_opinfo[opc].flags & IR_REMAT)) continue;
        one_op((IrOpcode)opc);
        n++;
    }
    assert_true(n >= 30);
}

/* Loop-carried values are not free, whatever their init: the layout pass
 * converts them explicitly where a user needs another layout. */
static void loop_args_not_free(void **state)
{
    (void)state;
    const char *text = "kernel @l \"l\"(%o: ptr<i32>, %n: i32) warps(4) {\n"
                       "  %a = arange : tile<i32>[128]\n"
                       "  %z = const 0 : i32\n  %one = const 1 : i32\n"
                       "  %r = for %i = %z to %n step %one iter(%x = %a) : tile<i32>[128] {\n"
                       "    %y = add %x, %a : tile<i32>[128]\n"
                       "    yield %y\n  }\n"
                       "  %po = splat %o : tile<ptr<i32>>[128]\n"
                       "  %p = addptr %po, %a : tile<ptr<i32>>[128]\n"
                       "  store %p, %r\n  return\n}\n";
    Diag d;
    diag_init(&d, "l.tir", text, strlen(text), stderr, DIAG_COLOR_NEVER);
    IrModule *m = ir_parse("l.tir", text, strlen(text), &d);
    assert_non_null(m);
    IrFunc *f = m->funcs[0];
    uint8_t *fr = tl_xcalloc(f->nvals, 1);
    ir_free_values(f, fr);
    IrBlock *B = ir_blk(f, f->body);
    IrOp *loop = NULL;
    for (uint32_t i = 0; i < B->nops; i++)
        if (ir_op(f, B->ops[i])->opc == IR_FOR) loop = ir_op(f, B->ops[i]);
    assert_non_null(loop);
    IrBlock *body = ir_blk(f, loop->region[0]);
    assert_true(fr[ir_opnd(f, loop, 3)]);     /* the init, an arange */
    assert_false(fr[body->args[1]]);          /* the carried value */
    assert_false(fr[ir_res(ir_op(f, body->ops[0]), 0)]); /* made from it */
    assert_false(fr[ir_res(loop, 0)]);
    free(fr);
    ir_module_free(m);
    diag_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_remat_op),
        cmocka_unit_test(loop_args_not_free),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
