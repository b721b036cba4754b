/* test_runtime_fakedrv.c: tilert_launch's driver side without a GPU, against
 * fake_cuda.c (a stand-in libcuda that records what it is given): where the
 * CUtensorMap parameters go in the kernel ABI and what they were built from, the
 * tensor-map cache (hits, ping-pong buffers, misses), the driver's own refusal
 * passed on with its message, no map built for an empty or refused launch, and
 * zero maps instead of an error for a tensor whose descriptors are optional, and
 * requires(...) clauses refusing a launch before the driver sees it. */
#include <dlfcn.h>
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
#include "meta.h"
#include "tma.h"

static int *fake_encodes, *fake_launches;
static uint8_t *fake_params;
static uint32_t *fake_grid;
static void (*fake_set_param_sizes)(const uint32_t *, int);

static void expect(tilert_status got, tilert_status want, const char *msg)
{
    if (got != want)
        fail_msg("got %s, want %s: %s", tilert_status_string(got), tilert_status_string(want), tilert_last_error());
    if (msg && !strstr(tilert_last_error(), msg)) fail_msg("message '%s' lacks '%s'", tilert_last_error(), msg);
}

static uint64_t u64_at(size_t off)
{
    uint64_t v;
    memcpy(&v, fake_params + off, 8);
    return v;
}

static tilert_module *load_tma(void)
{
    size_t mlen, len;
    uint8_t *meta = rt_tma_meta("sm_90a", &mlen);
    assert_non_null(meta);
    RtElfOpts o = rt_elf_opts(90);
    uint8_t *img = rt_make_elf(meta, mlen, &o, &len);
    tilert_module *m = NULL;
    expect(tilert_module_load_data(img, len, &m), TILERT_OK, NULL);
    free(img);
    free(meta);
    return m;
}

static tilert_arg tensor_at(uintptr_t addr, int64_t rows, int64_t cols, int64_t pitch)
{
    int64_t shape[2] = {rows, cols}, stride[2] = {pitch, 1};
    return tilert_arg_tensor(tilert_tensor_nd((void *)addr, TILERT_F32, 2, shape, stride));
}

static void test_tma_abi(void **state)
{
    (void)state;
    tilert_module *m = load_tma();
    tilert_kernel *k;
    expect(tilert_kernel_get(m, "tma_tile", &k), TILERT_OK, NULL);
    static const uint32_t sizes[] = {8, 8, 8, 8, 8, 128, 128, 128, 128, 8, 4};
    fake_set_param_sizes(sizes, 11);
    int enc0 = *fake_encodes, l0 = *fake_launches;
    tilert_arg a[3] = {tensor_at(0x7f0000100000, 100, 75, 80), tilert_arg_ptr((void *)0x7f0000900000, TILERT_F32),
                       tilert_arg_i32(2)};
    expect(tilert_launch(k, NULL, a, 3), TILERT_OK, NULL);
    assert_int_equal(*fake_launches, l0 + 1);
    assert_int_equal(*fake_encodes, enc0 + 4);
    assert_int_equal(fake_grid[0], 3);
    assert_int_equal(fake_grid[1], 7);
    /* the view: pointer, shape, strides in elements */
    assert_true(u64_at(0) == 0x7f0000100000ull);
    assert_int_equal(u64_at(8), 100);
    assert_int_equal(u64_at(16), 75);
    assert_int_equal(u64_at(24), 80);
    assert_int_equal(u64_at(32), 1);
    /* then its four maps, in the metadata's order, built from the view */
    static const uint64_t box[4][2] = {{32, 16}, {32, 8}, {32, 16}, {32, 16}};
    static const uint64_t mode[4] = {1 | 0u << 8, 1 | 3u << 8, 2 | 0u << 8, 1 | 2u << 16 | 1u << 24};
    for (int j = 0; j < 4; j++) {
        size_t base = 40 + 128 * (size_t)j;
        assert_true(u64_at(base) == 0x7f0000100000ull);
        assert_int_equal(u64_at(base + 8), 75);
        assert_int_equal(u64_at(base + 16), 100);
        assert_int_equal(u64_at(base + 24), 320);
        assert_int_equal(u64_at(base + 32), box[j][0] | box[j][1] << 32);
        assert_int_equal(u64_at(base + 40), mode[j] | (uint64_t)TILERT_CU_TMA_FLOAT32 << 32);
        assert_int_equal(u64_at(base + 48), (uint64_t)(enc0 + j + 1));
    }
    /* then the pointer and the scalar */
    assert_true(u64_at(40 + 512) == 0x7f0000900000ull);
    uint32_t which;
    memcpy(&which, fake_params + 40 + 512 + 8, 4);
    assert_int_equal(which, 2);
    tilert_module_unload(m);
}

static void test_tma_cache(void **state)
{
    (void)state;
    tilert_module *m = load_tma();
    tilert_kernel *k;
    expect(tilert_kernel_get(m, "tma_tile", &k), TILERT_OK, NULL);
    static const uint32_t sizes[] = {8, 8, 8, 8, 8, 128, 128, 128, 128, 8, 4};
    fake_set_param_sizes(sizes, 11);
    const uintptr_t A = 0x7f0000200000;
    tilert_arg a[3] = {tensor_at(A, 64, 64, 64), tilert_arg_ptr((void *)0x7f0000900000, TILERT_F32),
                       tilert_arg_i32(0)};
    int enc0 = *fake_encodes;
    expect(tilert_launch(k, NULL, a, 3), TILERT_OK, NULL);
    assert_int_equal(*fake_encodes, enc0 + 4);
    uint64_t serial = u64_at(40 + 48);
    for (int i = 0; i < 5; i++) expect(tilert_launch(k, NULL, a, 3), TILERT_OK, NULL);
    assert_int_equal(*fake_encodes, enc0 + 4); /* all from the cache */
    assert_int_equal(u64_at(40 + 48), serial);  /* the very map built first */
    /* another shape at the same address is another map */
    a[0] = tensor_at(A, 63, 64, 64);
    expect(tilert_launch(k, NULL, a, 3), TILERT_OK, NULL);
    assert_int_equal(*fake_encodes, enc0 + 8);
    assert_int_equal(u64_at(40 + 16), 63);
    /* two buffers in turn: cached after the first round */
    tilert_arg b[3] = {tensor_at(A + 16, 64, 64, 64), a[1], a[2]};
    a[0] = tensor_at(A, 64, 64, 64);
    for (int i = 0; i < 6; i++) {
        expect(tilert_launch(k, NULL, (i & 1) ? b : a, 3), TILERT_OK, NULL);
        assert_true(u64_at(0) == ((i & 1) ? A + 16 : A));
        assert_true(u64_at(40) == ((i & 1) ? A + 16 : A)); /* the map matches the tensor */
    }
    assert_int_equal(*fake_encodes, enc0 + 12);
    /* five buffers in turn overflow the four ways: every launch builds its maps */
    int before = *fake_encodes;
    for (int i = 0; i < 10; i++) {
        tilert_arg c[3] = {tensor_at(A + 64 + 16 * (uintptr_t)(i % 5), 64, 64, 64), a[1], a[2]};
        expect(tilert_launch(k, NULL, c, 3), TILERT_OK, NULL);
        assert_true(u64_at(40 + 128 * 3) == A + 64 + 16 * (uintptr_t)(i % 5));
    }
    assert_int_equal(*fake_encodes, before + 40);
    tilert_module_unload(m);
}

static void test_tma_refusals(void **state)
{
    (void)state;
    tilert_module *m = load_tma();
    tilert_kernel *k;
    expect(tilert_kernel_get(m, "tma_tile", &k), TILERT_OK, NULL);
    int enc0 = *fake_encodes, l0 = *fake_launches;
    /* the driver refuses a stride of 0 (this fake does): its own error, named, with what it was given */
    tilert_arg a[3] = {tensor_at(0x7f0000300000, 100, 75, 0), tilert_arg_ptr((void *)0x7f0000900000, TILERT_F32),
                       tilert_arg_i32(0)};
    expect(tilert_launch(k, NULL, a, 3), TILERT_ERROR_CUDA,
           "kernel 'tma_tile', argument 0 ('A'), TMA descriptor 0: cuTensorMapEncodeTiled failed: "
           "CUDA_ERROR_INVALID_VALUE (invalid argument); it was given globalDim {75, 100} globalStrides {0} "
           "boxDim {32, 16} elementStrides {1, 1} dataType 7 address 0x7f0000300000");
    assert_int_equal(*fake_launches, l0);
    /* rules broken: no map built, nothing launched */
    a[0] = tensor_at(0x7f0000300008, 100, 75, 80);
    expect(tilert_launch(k, NULL, a, 3), TILERT_ERROR_ARG_ALIGN, "TMA needs the base address 16-byte aligned");
    a[0] = tensor_at(0x7f0000300000, 100, 75, 75);
    expect(tilert_launch(k, NULL, a, 3), TILERT_ERROR_ARG_VALUE, "300 bytes is not a multiple of 16");
    /* an empty launch: nothing built, nothing launched, success */
    a[0] = tensor_at(0x7f0000300000, 0, 75, 80);
    expect(tilert_launch(k, NULL, a, 3), TILERT_OK, NULL);
    assert_int_equal(*fake_encodes, enc0);
    assert_int_equal(*fake_launches, l0);
    /* an explicit grid launches even so, and then the empty dimension is refused */
    const uint32_t g[3] = {1, 1, 1};
    expect(tilert_launch_grid(k, NULL, g, a, 3), TILERT_ERROR_ARG_VALUE, "shape[0] = 0: TMA cannot describe");
    tilert_module_unload(m);
}

/* Optional descriptors (tma_ready's A): a tensor TMA cannot describe, by the launcher's rules
 * or the driver's, still launches, with a map of zeros; a describable one gets its map. */
static void test_tma_optional(void **state)
{
    (void)state;
    tilert_module *m = load_tma();
    tilert_kernel *k;
    expect(tilert_kernel_get(m, "tma_ready", &k), TILERT_OK, NULL);
    tilert_param_info pi;
    expect(tilert_kernel_param(k, 0, &pi), TILERT_OK, NULL);
    assert_int_equal(pi.ntma, 1);
    assert_int_equal(pi.tma_optional, 1);
    static const uint32_t sizes[] = {8, 8, 8, 8, 8, 128, 8};
    fake_set_param_sizes(sizes, 7);
    const uint32_t g[3] = {1, 1, 1};
    tilert_arg a[2] = {tensor_at(0x7f0000400000, 100, 75, 80), tilert_arg_ptr((void *)0x7f0000900000, TILERT_I32)};
    int enc0 = *fake_encodes, l0 = *fake_launches;
    expect(tilert_launch_grid(k, NULL, g, a, 2), TILERT_OK, NULL);
    assert_int_equal(*fake_encodes, enc0 + 1);
    assert_true(u64_at(40) == 0x7f0000400000ull);
    assert_true(u64_at(40 + 128) == 0x7f0000900000ull); /* the pointer after the map */
    /* rows of 300 bytes (not a multiple of 16): zeros, no encoding, a launch all the same */
    uint8_t zeros[128] = {0};
    a[0] = tensor_at(0x7f0000400000, 100, 75, 75);
    uint32_t grid[3];
    expect(tilert_kernel_check(k, a, 2, grid), TILERT_ERROR_NO_GRID, NULL); /* no grid(...); the TMA rules pass */
    expect(tilert_kernel_check(k, a, 2, NULL), TILERT_OK, NULL);
    expect(tilert_launch_grid(k, NULL, g, a, 2), TILERT_OK, NULL);
    assert_int_equal(*fake_encodes, enc0 + 1);
    assert_int_equal(*fake_launches, l0 + 2);
    assert_memory_equal(fake_params + 40, zeros, 128);
    assert_true(u64_at(40 + 128) == 0x7f0000900000ull);
    /* the driver refusing it (this fake refuses a stride of 0): zeros too */
    a[0] = tensor_at(0x7f0000400000, 100, 75, 0);
    expect(tilert_launch_grid(k, NULL, g, a, 2), TILERT_OK, NULL);
    assert_int_equal(*fake_launches, l0 + 3);
    assert_memory_equal(fake_params + 40, zeros, 128);
    /* and a good tensor again: its map (from the cache) */
    a[0] = tensor_at(0x7f0000400000, 100, 75, 80);
    expect(tilert_launch_grid(k, NULL, g, a, 2), TILERT_OK, NULL);
    assert_int_equal(*fake_encodes, enc0 + 1);
    assert_true(u64_at(40) == 0x7f0000400000ull);
    /* a misaligned tensor is refused whatever its descriptors: the tensor ABI's own rule */
    a[0] = tensor_at(0x7f0000400008, 100, 75, 80);
    expect(tilert_launch_grid(k, NULL, g, a, 2), TILERT_ERROR_ARG_ALIGN, "argument 0 ('A')");
    /* the same rows for tma_tile, whose descriptors are required: the named error */
    expect(tilert_kernel_get(m, "tma_tile", &k), TILERT_OK, NULL);
    tilert_arg b[3] = {tensor_at(0x7f0000400000, 100, 75, 75), tilert_arg_ptr((void *)0x7f0000900000, TILERT_F32),
                       tilert_arg_i32(0)};
    expect(tilert_launch(k, NULL, b, 3), TILERT_ERROR_ARG_VALUE,
           "kernel 'tma_tile', argument 0 ('A'), TMA descriptor 0 (box [16, 32] of f32, swizzle none): stride[0] = "
           "75 elements = 300 bytes is not a multiple of 16");
    tilert_module_unload(m);
}

/* A kernel without TMA keeps its ABI: four 8/8/8/4-byte parameters. */
static void test_plain_abi(void **state)
{
    (void)state;
    size_t mlen, len;
    uint8_t *meta = rt_test_meta("sm_90a", 0, false, &mlen);
    RtElfOpts o = rt_elf_opts(90);
    uint8_t *img = rt_make_elf(meta, mlen, &o, &len);
    tilert_module *m = NULL;
    expect(tilert_module_load_data(img, len, &m), TILERT_OK, NULL);
    tilert_kernel *k;
    expect(tilert_kernel_get(m, "vadd", &k), TILERT_OK, NULL);
    static const uint32_t sizes[] = {8, 8, 8, 4};
    fake_set_param_sizes(sizes, 4);
    int enc0 = *fake_encodes;
    tilert_arg a[4] = {tilert_arg_ptr((void *)0x1000, TILERT_F32), tilert_arg_ptr((void *)0x2000, TILERT_F32),
                       tilert_arg_ptr((void *)0x3000, TILERT_F32), tilert_arg_i32(1000)};
    expect(tilert_launch(k, NULL, a, 4), TILERT_OK, NULL);
    assert_int_equal(u64_at(0), 0x1000);
    assert_int_equal(u64_at(16), 0x3000);
    uint32_t n;
    memcpy(&n, fake_params + 24, 4);
    assert_int_equal(n, 1000);
    assert_int_equal(fake_grid[0], 4);
    assert_int_equal(*fake_encodes, enc0);
    tilert_module_unload(m);
    free(img);
    free(meta);
}

/* tilert_module_load_best on the fake device (compute capability 9.0): of images for several archs,
 * the newest that runs there, sm_90a before sm_90; none that runs is an error naming them all. */
static uint8_t *image_for(const char *arch, unsigned sm, size_t *len)
{
    size_t mlen;
    uint8_t *meta = rt_test_meta(arch, 0, false, &mlen);
    RtElfOpts o = rt_elf_opts(sm);
    uint8_t *img = rt_make_elf(meta, mlen, &o, len);
    free(meta);
    return img;
}

static void test_load_best(void **state)
{
    (void)state;
    size_t l80, l89, l90, l90a;
    uint8_t *i80 = image_for("sm_80", 80, &l80), *i89 = image_for("sm_89", 89, &l89);
    uint8_t *i90 = image_for("sm_90", 90, &l90), *i90a = image_for("sm_90a", 90, &l90a);
    tilert_module *m = NULL;
    int chosen = -1;
    const void *all[] = {i80, i90a, i89, i90};
    const size_t all_len[] = {l80, l90a, l89, l90};
    expect(tilert_module_load_best(all, all_len, 4, &m, &chosen), TILERT_OK, NULL);
    assert_int_equal(chosen, 1);
    assert_string_equal(tilert_module_arch(m), "sm_90a");
    tilert_kernel *k;
    expect(tilert_kernel_get(m, "vadd", &k), TILERT_OK, NULL);
    tilert_module_unload(m);
    const void *plain[] = {i80, i90};
    const size_t plain_len[] = {l80, l90};
    expect(tilert_module_load_best(plain, plain_len, 2, &m, &chosen), TILERT_OK, NULL);
    assert_int_equal(chosen, 1);
    assert_string_equal(tilert_module_arch(m), "sm_90");
    tilert_module_unload(m);
    const void *old[] = {i80, i89};
    const size_t old_len[] = {l80, l89};
    expect(tilert_module_load_best(old, old_len, 2, &m, &chosen), TILERT_ERROR_ARCH_MISMATCH,
           "none of the cubins (sm_80, sm_89) runs on this GPU");
    assert_null(m);
    size_t bad_len = 16;
    const void *bad[] = {i90a, "not a cubin at all"};
    const size_t bad_lens[] = {l90a, bad_len};
    expect(tilert_module_load_best(bad, bad_lens, 2, &m, NULL), TILERT_ERROR_INVALID_IMAGE,
           "tilert_module_load_best: image 1:");
    expect(tilert_module_load_best(all, all_len, 0, &m, NULL), TILERT_ERROR_INVALID_VALUE, "no images");
    free(i80);
    free(i89);
    free(i90);
    free(i90a);
}

/* A kernel with requires(...) clauses: every launch path refuses arguments that break
 * one, with TILERT_ERROR_REQUIRES, the clause's message and the values it read, before
 * the driver is asked anything.
 *   gqa(Q: tensor<bf16, 4>, K: tensor<bf16, 4>, n: i32) grid(Q.shape[2])
 *     requires(Q.shape[1] % K.shape[1] == 0, "Hq must be a multiple of Hkv")
 *     requires(n >= 1, "n must be positive") */
static void test_requires_launch(void **state)
{
    (void)state;
    uint16_t sm;
    uint8_t fl;
    assert_true(tilert_meta_parse_arch("sm_90a", &sm, &fl));
    static const tilert_meta_param ps[] = {{"Q", TILERT_PARAM_TENSOR, TILERT_BF16, 4, 0, NULL, 0},
                                           {"K", TILERT_PARAM_TENSOR, TILERT_BF16, 4, 0, NULL, 0},
                                           {"n", TILERT_PARAM_SCALAR, TILERT_I32, 0, 0, NULL, 0}};
    static const uint8_t grid[] = {TILERT_GOP_SHAPE, 0, 2};
    static const uint8_t r0[] = {TILERT_GOP_SHAPE, 0, 1, TILERT_GOP_SHAPE, 1, 1, TILERT_GOP_REM,
                                 TILERT_GOP_PUSH, 0, 0, 0, 0, 0, 0, 0, 0, TILERT_GOP_EQ};
    static const uint8_t r1[] = {TILERT_GOP_ARG, 2, TILERT_GOP_PUSH, 1, 0, 0, 0, 0, 0, 0, 0, TILERT_GOP_GE};
    static const tilert_meta_require rq[] = {{"Hq must be a multiple of Hkv", r0, sizeof r0},
                                             {"n must be positive", r1, sizeof r1}};
    tilert_meta_kernel mk = {"gqa", "gqa", sm, fl, 1, 4, 0, 0, 3, 0, sizeof grid, ps, NULL, grid, 2, rq};
    uint8_t *meta;
    size_t mlen, len;
    char e[200];
    if (!tilert_meta_write(&mk, 1, &meta, &mlen, e, sizeof e)) fail_msg("%s", e);
    RtElfOpts o = rt_elf_opts(90);
    uint8_t *img = rt_make_elf(meta, mlen, &o, &len);
    tilert_module *m = NULL;
    expect(tilert_module_load_data(img, len, &m), TILERT_OK, NULL);
    tilert_kernel *k;
    expect(tilert_kernel_get(m, "gqa", &k), TILERT_OK, NULL);
    static const uint32_t sizes[] = {8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 4};
    fake_set_param_sizes(sizes, 19);
    int64_t qs[4] = {2, 16, 77, 64}, ks[4] = {2, 4, 300, 64}, bad[4] = {2, 3, 300, 64}, none[4] = {2, 0, 300, 64};
    tilert_arg a[3] = {tilert_arg_tensor(tilert_tensor_nd((void *)0x10000, TILERT_BF16, 4, qs, NULL)),
                       tilert_arg_tensor(tilert_tensor_nd((void *)0x20000, TILERT_BF16, 4, ks, NULL)),
                       tilert_arg_i32(7)};
    int l0 = *fake_launches;
    expect(tilert_launch(k, NULL, a, 3), TILERT_OK, NULL);
    assert_int_equal(*fake_launches, l0 + 1);
    assert_int_equal(fake_grid[0], 77);
    uint32_t g[3];
    expect(tilert_kernel_check(k, a, 3, g), TILERT_OK, NULL);
    /* 16 query heads over 3 KV heads */
    a[1] = tilert_arg_tensor(tilert_tensor_nd((void *)0x20000, TILERT_BF16, 4, bad, NULL));
    expect(tilert_launch(k, NULL, a, 3), TILERT_ERROR_REQUIRES,
           "kernel 'gqa': requires(...) does not hold: Hq must be a multiple of Hkv (Q.shape [2, 16, 77, 64], "
           "K.shape [2, 3, 300, 64])");
    static const uint32_t explicit_grid[3] = {1, 1, 1};
    expect(tilert_launch_grid(k, NULL, explicit_grid, a, 3), TILERT_ERROR_REQUIRES, "Hq must be a multiple of Hkv");
    expect(tilert_kernel_check(k, a, 3, g), TILERT_ERROR_REQUIRES, "Hq must be a multiple of Hkv");
    expect(tilert_kernel_check(k, a, 3, NULL), TILERT_ERROR_REQUIRES, "Hq must be a multiple of Hkv");
    /* no KV heads: the clause itself cannot be evaluated */
    a[1] = tilert_arg_tensor(tilert_tensor_nd((void *)0x20000, TILERT_BF16, 4, none, NULL));
    expect(tilert_launch(k, NULL, a, 3), TILERT_ERROR_REQUIRES, "requires(...) clause 0 divides by zero");
    /* the second clause, naming the scalar it read */
    a[1] = tilert_arg_tensor(tilert_tensor_nd((void *)0x20000, TILERT_BF16, 4, ks, NULL));
    a[2] = tilert_arg_i32(0);
    expect(tilert_launch(k, NULL, a, 3), TILERT_ERROR_REQUIRES, "n must be positive (n = 0)");
    /* a type error still comes first */
    a[2] = tilert_arg_f32(1.0f);
    expect(tilert_launch(k, NULL, a, 3), TILERT_ERROR_ARG_TYPE, NULL);
    assert_int_equal(*fake_launches, l0 + 1);
    tilert_module_unload(m);
    free(img);
    free(meta);
}

int main(void)
{
    setenv("TILERT_CUDA_LIBRARY", FAKE_CUDA_PATH, 1);
    if (tilert_init() != TILERT_OK) {
        fprintf(stderr, "the fake driver %s: %s\n", FAKE_CUDA_PATH, tilert_last_error());
        return 1;
    }
    void *lib = dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_NOLOAD);
    if (!lib) {
        fprintf(stderr, "%s is not loaded\n", FAKE_CUDA_PATH);
        return 1;
    }
    fake_encodes = dlsym(lib, "fake_encodes");
    fake_launches = dlsym(lib, "fake_launches");
    fake_params = dlsym(lib, "fake_params");
    fake_grid = dlsym(lib, "fake_grid");
    *(void **)&fake_set_param_sizes = dlsym(lib, "fake_set_param_sizes");
    if (!fake_encodes || !fake_launches || !fake_params || !fake_grid || !fake_set_param_sizes) {
        fprintf(stderr, "the fake driver lacks its recording symbols\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tma_abi),
        cmocka_unit_test(test_tma_cache),
        cmocka_unit_test(test_tma_refusals),
        cmocka_unit_test(test_tma_optional),
        cmocka_unit_test(test_plain_abi),
        cmocka_unit_test(test_load_best),
        cmocka_unit_test(test_requires_launch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
