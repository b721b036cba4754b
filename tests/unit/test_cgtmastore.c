/* test_cgtmastore.c: block stores through shared memory and TMA on sm_90a
 * (codegen/lower_async.c's TMA stores, cg_smem_store_shared_part), without a GPU.
 *
 * 1. The staging layout (cg_tma_store_layout) holds every element where a TMA
 *    store of boxes [R rows (256 per box at most), span bytes] under the
 *    matching swizzle reads it: box (strip s, row chunk q) from byte
 *    s * R * span + q * 256 * span of the 1024-aligned area.
 * 2. The accumulator layouts (wgmma and mma.sync) store into it as 4-byte
 *    pairs (16-bit outputs) or 8-byte pairs (f32) and the 16-bit and 8-bit
 *    outputs without bank conflicts; f32 pairs in the 128B swizzle take two
 *    wavefronts where one would do (rows r and r ^ 1 of a half warp share
 *    banks), which is accepted: narrower swizzles would mean 32-byte boxes.
 *    A part of the area (a strip group) stores exactly the elements of those
 *    strips, at their offset less the part's start.
 * 3. stdlib gemm / gemm_nt / fp8_gemm / the persistent gemm to PTX and an
 *    sm_90a cubin: per store, the descriptor test, a barrier, st.shared of
 *    the registers, fence.proxy.async, a barrier, one cp.async.bulk.tensor
 *    .global.shared::cta.bulk_group per box, commit_group, wait_group.read 0;
 *    for the launcher's zeros, the staged strips read back (ld.shared.v4) and
 *    stored as 16-byte vectors (st.global.v4); C's descriptor (box of
 *    one span by min(R, 256) rows, the staging swizzle, optional) in the facts
 *    and the metadata; the shared memory the staging area adds; f32 outputs
 *    of 128 x 256 in two strip groups where the whole tile does not fit
 *    beside the pipeline's buffers.  No ptxas warning that wgmma is serialized.
 * 4. Stores that stay plain: sm_90 and sm_80, tiles whose registers already
 *    give 16-byte accesses (blocked layouts) or whose warps write whole
 *    128-byte lines of a row (the fp8 quantizer), rows under 16 bytes, i1 tiles;
 *    views the kernel also reads; and TMA stores under uniform control flow
 *    (an `if`, a loop), each first waiting until the view's earlier TMA stores
 *    are written.
 * TEST_CGTMASTORE_DUMP=1 prints each kernel's PTX and ptxas's report.
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
#include "frontend/frontend.h"
#include "ir/ir.h"
#include "ir/layout.h"
#include "passes/pass.h"
#include "runtime/meta.h"

static IrType tile2(DType dt, int a, int b)
{
    int32_t d[2] = {a, b};
    return ir_ty_tile(dt, false, 2, d);
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

/* ---- 1. the staging layout is what TMA reads ------------------------------------------ */

static void staging_is_tma_boxes(void **state)
{
    (void)state;
    static const struct {
        DType dt;
        int R, C, span;
    } cs[] = {
        {DT_BF16, 128, 128, 128}, {DT_BF16, 128, 256, 128}, {DT_F16, 64, 64, 128},  {DT_F32, 128, 128, 128},
        {DT_F32, 64, 256, 128},   {DT_F8E4M3, 128, 128, 128}, {DT_BF16, 64, 32, 64}, {DT_BF16, 32, 16, 32},
        {DT_F32, 16, 4, 16},      {DT_BF16, 512, 64, 128},  {DT_I32, 8, 8, 32},     {DT_U8, 256, 64, 64},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        int eb = dt_bytes(cs[i].dt), R = cs[i].R, C = cs[i].C, span = cs[i].span;
        SharedLayout S = cg_tma_store_layout(tile2(cs[i].dt, R, C));
        assert_int_equal(S.contig, 1);
        assert_int_equal(S.ebytes, eb);
        assert_int_equal(16 << (S.swizzle < 0 ? 0 : S.swizzle), span); /* the widest the rows allow */
        int box0 = span / eb, box1 = R < 256 ? R : 256;
        for (int r = 0; r < R; r++)
            for (int c = 0; c < C; c++) {
                /* element (r, c) is element (r % box1, c % box0) of box (strip c / box0, chunk r / box1),
                 * which TMA reads row by row from its start, the swizzle acting on the address */
                uint32_t s = (uint32_t)(c / box0), q = (uint32_t)(r / box1);
                uint32_t start = s * (uint32_t)(R * span) + q * (uint32_t)(box1 * span);
                uint32_t in_box = (uint32_t)(r % box1) * (uint32_t)span + (uint32_t)(c % box0) * (uint32_t)eb;
                uint32_t tma = layout_swizzle_addr(S.swizzle, start + in_box);
                uint32_t got = layout_shared_offset(&S, (uint32_t)r << lg(C) | (uint32_t)c) * (uint32_t)eb;
                if (got != tma)
                    fail_msg("%s [%d, %d] element (%d, %d): staged at byte %u, TMA reads it at %u", dt_name[cs[i].dt],
                             R, C, r, c, got, tma);
            }
    }
}

/* ---- 2. the accumulators' stores ------------------------------------------------------- */

typedef struct AccCase {
    int M, N;
    bool wgmma;
    int a, b, instr_n;   /* wgmma: wgm, wgn, instr_n; mma.sync: wm, wn */
} AccCase;

static const AccCase acc_cases[] = {
    {128, 128, true, 2, 1, 128}, {128, 256, true, 2, 1, 256}, {64, 64, true, 1, 1, 64}, {64, 64, true, 1, 2, 32},
    {256, 128, true, 4, 1, 128}, {128, 64, true, 2, 1, 64},   {128, 128, false, 4, 2, 0}, {64, 64, false, 2, 2, 0},
};

static Layout acc_layout(const AccCase *c)
{
    IrType t = tile2(DT_F32, c->M, c->N);
    return c->wgmma ? layout_wgmma_acc(t, c->a, c->b, c->instr_n) : layout_mma_acc(t, c->a, c->b);
}

static void accumulators_store_pairs(void **state)
{
    (void)state;
    static const DType dts[] = {DT_BF16, DT_F16, DT_F8E4M3, DT_F32};
    for (size_t i = 0; i < sizeof acc_cases / sizeof acc_cases[0]; i++)
        for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
            const AccCase *c = &acc_cases[i];
            Layout L = acc_layout(c);
            SharedLayout S = cg_tma_store_layout(tile2(dts[d], c->M, c->N));
            int vec = layout_shared_max_vec(&L, &S);
            assert_int_equal(vec, 2); /* a register pair: 4 bytes for 16-bit, 8 for f32 */
            BankCost k = layout_bank_cost(&L, &S, vec);
            uint32_t limit = dts[d] == DT_F32 ? 2 * k.ideal : k.ideal;
            if (k.wavefronts > limit)
                fail_msg("%dx%d %s %s: %u wavefronts for %u accesses (ideal %u)", c->M, c->N,
                         c->wgmma ? "wgmma" : "mma.sync", dt_name[dts[d]], k.wavefronts, k.accesses, k.ideal);
        }
}

/* The elements a part [lo, lo + n) of the staging area holds are the registers'
 * whose offset lies there: checked as cg_smem_store_shared_part picks them. */
static void parts_are_static(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof acc_cases / sizeof acc_cases[0]; i++) {
        const AccCase *c = &acc_cases[i];
        Layout L = acc_layout(c);
        SharedLayout S = cg_tma_store_layout(tile2(DT_F32, c->M, c->N));
        uint32_t strip = (uint32_t)c->M * 32; /* 128-byte rows of 32 f32 */
        uint32_t nstrips = (uint32_t)c->N / 32;
        Layout C = layout_shared_compose(&L, &S);
        bool stat = cg_smem_part_static(&L, &S, strip);
        /* the registers pick the strip exactly when no lane or warp reaches the strip bits */
        bool want = true;
        for (int in = LL_LANE; in < LL_NIN; in++)
            for (int b = 0; b < C.nbits[in]; b++) want &= C.basis[in][b] < strip;
        assert_int_equal(stat, want);
        if (!stat) continue;
        for (uint32_t s = 0; s < nstrips; s++) /* every element of strip s: a register picked for s in every thread */
            for (uint32_t w = 0; w < (1u << L.nbits[LL_WARP]); w++)
                for (uint32_t l = 0; l < 32; l++)
                    for (uint32_t r = 0; r < layout_nregs(&L); r++) {
                        uint32_t off = layout_apply(&C, r, l, w), roff = layout_apply(&C, r, 0, 0);
                        assert_int_equal(off / strip == s, roff / strip == s);
                    }
    }
    /* wgmma over two warpgroups along N: the warpgroup picks the half of N, so a part
     * of one 128-byte strip of a [64, 64] f32 tile is not static */
    AccCase wn = {64, 64, true, 1, 2, 32};
    Layout L = acc_layout(&wn);
    SharedLayout S = cg_tma_store_layout(tile2(DT_F32, 64, 64));
    assert_false(cg_smem_part_static(&L, &S, 64 * 32));
    assert_true(cg_smem_part_static(&L, &S, 64 * 64));
}

/* ---- 3, 4. kernels through codegen ------------------------------------------------------- */

static IrModule *compile_tile(const char *file, const char *kernel, const FeDefine *defs, uint32_t ndefs,
                              const char *arch)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", TILEC_SOURCE_DIR, file);
    size_t len = 0;
    char *src = tl_read_file(path, &len);
    assert_non_null(src);
    Diag d;
    diag_init(&d, path, src, len, stderr, DIAG_COLOR_NEVER);
    Ast *ast = ast_parse(path, src, len, &d);
    assert_non_null(ast);
    FeOptions fo = {defs, ndefs, kernel};
    IrModule *m = fe_lower(ast, &fo, &d);
    assert_non_null(m);
    assert_true(pass_run_pipeline(m, NULL, 0, NULL, &d));
    m->target = ir_target_find(arch);
    assert_true(pass_run_backend(m, NULL, &d));
    ast_free(ast);
    diag_free(&d);
    free(src);
    return m;
}

static IrModule *parse_tir(const char *text, const char *arch)
{
    Diag d;
    diag_init(&d, "t.tir", text, strlen(text), stderr, DIAG_COLOR_NEVER);
    IrModule *m = ir_parse("t.tir", text, strlen(text), &d);
    if (!m) fail_msg("the kernel text does not parse:\n%s", text);
    assert_true(ir_verify_module(m, &d, "test"));
    m->target = ir_target_find(arch);
    assert_true(pass_run_backend(m, NULL, &d));
    diag_free(&d);
    return m;
}

static void compile(IrModule *m, const char *arch, CgEmit upto, CgResult *r)
{
    Diag d;
    diag_init(&d, "t.tile", NULL, 0, stderr, DIAG_COLOR_NEVER);
    CgTarget t = {.arch = ir_target_find(arch), .opt_level = 3};
    bool ok = cg_compile_module(m, &t, upto, r, &d);
    if (!ok) fprintf(stderr, "%s\n", r->ptx.s ? r->ptx.s : "");
    assert_true(ok);
    if (getenv("TEST_CGTMASTORE_DUMP")) printf("---- %s\n%s\n%s\n", arch, r->ptx.s, r->info.s ? r->info.s : "");
    diag_free(&d);
}

/* The metadata blob, read back from the bytes of __tilec_meta in the PTX. */
static tilert_meta meta_of(const char *ptx)
{
    const char *p = strstr(ptx, TILERT_META_SYMBOL "[");
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

typedef struct StoreCase {
    const char *file, *kernel;
    FeDefine defs[4];
    uint32_t ndefs;
    DType tc;            /* C's type */
    int BM, BN;
    int groups;          /* strip groups staged one after another */
    int stores;          /* BLOCK_STOREs of C in the kernel */
} StoreCase;

static void stdlib_tma_stores(void **state)
{
    (void)state;
    static const StoreCase cs[] = {
        {"stdlib/gemm.tile", "gemm", {{"BN", "128"}}, 1, DT_BF16, 128, 128, 1, 1},
        {"stdlib/gemm.tile", "gemm", {{0}}, 0, DT_BF16, 128, 256, 1, 1},
        {"stdlib/gemm.tile", "gemm", {{"TC", "f32"}, {"BN", "128"}}, 2, DT_F32, 128, 128, 1, 1},
        {"stdlib/gemm.tile", "gemm", {{"TC", "f32"}, {"BN", "256"}}, 2, DT_F32, 128, 256, 2, 1},
        {"stdlib/gemm.tile", "gemm", {{"T", "f16"}, {"TC", "f16"}, {"BM", "64"}, {"BN", "64"}}, 4, DT_F16, 64, 64, 1, 1},
        {"stdlib/gemm.tile", "gemm_nt", {{"TC", "f32"}, {"BN", "128"}}, 2, DT_F32, 128, 128, 1, 1},
        {"stdlib/gemm.tile", "gemm_persistent", {{"BN", "128"}}, 1, DT_BF16, 128, 128, 1, 1},
        {"stdlib/fp8_gemm.tile", "fp8_gemm", {{"BN", "128"}}, 1, DT_BF16, 128, 128, 1, 1},
        {"stdlib/fp8_gemm.tile", "fp8_gemm", {{0}}, 0, DT_BF16, 128, 256, 1, 1},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        const StoreCase *c = &cs[i];
        IrModule *m = compile_tile(c->file, c->kernel, c->defs, c->ndefs, "sm_90a");
        IrFunc *f = m->funcs[0];
        CgResult r;
        compile(m, "sm_90a", CG_EMIT_CUBIN, &r);
        const char *ptx = r.ptx.s;
        int eb = dt_bytes(c->tc);
        uint32_t span = (uint32_t)(c->BN * eb < 128 ? c->BN * eb : 128);
        int strips = c->BN * eb / (int)span;
        /* one box per strip (BM <= 256 rows), one commit and read-wait per strip group */
        assert_int_equal(count(ptx, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"), c->stores * strips);
        assert_int_equal(count(ptx, "cp.async.bulk.commit_group;"), c->stores * c->groups);
        assert_int_equal(count(ptx, "cp.async.bulk.wait_group.read 0;"), c->stores * c->groups);
        /* every thread's pairs: 4 bytes (16-bit) or 8 (f32) per st.shared */
        int per_thread = c->BM * c->BN / (32 * f->warps) / 2;
        /* 16-bit pairs come packed from cvt.rn.bf16x2.f32 (.u32) or from LLVM (.b32); the .u32
         * ones counted from the last wgmma wait on (the FP8 kernels store 32-bit words of their
         * operands before it) */
        const char *epi = ptx, *w;
        while ((w = strstr(epi, "wgmma.wait_group.sync.aligned")) != NULL) epi = w + 1;
        int pairs = eb == 4 ? count(ptx, "st.shared.v2.f32") : count(ptx, "st.shared.b32") + count(epi, "st.shared.u32");
        assert_int_equal(pairs, c->stores * per_thread);
        /* without a descriptor: the staged strips read back and stored as 16-byte vectors, one
         * strip at a time ([BM, span / eb]: BM * span / 16 vectors over the threads), each
         * store once where the strip is inside C and once predicated where it is not */
        int vecs = c->BM * (int)span / 16 / (32 * f->warps);
        assert_int_equal(count(ptx, "ld.shared.v4"), c->stores * strips * vecs);
        assert_int_equal(count(ptx, "st.global.v4"), 2 * c->stores * strips * vecs);
        /* the staging: after the TMA path's first barrier come the stores, the fence, a barrier, the boxes */
        const char *bulk = strstr(ptx, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group");
        const char *fence = NULL;
        for (const char *p = strstr(ptx, "fence.proxy.async.shared::cta;"); p && p < bulk;
             p = strstr(p + 1, "fence.proxy.async.shared::cta;"))
            fence = p;
        assert_non_null(fence);
        const char *from = fence > ptx + 4000 ? fence - 4000 : ptx;
        const char *st = strstr(from, eb == 4 ? "st.shared.v2.f32" : "st.shared.b32");
        if (eb != 4 && (!st || st > fence)) st = strstr(from, "st.shared.u32");
        assert_true(st && st < fence);
        assert_non_null(strstr(fence, "bar.sync"));
        assert_true(strstr(fence, "bar.sync") < bulk);
        /* C's descriptor: one span by min(BM, 256) rows in the staging swizzle, optional */
        const CgKernelFacts *k = &r.facts[0];
        uint32_t pc = 0;
        while (pc < f->nparams && strcmp(f->params[pc].name, "C") != 0) pc++;
        assert_true(pc < f->nparams);
        const CgTmaDesc *dc = NULL;
        for (uint32_t j = 0; j < k->ntma; j++)
            if (k->tma[j].param == pc) dc = &k->tma[j];
        assert_non_null(dc);
        assert_int_equal(dc->rank, 2);
        assert_int_equal(dc->box[0] * (uint32_t)eb, span);
        assert_int_equal(dc->box[1], (uint32_t)c->BM);
        assert_int_equal(16u << dc->swizzle, span);
        assert_true(dc->optional);
        tilert_meta mt = meta_of(ptx);
        assert_int_equal(mt.kernels[0].params[pc].ntma, 1);
        assert_int_equal(mt.kernels[0].params[pc].flags, TILERT_META_PARAM_TMA_OPTIONAL);
        /* the shared memory: at least the group's strips and 1024 bytes to align them beside the buffers */
        uint32_t group = (uint32_t)(strips / c->groups) * (uint32_t)c->BM * span;
        assert_true(k->smem_dynamic >= group + 1024);
        assert_true(k->smem_dynamic <= 227 * 1024);
        assert_int_equal(mt.kernels[0].smem_dynamic, k->smem_dynamic);
        tilert_meta_free(&mt);
        /* (the persistent kernels' wgmma are serialized with or without TMA stores: not checked here) */
        if (!strstr(c->kernel, "persistent") && strstr(r.info.s ? r.info.s : "", "serialized"))
            fail_msg("case %zu: ptxas serializes wgmma:\n%s", i, r.info.s);
        cg_result_free(&r);
        ir_module_free(m);
    }
}

/* The same GEMM for sm_90 (no wgmma, TMA there but not asked for) and sm_80: plain stores. */
static void other_archs_store_plainly(void **state)
{
    (void)state;
    const char *archs[] = {"sm_90", "sm_80"};
    for (int i = 0; i < 2; i++) {
        IrModule *m = compile_tile("stdlib/gemm.tile", "gemm", NULL, 0, archs[i]);
        CgResult r;
        compile(m, archs[i], CG_EMIT_PTX, &r);
        assert_int_equal(count(r.ptx.s, "cp.async.bulk"), 0);
        assert_int_equal(r.facts[0].ntma, 0);
        cg_result_free(&r);
        ir_module_free(m);
    }
}

/* The fp8 quantizer's Y: 8 bytes per thread, but 16 lanes continue each row over
 * its 128 bytes, so the plain stores write whole lines: no TMA store. */
static void coalesced_rows_store_plainly(void **state)
{
    (void)state;
    IrModule *m = compile_tile("stdlib/fp8_gemm.tile", "fp8_quant_1x128", NULL, 0, "sm_90a");
    IrFunc *f = m->funcs[0];
    for (uint32_t i = 0; i < f->nops; i++) {
        IrOp *op = &f->ops[i];
        if (op->dead || op->opc != IR_BLOCK_STORE || ir_vty(f, ir_opnd(f, op, 3)).dt != DT_F8E4M3) continue;
        const Layout *L = &f->layouts[f->val_layout[ir_opnd(f, op, 3)]];
        assert_int_equal(cg_store_vector_elems(L, 1), 8);
        assert_int_equal(cg_store_run_bytes(L, 1), 128);
    }
    CgResult r;
    compile(m, "sm_90a", CG_EMIT_PTX, &r);
    assert_int_equal(count(r.ptx.s, "cp.async.bulk.tensor.2d.global"), 0);
    cg_result_free(&r);
    ir_module_free(m);
    /* the wgmma accumulator: pairs, and four lanes along a row (16 bytes of bf16, 32 of f32) */
    Layout L = layout_wgmma_acc(tile2(DT_F32, 128, 128), 2, 1, 128);
    assert_int_equal(cg_store_vector_elems(&L, 2), 2);
    assert_int_equal(cg_store_run_bytes(&L, 2), 16);
    assert_int_equal(cg_store_run_bytes(&L, 4), 32);
}

/* Tiles that keep the plain store on sm_90a. */
static void plain_where_tma_does_not_fit(void **state)
{
    (void)state;
    static const struct {
        const char *what, *ty, *view;
        int R, C;
        bool tma;
    } cs[] = {
        {"a blocked f32 tile: 16-byte rows per access already", "f32", "f32", 64, 64, false},
        {"rows of 8 bytes", "bf16", "bf16", 128, 4, false},
        {"i1", "i1", "i1", 64, 64, false},
        {"the wgmma accumulator's pairs", "f32", "f32", 64, 64, true},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        StrBuf t = {0};
        if (cs[i].tma) /* a DOT's result: the wgmma accumulator layout */
            sb_printf(&t, "kernel @k \"k\"(%%A: tensor<bf16, 2>, %%C: tensor<f32, 2>) warps(4) {\n"
                          "  %%c0 = const 0 : i32\n  %%z = const 0 : f32\n  %%acc = splat %%z : tile<f32>[64, 64]\n"
                          "  %%a = block_load %%A, %%c0, %%c0 : tile<bf16>[64, 64]\n"
                          "  %%d = dot %%a, %%a, %%acc : tile<f32>[64, 64]\n"
                          "  block_store %%C, %%c0, %%c0, %%d\n  return\n}\n");
        else
            sb_printf(&t, "kernel @k \"k\"(%%X: tensor<%s, 2>, %%Y: tensor<%s, 2>) warps(4) {\n"
                          "  %%c0 = const 0 : i32\n"
                          "  %%x = block_load %%X, %%c0, %%c0 : tile<%s>[%d, %d]\n"
                          "  block_store %%Y, %%c0, %%c0, %%x\n  return\n}\n",
                      cs[i].view, cs[i].view, cs[i].ty, cs[i].R, cs[i].C);
        IrModule *m = parse_tir(t.s, "sm_90a");
        CgResult r;
        compile(m, "sm_90a", CG_EMIT_PTX, &r);
        int n = count(r.ptx.s, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group");
        if ((n > 0) != cs[i].tma) fail_msg("%s: %d TMA stores", cs[i].what, n);
        assert_int_equal(r.facts[0].ntma, cs[i].tma ? 1u : 0u);
        cg_result_free(&r);
        ir_module_free(m);
        sb_free(&t);
    }
}

/* A store inside an `if` and one in a loop (uniform control flow): TMA stores. */
static void stores_under_uniform_control_flow(void **state)
{
    (void)state;
    const char *text =
        "kernel @k \"k\"(%A: tensor<bf16, 2>, %C: tensor<bf16, 2>, %n: i32) warps(4) {\n"
        "  %c0 = const 0 : i32\n  %c1 = const 1 : i32\n  %c64 = const 64 : i32\n  %z = const 0 : f32\n"
        "  %acc = splat %z : tile<f32>[64, 64]\n"
        "  %a = block_load %A, %c0, %c0 : tile<bf16>[64, 64]\n"
        "  %d = dot %a, %a, %acc : tile<f32>[64, 64]\n"
        "  %o = cast %d : tile<bf16>[64, 64]\n"
        "  %p = cmp gt %n, %c0 : i1\n"
        "  if %p {\n    block_store %C, %c0, %c0, %o\n    yield\n  } else {\n    yield\n  }\n"
        "  for %i = %c0 to %n step %c1 {\n"
        "    %r0 = mul %i, %c64 : i32\n    block_store %C, %r0, %c64, %o\n    yield\n  }\n"
        "  return\n}\n";
    IrModule *m = parse_tir(text, "sm_90a");
    CgResult r;
    compile(m, "sm_90a", CG_EMIT_CUBIN, &r);
    assert_int_equal(count(r.ptx.s, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"), 2);
    assert_int_equal(count(r.ptx.s, "cp.async.bulk.wait_group.read 0;"), 2);
    /* each may follow a store of C (the other op, or itself in the loop): thread 0 first waits
     * until those are written, so stores to one place land in program order */
    assert_int_equal(count(r.ptx.s, "cp.async.bulk.wait_group 0;"), 2);
    assert_int_equal(r.facts[0].ntma, 1); /* the two stores share C's descriptor */
    cg_result_free(&r);
    ir_module_free(m);
}

/* A view the kernel also reads (C = C + A A): its store stays plain, as a TMA store's
 * writes would not be ordered before later reads; a lone store outside loops needs no
 * wait for earlier ones (stdlib gemm), the persistent kernel's does. */
static void read_views_store_plainly(void **state)
{
    (void)state;
    const char *text =
        "kernel @k \"k\"(%A: tensor<bf16, 2>, %C: tensor<f32, 2>) warps(4) {\n"
        "  %c0 = const 0 : i32\n"
        "  %acc = block_load %C, %c0, %c0 : tile<f32>[64, 64]\n"
        "  %a = block_load %A, %c0, %c0 : tile<bf16>[64, 64]\n"
        "  %d = dot %a, %a, %acc : tile<f32>[64, 64]\n"
        "  block_store %C, %c0, %c0, %d\n  return\n}\n";
    IrModule *m = parse_tir(text, "sm_90a");
    CgResult r;
    compile(m, "sm_90a", CG_EMIT_PTX, &r);
    assert_int_equal(count(r.ptx.s, "cp.async.bulk"), 0);
    assert_int_equal(r.facts[0].ntma, 0);
    cg_result_free(&r);
    ir_module_free(m);
    const char *kernels[] = {"gemm", "gemm_persistent"};
    for (int i = 0; i < 2; i++) {
        m = compile_tile("stdlib/gemm.tile", kernels[i], NULL, 0, "sm_90a");
        compile(m, "sm_90a", CG_EMIT_PTX, &r);
        assert_int_equal(count(r.ptx.s, "cp.async.bulk.wait_group 0;"), i);
        cg_result_free(&r);
        ir_module_free(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(staging_is_tma_boxes),
        cmocka_unit_test(accumulators_store_pairs),
        cmocka_unit_test(parts_are_static),
        cmocka_unit_test(stdlib_tma_stores),
        cmocka_unit_test(other_archs_store_plainly),
        cmocka_unit_test(coalesced_rows_store_plainly),
        cmocka_unit_test(plain_where_tma_does_not_fit),
        cmocka_unit_test(stores_under_uniform_control_flow),
        cmocka_unit_test(read_views_store_plainly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
