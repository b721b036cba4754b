/* moe_layer.c: a whole mixture-of-experts layer through the generated header of
 * stdlib/moe.tile (compiled with TOPK = 2), in bf16 and in FP8 block-scaled, the
 * sequence of launches of moe.tile's header comment:
 *   route (moe_topk_softmax) -> align (moe_align_small) -> permute (moe_permute_rows,
 *   FP8: moe_permute_rows_fp8) -> GEMM1, gate and up (moe_grouped_gemm, FP8:
 *   moe_grouped_gemm_fp8) -> SwiGLU (moe_swiglu, FP8: moe_swiglu_fp8) -> GEMM2 (down)
 *   -> combine (moe_combine)
 * on random data at a small ragged shape: T = 37 tokens, E = 8 experts (expert 6 is
 * never chosen, expert 3 by most tokens), top-2, hidden 256, intermediate 192 (the
 * down projection's K is not a multiple of the 128-wide FP8 scale blocks).
 *
 * Checked on the host, in float64: the routing (ids exactly, weights from the same logits,
 * which are spaced so that no two experts nearly tie), the align step (the padded offsets, the
 * slot of every routed row, the expert of every M block: exactly), then each stage of each path
 * against float64 computed from that stage's own input, as the GPU left it (the quantized values
 * and scales in FP8), so every tolerance is a per-element bound (check_layer says which), and
 * the whole layer against float64 on the unquantized activations by its relative error.  The
 * reference uses the weights the GPU uses: the bf16 ones, or the FP8 ones dequantized (W = q * s
 * per 128 x 128 block, quantized here; each block has a magnitude of its own).  Prints a line per
 * check, PASS or FAIL last; exit 0, 1, or 77 without a GPU. */
#include "example.h"
#include "moe.h"

enum { T = 37, E = 8, TOPK = 2, H = 256, I = 192, BM = 128, QB = 128 };
enum { NR = T * TOPK,                  /* routed rows */
       MAXB = (NR + BM - 1) / BM + E,  /* M blocks the align step may use */
       MROWS = MAXB * BM };            /* rows of the expert-sorted buffers */

/* ---- e4m3 on the host ------------------------------------------------------------- */

static double e4m3_value(uint8_t b)
{
    double sign = (b & 0x80) ? -1.0 : 1.0;
    int e = (b >> 3) & 15, m = b & 7;
    if (e == 0) return sign * m * 0x1p-9;
    return sign * (1 + m / 8.0) * ldexp(1.0, e - 7);
}

/* Round to nearest even, saturating at 448 (the inputs here are finite). */
static uint8_t e4m3_bits(double v)
{
    uint8_t sign = v < 0 ? 0x80 : 0;
    double a = fabs(v);
    if (a >= 448) return sign | 0x7e;
    if (a < 0x1p-6) return sign | (uint8_t)nearbyint(a * 0x1p9);   /* 8 is 2^-6: exponent 1, mantissa 0 */
    int e;
    double f = frexp(a, &e);                                        /* a = f * 2^e, f in [0.5, 1) */
    int q = (int)nearbyint((2 * f - 1) * 8);
    e -= 1;
    if (q == 8) {
        q = 0;
        e++;
    }
    int bits = ((e + 7) << 3) | q;
    return sign | (uint8_t)(bits > 0x7e ? 0x7e : bits);
}

/* w [E, N, K] -> e4m3 q [E, N, K] and scales s [E, ceil(N/128), ceil(K/128)] per 128 x 128
 * block (s = max(amax, 1e-4) / 448, as fp8_gemm.tile's convention); deq = q * s. */
static void quant_weights(const float *w, int n, int k, uint8_t *q, float *s, double *deq)
{
    int nb = (n + QB - 1) / QB, kb = (k + QB - 1) / QB;
    for (int e = 0; e < E; e++)
        for (int bn = 0; bn < nb; bn++)
            for (int bk = 0; bk < kb; bk++) {
                float amax = 0;
                for (int i = bn * QB; i < n && i < bn * QB + QB; i++)
                    for (int j = bk * QB; j < k && j < bk * QB + QB; j++)
                        amax = fmaxf(amax, fabsf(w[((size_t)e * n + i) * k + j]));
                float sc = fmaxf(amax, 1e-4f) / 448.0f;
                s[((size_t)e * nb + bn) * kb + bk] = sc;
                for (int i = bn * QB; i < n && i < bn * QB + QB; i++)
                    for (int j = bk * QB; j < k && j < bk * QB + QB; j++) {
                        size_t x = ((size_t)e * n + i) * k + j;
                        q[x] = e4m3_bits((double)w[x] / sc);
                        deq[x] = e4m3_value(q[x]) * sc;
                    }
            }
}

/* ---- the host reference ---------------------------------------------------------------- */

typedef struct {
    int ids[T][TOPK];
    double w[T][TOPK];
    int offsets[E + 1], slot_of[NR], block_expert[MAXB];
} routing;

/* softmax over the E logits, the TOPK largest (ties: lower expert first), renormalized; then
 * the align step: counts padded to BM, slots in routed-row order inside each expert */
static void route(const float *logits, routing *r)
{
    for (int t = 0; t < T; t++) {
        double p[E], mx = -INFINITY, sum = 0, wsum = 0;
        bool taken[E] = {false};
        for (int e = 0; e < E; e++) mx = fmax(mx, logits[t * E + e]);
        for (int e = 0; e < E; e++) sum += p[e] = exp((double)logits[t * E + e] - mx);
        for (int k = 0; k < TOPK; k++) {
            int best = -1;
            for (int e = 0; e < E; e++)
                if (!taken[e] && (best < 0 || p[e] > p[best])) best = e;
            taken[best] = true;
            r->ids[t][k] = best;
            wsum += p[best] / sum;
        }
        for (int k = 0; k < TOPK; k++) r->w[t][k] = p[r->ids[t][k]] / sum / wsum;
    }
    int counts[E] = {0}, nb = 0;
    r->offsets[0] = 0;
    for (int i = 0; i < NR; i++) r->slot_of[i] = counts[r->ids[i / TOPK][i % TOPK]]++;   /* rank in its expert */
    for (int e = 0; e < E; e++) {
        int padded = (counts[e] + BM - 1) / BM * BM;
        r->offsets[e + 1] = r->offsets[e] + padded;
        for (int b = 0; b < padded / BM; b++) r->block_expert[nb++] = e;
    }
    while (nb < MAXB) r->block_expert[nb++] = -1;
    for (int i = 0; i < NR; i++) r->slot_of[i] += r->offsets[r->ids[i / TOPK][i % TOPK]];
}

static double silu(double x) { return x / (1 + exp(-x)); }

/* What the GPU path left, as doubles, per slot of the expert-sorted buffers: the input of GEMM1
 * (bf16: Xs; FP8: Xq * Xscale, and the scales), the input of GEMM2 (bf16: As; FP8: Aq * Ascale,
 * and the scales), and the output. */
typedef struct {
    double *xin, *xsc, *ain, *asc;
    uint16_t *out;
} result;

enum { HB = (H + QB - 1) / QB, IB = (I + QB - 1) / QB, IB2 = (2 * I + QB - 1) / QB };

/* The checks of one path, each kernel's result against float64 from that kernel's own input, so
 * each tolerance is a per-element bound (no sum of worst cases over a whole layer):
 *   permute          bf16: exactly X's rows; FP8: within half an e4m3 step of them (2^-4 relative,
 *                    2^-10 of the block's scale in the subnormal range), the scales max(amax, 1e-4) / 448
 *   GEMM1 + SwiGLU   a = silu(g) * u, g and u from GEMM1's input (the previous step's result): the
 *                    bf16 rounding of g and u (2^-8) carried through SwiGLU (slope at most 1.1), the
 *                    accumulation (acc of the sum of |terms|), the rounding of a (bf16, then FP8 as
 *                    in permute, with the scale the kernel wrote)
 *   GEMM2 + combine  out from GEMM2's input: the accumulation, the bf16 rounding of Y and of out
 * and the layer as a whole against float64 on the unquantized activations: the relative
 * Frobenius error at most `whole` (bf16: 2^-6, a few bf16 roundings; FP8: 2^-3, two e4m3 ones). */
static bool check_layer(const char *name, bool fp8, const routing *r, const double *x, const double *w1,
                        const double *w2, const result *g)
{
    const double acc = fp8 ? 0x1p-10 : 0x1p-16, whole = fp8 ? 0x1p-3 : 0x1p-6;
    size_t nx = (size_t)NR * H, na = (size_t)NR * I, no = (size_t)T * H;
    double *got = ex_xmalloc(sizeof(double) * nx), *ref = ex_xmalloc(sizeof(double) * nx);
    double *tol = ex_xmalloc(sizeof(double) * nx);
    char what[96];
    bool ok = true;
    /* permute */
    for (int i = 0; i < NR; i++)
        for (int c = 0; c < H; c++) {
            size_t s = (size_t)r->slot_of[i];
            got[(size_t)i * H + c] = g->xin[s * H + c];
            ref[(size_t)i * H + c] = x[(size_t)(i / TOPK) * H + c];
            tol[(size_t)i * H + c] = fp8 ? (0x1p-4 + 1e-6) * fabs(x[(size_t)(i / TOPK) * H + c]) +
                                               0x1p-10 * g->xsc[s * HB + c / QB]
                                         : 0;
        }
    snprintf(what, sizeof what, "%s permute", name);
    ok = ex_compare_each(what, got, ref, tol, nx, fp8 ? "half an e4m3 step" : "exact") && ok;
    if (fp8) {
        for (int i = 0; i < NR; i++)
            for (int b = 0; b < HB; b++) {
                double amax = 0;
                for (int c = b * QB; c < H && c < b * QB + QB; c++)
                    amax = fmax(amax, fabs(x[(size_t)(i / TOPK) * H + c]));
                got[i * HB + b] = g->xsc[(size_t)r->slot_of[i] * HB + b];
                ref[i * HB + b] = fmax(amax, 1e-4) / 448;
            }
        snprintf(what, sizeof what, "%s permute scales", name);
        ok = ex_compare(what, got, ref, (size_t)NR * HB, 0, 1e-6) && ok;
    }
    /* GEMM1 + SwiGLU */
    for (int i = 0; i < NR; i++) {
        int e = r->ids[i / TOPK][i % TOPK];
        size_t s = (size_t)r->slot_of[i];
        double h[2 * I], dh[2 * I];
        for (int j = 0; j < 2 * I; j++) {
            const double *wr = w1 + ((size_t)e * 2 * I + j) * H, *xr = g->xin + s * H;
            double sum = 0, mag = 0;
            for (int c = 0; c < H; c++) {
                sum += wr[c] * xr[c];
                mag += fabs(wr[c] * xr[c]);
            }
            h[j] = sum;
            dh[j] = acc * mag + 0x1p-8 * (fabs(sum) + acc * mag);
        }
        for (int j = 0; j < I; j++) {
            double gg = h[j], u = h[I + j], dg = dh[j], du = dh[I + j], a = silu(gg) * u;
            double d = 1.1 * fabs(u) * dg + (fabs(silu(gg)) + 1.1 * dg) * du;
            d += 0x1p-8 * (fabs(a) + d) + 1e-5 * fabs(a);   /* the rounding of a; the GPU's sigmoid */
            if (fp8) d += (0x1p-4 + 1e-6) * (fabs(a) + d) + 0x1p-10 * g->asc[s * IB + j / QB];
            got[(size_t)i * I + j] = g->ain[s * I + j];
            ref[(size_t)i * I + j] = a;
            tol[(size_t)i * I + j] = d;
        }
    }
    snprintf(what, sizeof what, "%s GEMM1 + SwiGLU", name);
    ok = ex_compare_each(what, got, ref, tol, na, "bf16 of g, u carried through SwiGLU; rounding of a") && ok;
    /* GEMM2 + combine */
    for (int t = 0; t < T; t++)
        for (int c = 0; c < H; c++) {
            double o = 0, d = 0, mag = 0;
            for (int k = 0; k < TOPK; k++) {
                const double *wr = w2 + ((size_t)r->ids[t][k] * H + c) * I;
                const double *ar = g->ain + (size_t)r->slot_of[t * TOPK + k] * I;
                double y = 0, ym = 0;
                for (int j = 0; j < I; j++) {
                    y += wr[j] * ar[j];
                    ym += fabs(wr[j] * ar[j]);
                }
                double dy = acc * ym + 0x1p-8 * (fabs(y) + acc * ym);
                o += r->w[t][k] * y;
                d += fabs(r->w[t][k]) * dy;
                mag += fabs(r->w[t][k] * y);
            }
            got[(size_t)t * H + c] = ex_from_bf16(g->out[(size_t)t * H + c]);
            ref[(size_t)t * H + c] = o;
            tol[(size_t)t * H + c] = d + 0x1p-8 * (fabs(o) + d) + 1e-5 * mag + 1e-7;
        }
    snprintf(what, sizeof what, "%s GEMM2 + combine", name);
    ok = ex_compare_each(what, got, ref, tol, no, "accumulation, bf16 of Y and out") && ok;
    /* the whole layer on the unquantized activations */
    double err2 = 0, ref2 = 0;
    for (int t = 0; t < T; t++) {
        double o[H];
        for (int c = 0; c < H; c++) o[c] = 0;
        for (int k = 0; k < TOPK; k++) {
            int e = r->ids[t][k];
            double a[I];
            for (int j = 0; j < I; j++) {
                const double *wg = w1 + ((size_t)e * 2 * I + j) * H, *wu = w1 + ((size_t)e * 2 * I + I + j) * H;
                double gg = 0, u = 0;
                for (int c = 0; c < H; c++) {
                    gg += wg[c] * x[(size_t)t * H + c];
                    u += wu[c] * x[(size_t)t * H + c];
                }
                a[j] = silu(gg) * u;
            }
            for (int c = 0; c < H; c++) {
                double y = 0;
                for (int j = 0; j < I; j++) y += w2[((size_t)e * H + c) * I + j] * a[j];
                o[c] += r->w[t][k] * y;
            }
        }
        for (int c = 0; c < H; c++) {
            double dlt = ex_from_bf16(g->out[(size_t)t * H + c]) - o[c];
            err2 += dlt * dlt;
            ref2 += o[c] * o[c];
        }
    }
    double rel = sqrt(err2 / ref2);
    bool wok = rel <= whole;
    printf("%-40s %s (relative Frobenius error %.3g; at most %.3g)\n", fp8 ? "fp8 layer vs unquantized float64"
                                                                             : "bf16 layer vs float64",
           wok ? "ok" : "FAIL", rel, whole);
    free(got);
    free(ref);
    free(tol);
    return ok && wok;
}

/* ---- the GPU ------------------------------------------------------------------------- */

static tilert_tensor t2(void *d, tilert_dtype dt, int64_t r, int64_t c) { return tilert_tensor2d(d, dt, r, c); }

static tilert_tensor t3(void *d, tilert_dtype dt, int64_t a, int64_t b, int64_t c)
{
    int64_t shape[3] = {a, b, c};
    return tilert_tensor_nd(d, dt, 3, shape, NULL);
}

typedef struct {
    void *logits, *x, *w, *ids, *offsets, *slot_of, *sorted_ids, *block_expert;
} routed;

/* steps 1 and 2: the routing and the align step, checked against the host */
static bool gpu_route(const float *logits, const uint16_t *x, const routing *r, routed *g)
{
    g->logits = ex_upload(logits, sizeof(float) * T * E);
    g->x = ex_upload(x, sizeof(uint16_t) * T * H);
    g->w = ex_poisoned(sizeof(float) * NR);
    g->ids = ex_poisoned(sizeof(int32_t) * NR);
    g->offsets = ex_poisoned(sizeof(int32_t) * (E + 1));
    g->slot_of = ex_poisoned(sizeof(int32_t) * NR);
    g->sorted_ids = ex_poisoned(sizeof(int32_t) * MROWS);
    g->block_expert = ex_poisoned(sizeof(int32_t) * MAXB);
    ex_check(moe_topk_softmax_launch(NULL, t2(g->logits, TILERT_F32, T, E), t2(g->w, TILERT_F32, T, TOPK),
                                     t2(g->ids, TILERT_I32, T, TOPK), 1),
             "moe_topk_softmax_launch");
    ex_check(moe_align_small_launch(NULL, g->ids, NR, E, g->offsets, g->slot_of, g->sorted_ids, g->block_expert, MAXB),
             "moe_align_small_launch");
    int32_t ids[NR], offsets[E + 1], slot_of[NR], be[MAXB];
    float w[NR];
    ex_download(ids, g->ids, sizeof ids);
    ex_download(w, g->w, sizeof w);
    ex_download(offsets, g->offsets, sizeof offsets);
    ex_download(slot_of, g->slot_of, sizeof slot_of);
    ex_download(be, g->block_expert, sizeof be);
    size_t bad = 0;
    for (int i = 0; i < NR; i++) bad += ids[i] != r->ids[i / TOPK][i % TOPK] || slot_of[i] != r->slot_of[i];
    for (int e = 0; e <= E; e++) bad += offsets[e] != r->offsets[e];
    for (int b = 0; b < MAXB; b++) bad += be[b] != r->block_expert[b];
    printf("%-40s %s (%zu of %d ids, slots, offsets, block experts differ)\n", "route + align (exact)",
           bad ? "FAIL" : "ok", bad, 2 * NR + E + 1 + MAXB);
    double gw[NR], rw[NR];
    for (int i = 0; i < NR; i++) {
        gw[i] = w[i];
        rw[i] = r->w[i / TOPK][i % TOPK];
    }
    bool ok = ex_compare("routing weights", gw, rw, NR, 1e-7, 1e-5);
    return ok && bad == 0;
}

static void free_all(void **p, size_t n)
{
    for (size_t i = 0; i < n; i++) tilert_free(p[i]);
}

static void download_bf16(double *dst, const void *dev, size_t n)
{
    uint16_t *h = ex_xmalloc(n * sizeof(uint16_t));
    ex_download(h, dev, n * sizeof(uint16_t));
    for (size_t i = 0; i < n; i++) dst[i] = ex_from_bf16(h[i]);
    free(h);
}

/* v = q * s per 1 x 128 block of the rows of q [MROWS, cols]; s [MROWS, ceil(cols / 128)] */
static void download_fp8(double *v, double *sc, const void *dq, const void *ds, int cols)
{
    int nb = (cols + QB - 1) / QB;
    uint8_t *q = ex_xmalloc((size_t)MROWS * cols);
    float *s = ex_xmalloc(sizeof(float) * MROWS * nb);
    ex_download(q, dq, (size_t)MROWS * cols);
    ex_download(s, ds, sizeof(float) * MROWS * nb);
    for (size_t r = 0; r < MROWS; r++) {
        for (int b = 0; b < nb; b++) sc[r * nb + b] = s[r * nb + b];
        for (int c = 0; c < cols; c++) v[r * cols + c] = e4m3_value(q[r * cols + c]) * s[r * nb + c / QB];
    }
    free(q);
    free(s);
}

/* steps 3 to 7 in bf16 */
static void gpu_layer_bf16(const routed *g, const uint16_t *w1, const uint16_t *w2, result *res)
{
    void *dw1 = ex_upload(w1, sizeof(uint16_t) * E * 2 * I * H), *dw2 = ex_upload(w2, sizeof(uint16_t) * E * H * I);
    void *xs = ex_poisoned(sizeof(uint16_t) * MROWS * H), *hs = ex_poisoned(sizeof(uint16_t) * MROWS * 2 * I);
    void *as = ex_poisoned(sizeof(uint16_t) * MROWS * I), *ys = ex_poisoned(sizeof(uint16_t) * MROWS * H);
    void *dout = ex_poisoned(sizeof(uint16_t) * T * H);
    int32_t *total = (int32_t *)g->offsets + E;    /* the padded row count: SwiGLU's *nrows */
    ex_check(moe_permute_rows_launch(NULL, t2(g->x, TILERT_BF16, T, H), g->slot_of, NR, t2(xs, TILERT_BF16, MROWS, H)),
             "moe_permute_rows_launch");
    ex_check(moe_grouped_gemm_launch(NULL, t2(xs, TILERT_BF16, MROWS, H), t3(dw1, TILERT_BF16, E, 2 * I, H), g->offsets,
                                     t2(hs, TILERT_BF16, MROWS, 2 * I)),
             "moe_grouped_gemm_launch (gate, up)");
    ex_check(moe_swiglu_launch(NULL, t2(hs, TILERT_BF16, MROWS, 2 * I), t2(as, TILERT_BF16, MROWS, I), total),
             "moe_swiglu_launch");
    ex_check(moe_grouped_gemm_launch(NULL, t2(as, TILERT_BF16, MROWS, I), t3(dw2, TILERT_BF16, E, H, I), g->offsets,
                                     t2(ys, TILERT_BF16, MROWS, H)),
             "moe_grouped_gemm_launch (down)");
    ex_check(moe_combine_launch(NULL, t2(ys, TILERT_BF16, MROWS, H), g->slot_of, t2(g->w, TILERT_F32, T, TOPK),
                                t2(dout, TILERT_BF16, T, H)),
             "moe_combine_launch");
    ex_download(res->out, dout, sizeof(uint16_t) * T * H);
    download_bf16(res->xin, xs, (size_t)MROWS * H);
    download_bf16(res->ain, as, (size_t)MROWS * I);
    void *all[] = {dw1, dw2, xs, hs, as, ys, dout};
    free_all(all, sizeof all / sizeof all[0]);
}

/* steps 3 to 7 in FP8 block-scaled (the contiguous layout: the expert of each M block) */
static void gpu_layer_fp8(const routed *g, const uint8_t *q1, const float *s1, const uint8_t *q2, const float *s2,
                          result *res)
{
    void *dq1 = ex_upload(q1, (size_t)E * 2 * I * H), *ds1 = ex_upload(s1, sizeof(float) * E * IB2 * HB);
    void *dq2 = ex_upload(q2, (size_t)E * H * I), *ds2 = ex_upload(s2, sizeof(float) * E * HB * IB);
    void *xq = ex_poisoned((size_t)MROWS * H), *xsc = ex_poisoned(sizeof(float) * MROWS * HB);
    void *hs = ex_poisoned(sizeof(uint16_t) * MROWS * 2 * I);
    void *aq = ex_poisoned((size_t)MROWS * I), *asc = ex_poisoned(sizeof(float) * MROWS * IB);
    void *ys = ex_poisoned(sizeof(uint16_t) * MROWS * H), *dout = ex_poisoned(sizeof(uint16_t) * T * H);
    int32_t *total = (int32_t *)g->offsets + E;
    tilert_tensor be = tilert_tensor1d(g->block_expert, TILERT_I32, MAXB);
    ex_check(moe_permute_rows_fp8_launch(NULL, t2(g->x, TILERT_BF16, T, H), g->slot_of, NR,
                                         t2(xq, TILERT_F8E4M3, MROWS, H), t2(xsc, TILERT_F32, MROWS, HB)),
             "moe_permute_rows_fp8_launch");
    ex_check(moe_grouped_gemm_fp8_launch(NULL, t2(xq, TILERT_F8E4M3, MROWS, H), t2(xsc, TILERT_F32, MROWS, HB),
                                         t3(dq1, TILERT_F8E4M3, E, 2 * I, H), t3(ds1, TILERT_F32, E, IB2, HB), be,
                                         t2(hs, TILERT_BF16, MROWS, 2 * I)),
             "moe_grouped_gemm_fp8_launch (gate, up)");
    ex_check(moe_swiglu_fp8_launch(NULL, t2(hs, TILERT_BF16, MROWS, 2 * I), t2(aq, TILERT_F8E4M3, MROWS, I),
                                   t2(asc, TILERT_F32, MROWS, IB), total),
             "moe_swiglu_fp8_launch");
    ex_check(moe_grouped_gemm_fp8_launch(NULL, t2(aq, TILERT_F8E4M3, MROWS, I), t2(asc, TILERT_F32, MROWS, IB),
                                         t3(dq2, TILERT_F8E4M3, E, H, I), t3(ds2, TILERT_F32, E, HB, IB), be,
                                         t2(ys, TILERT_BF16, MROWS, H)),
             "moe_grouped_gemm_fp8_launch (down)");
    ex_check(moe_combine_launch(NULL, t2(ys, TILERT_BF16, MROWS, H), g->slot_of, t2(g->w, TILERT_F32, T, TOPK),
                                t2(dout, TILERT_BF16, T, H)),
             "moe_combine_launch");
    ex_download(res->out, dout, sizeof(uint16_t) * T * H);
    download_fp8(res->xin, res->xsc, xq, xsc, H);
    download_fp8(res->ain, res->asc, aq, asc, I);
    void *all[] = {dq1, ds1, dq2, ds2, xq, xsc, hs, aq, asc, ys, dout};
    free_all(all, sizeof all / sizeof all[0]);
}

int main(void)
{
    ex_require_gpu();
    /* logits: a random order of the experts per token, spaced 0.5 apart (no near-ties), expert 3
     * on top for 4 tokens in 5, expert 6 always last */
    float *logits = ex_xmalloc(sizeof(float) * T * E);
    for (int t = 0; t < T; t++) {
        int order[E];
        for (int e = 0; e < E; e++) order[e] = e;
        for (int e = E - 1; e > 0; e--) {
            int j = (int)(ex_next() % (uint64_t)(e + 1)), tmp = order[e];
            order[e] = order[j];
            order[j] = tmp;
        }
        for (int e = 0; e < E; e++) logits[t * E + order[e]] = 0.5f * (float)e + ex_uniform(0.0f, 0.2f);
        if (t % 5) logits[t * E + 3] = 6.0f;
        logits[t * E + 6] = -8.0f;
    }
    uint16_t *x = ex_xmalloc(sizeof(uint16_t) * T * H);
    double *xd = ex_xmalloc(sizeof(double) * T * H);
    for (int i = 0; i < T * H; i++) xd[i] = ex_from_bf16(x[i] = ex_to_bf16(ex_uniform(-1, 1)));
    size_t n1 = (size_t)E * 2 * I * H, n2 = (size_t)E * H * I;
    float *w1 = ex_xmalloc(sizeof(float) * n1), *w2 = ex_xmalloc(sizeof(float) * n2);
    ex_fill(w1, n1, -0.125f, 0.125f);
    ex_fill(w2, n2, -0.125f, 0.125f);
    /* a magnitude of its own for every 128 x 128 block (x 1/4 ... x 2), so that a weight scale
     * taken from the wrong block shows */
    for (size_t i = 0; i < n1; i++) {
        size_t e = i / (2 * I * H), n = i / H % (2 * I), k = i % H;
        w1[i] *= ldexpf(1.0f, (int)((e + n / QB + 2 * (k / QB)) % 4) - 2);
    }
    for (size_t i = 0; i < n2; i++) {
        size_t e = i / (H * I), n = i / I % H, k = i % I;
        w2[i] *= ldexpf(1.0f, (int)((e + 3 * (n / QB) + k / QB) % 4) - 2);
    }

    routing *r = ex_xmalloc(sizeof *r);
    route(logits, r);
    routed g;
    bool ok = gpu_route(logits, x, r, &g);
    result res = {ex_xmalloc(sizeof(double) * MROWS * H), ex_xmalloc(sizeof(double) * MROWS * HB),
                  ex_xmalloc(sizeof(double) * MROWS * I), ex_xmalloc(sizeof(double) * MROWS * IB),
                  ex_xmalloc(sizeof(uint16_t) * T * H)};
    /* bf16 */
    uint16_t *b1 = ex_xmalloc(sizeof(uint16_t) * n1), *b2 = ex_xmalloc(sizeof(uint16_t) * n2);
    double *d1 = ex_xmalloc(sizeof(double) * n1), *d2 = ex_xmalloc(sizeof(double) * n2);
    for (size_t i = 0; i < n1; i++) d1[i] = ex_from_bf16(b1[i] = ex_to_bf16(w1[i]));
    for (size_t i = 0; i < n2; i++) d2[i] = ex_from_bf16(b2[i] = ex_to_bf16(w2[i]));
    gpu_layer_bf16(&g, b1, b2, &res);
    ok = check_layer("bf16", false, r, xd, d1, d2, &res) && ok;
    /* FP8 block-scaled: the weights quantized here, the activations by the kernels */
    uint8_t *q1 = ex_xmalloc(n1), *q2 = ex_xmalloc(n2);
    float *s1 = ex_xmalloc(sizeof(float) * E * IB2 * HB), *s2 = ex_xmalloc(sizeof(float) * E * HB * IB);
    quant_weights(w1, 2 * I, H, q1, s1, d1);
    quant_weights(w2, H, I, q2, s2, d2);
    gpu_layer_fp8(&g, q1, s1, q2, s2, &res);
    ok = check_layer("fp8", true, r, xd, d1, d2, &res) && ok;

    void *dev[] = {g.logits, g.x, g.w, g.ids, g.offsets, g.slot_of, g.sorted_ids, g.block_expert};
    free_all(dev, sizeof dev / sizeof dev[0]);
    void *host[] = {logits, x, xd, w1, w2, r, res.xin, res.xsc, res.ain, res.asc, res.out,
                    b1, b2, d1, d2, q1, q2, s1, s2};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
    return ex_finish(ok);
}
