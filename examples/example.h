/* example.h: what the example host programs share (a header of static
 * inline functions, so each example stays one file to read).
 *
 * Each example: checks for a GPU (none: prints "SKIP: no CUDA device" and
 * exits 77, which ctest reports as skipped); for several shapes, ragged ones
 * included, makes random inputs (never zeros), poisons the outputs (every byte
 * 0xff: NaN for floats, -1 for integers), launches through the generated
 * header, copies back, and compares with a float64 reference on the host.
 * It prints one line per case and PASS or FAIL last; exit status 0 or 1.
 */
#ifndef TILEC_EXAMPLE_H
#define TILEC_EXAMPLE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tilert.h>

static inline void ex_fail(const char *what)
{
    fprintf(stderr, "error: %s: %s\n", what, tilert_last_error());
    printf("FAIL\n");
    exit(1);
}

/* Stops the program on a failed runtime call.  A kernel compiled for another
 * GPU is a skip, not a failure: the examples are built for one arch. */
static inline void ex_check(tilert_status s, const char *what)
{
    if (s == TILERT_OK) return;
    if (s == TILERT_ERROR_ARCH_MISMATCH) {
        printf("SKIP: the kernels were compiled for another GPU: %s\n", tilert_last_error());
        exit(77);
    }
    ex_fail(what);
}

/* Exit 77 where there is no GPU. */
static inline void ex_require_gpu(void)
{
    tilert_status s = tilert_init();
    if (s == TILERT_ERROR_NO_DRIVER || s == TILERT_ERROR_NO_DEVICE) {
        printf("SKIP: no CUDA device (%s)\n", tilert_last_error());
        exit(77);
    }
    ex_check(s, "tilert_init");
    tilert_device_info info;
    ex_check(tilert_device_get_info(&info), "tilert_device_get_info");
    printf("device: %s (compute capability %d.%d, %d SMs)\n", info.name, info.cc_major, info.cc_minor,
           info.sm_count);
}

/* ---- data ------------------------------------------------------------------------- */

static uint64_t ex_rng = 0x243f6a8885a308d3ull;

static inline uint64_t ex_next(void)
{
    uint64_t z = (ex_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi), never 0. */
static inline float ex_uniform(float lo, float hi)
{
    float x;
    do x = lo + (hi - lo) * (float)((double)(ex_next() >> 11) * 0x1p-53);
    while (x == 0.0f);
    return x;
}

static inline void ex_fill(float *x, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++) x[i] = ex_uniform(lo, hi);
}

/* bf16 <-> f32, round to nearest even (NaN stays NaN). */
static inline uint16_t ex_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

static inline float ex_from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline void *ex_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "error: out of memory\n");
        printf("FAIL\n");
        exit(1);
    }
    return p;
}

/* ---- device memory ------------------------------------------------------------------- */

static inline void *ex_upload(const void *host, size_t bytes)
{
    void *d;
    ex_check(tilert_malloc(&d, bytes), "tilert_malloc");
    if (bytes) ex_check(tilert_memcpy_htod(d, host, bytes), "tilert_memcpy_htod");
    return d;
}

/* Device memory whose every byte is 0xff, so an element the kernel does not write shows. */
static inline void *ex_poisoned(size_t bytes)
{
    void *d;
    ex_check(tilert_malloc(&d, bytes), "tilert_malloc");
    if (bytes) ex_check(tilert_memset_d8(d, 0xff, bytes), "tilert_memset_d8");
    return d;
}

/* Waits for the kernel, then copies back. */
static inline void ex_download(void *host, const void *dev, size_t bytes)
{
    ex_check(tilert_stream_synchronize(NULL), "the kernel");
    if (bytes) ex_check(tilert_memcpy_dtoh(host, dev, bytes), "tilert_memcpy_dtoh");
}

/* ---- checking ---------------------------------------------------------------------- */

/* |got[i] - ref[i]| must be at most tol[i] (NaN never is).  Prints the case's
 * line (`bound` says what the tolerance is) and the first few mismatches. */
static inline bool ex_compare_each(const char *what, const double *got, const double *ref, const double *tol, size_t n,
                                   const char *bound)
{
    size_t bad = 0, worst = 0;
    double worst_err = 0;
    for (size_t i = 0; i < n; i++) {
        double err = fabs(got[i] - ref[i]);
        if (!(err <= tol[i])) {
            if (bad < 5)
                fprintf(stderr, "  %s: element %zu is %.9g, expected %.9g (tolerance %.3g)\n", what, i, got[i], ref[i],
                        tol[i]);
            bad++;
        }
        if (!(err <= worst_err)) {
            worst_err = err;
            worst = i;
        }
    }
    if (bad) printf("%-40s FAIL: %zu of %zu elements off (worst: element %zu, error %.3g)\n", what, bad, n, worst,
                    worst_err);
    else printf("%-40s ok (max error %.3g; tolerance %s)\n", what, worst_err, bound);
    return bad == 0;
}

/* The same with tolerance atol + rtol * |ref[i]|. */
static inline bool ex_compare(const char *what, const double *got, const double *ref, size_t n, double atol, double rtol)
{
    double *tol = ex_xmalloc(n * sizeof *tol);
    for (size_t i = 0; i < n; i++) tol[i] = atol + rtol * fabs(ref[i]);
    char bound[80];
    snprintf(bound, sizeof bound, "%.2g + %.2g*|ref|", atol, rtol);
    bool ok = ex_compare_each(what, got, ref, tol, n, bound);
    free(tol);
    return ok;
}

static inline int ex_finish(bool ok)
{
    printf("%s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}

#endif
