/* softmax.c: a row-wise softmax (softmax.tile, one program per row of up to
 * BLOCK = 1024 columns) on the GPU, checked against a float64 host softmax. */
#include "example.h"
#include "softmax.h"

static bool run_case(int64_t rows, int64_t cols)
{
    size_t n = (size_t)(rows * cols), bytes = n * sizeof(float);
    float *x = ex_xmalloc(bytes), *y = ex_xmalloc(bytes);
    ex_fill(x, n, -8, 8);
    float *dx = ex_upload(x, bytes), *dy = ex_poisoned(bytes);
    ex_check(softmax_launch(NULL, tilert_tensor2d(dx, TILERT_F32, rows, cols), tilert_tensor2d(dy, TILERT_F32, rows, cols)),
             "softmax_launch");
    ex_download(y, dy, bytes);

    double *got = ex_xmalloc(n * sizeof(double)), *ref = ex_xmalloc(n * sizeof(double));
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        double mx = -INFINITY, sum = 0;
        for (int64_t c = 0; c < cols; c++) mx = fmax(mx, xr[c]);
        for (int64_t c = 0; c < cols; c++) sum += exp((double)xr[c] - mx);
        for (int64_t c = 0; c < cols; c++) {
            ref[r * cols + c] = exp((double)xr[c] - mx) / sum;
            got[r * cols + c] = y[r * cols + c];
        }
    }
    char what[64];
    snprintf(what, sizeof what, "softmax [%lld, %lld]", (long long)rows, (long long)cols);
    /* f32 exp and a sum of up to 1024 terms */
    bool ok = ex_compare(what, got, ref, n, 1e-7, 1e-5);
    tilert_free(dx);
    tilert_free(dy);
    free(x);
    free(y);
    free(got);
    free(ref);
    return ok;
}

int main(void)
{
    ex_require_gpu();
    static const int64_t shapes[][2] = {{64, 1000}, {33, 77}, {7, 1024}, {1, 1}, {4096, 513}};
    bool ok = true;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) ok = run_case(shapes[i][0], shapes[i][1]) && ok;
    return ex_finish(ok);
}
