/* test_cgasync.c: the pipelining ops on sm_90a (codegen/lower_async.c, and the
 * in-place operands of lower_dot.c), without a GPU.
 *
 * 1. One stage of a buffer (cg_smem_layout) holds every element where TMA puts
 *    it: boxes of [R rows, span bytes] under the matching swizzle, one per
 *    column strip, strips one after another.
 * 2. cg_wgmma_plan_buffer: a DOT operand that is a buffer stage is read in
 *    place, K- or MN-major as the buffer is, and every element a descriptor
 *    names is where the buffer holds it; fp8 in MN-major order is refused
 *    (wgmma transposes only 16-bit types); no copy is left when both are.
 * 3. Pipelined GEMMs as the pipelining passes write them (tma_ready guard,
 *    buffers, prologue, loop with async_wait / smem_read / dot pending 1 /
 *    barrier / loads ahead, dot_wait; the original loop in the else branch),
 *    bf16 NN, bf16 NT (trans of smem_read) and fp8 NT, through the layout pass
 *    to PTX and an sm_90a cubin: TMA, mbarriers, wait_group 1, no operand
 *    stored to shared memory in the pipelined path, no ptxas warning that
 *    wgmma is serialized; the descriptors are kernel parameters of the ABI,
 *    optional (guarded) in the metadata, and the shared memory is the plan's; C is
 *    stored through TMA (test_cgtmastore.c), its staging the only st.shared.
 * 4. A buffer allocated in a loop re-initialises its barriers (inval, init);
 *    loads without a guard have required descriptors; a stage loaded into
 *    between its smem_read and the DOT is copied, not read in place; user errors (TMA before
 *    sm_90, rows under 16 bytes, more shared memory than a block has).
 * TEST_CGASYNC_DUMP=1 prints each kernel's PTX and ptxas's report.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codegen/cg.h"
#include "codegen/lower_int.h"
#include "codegen/meta_emit.h"
#include "ir/ir.h"
#include "ir/layout.h"
#include "passes/pass.h"
#include "runtime/meta.h"

static IrType tile2(DType dt, int a, int b)
{
    int32_t d[2] = {a, b};
    return ir_ty_tile(dt, false, 2, d);
}

static IrType smem3(DType dt, int s, int a, int b)
{
    int32_t d[2] = {a, b};
    return ir_ty_smem(dt, s, 2, d);
}

static int lg(int x)
{
    int n = 0;
    while ((1 << n) < x) n++;
    return n;
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what)) n++;
    return n;
}

/* ---- 1. the stage layout is what TMA writes ----------------------------------------- */

static void smem_layout_is_tma_boxes(void **state)
{
    (void)state;
    static const struct {
        DType dt;
        int R, C, span;
    } cs[] = {
        {DT_BF16, 128, 64, 128}, {DT_BF16, 64, 128, 128}, {DT_F16, 64, 256, 128}, {DT_F8E4M3, 128, 128, 128},
        {DT_F8E4M3, 64, 256, 128}, {DT_BF16, 64, 32, 64}, {DT_BF16, 32, 16, 32}, {DT_BF16, 16, 8, 16},
        {DT_F32, 64, 32, 128}, {DT_BF16, 512, 64, 128},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        int eb = dt_bytes(cs[i].dt), R = cs[i].R, C = cs[i].C, span = cs[i].span;
        SharedLayout S = cg_smem_layout(smem3(cs[i].dt, 3, R, C));
        assert_int_equal(S.contig, 1);
        assert_int_equal(16 << (S.swizzle < 0 ? 0 : S.swizzle), span);
        for (int r = 0; r < R; r++)
            for (int c = 0; c < C; c++) {
                /* the box of strip c * eb / span holds rows of span bytes, one after another;
                 * the swizzle acts on the address (from a 1024-aligned base) */
                uint32_t strip = (uint32_t)(c * eb / span), in = (uint32_t)(c * eb % span);
                uint32_t tma = layout_swizzle_addr(S.swizzle, strip * (uint32_t)(R * span) + (uint32_t)(r * span) + in);
                uint32_t got = layout_shared_offset(&S, (uint32_t)r << lg(C) | (uint32_t)c) * (uint32_t)eb;
                if (got != tma)
                    fail_msg("%s [%d, %d] element (%d, %d): layout at byte %u, TMA writes it at %u", dt_name[cs[i].dt],
                             R, C, r, c, got, tma);
            }
    }
}

/* ---- 2. operands read in place --------------------------------------------------------- */

/* Every element of every instruction tile of operand op: where the descriptor
 * model reads it is where buffer layout B holds it (trans: B is the operand's transpose). */
static void check_in_place(const CgWgmmaPlan *p, WgmmaOperand op, const SharedLayout *B, bool trans)
{
    const CgWgmmaOpnd *o = op == LL_WGMMA_A ? &p->a : &p->b;
    assert_true(o->in_buf);
    int mn_ext = op == LL_WGMMA_A ? p->M : p->N, unit = op == LL_WGMMA_A ? 64 : p->w.instr_n;
    int eb = o->S.ebytes;
    const uint32_t base = 5 * 1024;
    for (int mn0 = 0; mn0 < mn_ext; mn0 += unit)
        for (int k0 = 0; k0 < p->K; k0 += p->w.instr_k) {
            uint64_t d = cg_wgmma_desc(p, op, base, mn0, k0);
            for (int mn = 0; mn < unit; mn++)
                for (int k = 0; k < p->w.instr_k; k++) {
                    int r = op == LL_WGMMA_A ? mn0 + mn : k0 + k, c = op == LL_WGMMA_A ? k0 + k : mn0 + mn;
                    int rows = op == LL_WGMMA_A ? p->M : p->K, cols = op == LL_WGMMA_A ? p->K : p->N;
                    /* the element (r, c) of the operand is (c, r) of a transposed buffer */
                    uint32_t flat = trans ? (uint32_t)c << lg(rows) | (uint32_t)r : (uint32_t)r << lg(cols) | (uint32_t)c;
                    uint32_t want = base + layout_shared_offset(B, flat) * (uint32_t)eb;
                    uint32_t got = layout_wgmma_desc_addr(d, o->k_major, eb, mn, k);
                    if (got != want)
                        fail_msg("%c (%d, %d): the descriptor reads %u, the buffer holds it at %u", op ? 'B' : 'A', r,
                                 c, got, want);
                }
        }
}

static void plan_reads_buffers(void **state)
{
    (void)state;
    static const struct {
        DType dt;
        int M, N, K, warps;
        bool a_trans, b_trans;   /* the buffer holds the operand's transpose */
        bool a_ok, b_ok;         /* read in place */
        bool a_kmajor, b_kmajor;
    } cs[] = {
        {DT_BF16, 128, 128, 64, 8, false, false, true, true, true, false},  /* gemm: B [K, N] N-major */
        {DT_BF16, 128, 128, 64, 8, false, true, true, true, true, true},    /* gemm_nt: trans(B [N, K]) */
        {DT_F16, 64, 64, 32, 8, false, false, true, true, true, false},     /* two warpgroups along N */
        {DT_BF16, 128, 256, 64, 8, true, true, true, true, false, true},    /* A from [K, M]: M-major */
        {DT_F8E4M3, 128, 128, 128, 8, false, true, true, true, true, true}, /* fp8, B K-major */
        {DT_F8E4M3, 128, 128, 128, 8, false, false, true, false, true, true}, /* fp8 B [K, N]: a copy */
        {DT_F8E4M3, 128, 128, 128, 8, true, true, false, true, true, true},  /* fp8 A [K, M]: a copy */
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        IrType at = tile2(cs[i].dt, cs[i].M, cs[i].K), bt = tile2(cs[i].dt, cs[i].K, cs[i].N);
        IrType abuf = cs[i].a_trans ? smem3(cs[i].dt, 4, cs[i].K, cs[i].M) : smem3(cs[i].dt, 4, cs[i].M, cs[i].K);
        IrType bbuf = cs[i].b_trans ? smem3(cs[i].dt, 4, cs[i].N, cs[i].K) : smem3(cs[i].dt, 4, cs[i].K, cs[i].N);
        SharedLayout SA = cg_smem_layout(abuf), SB = cg_smem_layout(bbuf);
        CgWgmmaPlan p;
        assert_true(cg_wgmma_plan(ir_target_find("sm_90a"), at, bt, NULL, NULL, cs[i].warps, &p));
        uint32_t copies = p.bytes;
        bool a = cg_wgmma_plan_buffer(&p, at, LL_WGMMA_A, &SA, cs[i].a_trans);
        bool b = cg_wgmma_plan_buffer(&p, bt, LL_WGMMA_B, &SB, cs[i].b_trans);
        if (a != cs[i].a_ok || b != cs[i].b_ok) fail_msg("case %zu: A %d B %d read in place", i, a, b);
        uint32_t abytes = (uint32_t)(cs[i].M * cs[i].K * dt_bytes(cs[i].dt));
        uint32_t bbytes = (uint32_t)(cs[i].K * cs[i].N * dt_bytes(cs[i].dt));
        if (a) {
            assert_int_equal(p.a.k_major, cs[i].a_kmajor);
            check_in_place(&p, LL_WGMMA_A, &SA, cs[i].a_trans);
        }
        if (b) {
            assert_int_equal(p.b.k_major, cs[i].b_kmajor);
            check_in_place(&p, LL_WGMMA_B, &SB, cs[i].b_trans);
        }
        /* the copies left: none, B alone from 0, or A alone */
        assert_int_equal(p.bytes, a && b ? 0 : a ? bbytes : b ? abytes : copies);
        if (a && !b) assert_int_equal(p.b.off, 0);
    }
}

/* ---- 3, 4. pipelined kernels ------------------------------------------------------------ */

typedef struct Pipe {
    const char *dt;     /* operand type */
    int BM, BN, BK, S, warps;
    bool nt;            /* B given as [N, K] (nn.Linear weights), read through trans */
    bool fallback;      /* the else branch is the original loop (else it yields zeros) */
    bool guard;         /* the pipelined path runs under `if tma_ready(A) and tma_ready(B)` */
    bool outer;         /* inside an outer loop of two trips (C = 2 A B): the buffers are allocated twice */
} Pipe;

/* The kernel the pipelining passes make of stdlib gemm / gemm_nt (lang/PIPELINING.md), as text;
 * its loops carry `stages` as the passes leave them (1: the passes leave the loop alone). */
static char *pipe_text(const Pipe *P)
{
    StrBuf b = {0};
    const char *T = P->dt;
    int BM = P->BM, BN = P->BN, BK = P->BK, S = P->S;
    sb_printf(&b, "kernel @gemm \"gemm\"(%%A: tensor<%s, 2>, %%B: tensor<%s, 2>, %%C: tensor<bf16, 2>) warps(%d) {\n",
              T, T, P->warps);
    sb_printf(&b, "  %%pm = program_id {axis = 0} : i32\n  %%pn = program_id {axis = 1} : i32\n"
                  "  %%cm = const %d : i32\n  %%cn = const %d : i32\n"
                  "  %%m0 = mul %%pm, %%cm : i32\n  %%n0 = mul %%pn, %%cn : i32\n"
                  "  %%z = const 0 : f32\n  %%zeros = splat %%z : tile<f32>[%d, %d]\n"
                  "  %%K = view_shape %%A {dim = 1} : i64\n  %%k0 = const 0 : i64\n  %%step = const %d : i64\n"
                  "  %%s1 = const 1 : i32\n  %%cS = const %d : i32\n",
              BM, BN, BM, BN, BK, S);
    if (P->guard)
        sb_printf(&b, "  %%okA = tma_ready %%A : i1\n  %%okB = tma_ready %%B : i1\n  %%ok = and %%okA, %%okB : i1\n"
                      "  %%res = if %%ok : tile<f32>[%d, %d] {\n", BM, BN);
    if (P->outer)
        sb_printf(&b, "  %%t0 = const 0 : i32\n  %%t2 = const 2 : i32\n"
                      "  %%ores = for %%t = %%t0 to %%t2 step %%s1 iter(%%oacc = %%zeros) {stages = 1} : "
                      "tile<f32>[%d, %d] {\n",
                  BM, BN);
    sb_printf(&b, "  %%bA = smem_alloc : smem<%s>[%d, %d, %d]\n", T, S, BM, BK);
    if (P->nt) sb_printf(&b, "  %%bB = smem_alloc : smem<%s>[%d, %d, %d]\n", T, S, BN, BK);
    else sb_printf(&b, "  %%bB = smem_alloc : smem<%s>[%d, %d, %d]\n", T, S, BK, BN);
    /* the prologue: stages 0 .. S-2 */
    for (int s = 0; s < S - 1; s++) {
        sb_printf(&b, "  %%ps%d = const %d : i32\n  %%pk%d = const %d : i64\n  %%pp%d = cmp lt %%pk%d, %%K : i1\n"
                      "  if %%pp%d {\n    async_load %%A, %%bA, %%ps%d, %%m0, %%pk%d\n",
                  s, s, s, s * BK, s, s, s, s, s);
        if (P->nt) sb_printf(&b, "    async_load %%B, %%bB, %%ps%d, %%n0, %%pk%d\n", s, s);
        else sb_printf(&b, "    async_load %%B, %%bB, %%ps%d, %%pk%d, %%n0\n", s, s);
        sb_puts(&b, "    yield\n  } else {\n    yield\n  }\n");
    }
    sb_printf(&b, "  %%i0 = const 0 : i32\n  %%ahead = const %d : i64\n  %%cS1 = const %d : i32\n", (S - 1) * BK, S - 1);
    sb_printf(&b, "  %%90:2 = for %%k = %%k0 to %%K step %%step iter(%%acc = %%zeros, %%i = %%i0) {stages = %d} : "
                  "tile<f32>[%d, %d], i32 {\n", S, BM, BN);
    sb_puts(&b, "    %st = rem %i, %cS : i32\n    %q = div %i, %cS : i32\n    %ph = and %q, %s1 : i32\n"
                "    async_wait %bA, %st, %ph\n");
    sb_printf(&b, "    %%a = smem_read %%bA, %%st : tile<%s>[%d, %d]\n    async_wait %%bB, %%st, %%ph\n", T, BM, BK);
    if (P->nt)
        sb_printf(&b, "    %%bt = smem_read %%bB, %%st : tile<%s>[%d, %d]\n"
                      "    %%b = trans %%bt {perm = [1, 0]} : tile<%s>[%d, %d]\n", T, BN, BK, T, BK, BN);
    else sb_printf(&b, "    %%b = smem_read %%bB, %%st : tile<%s>[%d, %d]\n", T, BK, BN);
    sb_printf(&b, "    %%d = dot %%a, %%b, %%acc {pending = 1} : tile<f32>[%d, %d]\n    barrier\n"
                  "    %%kn = add %%k, %%ahead : i64\n    %%more = cmp lt %%kn, %%K : i1\n"
                  "    if %%more {\n      %%iS = add %%i, %%cS1 : i32\n      %%ns = rem %%iS, %%cS : i32\n"
                  "      async_load %%A, %%bA, %%ns, %%m0, %%kn\n", BM, BN);
    if (P->nt) sb_puts(&b, "      async_load %B, %bB, %ns, %n0, %kn\n");
    else sb_puts(&b, "      async_load %B, %bB, %ns, %kn, %n0\n");
    sb_printf(&b, "      yield\n    } else {\n      yield\n    }\n    %%i1 = add %%i, %%s1 : i32\n"
                  "    yield %%d, %%i1\n  }\n  %%w = dot_wait %%90 : tile<f32>[%d, %d]\n", BM, BN);
    const char *result = "%w";
    if (P->outer) {
        sb_printf(&b, "  %%osum = add %%oacc, %%w : tile<f32>[%d, %d]\n  yield %%osum\n  }\n", BM, BN);
        result = "%ores";
    }
    if (P->guard) {
        sb_printf(&b, "  yield %s\n  } else {\n", result);
        if (P->fallback) {
            sb_printf(&b, "  %%old = for %%k2 = %%k0 to %%K step %%step iter(%%acc2 = %%zeros) {stages = 1} : "
                          "tile<f32>[%d, %d] {\n"
                          "    %%a2 = block_load %%A, %%m0, %%k2 : tile<%s>[%d, %d]\n", BM, BN, T, BM, BK);
            if (P->nt)
                sb_printf(&b, "    %%bt2 = block_load %%B, %%n0, %%k2 : tile<%s>[%d, %d]\n"
                              "    %%b2 = trans %%bt2 {perm = [1, 0]} : tile<%s>[%d, %d]\n", T, BN, BK, T, BK, BN);
            else sb_printf(&b, "    %%b2 = block_load %%B, %%k2, %%n0 : tile<%s>[%d, %d]\n", T, BK, BN);
            sb_printf(&b, "    %%d2 = dot %%a2, %%b2, %%acc2 : tile<f32>[%d, %d]\n    yield %%d2\n  }\n"
                          "  yield %%old\n  }\n", BM, BN);
        } else {
            sb_puts(&b, "  yield %zeros\n  }\n");
        }
        result = "%res";
    }
    sb_printf(&b, "  %%out = cast %s : tile<bf16>[%d, %d]\n  block_store %%C, %%m0, %%n0, %%out\n  return\n}\n", result,
              BM, BN);
    return b.s;
}

typedef struct Built {
    CgResult r;
    char *diag;   /* the diagnostics */
    bool ok;
} Built;

static IrModule *parse_pipe(const Pipe *P, const char *arch)
{
    char *text = pipe_text(P);
    Diag d;
    diag_init(&d, "t.tir", text, strlen(text), stderr, DIAG_COLOR_NEVER);
    IrModule *m = ir_parse("t.tir", text, strlen(text), &d);
    if (!m) fail_msg("the kernel text does not parse:\n%s", text);
    assert_true(ir_verify_module(m, &d, "test"));
    m->target = ir_target_find(arch);
    assert_true(pass_run_backend(m, NULL, &d));
    diag_free(&d);
    free(text);
    return m;
}

/* The kernel of P for arch, compiled up to `upto`; diagnostics captured. */
static Built build(const Pipe *P, const char *arch, CgEmit upto)
{
    Built B;
    memset(&B, 0, sizeof B);
    IrModule *m = parse_pipe(P, arch);
    Diag d;
    diag_init(&d, "t.tir", NULL, 0, NULL, DIAG_COLOR_NEVER);
    d.capture = true;
    CgTarget t = {.arch = ir_target_find(arch), .opt_level = 3};
    B.ok = cg_compile_module(m, &t, upto, &B.r, &d);
    B.diag = tl_xstrdup(d.buf.s ? d.buf.s : "");
    if (getenv("TEST_CGASYNC_DUMP") && B.ok)
        printf("---- %s %s\n%s\n%s\n", P->dt, P->nt ? "nt" : "nn", B.r.ptx.s, B.r.info.s ? B.r.info.s : "");
    diag_free(&d);
    ir_module_free(m);
    return B;
}

static void built_free(Built *B)
{
    cg_result_free(&B->r);
    free(B->diag);
}

/* The PTX text from the first line containing `from` on (the pipelined path comes first). */
static const char *ptx_from(const char *ptx, const char *from)
{
    const char *p = strstr(ptx, from);
    assert_non_null(p);
    return p;
}

/* The metadata blob, read back from the bytes of __tilec_meta in the PTX. */
static tilert_meta meta_of(const Built *B)
{
    const char *p = strstr(B->r.ptx.s, TILERT_META_SYMBOL "[");
    assert_non_null(p);
    size_t n = (size_t)strtoul(p + strlen(TILERT_META_SYMBOL) + 1, NULL, 10);
    uint8_t *blob = malloc(n);
    const char *q = strchr(p, '{') + 1;
    for (size_t i = 0; i < n; i++) {
        char *e;
        blob[i] = (uint8_t)strtoul(q, &e, 10);
        q = e + 1;
    }
    tilert_meta m;
    char err[300];
    if (!tilert_meta_parse(blob, n, &m, err, sizeof err)) fail_msg("metadata: %s", err);
    free(blob);
    return m;
}

static void pipelined_gemms(void **state)
{
    (void)state;
    static const struct {
        Pipe P;
        const char *wgmma;   /* the instruction */
        int per_dot;         /* wgmma per DOT */
        int tma_a, tma_b;    /* cp.async.bulk.tensor per load of A, of B (one per column strip) */
        uint32_t stage_a, stage_b;
    } cs[] = {
        {{"bf16", 128, 128, 64, 4, 8, false, true, true, false}, "m64n128k16.f32.bf16.bf16", 4, 1, 2, 16384, 16384},
        {{"bf16", 128, 128, 64, 4, 8, true, true, true, false}, "m64n128k16.f32.bf16.bf16", 4, 1, 1, 16384, 16384},
        {{"f16", 128, 256, 64, 3, 8, false, true, true, false}, "m64n256k16.f32.f16.f16", 4, 1, 4, 16384, 32768},
        {{"f8e4m3", 128, 128, 128, 4, 8, true, true, true, false}, "m64n128k32.f32.e4m3.e4m3", 4, 1, 1, 16384, 16384},
        {{"bf16", 64, 64, 32, 4, 4, true, true, true, false}, "m64n64k16.f32.bf16.bf16", 2, 1, 1, 4096, 4096},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        for (int variant = 0; variant < 2; variant++) {
            Pipe P = cs[i].P;
            P.fallback = variant == 0; /* 1: the pipelined path alone */
            Built B = build(&P, "sm_90a", CG_EMIT_CUBIN);
            if (!B.ok) fail_msg("case %zu: %s", i, B.diag);
            const char *ptx = B.r.ptx.s;
            int S = P.S, loads = S; /* S - 1 in the prologue, one in the loop */
            assert_int_equal(count(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"),
                             loads * (cs[i].tma_a + cs[i].tma_b));
            assert_int_equal(count(ptx, "mbarrier.arrive.expect_tx.shared::cta.b64"), 2 * loads);
            assert_int_equal(count(ptx, "mbarrier.try_wait.parity.shared::cta.b64"), 2);
            assert_int_equal(count(ptx, "mbarrier.init.shared::cta.b64"), 2 * S);
            assert_int_equal(count(ptx, "mbarrier.inval"), 0);
            assert_int_equal(count(ptx, "wgmma.wait_group.sync.aligned 1;"), 1);
            char instr[96];
            snprintf(instr, sizeof instr, "wgmma.mma_async.sync.aligned.%s", cs[i].wgmma);
            assert_int_equal(count(ptx, instr), cs[i].per_dot * (P.fallback ? 2 : 1));
            /* the descriptors: one 128-byte grid-constant parameter per view, addressed generically */
            assert_int_equal(count(ptx, ".param .align 64 .b8 gemm_param_5[128]"), 1);
            assert_int_equal(count(ptx, ".param .align 64 .b8 gemm_param_11[128]"), 1);
            assert_true(count(ptx, "cvta.param.u64") >= 2);
            /* the pipelined path stores no operand: only the fallback's copies are st.shared */
            const char *pipe = ptx_from(ptx, "mbarrier.try_wait.parity");
            const char *tail = strstr(pipe, "wgmma.wait_group.sync.aligned 1;");
            assert_non_null(tail);
            size_t len = (size_t)(tail - pipe);
            char *loop = tl_xstrdup(pipe);
            loop[len] = 0;
            assert_int_equal(count(loop, "st.shared"), 0);
            assert_int_equal(count(loop, "ld.shared"), 0);
            assert_int_equal(count(loop, "bar.sync"), 0);
            assert_int_equal(count(loop, "fence.proxy.async"), 0);
            assert_int_equal(count(loop, "wgmma.fence.sync.aligned"), 1);
            free(loop);
            /* without the fallback, the only st.shared are the epilogue's: C staged for its TMA
             * store (bf16 pairs, after the dot_wait) */
            int staged = P.BM * P.BN / (32 * P.warps) / 2;
            if (!P.fallback) {
                assert_int_equal(count(ptx, "st.shared"), staged);
                /* the pairs come packed from cvt.rn.bf16x2.f32 (.u32) or from LLVM (.b32) */
                const char *epi = ptx_from(ptx, "wgmma.wait_group.sync.aligned 0;");
                assert_int_equal(count(epi, "st.shared.b32") + count(epi, "st.shared.u32"), staged);
            }
            assert_int_equal(count(ptx, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"), P.BN * 2 / 128);
            /* ptxas keeps the wgmma pipeline */
            const char *info = B.r.info.s ? B.r.info.s : "";
            if (strstr(info, "serialized")) fail_msg("case %zu: ptxas serializes wgmma:\n%s", i, info);
            /* facts: two optional descriptors for the loads, one for C's TMA store, and the
             * buffers' shared memory */
            const CgKernelFacts *f = &B.r.facts[0];
            assert_int_equal(f->ntma, 3);
            assert_int_equal(f->tma[2].param, 2);
            assert_true(f->tma[2].optional);
            assert_int_equal(f->tma[2].box[1], (uint32_t)P.BM);
            DType dt;
            assert_true(dt_from_name(P.dt, strlen(P.dt), &dt));
            for (int j = 0; j < 2; j++) {
                assert_true(f->tma[j].optional);
                assert_int_equal(f->tma[j].param, (uint32_t)j);
                assert_int_equal(f->tma[j].rank, 2);
                /* a box is one span of the widest swizzle the rows allow */
                uint32_t row = (uint32_t)((j == 0 || P.nt ? P.BK : P.BN) * dt_bytes(dt));
                uint32_t span = row < 128 ? row : 128;
                assert_int_equal(f->tma[j].box[0] * (uint32_t)dt_bytes(dt), span);
                assert_int_equal(16u << f->tma[j].swizzle, span);
            }
            assert_int_equal(f->tma[0].box[1], (uint32_t)P.BM);
            assert_int_equal(f->tma[1].box[1], (uint32_t)(P.nt ? P.BN : P.BK));
            /* the stages, 8-byte barriers, rounded up to 128 for the scratch area after them */
            uint32_t bufs = ((uint32_t)S * (cs[i].stage_a + cs[i].stage_b) + 16u * (uint32_t)S + 127) & ~127u;
            assert_true(f->smem_dynamic >= 1024 + bufs);
            /* and after them the scratch area: C's staging (aligned at run time to 1024) */
            if (!P.fallback) assert_int_equal(f->smem_dynamic, 1024 + bufs + (uint32_t)(P.BM * P.BN * 2) + 1024);
            tilert_meta m = meta_of(&B);
            assert_int_equal(m.kernels[0].params[0].flags, TILERT_META_PARAM_TMA_OPTIONAL);
            assert_int_equal(m.kernels[0].params[1].flags, TILERT_META_PARAM_TMA_OPTIONAL);
            assert_int_equal(m.kernels[0].params[2].ntma, 1);
            assert_int_equal(m.kernels[0].params[2].flags, TILERT_META_PARAM_TMA_OPTIONAL);
            assert_int_equal(m.kernels[0].smem_dynamic, f->smem_dynamic);
            tilert_meta_free(&m);
            built_free(&B);
        }
    }
}

/* A buffer allocated in a loop starts each allocation at phase 0: its barriers are
 * initialised at the entry, invalidated and initialised again at each allocation. */
static void alloc_in_loop(void **state)
{
    (void)state;
    Pipe P = {"bf16", 128, 128, 64, 3, 8, false, false, true, true};
    Built B = build(&P, "sm_90a", CG_EMIT_CUBIN);
    if (!B.ok) fail_msg("%s", B.diag);
    const char *ptx = B.r.ptx.s;
    assert_int_equal(count(ptx, "mbarrier.inval.shared::cta.b64"), 2 * P.S);
    assert_int_equal(count(ptx, "mbarrier.init.shared::cta.b64"), 4 * P.S);
    /* the entry's initialisation comes before the first TMA_READY test */
    const char *first_init = strstr(ptx, "mbarrier.init"), *inval = strstr(ptx, "mbarrier.inval");
    assert_true(first_init && inval && first_init < inval);
    if (strstr(B.r.info.s ? B.r.info.s : "", "serialized")) fail_msg("ptxas serializes wgmma:\n%s", B.r.info.s);
    built_free(&B);
}

/* Loads outside any tma_ready guard: the descriptors are required (the launch fails by name). */
static void unguarded_loads(void **state)
{
    (void)state;
    Pipe P = {"bf16", 128, 128, 64, 2, 8, true, false, false, false};
    Built B = build(&P, "sm_90a", CG_EMIT_PTX);
    if (!B.ok) fail_msg("%s", B.diag);
    assert_int_equal(B.r.facts[0].ntma, 3);
    assert_false(B.r.facts[0].tma[0].optional);
    assert_false(B.r.facts[0].tma[1].optional);
    assert_true(B.r.facts[0].tma[2].optional); /* C's store tests its descriptor itself */
    tilert_meta m = meta_of(&B);
    assert_int_equal(m.kernels[0].params[0].flags, 0);
    assert_int_equal(m.kernels[0].params[0].ntma, 1);
    tilert_meta_free(&m);
    built_free(&B);
}

/* A stage read by smem_read and loaded into again before the DOT no longer holds the
 * value: the DOT then takes copies of its registers (st.shared, barriers); without the
 * load in between it reads the stages in place. */
static void in_place_only_when_unchanged(void **state)
{
    (void)state;
    for (int overwrite = 0; overwrite < 2; overwrite++) {
        StrBuf t = {0};
        sb_printf(&t, "kernel @k \"k\"(%%A: tensor<bf16, 2>, %%B: tensor<bf16, 2>, %%C: tensor<f32, 2>) warps(4) {\n"
                      "  %%c0 = const 0 : i32\n  %%z = const 0 : f32\n  %%acc = splat %%z : tile<f32>[64, 64]\n"
                      "  %%bA = smem_alloc : smem<bf16>[1, 64, 64]\n  %%bB = smem_alloc : smem<bf16>[1, 64, 64]\n"
                      "  async_load %%A, %%bA, %%c0, %%c0, %%c0\n  async_load %%B, %%bB, %%c0, %%c0, %%c0\n"
                      "  async_wait %%bA, %%c0, %%c0\n  async_wait %%bB, %%c0, %%c0\n"
                      "  %%a = smem_read %%bA, %%c0 : tile<bf16>[64, 64]\n  %%b = smem_read %%bB, %%c0 : tile<bf16>[64, 64]\n"
                      "  barrier\n%s"
                      "  %%d = dot %%a, %%b, %%acc : tile<f32>[64, 64]\n  block_store %%C, %%c0, %%c0, %%d\n  return\n}\n",
                  overwrite ? "  async_load %B, %bB, %c0, %c0, %c0\n" : "");
        Diag d;
        diag_init(&d, "t.tir", t.s, t.len, stderr, DIAG_COLOR_NEVER);
        IrModule *m = ir_parse("t.tir", t.s, t.len, &d);
        assert_non_null(m);
        m->target = ir_target_find("sm_90a");
        assert_true(pass_run_backend(m, NULL, &d));
        CgTarget tg = {.arch = ir_target_find("sm_90a"), .opt_level = 3};
        CgResult r;
        assert_true(cg_compile_module(m, &tg, CG_EMIT_PTX, &r, &d));
        /* from the waits to the wgmma (C's TMA store stages it in shared memory after) */
        char *dot = tl_xstrdup(ptx_from(r.ptx.s, "mbarrier.try_wait.parity"));
        char *end = strstr(dot, "wgmma.commit_group");
        assert_non_null(end);
        *end = 0;
        if (overwrite) assert_true(count(dot, "st.shared.v4") > 0);
        else assert_int_equal(count(dot, "st.shared"), 0);
        assert_int_equal(count(dot, "wgmma.mma_async"), 4);
        free(dot);
        cg_result_free(&r);
        ir_module_free(m);
        diag_free(&d);
        sb_free(&t);
    }
}

static void user_errors(void **state)
{
    (void)state;
    /* TMA needs sm_90 */
    Pipe P = {"bf16", 128, 128, 64, 2, 8, true, false, true, false};
    Built B = build(&P, "sm_80", CG_EMIT_PTX);
    assert_false(B.ok);
    if (!strstr(B.diag, "async_load needs TMA, which needs sm_90 or sm_90a (compiling for sm_80)"))
        fail_msg("diagnostic '%s'", B.diag);
    built_free(&B);
    /* 9 stages of A and B (288 KiB, 18 barriers) and the fallback's copies: more than a block has */
    P = (Pipe){"bf16", 128, 128, 64, 9, 8, true, true, true, false};
    B = build(&P, "sm_90a", CG_EMIT_PTX);
    assert_false(B.ok);
    if (!strstr(B.diag, "'gemm' needs ") || !strstr(B.diag, " bytes of shared memory: 296192 for its buffers (with "
                                                            "their barriers and 1024 of alignment) and "))
        fail_msg("diagnostic '%s'", B.diag);
    built_free(&B);
    /* rows of 8 bytes cannot be a TMA box: smem<bf16>[2, 64, 4] */
    const char *text = "kernel @k \"k\"(%A: tensor<bf16, 2>) warps(4) {\n"
                       "  %b = smem_alloc : smem<bf16>[2, 64, 4]\n  return\n}\n";
    Diag d;
    diag_init(&d, "t.tir", text, strlen(text), NULL, DIAG_COLOR_NEVER);
    d.capture = true;
    IrModule *m = ir_parse("t.tir", text, strlen(text), &d);
    assert_non_null(m);
    m->target = ir_target_find("sm_90a");
    assert_true(pass_run_backend(m, NULL, &d));
    CgTarget t = {.arch = ir_target_find("sm_90a"), .opt_level = 3};
    CgResult r;
    assert_false(cg_compile_module(m, &t, CG_EMIT_PTX, &r, &d));
    if (!strstr(d.buf.s, "smem<bf16>[2, 64, 4]: shared-memory buffers hold 2-d tiles whose rows are at least 16 bytes"))
        fail_msg("diagnostic '%s'", d.buf.s);
    cg_result_free(&r);
    ir_module_free(m);
    diag_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(smem_layout_is_tma_boxes),
        cmocka_unit_test(plan_reads_buffers),
        cmocka_unit_test(pipelined_gemms),
        cmocka_unit_test(alloc_in_loop),
        cmocka_unit_test(unguarded_loads),
        cmocka_unit_test(in_place_only_when_unchanged),
        cmocka_unit_test(user_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
