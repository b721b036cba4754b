/* layernorm.c: y = (x - mean) / sqrt(variance + eps) * w + b over rows, in f32
 * (layernorm.tile), on the GPU, checked against float64 on the host. */
#include "example.h"
#include "layernorm.h"

static bool run_case(int64_t rows, int64_t cols, float eps)
{
    size_t n = (size_t)(rows * cols), bytes = n * sizeof(float), wbytes = (size_t)cols * sizeof(float);
    float *x = ex_xmalloc(bytes), *w = ex_xmalloc(wbytes), *b = ex_xmalloc(wbytes), *y = ex_xmalloc(bytes);
    ex_fill(x, n, -3, 5); /* a mean away from 0, so the centring matters */
    ex_fill(w, (size_t)cols, 0.5f, 1.5f);
    ex_fill(b, (size_t)cols, -1, 1);
    float *dx = ex_upload(x, bytes), *dw = ex_upload(w, wbytes), *db = ex_upload(b, wbytes);
    float *dy = ex_poisoned(bytes);
    ex_check(layernorm_launch(NULL, tilert_tensor2d(dx, TILERT_F32, rows, cols), dw, db,
                              tilert_tensor2d(dy, TILERT_F32, rows, cols), eps),
             "layernorm_launch");
    ex_download(y, dy, bytes);

    double *got = ex_xmalloc(n * sizeof(double)), *ref = ex_xmalloc(n * sizeof(double));
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        double mean = 0, var = 0;
        for (int64_t c = 0; c < cols; c++) mean += xr[c];
        mean /= (double)cols;
        for (int64_t c = 0; c < cols; c++) var += ((double)xr[c] - mean) * ((double)xr[c] - mean);
        var /= (double)cols;
        double rstd = 1 / sqrt(var + (double)eps);
        for (int64_t c = 0; c < cols; c++) {
            ref[r * cols + c] = ((double)xr[c] - mean) * rstd * w[c] + b[c];
            got[r * cols + c] = y[r * cols + c];
        }
    }
    char what[64];
    snprintf(what, sizeof what, "layernorm [%lld, %lld]", (long long)rows, (long long)cols);
    bool ok = ex_compare(what, got, ref, n, 1e-5, 1e-5);
    tilert_free(dx);
    tilert_free(dw);
    tilert_free(db);
    tilert_free(dy);
    free(x);
    free(w);
    free(b);
    free(y);
    free(got);
    free(ref);
    return ok;
}

int main(void)
{
    ex_require_gpu();
    static const int64_t shapes[][2] = {{128, 768}, {10, 50}, {2, 1024}, {1, 1}, {4096, 1000}};
    bool ok = true;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) ok = run_case(shapes[i][0], shapes[i][1], 1e-5f) && ok;
    return ex_finish(ok);
}
