/* vadd.c: out = x + y on the GPU through the header tilec generates from
 * vadd.tile (tilec vadd.tile --emit=header --embed), checked against the host. */
#include "example.h"
#include "vadd.h"

static bool run_case(int32_t n)
{
    size_t bytes = (size_t)n * sizeof(float);
    float *x = ex_xmalloc(bytes), *y = ex_xmalloc(bytes), *out = ex_xmalloc(bytes);
    ex_fill(x, (size_t)n, -1, 1);
    ex_fill(y, (size_t)n, -1, 1);
    float *dx = ex_upload(x, bytes), *dy = ex_upload(y, bytes), *dout = ex_poisoned(bytes);
    ex_check(vadd_launch(NULL, dx, dy, dout, n), "vadd_launch");
    ex_download(out, dout, bytes);

    double *got = ex_xmalloc((size_t)n * sizeof(double)), *ref = ex_xmalloc((size_t)n * sizeof(double));
    for (int32_t i = 0; i < n; i++) {
        got[i] = out[i];
        ref[i] = (double)x[i] + (double)y[i];
    }
    char what[64];
    snprintf(what, sizeof what, "vadd n=%d", (int)n);
    /* one f32 rounding of the exact sum */
    bool ok = ex_compare(what, got, ref, (size_t)n, 0, 0x1p-24);
    tilert_free(dx);
    tilert_free(dy);
    tilert_free(dout);
    free(x);
    free(y);
    free(out);
    free(got);
    free(ref);
    return ok;
}

int main(void)
{
    ex_require_gpu();
    static const int32_t sizes[] = {1, 1000, 1024, 100003, 1 << 22};
    bool ok = true;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) ok = run_case(sizes[i]) && ok;
    return ex_finish(ok);
}
