/* test_cgdot.c: DOT through wgmma on sm_90a (codegen/lower_dot.c), without a GPU.
 *
 * 1. The host-side plan: for each configuration (bf16/f16/fp8, tile shapes,
 *    warps, B as loaded [K, N] or transposed from [N, K]), every element the
 *    owners store (layout_shared_compose of the operand's register layout with
 *    the plan's shared layout) is where the descriptor model
 *    (layout_wgmma_desc_addr) says the tensor core reads it, for every
 *    warpgroup, 64-row block, N block and k step, computed the way codegen
 *    does (the warpgroup's part xored with the block's); the accumulator
 *    registers of each instruction are the m64nN fragment of that block.
 * 2. The stores are 16-byte vectors without bank conflicts (layout_bank_cost
 *    at its ideal).
 * 3. The layout pass gives DOT results, and the loop-carried accumulator, the
 *    wgmma accumulator layout when the module targets sm_90a, the mma.sync one
 *    otherwise; a transposed operand keeps its source's threads.
 * 4. stdlib gemm, gemm_nt, fp8 gemm and attention (P V with A from registers) to PTX and an sm_90a cubin (nvJitLink):
 *    wgmma.mma_async, wgmma.fence, commit_group, wait_group and
 *    fence.proxy.async appear and mma.sync does not; for sm_80 the reverse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "codegen/cg.h"
#include "codegen/lower_int.h"
#include "frontend/frontend.h"
#include "ir/ir.h"
#include "ir/layout.h"
#include "passes/pass.h"

#define SM90A ir_target_find("sm_90a")

static IrType tile2(DType dt, int a, int b)
{
    int32_t d[2] = {a, b};
    return ir_ty_tile(dt, false, 2, d);
}

static uint32_t flat2(int r, int c, int cbits) { return (uint32_t)r << cbits | (uint32_t)c; }

static int lg(int x)
{
    int n = 0;
    while ((1 << n) < x) n++;
    return n;
}

/* ---- 1. plan vs descriptor model ------------------------------------------------- */

/* byte offset (from the aligned base) of every element of operand X as its
 * owners store it; -1 where no thread stores it */
static int64_t *stored_offsets(const Layout *L, const CgWgmmaOpnd *o, int warps)
{
    uint32_t n = 1u << o->S.nbits;
    int64_t *off = malloc(n * sizeof *off);
    for (uint32_t i = 0; i < n; i++) off[i] = -1;
    Layout C = layout_shared_compose(L, &o->S);
    for (uint32_t w = 0; w < (uint32_t)warps; w++)
        for (uint32_t l = 0; l < 32; l++)
            for (uint32_t r = 0; r < layout_nregs(L); r++) {
                uint32_t e = layout_apply(L, r, l, w);
                int64_t b = (int64_t)o->off + (int64_t)layout_apply(&C, r, l, w) * o->S.ebytes;
                if (off[e] >= 0) assert_int_equal(off[e], b); /* replicas agree */
                off[e] = b;
            }
    for (uint32_t i = 0; i < n; i++) assert_true(off[i] >= 0);
    return off;
}

/* The descriptor of warpgroup (gm, gn)'s instruction tile at block origin
 * (mn_blk, k0), assembled as lower_dot.c does: start of the warpgroup's
 * origin xor start of the block's, plus the buffer offset. */
static uint64_t desc_as_codegen(const CgWgmmaPlan *p, WgmmaOperand op, uint32_t base, int g, int mn_blk, int k0)
{
    const CgWgmmaOpnd *o = op == LL_WGMMA_A ? &p->a : &p->b;
    int unit = op == LL_WGMMA_A ? 64 : p->w.instr_n;
    uint32_t rt = 0;
    for (int i = 0; (1 << i) <= g; i++)
        if (g >> i & 1) rt ^= layout_wgmma_start(&o->S, op, unit << i, 0);
    uint32_t start = o->off + (rt ^ layout_wgmma_start(&o->S, op, mn_blk, k0));
    LayoutSwizzle sw = o->S.swizzle < 0 ? LL_SWZ_NONE : (LayoutSwizzle)o->S.swizzle;
    /* the start sits in the first 128-byte row of a swizzle repeat, so the
     * pattern's phase is the same whether the hardware takes it from the
     * absolute address or from the start: base offset 0 is right either way */
    if (sw != LL_SWZ_NONE) assert_true((start & (layout_swizzle_align(sw) - 1)) < 128);
    uint64_t d = layout_wgmma_desc(base + start, sw, o->lbo, o->sbo);
    /* the same as the plan's own descriptor of the combined origin */
    assert_true(d == cg_wgmma_desc(p, op, base, g * unit + mn_blk, k0));
    return d;
}

typedef struct DotCase {
    DType dt;
    int M, N, K, warps;
    bool b_trans;          /* B transposed from a loaded [N, K] tile */
    int wgm, wgn, instr_n; /* expected */
    bool a_kmajor, b_kmajor;
    bool a_trans;          /* A transposed from a loaded [K, M] tile */
} DotCase;

static void check_case(const DotCase *c)
{
    IrType at = tile2(c->dt, c->M, c->K), bt = tile2(c->dt, c->K, c->N), ct = tile2(DT_F32, c->M, c->N);
    static const int32_t perm[2] = {1, 0};
    Layout La = layout_default(at, c->warps), Lb;
    if (c->a_trans) {
        Layout X = layout_default(tile2(c->dt, c->K, c->M), c->warps);
        La = layout_transpose(&X, perm);
    }
    if (c->b_trans) {
        Layout X = layout_default(tile2(c->dt, c->N, c->K), c->warps);
        Lb = layout_transpose(&X, perm);
    } else {
        Lb = layout_default(bt, c->warps);
    }
    CgWgmmaPlan p;
    assert_true(cg_wgmma_plan(SM90A, at, bt, &La, &Lb, c->warps, &p));
    assert_int_equal(p.w.wgm, c->wgm);
    assert_int_equal(p.w.wgn, c->wgn);
    assert_int_equal(p.w.instr_n, c->instr_n);
    assert_int_equal(p.w.instr_k, 32 / dt_bytes(c->dt));
    assert_int_equal(p.a.k_major, c->a_kmajor);
    assert_int_equal(p.b.k_major, c->b_kmajor);
    assert_true(p.b.off % 1024 == 0 && p.b.off >= (uint32_t)(c->M * c->K * dt_bytes(c->dt)));
    /* 128B swizzles wherever 128 bytes of the contiguous dim exist */
    int64_t *oa = stored_offsets(&La, &p.a, c->warps), *ob = stored_offsets(&Lb, &p.b, c->warps);
    const uint32_t base = 3 * 1024; /* any 1024-aligned shared address */
    int nbm = c->M / (64 * p.w.wgm), nbn = c->N / (p.w.instr_n * p.w.wgn), nks = c->K / p.w.instr_k;
    int eb = dt_bytes(c->dt), checked = 0;
    for (int gm = 0; gm < p.w.wgm; gm++)
        for (int gn = 0; gn < p.w.wgn; gn++)
            for (int jm = 0; jm < nbm; jm++)
                for (int jn = 0; jn < nbn; jn++)
                    for (int ks = 0; ks < nks; ks++) {
                        int m0 = gm * 64 + jm * 64 * p.w.wgm, n0 = gn * p.w.instr_n + jn * p.w.instr_n * p.w.wgn;
                        int k0 = ks * p.w.instr_k;
                        uint64_t da = desc_as_codegen(&p, LL_WGMMA_A, base, gm, jm * 64 * p.w.wgm, k0);
                        uint64_t db = desc_as_codegen(&p, LL_WGMMA_B, base, gn, jn * p.w.instr_n * p.w.wgn, k0);
                        for (int k = 0; k < p.w.instr_k; k++) {
                            for (int m = 0; m < 64; m++) {
                                uint32_t got = layout_wgmma_desc_addr(da, p.a.k_major, eb, m, k);
                                int64_t want = base + oa[flat2(m0 + m, k0 + k, lg(c->K))];
                                if (got != want)
                                    fail_msg("A (%d, %d) of wg %d,%d: descriptor reads %u, stored at %lld", m0 + m,
                                             k0 + k, gm, gn, got, (long long)want);
                            }
                            for (int n = 0; n < p.w.instr_n; n++) {
                                uint32_t got = layout_wgmma_desc_addr(db, p.b.k_major, eb, n, k);
                                int64_t want = base + ob[flat2(k0 + k, n0 + n, lg(c->N))];
                                if (got != want)
                                    fail_msg("B (%d, %d) of wg %d,%d: descriptor reads %u, stored at %lld", k0 + k,
                                             n0 + n, gm, gn, got, (long long)want);
                            }
                        }
                        checked++;
                    }
    assert_int_equal(checked, p.w.wgm * p.w.wgn * nbm * nbn * nks);
    /* the accumulator: register nb*(jm*nbn + jn) + i of thread t of warpgroup
     * (gm, gn) is fragment register i of that block's m64 x instr_n tile */
    Layout LC = layout_wgmma_acc(ct, p.w.wgm, p.w.wgn, p.w.instr_n);
    int nb = p.w.instr_n / 2;
    assert_int_equal(layout_nregs(&LC), (uint32_t)(nb * nbm * nbn));
    for (int w = 0; w < c->warps; w++) {
        int g = w / 4, gn = g % p.w.wgn, gm = g / p.w.wgn;
        for (int l = 0; l < 32; l++)
            for (int jm = 0; jm < nbm; jm++)
                for (int jn = 0; jn < nbn; jn++)
                    for (int i = 0; i < nb; i++) {
                        int t = (w % 4) * 32 + l;
                        int row = gm * 64 + jm * 64 * p.w.wgm + 16 * (t / 32) + (t % 32) / 4 + 8 * ((i / 2) % 2);
                        int col = gn * p.w.instr_n + jn * p.w.instr_n * p.w.wgn + (t % 4) * 2 + (i % 2) + 8 * (i / 4);
                        uint32_t e = layout_apply(&LC, (uint32_t)(nb * (jm * nbn + jn) + i), (uint32_t)l, (uint32_t)w);
                        assert_int_equal(e, flat2(row, col, lg(c->N)));
                    }
    }
    /* 2. 16-byte stores, conflict-free */
    for (int op = 0; op < 2; op++) {
        const Layout *L = op ? &Lb : &La;
        const CgWgmmaOpnd *o = op ? &p.b : &p.a;
        int vec = layout_shared_max_vec(L, &o->S);
        assert_int_equal(vec * eb, 16);
        BankCost bc = layout_bank_cost(L, &o->S, vec);
        if (bc.wavefronts != bc.ideal)
            fail_msg("operand %c: %u wavefronts, ideal %u", op ? 'B' : 'A', bc.wavefronts, bc.ideal);
    }
    free(oa);
    free(ob);
}

static void plan_matches_descriptors(void **state)
{
    (void)state;
    static const DotCase cases[] = {
        /* stdlib gemm defaults: 8 warps, warpgroups along M, B N-major (imm-trans-b) */
        {DT_BF16, 128, 128, 64, 8, false, 2, 1, 128, true, false, false},
        {DT_BF16, 128, 128, 64, 8, true, 2, 1, 128, true, true, false},  /* gemm_nt: B K-major */
        {DT_F16, 64, 64, 32, 8, false, 1, 2, 32, true, false, false},    /* BM=64: warpgroups along N */
        {DT_F16, 64, 64, 32, 4, true, 1, 1, 64, true, true, false},
        {DT_BF16, 256, 128, 64, 8, false, 2, 1, 128, true, false, false}, /* two 64-row blocks per warpgroup */
        {DT_BF16, 64, 512, 64, 4, false, 1, 1, 256, true, false, false},  /* two n256 blocks */
        {DT_F8E4M3, 128, 128, 128, 8, true, 2, 1, 128, true, true, false}, /* fp8: k32, K-major only */
        /* A given as [K, M]: stored M-major (imm-trans-a) */
        {DT_BF16, 128, 128, 64, 8, false, 2, 1, 128, false, false, true},
        {DT_F16, 128, 64, 32, 4, true, 1, 1, 64, false, true, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
}

/* A already in layout_wgmma_a (attention's P after the cast): wgmma takes it
 * from registers; register i + 8 (ks + nks jm) of thread t is fragment
 * register a_(i/2) (half i%2) of 64-row block jm, k step ks: rows
 * 16 (t/32) + (t%32)/4 (+8 for a1, a3), columns 2 (t%4) + i%2 (+8 for a2, a3). */
static void register_a_fragment(void **state)
{
    (void)state;
    static const struct { int M, N, K, warps; } cs[] = {{128, 128, 64, 8}, {64, 64, 64, 4}, {256, 64, 32, 8}};
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
        IrType at = tile2(DT_BF16, cs[c].M, cs[c].K), bt = tile2(DT_BF16, cs[c].K, cs[c].N);
        WgmmaShape w;
        assert_true(layout_wgmma_shape(SM90A, at, bt, cs[c].warps, &w));
        Layout La = layout_wgmma_a(at, w.wgm, w.wgn), Lb = layout_default(bt, cs[c].warps);
        CgWgmmaPlan p;
        assert_true(cg_wgmma_plan(SM90A, at, bt, &La, &Lb, cs[c].warps, &p));
        assert_true(p.a_regs);
        int nks = cs[c].K / 16, nbm = cs[c].M / (64 * w.wgm);
        assert_int_equal(layout_nregs(&La), (uint32_t)(8 * nks * nbm));
        for (int wp = 0; wp < cs[c].warps; wp++)
            for (int l = 0; l < 32; l++)
                for (int jm = 0; jm < nbm; jm++)
                    for (int ks = 0; ks < nks; ks++)
                        for (int i = 0; i < 8; i++) {
                            int gm = (wp / 4) / w.wgn, j = i / 2;
                            int row = gm * 64 + jm * 64 * w.wgm + 16 * (wp % 4) + l / 4 + 8 * (j & 1);
                            int col = ks * 16 + 2 * (l % 4) + (i % 2) + 8 * (j >> 1);
                            uint32_t e = layout_apply(&La, (uint32_t)(i + 8 * (ks + nks * jm)), (uint32_t)l, (uint32_t)wp);
                            assert_int_equal(e, flat2(row, col, lg(cs[c].K)));
                        }
        /* the default (blocked) layout does not qualify */
        Layout Ld = layout_default(at, cs[c].warps);
        assert_true(cg_wgmma_plan(SM90A, at, bt, &Ld, &Lb, cs[c].warps, &p));
        assert_false(p.a_regs);
    }
}

static void shape_refusals(void **state)
{
    (void)state;
    WgmmaShape w;
    assert_true(layout_wgmma_shape(SM90A, tile2(DT_BF16, 128, 64), tile2(DT_BF16, 64, 128), 8, &w));
    assert_false(layout_wgmma_shape(SM90A, tile2(DT_BF16, 32, 64), tile2(DT_BF16, 64, 128), 4, &w)); /* M < 64 */
    assert_false(layout_wgmma_shape(SM90A, tile2(DT_BF16, 128, 64), tile2(DT_BF16, 64, 128), 2, &w)); /* no warpgroup */
    assert_false(layout_wgmma_shape(SM90A, tile2(DT_F32, 128, 64), tile2(DT_F32, 64, 128), 8, &w));   /* f32 */
    assert_false(layout_wgmma_shape(SM90A, tile2(DT_F8E4M3, 64, 16), tile2(DT_F8E4M3, 16, 64), 4, &w)); /* fp8 k < 32 */
    assert_false(layout_wgmma_shape(SM90A, tile2(DT_BF16, 64, 16), tile2(DT_BF16, 16, 4), 4, &w));    /* N < 8 */
    /* 8 warps on 64 rows: the second warpgroup takes half of N; on N = 8 it cannot */
    assert_true(layout_wgmma_shape(SM90A, tile2(DT_BF16, 64, 16), tile2(DT_BF16, 16, 16), 8, &w));
    assert_int_equal(w.wgn, 2);
    assert_int_equal(w.instr_n, 8);
    assert_false(layout_wgmma_shape(SM90A, tile2(DT_BF16, 64, 16), tile2(DT_BF16, 16, 8), 8, &w));
    /* only a target with wgmma has a wgmma shape */
    WgmmaShape v;
    assert_false(layout_wgmma_shape(ir_target_find("sm_90"), tile2(DT_BF16, 128, 64), tile2(DT_BF16, 64, 128), 8, &v));
    assert_false(layout_wgmma_shape(NULL, tile2(DT_BF16, 128, 64), tile2(DT_BF16, 64, 128), 8, &v));
    /* A and B (64 KiB each here) must fit in the target's shared memory with 2048 bytes of alignment */
    IrTarget small = *SM90A;
    small.smem_per_cta = 2 * 65536 + 2048;
    assert_true(layout_wgmma_shape(&small, tile2(DT_BF16, 256, 128), tile2(DT_BF16, 128, 256), 8, &v));
    small.smem_per_cta--;
    assert_false(layout_wgmma_shape(&small, tile2(DT_BF16, 256, 128), tile2(DT_BF16, 128, 256), 8, &v));
}

/* ---- 3, 4. stdlib kernels through the layout pass and codegen --------------------- */

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

static IrOp *find_op(IrFunc *f, IrOpcode opc)
{
    for (uint32_t i = 0; i < f->nops; i++)
        if (!f->ops[i].dead && f->ops[i].opc == opc) return &f->ops[i];
    fail_msg("no %s in %s", ir_opinfo[opc].name, f->name);
    return NULL;
}

static const Layout *lay(IrFunc *f, IrVal v) { return &f->layouts[f->val_layout[v]]; }

static void layout_pass_picks_wgmma(void **state)
{
    (void)state;
    for (int arch = 0; arch < 2; arch++) {
        IrModule *m = compile_tile("stdlib/gemm.tile", "gemm_nt", NULL, 0, arch ? "sm_90a" : "sm_80");
        IrFunc *f = m->funcs[0];
        IrOp *dot = find_op(f, IR_DOT), *loop = find_op(f, IR_FOR);
        IrType ct = ir_vty(f, ir_res(dot, 0));
        Layout want = arch ? layout_wgmma_acc(ct, 2, 1, 128) : layout_mma_acc(ct, f->warps / 2, 2);
        assert_int_equal(f->warps, 8);
        assert_true(layout_eq(lay(f, ir_res(dot, 0)), &want));
        /* the accumulator stays in it across iterations: no conversion in the loop */
        IrBlock *body = ir_blk(f, loop->region[0]);
        assert_true(layout_eq(lay(f, body->args[1]), &want));
        assert_true(layout_eq(lay(f, ir_res(loop, 0)), &want));
        assert_true(layout_eq(lay(f, ir_opnd(f, dot, 2)), &want));
        if (arch) { /* trans(b) keeps the loaded tile's threads */
            IrOp *tr = find_op(f, IR_TRANS);
            Layout t = layout_transpose(lay(f, ir_opnd(f, tr, 0)), tr->attr.shape);
            assert_true(layout_eq(lay(f, ir_res(tr, 0)), &t));
            assert_true(ir_opnd(f, dot, 1) == ir_res(tr, 0));
        }
        ir_module_free(m);
    }
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what)) n++;
    return n;
}

static void to_ptx_and_cubin(IrModule *m, const char *arch, CgResult *r)
{
    Diag d;
    diag_init(&d, "t.tile", NULL, 0, stderr, DIAG_COLOR_NEVER);
    CgTarget t = {.arch = ir_target_find(arch), .opt_level = 3};
    bool ok = cg_compile_module(m, &t, CG_EMIT_CUBIN, r, &d);
    if (!ok) fprintf(stderr, "%s\n", r->ptx.s ? r->ptx.s : "");
    assert_true(ok);
    assert_true(r->cubin_len > 4 && memcmp(r->cubin, "\177ELF", 4) == 0);
    if (getenv("TEST_CGDOT_DUMP")) printf("---- %s\n%s\n%s\n", arch, r->ptx.s, r->info.s ? r->info.s : "");
    diag_free(&d);
}

typedef struct GemmCase {
    const char *file, *kernel;
    FeDefine defs[4];
    uint32_t ndefs;
    const char *instr; /* the wgmma expected */
    int per_dot;       /* wgmma per DOT */
} GemmCase;

static void stdlib_gemm_ptx(void **state)
{
    (void)state;
    static const GemmCase cases[] = {
        {"stdlib/gemm.tile", "gemm", {{0}}, 0, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", 4},
        {"stdlib/gemm.tile", "gemm_nt", {{"BN", "128"}}, 1, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", 4},
        {"stdlib/gemm.tile", "gemm", {{"T", "f16"}, {"BM", "64"}, {"BN", "64"}, {"BK", "32"}}, 4,
         "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16", 2},
        {"stdlib/fp8_gemm.tile", "fp8_gemm", {{0}}, 0, "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3", -1},
        {"stdlib/fp8_gemm.tile", "fp8_gemm_blockscale", {{0}}, 0, "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3",
         -1},
        {"stdlib/attention.tile", NULL, {{0}}, 0, "wgmma.mma_async.sync.aligned.m64n", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const GemmCase *c = &cases[i];
        IrModule *m = compile_tile(c->file, c->kernel, c->defs, c->ndefs, "sm_90a");
        CgResult r;
        to_ptx_and_cubin(m, "sm_90a", &r);
        const char *ptx = r.ptx.s;
        int n = count(ptx, "wgmma.mma_async");
        assert_true(n > 0);
        assert_int_equal(count(ptx, c->instr), n);
        /* one DOT; or two where the pipelining passes made a pipelined loop (its DOT reads the
         * stages in place) and kept the original loop for tensors TMA cannot describe */
        if (c->per_dot > 0) assert_true(n == c->per_dot || n == 2 * c->per_dot);
        assert_true(count(ptx, "wgmma.fence.sync.aligned") >= 1);
        assert_true(count(ptx, "wgmma.commit_group.sync.aligned") >= 1);
        assert_true(count(ptx, "wgmma.wait_group.sync.aligned 0") >= 1);
        assert_true(count(ptx, "fence.proxy.async.shared::cta") >= 1);
        assert_int_equal(count(ptx, "mma.sync"), 0);
        if (c->per_dot > 0) { /* the operands go to shared memory as 16-byte vectors only */
            assert_true(count(ptx, "st.shared.v4.b32") >= 2);
            assert_int_equal(count(ptx, "st.shared.u16") + count(ptx, "st.shared.b16"), 0);
        }
        if (strstr(c->file, "attention")) /* P V takes P from registers: {acc}, {a0, a1, a2, a3}, desc-b */
            assert_true(count(ptx, "}, {%r") >= 4);
        cg_result_free(&r);
        ir_module_free(m);
    }
}

static void sm80_keeps_mma_sync(void **state)
{
    (void)state;
    const char *archs[] = {"sm_80", "sm_90"};
    for (int i = 0; i < 2; i++) {
        IrModule *m = compile_tile("stdlib/gemm.tile", "gemm", NULL, 0, archs[i]);
        CgResult r;
        to_ptx_and_cubin(m, archs[i], &r);
        assert_true(count(r.ptx.s, "mma.sync.aligned.m16n8k16") > 0);
        assert_int_equal(count(r.ptx.s, "wgmma"), 0);
        cg_result_free(&r);
        ir_module_free(m);
    }
    /* layouts from a pass that knew no arch, compiled for sm_90a: mma.sync still */
    IrModule *m = compile_tile("stdlib/gemm.tile", "gemm", NULL, 0, NULL);
    CgResult r;
    to_ptx_and_cubin(m, "sm_90a", &r);
    assert_true(count(r.ptx.s, "mma.sync.aligned.m16n8k16") > 0);
    assert_int_equal(count(r.ptx.s, "wgmma"), 0);
    cg_result_free(&r);
    ir_module_free(m);
}

/* The DOT plan is one decision: a DOT result the layout pass did not put in the
 * plan's accumulator layout (here the gemm's, moved to the default blocked
 * layout by hand) makes codegen stop with an internal error naming the plan,
 * instead of taking a slower path.  Lowered in a child process (tl_fatal aborts). */
static void dot_outside_plan_is_internal_error(void **state)
{
    (void)state;
    IrModule *m = compile_tile("stdlib/gemm.tile", "gemm", NULL, 0, "sm_80");
    IrFunc *f = m->funcs[0];
    IrOp *dot = find_op(f, IR_DOT);
    IrType ct = ir_vty(f, ir_res(dot, 0));
    Layout def = layout_default(ct, f->warps);
    VEC_PUSH(f->layouts, f->nlayouts, f->layoutcap, def);
    f->val_layout[ir_res(dot, 0)] = f->nlayouts - 1;
    int err[2];
    assert_int_equal(pipe(err), 0);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(err[1], 2);
        close(err[0]);
        Diag d;
        diag_init(&d, "gemm.tile", NULL, 0, stderr, DIAG_COLOR_NEVER);
        LLVMContextRef ctx = LLVMContextCreate();
        LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("t", ctx);
        Arena scratch;
        arena_init(&scratch);
        CgKernelFacts facts;
        CgTarget t = {.arch = ir_target_find("sm_80"), .opt_level = 3};
        cg_lower_func(f, &t, ctx, mod, &scratch, &facts, &d);
        _exit(0);
    }
    close(err[1]);
    char msg[4096];
    size_t n = 0;
    ssize_t got;
    while (n < sizeof msg - 1 && (got = read(err[0], msg + n, sizeof msg - 1 - n)) > 0) n += (size_t)got;
    msg[n] = 0;
    close(err[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    if (!strstr(msg, "internal error in codegen") || !strstr(msg, "mma.sync")) fail_msg("message: %s", msg);
    ir_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plan_matches_descriptors),
        cmocka_unit_test(register_a_fragment),
        cmocka_unit_test(shape_refusals),
        cmocka_unit_test(layout_pass_picks_wgmma),
        cmocka_unit_test(stdlib_gemm_ptx),
        cmocka_unit_test(sm80_keeps_mma_sync),
        cmocka_unit_test(dot_outside_plan_is_internal_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
