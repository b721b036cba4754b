/* rmsnorm.c: y = x / sqrt(mean(x^2) + eps) * w over rows, in bf16 (rmsnorm.tile's
 * default T) with f32 arithmetic, on the GPU, checked against float64 on the host. */
#include "example.h"
#include "rmsnorm.h"

static bool run_case(int64_t rows, int64_t cols, float eps)
{
    size_t n = (size_t)(rows * cols);
    uint16_t *x = ex_xmalloc(n * 2), *w = ex_xmalloc((size_t)cols * 2), *y = ex_xmalloc(n * 2);
    for (size_t i = 0; i < n; i++) x[i] = ex_to_bf16(ex_uniform(-2, 2));
    for (int64_t i = 0; i < cols; i++) w[i] = ex_to_bf16(ex_uniform(0.5f, 1.5f));
    void *dx = ex_upload(x, n * 2), *dw = ex_upload(w, (size_t)cols * 2), *dy = ex_poisoned(n * 2);
    ex_check(rmsnorm_launch(NULL, tilert_tensor2d(dx, TILERT_BF16, rows, cols), dw,
                            tilert_tensor2d(dy, TILERT_BF16, rows, cols), eps),
             "rmsnorm_launch");
    ex_download(y, dy, n * 2);

    double *got = ex_xmalloc(n * sizeof(double)), *ref = ex_xmalloc(n * sizeof(double));
    for (int64_t r = 0; r < rows; r++) {
        double ss = 0;
        for (int64_t c = 0; c < cols; c++) {
            double v = ex_from_bf16(x[r * cols + c]);
            ss += v * v;
        }
        double rstd = 1 / sqrt(ss / (double)cols + (double)eps);
        for (int64_t c = 0; c < cols; c++) {
            ref[r * cols + c] = ex_from_bf16(x[r * cols + c]) * rstd * ex_from_bf16(w[c]);
            got[r * cols + c] = ex_from_bf16(y[r * cols + c]);
        }
    }
    char what[64];
    snprintf(what, sizeof what, "rmsnorm bf16 [%lld, %lld]", (long long)rows, (long long)cols);
    /* the bf16 output rounding, 2^-8 relative, and f32 arithmetic before it */
    bool ok = ex_compare(what, got, ref, n, 1e-5, 0x1p-8 + 1e-5);
    tilert_free(dx);
    tilert_free(dw);
    tilert_free(dy);
    free(x);
    free(w);
    free(y);
    free(got);
    free(ref);
    return ok;
}

int main(void)
{
    ex_require_gpu();
    static const int64_t shapes[][2] = {{128, 1000}, {3, 1024}, {5, 1}, {4096, 768}};
    bool ok = true;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) ok = run_case(shapes[i][0], shapes[i][1], 1e-6f) && ok;
    return ex_finish(ok);
}
