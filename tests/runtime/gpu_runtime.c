/* gpu_runtime.c: libtilert on a real GPU (ctest label `gpu`).
 *
 * Builds the test module (rt_util.h: vadd, rowscale over strided tensors,
 * smem_big with 100000 bytes of dynamic shared memory) from hand-written PTX
 * with nvJitLink, loads it, launches on random data with poisoned outputs and
 * checks every element; then the error paths with a real device: another
 * arch, a truncated cubin, too much shared memory, a kernel missing from the
 * cubin, bad arguments (which must not launch), an explicit grid, an empty
 * launch, and launches from several threads at once.
 *
 * Standalone: needs only libtilert (linked in) and libnvJitLink.so.13.
 * Prints "SKIP: no CUDA device" and exits 77 without a GPU; exits 1 on any
 * failure; the last line is a summary.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta.h"
#include "rt_util.h"
#include "tilert.h"

static int checks, failures;

#define CHECK(cond, ...)                                                                                  \
    do {                                                                                                  \
        checks++;                                                                                         \
        if (!(cond)) {                                                                                    \
            failures++;                                                                                   \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                   \
            printf(__VA_ARGS__);                                                                          \
            printf("\n");                                                                                 \
        }                                                                                                 \
    } while (0)

/* status s == want, and the message contains `phrase` (NULL: any) */
static void expect(tilert_status s, tilert_status want, const char *phrase, const char *what)
{
    CHECK(s == want && (!phrase || strstr(tilert_last_error(), phrase)), "%s: got %s (%s), want %s%s%s", what,
          tilert_status_string(s), tilert_last_error(), tilert_status_string(want), phrase ? " with " : "",
          phrase ? phrase : "");
    if (s != TILERT_OK && s == want) printf("  ok, %s: %s\n", what, tilert_last_error());
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    float v = (float)((rng >> 40) % 2000001) / 1000.0f - 1000.0f; /* [-1000, 1000] */
    return v == 0.0f ? 0.5f : v;
}

static void *dalloc(size_t bytes)
{
    void *p = NULL;
    tilert_status s = tilert_malloc(&p, bytes);
    if (s) {
        printf("FATAL: tilert_malloc(%zu): %s\n", bytes, tilert_last_error());
        exit(1);
    }
    return p;
}

static void poison(void *d, size_t bytes) { tilert_memset_d8(d, 0xFF, bytes); } /* NaN pattern */

static void sync_ok(const char *what)
{
    tilert_status s = tilert_stream_synchronize(NULL);
    CHECK(s == TILERT_OK, "%s: synchronize: %s", what, tilert_last_error());
}

/* ---- the kernels ---------------------------------------------------------------- */

static void run_vadd(tilert_kernel *k, int n)
{
    size_t bytes = (size_t)(n ? n : 1) * 4;
    float *x = malloc(bytes), *y = malloc(bytes), *out = malloc(bytes);
    for (int i = 0; i < n; i++) x[i] = rnd(), y[i] = rnd();
    float *dx = dalloc(bytes), *dy = dalloc(bytes), *dout = dalloc(bytes);
    tilert_memcpy_htod(dx, x, bytes);
    tilert_memcpy_htod(dy, y, bytes);
    poison(dout, bytes);
    tilert_arg a[4] = {tilert_arg_ptr(dx, TILERT_F32), tilert_arg_ptr(dy, TILERT_F32),
                       tilert_arg_ptr(dout, TILERT_F32), tilert_arg_i32(n)};
    char what[64];
    snprintf(what, sizeof what, "vadd n=%d", n);
    expect(tilert_launch(k, NULL, a, 4), TILERT_OK, NULL, what);
    sync_ok(what);
    tilert_memcpy_dtoh(out, dout, bytes);
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (memcmp(&out[i], &(float){x[i] + y[i]}, 4) != 0 && bad++ < 5)
            printf("  vadd[%d] = %g, want %g\n", i, out[i], x[i] + y[i]);
    CHECK(bad == 0, "%s: %d wrong elements", what, bad);
    tilert_free(dx);
    tilert_free(dy);
    tilert_free(dout);
    free(x);
    free(y);
    free(out);
}

/* A is a row-major view with padded rows (stride 64), B a column-major view: the tensor ABI. */
static void run_rowscale(tilert_kernel *k, int rows, int cols)
{
    int pitch = 64;
    size_t abytes = (size_t)rows * pitch * 4, bbytes = (size_t)rows * cols * 4;
    float *a = malloc(abytes), *b = malloc(bbytes);
    for (int i = 0; i < rows * pitch; i++) a[i] = rnd();
    float *da = dalloc(abytes), *db = dalloc(bbytes);
    tilert_memcpy_htod(da, a, abytes);
    poison(db, bbytes);
    int64_t shape[2] = {rows, cols}, sa[2] = {pitch, 1}, sb[2] = {1, rows};
    tilert_arg args[3] = {tilert_arg_tensor(tilert_tensor_nd(da, TILERT_F32, 2, shape, sa)),
                          tilert_arg_tensor(tilert_tensor_nd(db, TILERT_F32, 2, shape, sb)), tilert_arg_f64(1.5)};
    expect(tilert_launch(k, NULL, args, 3), TILERT_OK, NULL, "rowscale");
    sync_ok("rowscale");
    tilert_memcpy_dtoh(b, db, bbytes);
    int bad = 0;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            float want = 1.5f * a[r * pitch + c], got = b[c * rows + r];
            if (memcmp(&got, &want, 4) != 0 && bad++ < 5) printf("  B[%d,%d] = %g, want %g\n", r, c, got, want);
        }
    CHECK(bad == 0, "rowscale %dx%d: %d wrong elements", rows, cols, bad);
    tilert_free(da);
    tilert_free(db);
    free(a);
    free(b);
}

static void run_smem(tilert_kernel *k, int n)
{
    size_t bytes = (size_t)n * 4;
    float *out = malloc(bytes), *dout = dalloc(bytes);
    poison(dout, bytes);
    tilert_arg a[2] = {tilert_arg_ptr(dout, TILERT_F32), tilert_arg_i32(n)};
    expect(tilert_launch(k, NULL, a, 2), TILERT_OK, NULL, "smem_big (100000 bytes of dynamic shared memory)");
    sync_ok("smem_big");
    tilert_memcpy_dtoh(out, dout, bytes);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        float want = 2.0f * (float)(128 * (i / 128) + 127 - i % 128);
        if (out[i] != want && bad++ < 5) printf("  smem_big[%d] = %g, want %g\n", i, out[i], want);
    }
    CHECK(bad == 0, "smem_big n=%d: %d wrong elements", n, bad);
    tilert_free(dout);
    free(out);
}

/* ---- threads ---------------------------------------------------------------------- */

typedef struct Job {
    tilert_kernel *k;
    int n, ok;
} Job;

static void *thread_main(void *p)
{
    Job *j = p;
    size_t bytes = (size_t)j->n * 4;
    float *x = malloc(bytes), *out = malloc(bytes);
    for (int i = 0; i < j->n; i++) x[i] = (float)(i % 1000) + 0.25f;
    float *dx = NULL, *dout = NULL;
    j->ok = tilert_malloc((void **)&dx, bytes) == TILERT_OK && tilert_malloc((void **)&dout, bytes) == TILERT_OK;
    if (j->ok) {
        tilert_memcpy_htod(dx, x, bytes);
        tilert_arg a[4] = {tilert_arg_ptr(dx, TILERT_F32), tilert_arg_ptr(dx, TILERT_F32),
                           tilert_arg_ptr(dout, TILERT_F32), tilert_arg_i32(j->n)};
        for (int it = 0; it < 50 && j->ok; it++) j->ok = tilert_launch(j->k, NULL, a, 4) == TILERT_OK;
        if (!j->ok) printf("  thread launch: %s\n", tilert_last_error());
        j->ok = j->ok && tilert_stream_synchronize(NULL) == TILERT_OK;
        tilert_memcpy_dtoh(out, dout, bytes);
        for (int i = 0; i < j->n && j->ok; i++) j->ok = out[i] == 2 * x[i];
    }
    tilert_free(dx);
    tilert_free(dout);
    free(x);
    free(out);
    return NULL;
}

/* ---- main -------------------------------------------------------------------------- */

int main(void)
{
    tilert_status s = tilert_init();
    int ndev = 0;
    if (s == TILERT_ERROR_NO_DRIVER || s == TILERT_ERROR_NO_DEVICE ||
        (s == TILERT_OK && (tilert_device_count(&ndev) != TILERT_OK || ndev == 0))) {
        printf("SKIP: no CUDA device (%s)\n", s ? tilert_last_error() : "the driver lists none");
        return 77;
    }
    if (s) {
        printf("FAIL: tilert_init: %s\n", tilert_last_error());
        return 1;
    }
    tilert_device_info di;
    if (tilert_device_get_info(&di) != TILERT_OK) {
        printf("FAIL: tilert_device_get_info: %s\n", tilert_last_error());
        return 1;
    }
    printf("device %d: %s, compute capability %d.%d, %d SMs, %d bytes shared memory per block (opt-in)\n",
           di.ordinal, di.name, di.cc_major, di.cc_minor, di.sm_count, di.max_smem_per_block_optin);
    char arch[16], other[16], log[8192];
    snprintf(arch, sizeof arch, "sm_%d%d%s", di.cc_major, di.cc_minor, di.cc_major == 9 ? "a" : "");
    snprintf(other, sizeof other, "%s", di.cc_major == 8 ? "sm_90a" : "sm_80");

    size_t len;
    uint8_t *cubin = rt_test_cubin(arch, arch, 0, true, &len, log, sizeof log);
    if (!cubin) {
        printf("FAIL: building the %s test cubin: %s\n", arch, log);
        return 1;
    }
    tilert_module *m = NULL;
    s = tilert_module_load_data(cubin, len, &m);
    expect(s, TILERT_OK, NULL, "load the test cubin");
    if (s) return 1;
    tilert_kernel *vadd = NULL, *rowscale = NULL, *smem = NULL, *ghost = NULL;
    expect(tilert_kernel_get(m, "vadd", &vadd), TILERT_OK, NULL, "get vadd");
    expect(tilert_kernel_get(m, "rowscale", &rowscale), TILERT_OK, NULL, "get rowscale");
    expect(tilert_kernel_get(m, "smem_big", &smem), TILERT_OK, NULL, "get smem_big");
    expect(tilert_kernel_get(m, "ghost", &ghost), TILERT_ERROR_BAD_METADATA, "not in the cubin", "get ghost");
    if (!vadd || !rowscale || !smem) return 1;

    /* results on random data, ragged sizes */
    int sizes[] = {1, 255, 256, 1000, 1000003};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) run_vadd(vadd, sizes[i]);
    run_rowscale(rowscale, 37, 50);
    run_rowscale(rowscale, 300, 64);
    run_smem(smem, 1000);
    run_smem(smem, 128 * 300);

    /* an empty launch does nothing and succeeds */
    tilert_arg e[4] = {tilert_arg_ptr(NULL, TILERT_F32), tilert_arg_ptr(NULL, TILERT_F32),
                       tilert_arg_ptr(NULL, TILERT_F32), tilert_arg_i32(0)};
    expect(tilert_launch(vadd, NULL, e, 4), TILERT_OK, NULL, "empty launch");

    /* bad arguments are refused before anything runs: the output stays poisoned */
    {
        int n = 1024;
        float *dx = dalloc((size_t)n * 4), *dout = dalloc((size_t)n * 4), *out = malloc((size_t)n * 4);
        float *host = malloc((size_t)n * 4);
        for (int i = 0; i < n; i++) host[i] = rnd();
        tilert_memcpy_htod(dx, host, (size_t)n * 4);
        poison(dout, (size_t)n * 4);
        tilert_arg a[4] = {tilert_arg_ptr(dx, TILERT_F32), tilert_arg_ptr(dx, TILERT_F16),
                           tilert_arg_ptr(dout, TILERT_F32), tilert_arg_i32(n)};
        expect(tilert_launch(vadd, NULL, a, 4), TILERT_ERROR_ARG_TYPE, "argument 1 ('y')", "wrong dtype");
        a[1] = tilert_arg_ptr((char *)dx + 2, TILERT_F32);
        expect(tilert_launch(vadd, NULL, a, 4), TILERT_ERROR_ARG_ALIGN, "argument 1 ('y')", "misaligned pointer");
        expect(tilert_launch(vadd, NULL, a, 3), TILERT_ERROR_ARG_COUNT, "takes 4 arguments", "argument count");
        int64_t shape[2] = {4, 4};
        tilert_arg r[3] = {tilert_arg_tensor(tilert_tensor_nd((char *)dx + 4, TILERT_F32, 2, shape, NULL)),
                           tilert_arg_tensor(tilert_tensor_nd(dout, TILERT_F32, 2, shape, NULL)), tilert_arg_f32(2)};
        expect(tilert_launch(rowscale, NULL, r, 3), TILERT_ERROR_ARG_ALIGN, "16-byte aligned", "misaligned tensor");
        sync_ok("after refused launches");
        tilert_memcpy_dtoh(out, dout, (size_t)n * 4);
        int touched = 0;
        for (int i = 0; i < n; i++) touched += !isnan(out[i]);
        CHECK(touched == 0, "refused launches wrote %d elements", touched);

        /* an explicit grid: 2 blocks of 256 threads cover the first 512 elements only */
        a[1] = tilert_arg_ptr(dx, TILERT_F32);
        const uint32_t grid[3] = {2, 1, 1};
        expect(tilert_launch_grid(vadd, NULL, grid, a, 4), TILERT_OK, NULL, "explicit grid");
        sync_ok("explicit grid");
        tilert_memcpy_dtoh(out, dout, (size_t)n * 4);
        int good = 0, untouched = 0;
        for (int i = 0; i < 512; i++) good += out[i] == host[i] + host[i];
        for (int i = 512; i < n; i++) untouched += isnan(out[i]) != 0;
        CHECK(good == 512 && untouched == n - 512, "explicit grid: %d of 512 right, %d of %d untouched", good,
              untouched, n - 512);
        tilert_free(dx);
        tilert_free(dout);
        free(out);
        free(host);
    }

    /* launches from several threads (none has a current context of its own) */
    {
        enum { T = 4 };
        pthread_t t[T];
        Job jobs[T];
        for (int i = 0; i < T; i++) {
            jobs[i] = (Job){vadd, 10000 + 777 * i, 0};
            pthread_create(&t[i], NULL, thread_main, &jobs[i]);
        }
        for (int i = 0; i < T; i++) {
            pthread_join(t[i], NULL);
            CHECK(jobs[i].ok, "thread %d: launches or results wrong", i);
        }
    }

    /* error paths with the device */
    uint8_t *c2 = rt_test_cubin(other, other, 0, false, &len, log, sizeof log);
    CHECK(c2 != NULL, "building an %s cubin: %s", other, log);
    if (c2) {
        tilert_module *m2 = NULL;
        expect(tilert_module_load_data(c2, len, &m2), TILERT_ERROR_ARCH_MISMATCH, "does not run on this GPU",
               "a cubin for another GPU");
        expect(tilert_module_load_data(c2, len / 2, &m2), TILERT_ERROR_INVALID_IMAGE, "truncated",
               "a truncated cubin");
        free(c2);
    }
    uint8_t *c3 = rt_test_cubin(arch, arch, 300000, false, &len, log, sizeof log);
    CHECK(c3 != NULL, "building the big-shared-memory cubin: %s", log);
    if (c3) {
        tilert_module *m3 = NULL;
        expect(tilert_module_load_data(c3, len, &m3), TILERT_OK, NULL, "load the big-shared-memory cubin");
        tilert_kernel *k3 = NULL;
        expect(tilert_kernel_get(m3, "smem_big", &k3), TILERT_ERROR_RESOURCES, "bytes of shared memory",
               "too much shared memory");
        expect(tilert_module_unload(m3), TILERT_OK, NULL, "unload");
        free(c3);
    }
    expect(tilert_module_unload(m), TILERT_OK, NULL, "unload the test module");
    free(cubin);

    printf("gpu_runtime: %d checks, %d failed: %s\n", checks, failures, failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
