/* test_runtime_nodriver.c: libtilert where no CUDA driver can be used.
 * ctest runs it twice: with TILERT_CUDA_LIBRARY naming a file that does not
 * exist, and naming the CUDA toolkit's stub libcuda.so (which loads but is no
 * driver).  TILERT_TEST_EXPECT holds a phrase the driver message must contain.
 * Also: the last error is per thread, and concurrent first calls are safe. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rt_util.h"
#include "tilert.h"

static const char *expected(void)
{
    const char *e = getenv("TILERT_TEST_EXPECT");
    return e ? e : "no CUDA driver";
}

static void no_driver(tilert_status s)
{
    if (s != TILERT_ERROR_NO_DRIVER)
        fail_msg("got %s: %s", tilert_status_string(s), tilert_last_error());
    if (!strstr(tilert_last_error(), expected()))
        fail_msg("message '%s' lacks '%s'", tilert_last_error(), expected());
}

static void test_every_entry_point(void **state)
{
    (void)state;
    no_driver(tilert_init());
    int n = 5;
    no_driver(tilert_device_count(&n));
    assert_int_equal(n, 0);
    tilert_device_info di;
    no_driver(tilert_device_get_info(&di));
    void *p = (void *)1;
    no_driver(tilert_malloc(&p, 64));
    assert_null(p);
    char host[16];
    no_driver(tilert_memcpy_htod((void *)0x1000, host, sizeof host));
    no_driver(tilert_memcpy_dtoh(host, (void *)0x1000, sizeof host));
    no_driver(tilert_memset_d8((void *)0x1000, 0, 16));
    no_driver(tilert_stream_synchronize(NULL));
    no_driver(tilert_free((void *)0x1000));

    /* a valid image: the checks pass, then the driver is missing */
    size_t mlen, len;
    uint8_t *meta = rt_test_meta("sm_90a", 0, false, &mlen);
    RtElfOpts o = rt_elf_opts(90);
    uint8_t *img = rt_make_elf(meta, mlen, &o, &len);
    tilert_module *m = (tilert_module *)1;
    no_driver(tilert_module_load_data(img, len, &m));
    assert_null(m);
    /* an invalid image is reported as such first: checks come before the driver */
    img[18] = 62;
    assert_int_equal(tilert_module_load_data(img, len, &m), TILERT_ERROR_INVALID_IMAGE);
    img[18] = (uint8_t)190;
    /* inspection needs no driver; a launch gets as far as it can */
    assert_int_equal(tilert_module_inspect_data(img, len, &m), TILERT_OK);
    tilert_kernel *k;
    assert_int_equal(tilert_kernel_get(m, "vadd", &k), TILERT_OK);
    tilert_arg a[4] = {tilert_arg_ptr(NULL, TILERT_F32), tilert_arg_ptr(NULL, TILERT_F32),
                       tilert_arg_ptr(NULL, TILERT_F32), tilert_arg_i32(10)};
    assert_int_equal(tilert_launch(k, NULL, a, 4), TILERT_ERROR_INSPECT_ONLY);
    assert_int_equal(tilert_module_unload(m), TILERT_OK);
    free(img);
    free(meta);
}

/* Each thread sees its own last error; many threads race to open the driver. */
typedef struct Job {
    int id;
    int ok;
} Job;

static void *worker(void *p)
{
    Job *j = p;
    char want[64];
    j->ok = 1;
    for (int it = 0; it < 200; it++) {
        if (it % 2 == 0) {
            if (tilert_init() != TILERT_ERROR_NO_DRIVER) j->ok = 0;
            if (!strstr(tilert_last_error(), expected())) j->ok = 0;
        } else {
            tilert_module *m;
            snprintf(want, sizeof want, "/nonexistent/thread-%d-%d.cubin", j->id, it);
            if (tilert_module_load_file(want, &m) != TILERT_ERROR_IO) j->ok = 0;
            if (strncmp(tilert_last_error(), want, strlen(want)) != 0) j->ok = 0;
        }
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    enum { N = 8 };
    pthread_t t[N];
    Job jobs[N];
    for (int i = 0; i < N; i++) {
        jobs[i] = (Job){i, 0};
        assert_int_equal(pthread_create(&t[i], NULL, worker, &jobs[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(jobs[i].ok, 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_every_entry_point),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
