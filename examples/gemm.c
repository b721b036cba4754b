/* gemm.c: C = A @ B in bf16 with f32 accumulation (gemm.tile: 128x128 blocks,
 * K in steps of 64) on the GPU, checked against a float64 host product of the
 * same bf16 inputs. */
#include "example.h"
#include "gemm.h"

static bool run_case(int64_t M, int64_t N, int64_t K)
{
    uint16_t *a = ex_xmalloc((size_t)(M * K) * 2), *b = ex_xmalloc((size_t)(K * N) * 2);
    uint16_t *c = ex_xmalloc((size_t)(M * N) * 2);
    for (int64_t i = 0; i < M * K; i++) a[i] = ex_to_bf16(ex_uniform(-1, 1));
    for (int64_t i = 0; i < K * N; i++) b[i] = ex_to_bf16(ex_uniform(-1, 1));
    void *da = ex_upload(a, (size_t)(M * K) * 2), *db = ex_upload(b, (size_t)(K * N) * 2);
    void *dc = ex_poisoned((size_t)(M * N) * 2);
    ex_check(gemm_launch(NULL, tilert_tensor2d(da, TILERT_BF16, M, K), tilert_tensor2d(db, TILERT_BF16, K, N),
                         tilert_tensor2d(dc, TILERT_BF16, M, N)),
             "gemm_launch");
    ex_download(c, dc, (size_t)(M * N) * 2);

    size_t n = (size_t)(M * N);
    double *got = ex_xmalloc(n * sizeof(double)), *ref = ex_xmalloc(n * sizeof(double));
    double *tol = ex_xmalloc(n * sizeof(double));
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0, mag = 0;
            for (int64_t k = 0; k < K; k++) {
                double p = (double)ex_from_bf16(a[i * K + k]) * (double)ex_from_bf16(b[k * N + j]);
                s += p;
                mag += fabs(p);
            }
            ref[i * N + j] = s;
            got[i * N + j] = ex_from_bf16(c[i * N + j]);
            tol[i * N + j] = 0x1p-8 * fabs(s) + 1e-5 * mag + 1e-6;
        }
    char what[80];
    snprintf(what, sizeof what, "gemm M=%lld N=%lld K=%lld", (long long)M, (long long)N, (long long)K);
    /* the bf16 rounding of the result (2^-8 relative) plus f32 accumulation, relative to sum |a*b| */
    bool ok = ex_compare_each(what, got, ref, tol, n, "2^-8*|ref| + 1e-5*sum|a*b|");
    free(tol);
    tilert_free(da);
    tilert_free(db);
    tilert_free(dc);
    free(a);
    free(b);
    free(c);
    free(got);
    free(ref);
    return ok;
}

int main(void)
{
    ex_require_gpu();
    static const int64_t shapes[][3] = {{128, 128, 64}, {300, 260, 200}, {257, 129, 65}, {1, 1, 1}, {512, 384, 1024}};
    bool ok = true;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        ok = run_case(shapes[i][0], shapes[i][1], shapes[i][2]) && ok;
    return ex_finish(ok);
}
