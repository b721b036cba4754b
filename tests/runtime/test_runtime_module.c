/* test_runtime_module.c: libtilert without a GPU: cubin checks (synthetic ELF
 * images and a real cubin made in-process by nvJitLink), kernel lookup,
 * argument checks and grids, all before the driver is touched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "elf.h"
#include "meta.h"
#include "rt_util.h"
#include "tilert.h"

static uint8_t *test_meta(size_t *len)
{
    uint8_t *m = rt_test_meta("sm_90a", 0, false, len);
    assert_non_null(m);
    return m;
}

static void expect(tilert_status got, tilert_status want, const char *msg)
{
    if (got != want)
        fail_msg("got %s, want %s: %s", tilert_status_string(got), tilert_status_string(want), tilert_last_error());
    if (msg && !strstr(tilert_last_error(), msg)) fail_msg("message '%s' lacks '%s'", tilert_last_error(), msg);
}

/* ---- ELF checks ----------------------------------------------------------------- */

static tilert_status inspect(const uint8_t *img, size_t len)
{
    tilert_module *m = NULL;
    tilert_status s = tilert_module_inspect_data(img, len, &m);
    if (s == TILERT_OK) assert_non_null(m);
    else assert_null(m);
    tilert_module_unload(m);
    return s;
}

static void test_elf_synthetic_ok(void **state)
{
    (void)state;
    size_t mlen, len;
    uint8_t *meta = test_meta(&mlen);
    RtElfOpts o = rt_elf_opts(90);
    uint8_t *img = rt_make_elf(meta, mlen, &o, &len);
    tilert_elf_info ei;
    char err[300];
    assert_int_equal(tilert_elf_inspect(img, len, &ei, err, sizeof err), TILERT_OK);
    assert_int_equal(ei.sm, 90);
    assert_int_equal(ei.meta_len, mlen);
    assert_memory_equal(ei.meta, meta, mlen);
    tilert_module *m;
    expect(tilert_module_inspect_data(img, len, &m), TILERT_OK, NULL);
    assert_string_equal(tilert_module_arch(m), "sm_90a");
    assert_int_equal(tilert_module_kernel_count(m), 3);
    tilert_module_unload(m);

    /* ELF ABI 7 (CUDA 12 ptxas): the arch is the low byte of e_flags */
    o.abi_version = 7;
    o.flags = 0x5a055a;
    free(img);
    img = rt_make_elf(meta, mlen, &o, &len);
    assert_int_equal(tilert_elf_inspect(img, len, &ei, err, sizeof err), TILERT_OK);
    assert_int_equal(ei.sm, 90);
    assert_false(ei.arch_specific);
    o.flags |= 0x800; /* EF_CUDA_ACCELERATORS */
    free(img);
    img = rt_make_elf(meta, mlen, &o, &len);
    assert_int_equal(tilert_elf_inspect(img, len, &ei, err, sizeof err), TILERT_OK);
    assert_true(ei.arch_specific);
    expect(inspect(img, len), TILERT_OK, NULL);
    free(img);
    free(meta);
}

static void test_elf_truncated(void **state)
{
    (void)state;
    size_t mlen, len;
    uint8_t *meta = test_meta(&mlen);
    RtElfOpts o = rt_elf_opts(90);
    uint8_t *img = rt_make_elf(meta, mlen, &o, &len);
    for (size_t n = 0; n < len; n++) {
        tilert_status s = inspect(img, n);
        if (s != TILERT_ERROR_INVALID_IMAGE) fail_msg("%zu of %zu bytes: %s", n, len, tilert_status_string(s));
    }
    expect(inspect(img, len - 1), TILERT_ERROR_INVALID_IMAGE, "truncated: the section headers end at byte");
    expect(inspect(img, 40), TILERT_ERROR_INVALID_IMAGE, "shorter than an ELF64 header");
    expect(inspect(img, 0), TILERT_ERROR_INVALID_IMAGE, "empty image");
    free(img);
    free(meta);
}

static void test_elf_segments(void **state)
{
    (void)state;
    size_t mlen, len;
    uint8_t *meta = test_meta(&mlen);
    RtElfOpts o = rt_elf_opts(90);
    o.phdr_filesz = mlen;
    uint8_t *img = rt_make_elf(meta, mlen, &o, &len);
    expect(inspect(img, len), TILERT_OK, NULL);
    expect(inspect(img, len - 1), TILERT_ERROR_INVALID_IMAGE, "truncated: the program headers end at byte");
    free(img);
    o.phdr_filesz = 1u << 20;
    img = rt_make_elf(meta, mlen, &o, &len);
    expect(inspect(img, len), TILERT_ERROR_INVALID_IMAGE, "truncated: segment 0 ends at byte");
    free(img);
    free(meta);
}

static void test_elf_bad_headers(void **state)
{
    (void)state;
    size_t mlen, len;
    uint8_t *meta = test_meta(&mlen);
    RtElfOpts o = rt_elf_opts(90);
    uint8_t *img = rt_make_elf(meta, mlen, &o, &len);

    img[1] = 'X';
    expect(inspect(img, len), TILERT_ERROR_INVALID_IMAGE, "not an ELF file (bad magic 7f 58 4c 46");
    img[1] = 'E';
    img[4] = 1;
    expect(inspect(img, len), TILERT_ERROR_INVALID_IMAGE, "ELF class 1: a cubin is ELF64");
    img[4] = 2;
    img[5] = 2;
    expect(inspect(img, len), TILERT_ERROR_INVALID_IMAGE, "big-endian");
    img[5] = 1;
    img[18] = 62;
    img[19] = 0;
    expect(inspect(img, len), TILERT_ERROR_INVALID_IMAGE, "ELF machine 62 (x86-64), not NVIDIA CUDA (190)");
    img[18] = 190;
    expect(inspect(img, len), TILERT_OK, NULL);

    static const uint8_t fatbin[16] = {0x50, 0xed, 0x55, 0xba, 1, 0, 0x10, 0};
    expect(inspect(fatbin, sizeof fatbin), TILERT_ERROR_INVALID_IMAGE, "a fatbinary, not a cubin");
    static const char ptx[] = ".version 8.0\n.target sm_90a\n";
    expect(inspect((const uint8_t *)ptx, sizeof ptx), TILERT_ERROR_INVALID_IMAGE, "PTX text, not a cubin");
    free(img);
    free(meta);
}

static void test_elf_metadata_missing(void **state)
{
    (void)state;
    size_t mlen, len;
    uint8_t *meta = test_meta(&mlen);
    RtElfOpts o = rt_elf_opts(90);
    o.symbol = "__other_global";
    uint8_t *img = rt_make_elf(meta, mlen, &o, &len);
    expect(inspect(img, len), TILERT_ERROR_BAD_METADATA, "no __tilec_meta symbol");
    free(img);

    o = rt_elf_opts(90);
    o.nobits = true;
    img = rt_make_elf(meta, mlen, &o, &len);
    expect(inspect(img, len), TILERT_ERROR_BAD_METADATA, "has no contents");
    free(img);

    o = rt_elf_opts(90);
    o.sym_value = 8;
    img = rt_make_elf(meta, mlen, &o, &len);
    expect(inspect(img, len), TILERT_ERROR_BAD_METADATA, "lies outside its section");
    free(img);

    /* present but corrupt */
    meta[mlen - 1] ^= 0xFF;
    o = rt_elf_opts(90);
    img = rt_make_elf(meta, mlen, &o, &len);
    expect(inspect(img, len), TILERT_ERROR_BAD_METADATA, "checksum mismatch");
    free(img);
    free(meta);
}

static void test_elf_arch_disagrees(void **state)
{
    (void)state;
    size_t mlen, len;
    uint8_t *meta = test_meta(&mlen); /* says sm_90a */
    RtElfOpts o = rt_elf_opts(80);
    uint8_t *img = rt_make_elf(meta, mlen, &o, &len);
    expect(inspect(img, len), TILERT_ERROR_ARCH_MISMATCH, "metadata says sm_90a, but the cubin's code is for sm_80");
    free(img);
    free(meta);
}

static void test_check_arch(void **state)
{
    (void)state;
    struct {
        const char *arch;
        unsigned sm;
        int major, minor;
        tilert_status want;
    } cases[] = {
        {"sm_90a", 90, 9, 0, TILERT_OK},
        {"sm_90a", 90, 10, 0, TILERT_ERROR_ARCH_MISMATCH},
        {"sm_90", 90, 9, 0, TILERT_OK},
        {"sm_90", 90, 12, 0, TILERT_ERROR_ARCH_MISMATCH},
        {"sm_80", 80, 8, 6, TILERT_OK},
        {"sm_80", 80, 8, 9, TILERT_OK},
        {"sm_80", 80, 9, 0, TILERT_ERROR_ARCH_MISMATCH},
        {"sm_89", 89, 8, 6, TILERT_ERROR_ARCH_MISMATCH},
        {"sm_89", 89, 8, 9, TILERT_OK},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t mlen, len;
        uint8_t *meta = rt_test_meta(cases[i].arch, 0, false, &mlen);
        RtElfOpts o = rt_elf_opts(cases[i].sm);
        uint8_t *img = rt_make_elf(meta, mlen, &o, &len);
        tilert_module *m;
        expect(tilert_module_inspect_data(img, len, &m), TILERT_OK, NULL);
        tilert_status s = tilert_module_check_arch(m, cases[i].major, cases[i].minor);
        if (s != cases[i].want)
            fail_msg("%s on %d.%d: %s (%s)", cases[i].arch, cases[i].major, cases[i].minor, tilert_status_string(s),
                     tilert_last_error());
        if (s) assert_non_null(strstr(tilert_last_error(), "the cubin was built for"));
        tilert_module_unload(m);
        free(img);
        free(meta);
    }
}

static void test_real_cubin(void **state)
{
    (void)state;
    char log[4096];
    size_t len;
    uint8_t *c = rt_test_cubin("sm_90a", "sm_90a", 0, false, &len, log, sizeof log);
    if (!c) {
        /* nvJitLink is part of the toolkit CI has; say why when it is not there */
        print_message("SKIP: %s\n", log);
        skip();
    }
    tilert_elf_info ei;
    char err[300];
    assert_int_equal(tilert_elf_inspect(c, len, &ei, err, sizeof err), TILERT_OK);
    assert_int_equal(ei.sm, 90);
    tilert_module *m;
    expect(tilert_module_inspect_data(c, len, &m), TILERT_OK, NULL);
    assert_int_equal(tilert_module_kernel_count(m), 3);
    tilert_kernel *k;
    expect(tilert_kernel_get(m, "smem_big", &k), TILERT_OK, NULL);
    tilert_kernel_info ki;
    expect(tilert_kernel_get_info(k, &ki), TILERT_OK, NULL);
    assert_int_equal(ki.smem_dynamic, 100000);
    assert_string_equal(ki.arch, "sm_90a");
    tilert_module_unload(m);

    /* a real truncated cubin */
    for (size_t n = 0; n < len; n++) expect(inspect(c, n), TILERT_ERROR_INVALID_IMAGE, NULL);

    /* from a file too */
    char path[] = "/tmp/tilert_test_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, c, len), (ssize_t)len);
    close(fd);
    expect(tilert_module_inspect_file(path, &m), TILERT_OK, NULL);
    tilert_module_unload(m);
    unlink(path);
    expect(tilert_module_inspect_file(path, &m), TILERT_ERROR_IO, "cannot open");
    free(c);

    /* an sm_80 cubin whose metadata claims sm_90a */
    c = rt_test_cubin("sm_80", "sm_90a", 0, false, &len, log, sizeof log);
    assert_non_null(c);
    expect(inspect(c, len), TILERT_ERROR_ARCH_MISMATCH, "but the cubin's code is for sm_80");
    free(c);
}

/* ---- kernels and arguments --------------------------------------------------------- */

typedef struct Mod {
    uint8_t *img;
    tilert_module *m;
    tilert_kernel *vadd, *rowscale, *smem;
} Mod;

static int mod_setup(void **state)
{
    Mod *x = calloc(1, sizeof *x);
    size_t mlen, len;
    uint8_t *meta = rt_test_meta("sm_90a", 0, true, &mlen);
    RtElfOpts o = rt_elf_opts(90);
    x->img = rt_make_elf(meta, mlen, &o, &len);
    free(meta);
    if (tilert_module_inspect_data(x->img, len, &x->m) || tilert_kernel_get(x->m, "vadd", &x->vadd) ||
        tilert_kernel_get(x->m, "rowscale", &x->rowscale) || tilert_kernel_get(x->m, "smem_big", &x->smem))
        return -1;
    *state = x;
    return 0;
}

static int mod_teardown(void **state)
{
    Mod *x = *state;
    tilert_module_unload(x->m);
    free(x->img);
    free(x);
    return 0;
}

static void test_kernel_lookup(void **state)
{
    Mod *x = *state;
    tilert_kernel *k = NULL;
    expect(tilert_kernel_get(x->m, "nope", &k), TILERT_ERROR_NOT_FOUND,
           "no kernel 'nope' in the module; it has: vadd, rowscale, smem_big, ghost");
    assert_null(k);
    assert_ptr_equal(tilert_module_kernel_at(x->m, 1), x->rowscale);
    assert_null(tilert_module_kernel_at(x->m, 4));
    tilert_kernel_info ki;
    expect(tilert_kernel_get_info(x->vadd, &ki), TILERT_OK, NULL);
    assert_string_equal(ki.symbol, "vadd");
    assert_int_equal(ki.nparams, 4);
    assert_int_equal(ki.warps, 8);
    assert_int_equal(ki.grid_rank, 1);
    tilert_param_info pi;
    expect(tilert_kernel_param(x->rowscale, 1, &pi), TILERT_OK, NULL);
    assert_string_equal(pi.name, "B");
    assert_int_equal(pi.kind, TILERT_PARAM_TENSOR);
    assert_int_equal(pi.dtype, TILERT_F32);
    assert_int_equal(pi.rank, 2);
    expect(tilert_kernel_param(x->rowscale, 3, &pi), TILERT_ERROR_INVALID_VALUE, "out of range");
    const char *n, *v;
    expect(tilert_kernel_spec(x->vadd, 0, &n, &v), TILERT_OK, NULL);
    assert_string_equal(n, "BLOCK");
    assert_string_equal(v, "256");
    expect(tilert_kernel_get(NULL, "vadd", &k), TILERT_ERROR_INVALID_VALUE, NULL);
}

#define DX ((void *)0x7f0000001000)

static void test_args_ok_and_grid(void **state)
{
    Mod *x = *state;
    uint32_t g[3];
    tilert_arg a[4] = {tilert_arg_ptr(DX, TILERT_F32), tilert_arg_ptr(DX, TILERT_F32), tilert_arg_ptr(DX, TILERT_F32),
                       tilert_arg_i32(1000)};
    expect(tilert_kernel_check(x->vadd, a, 4, g), TILERT_OK, NULL);
    assert_int_equal(g[0], 4);
    assert_int_equal(g[1], 1);
    assert_int_equal(g[2], 1);
    a[3] = tilert_arg_i64(100000); /* an i64 that fits i32 is fine */
    expect(tilert_kernel_check(x->vadd, a, 4, g), TILERT_OK, NULL);
    assert_int_equal(g[0], 391);
    a[3] = tilert_arg_u32(0);
    expect(tilert_kernel_check(x->vadd, a, 4, g), TILERT_OK, NULL);
    assert_int_equal(g[0], 0); /* an empty launch */

    tilert_tensor t = tilert_tensor2d(DX, TILERT_F32, 37, 50);
    tilert_arg r[3] = {tilert_arg_tensor(t), tilert_arg_tensor(t), tilert_arg_f64(0.5)};
    expect(tilert_kernel_check(x->rowscale, r, 3, g), TILERT_OK, NULL);
    assert_int_equal(g[0], 37);
    tilert_arg s[2] = {tilert_arg_ptr(DX, TILERT_F32), tilert_arg_i32(129)};
    expect(tilert_kernel_check(x->smem, s, 2, g), TILERT_OK, NULL);
    assert_int_equal(g[0], 2);
}

static void test_args_rejected(void **state)
{
    Mod *x = *state;
    uint32_t g[3];
    tilert_arg a[4] = {tilert_arg_ptr(DX, TILERT_F32), tilert_arg_ptr(DX, TILERT_F32), tilert_arg_ptr(DX, TILERT_F32),
                       tilert_arg_i32(1000)};
    expect(tilert_kernel_check(x->vadd, a, 3, g), TILERT_ERROR_ARG_COUNT,
           "kernel 'vadd' takes 4 arguments (x: ptr<f32>, y: ptr<f32>, out: ptr<f32>, n: i32), got 3");
    a[1] = tilert_arg_ptr(DX, TILERT_F16);
    expect(tilert_kernel_check(x->vadd, a, 4, g), TILERT_ERROR_ARG_TYPE,
           "argument 1 ('y'): expected ptr<f32>, got a ptr<f16>");
    a[1] = tilert_arg_ptr((char *)DX + 2, TILERT_F32);
    expect(tilert_kernel_check(x->vadd, a, 4, g), TILERT_ERROR_ARG_ALIGN,
           "argument 1 ('y'): pointer 0x7f0000001002 is not aligned to its element size (4 bytes)");
    a[1] = tilert_arg_ptr(DX, TILERT_F32);
    a[3] = tilert_arg_i64((int64_t)1 << 40);
    expect(tilert_kernel_check(x->vadd, a, 4, g), TILERT_ERROR_ARG_VALUE, "1099511627776 does not fit i32");
    a[3] = tilert_arg_f32(3);
    expect(tilert_kernel_check(x->vadd, a, 4, g), TILERT_ERROR_ARG_TYPE, "expected i32, got a float f32");
    a[3] = tilert_arg_bits(TILERT_I16, 3);
    expect(tilert_kernel_check(x->vadd, a, 4, g), TILERT_ERROR_ARG_TYPE, "expected i32, got the bits of a i16");
    a[3] = tilert_arg_bits(TILERT_I32, (uint64_t)1 << 33);
    expect(tilert_kernel_check(x->vadd, a, 4, g), TILERT_ERROR_ARG_VALUE, "wider than i32");
    a[3] = tilert_arg_tensor(tilert_tensor1d(DX, TILERT_I32, 4));
    expect(tilert_kernel_check(x->vadd, a, 4, g), TILERT_ERROR_ARG_TYPE, "expected i32, got a tensor<i32, 1>");
    a[3] = tilert_arg_i32(INT32_MAX); /* (n + 255) wraps in i32: a negative grid */
    expect(tilert_kernel_check(x->vadd, a, 4, g), TILERT_ERROR_GRID, "grid x = -8388607 is outside [0, 2147483647]");

    tilert_tensor t = tilert_tensor2d(DX, TILERT_F32, 37, 50);
    tilert_arg r[3] = {tilert_arg_tensor(t), tilert_arg_tensor(tilert_tensor2d(DX, TILERT_BF16, 37, 50)),
                       tilert_arg_f32(2)};
    expect(tilert_kernel_check(x->rowscale, r, 3, g), TILERT_ERROR_ARG_TYPE,
           "kernel 'rowscale', argument 1 ('B'): expected tensor<f32, 2>, got a tensor<bf16, 2>");
    r[1] = tilert_arg_tensor(tilert_tensor1d(DX, TILERT_F32, 37));
    expect(tilert_kernel_check(x->rowscale, r, 3, g), TILERT_ERROR_ARG_TYPE, "got a tensor<f32, 1>");
    r[1] = tilert_arg_tensor(tilert_tensor2d((char *)DX + 8, TILERT_F32, 37, 50));
    expect(tilert_kernel_check(x->rowscale, r, 3, g), TILERT_ERROR_ARG_ALIGN, "is not 16-byte aligned");
    r[1] = tilert_arg_tensor(tilert_tensor2d(DX, TILERT_F32, 37, -1));
    expect(tilert_kernel_check(x->rowscale, r, 3, g), TILERT_ERROR_ARG_VALUE, "shape[1] = -1 is negative");
    r[1] = tilert_arg_ptr(DX, TILERT_F32);
    expect(tilert_kernel_check(x->rowscale, r, 3, g), TILERT_ERROR_ARG_TYPE, "expected tensor<f32, 2>, got a ptr<f32>");
    r[1] = tilert_arg_tensor(t);
    r[2] = tilert_arg_i32(2);
    expect(tilert_kernel_check(x->rowscale, r, 3, g), TILERT_ERROR_ARG_TYPE, "expected f32, got an integer i32");
    r[2] = tilert_arg_bits(TILERT_F32, 0x40000000);
    expect(tilert_kernel_check(x->rowscale, r, 3, g), TILERT_OK, NULL);
    expect(tilert_kernel_check(x->rowscale, NULL, 3, g), TILERT_ERROR_INVALID_VALUE, "args is NULL");

    tilert_kernel *ghost;
    expect(tilert_kernel_get(x->m, "ghost", &ghost), TILERT_OK, NULL);
    expect(tilert_kernel_check(ghost, NULL, 0, g), TILERT_ERROR_NO_GRID, "launch it with tilert_launch_grid");
    expect(tilert_kernel_check(ghost, NULL, 0, NULL), TILERT_OK, NULL);
}

/* Scalars: integers must fit, floats convert to f16/bf16/f32/f64, fp8 and exact types by bits. */
static void test_scalar_params(void **state)
{
    (void)state;
    static const tilert_meta_param ps[] = {
        {"flag", TILERT_PARAM_SCALAR, TILERT_I1, 0, 0, NULL, 0},    {"small", TILERT_PARAM_SCALAR, TILERT_U8, 0, 0, NULL, 0},
        {"s", TILERT_PARAM_SCALAR, TILERT_I16, 0, 0, NULL, 0},      {"h", TILERT_PARAM_SCALAR, TILERT_F16, 0, 0, NULL, 0},
        {"b", TILERT_PARAM_SCALAR, TILERT_BF16, 0, 0, NULL, 0},     {"e", TILERT_PARAM_SCALAR, TILERT_F8E4M3, 0, 0, NULL, 0},
        {"d", TILERT_PARAM_SCALAR, TILERT_F64, 0, 0, NULL, 0},      {"big", TILERT_PARAM_SCALAR, TILERT_U64, 0, 0, NULL, 0},
    };
    tilert_meta_kernel k = {"scalars", "scalars", 90, 1, 0, 1, 0, 0, 8, 0, 0, ps, NULL, NULL, 0, NULL};
    uint8_t *meta;
    size_t mlen, len;
    char err[200];
    assert_true(tilert_meta_write(&k, 1, &meta, &mlen, err, sizeof err));
    RtElfOpts o = rt_elf_opts(90);
    uint8_t *img = rt_make_elf(meta, mlen, &o, &len);
    tilert_module *m;
    tilert_kernel *kk;
    expect(tilert_module_inspect_data(img, len, &m), TILERT_OK, NULL);
    expect(tilert_kernel_get(m, "scalars", &kk), TILERT_OK, NULL);
    tilert_arg a[8] = {tilert_arg_bool(1),      tilert_arg_i32(255),
                       tilert_arg_i32(-32768),  tilert_arg_f32(1.5f),
                       tilert_arg_f64(-2.0),    tilert_arg_bits(TILERT_F8E4M3, 0x38),
                       tilert_arg_f32(0.25f),   tilert_arg_u64(UINT64_MAX)};
    expect(tilert_kernel_check(kk, a, 8, NULL), TILERT_OK, NULL);
    struct {
        int i;
        tilert_arg v;
        tilert_status want;
        const char *msg;
    } cases[] = {
        {0, tilert_arg_i32(2), TILERT_ERROR_ARG_VALUE, "argument 0 ('flag'): 2 does not fit i1"},
        {0, tilert_arg_i32(0), TILERT_OK, NULL},
        {1, tilert_arg_i32(256), TILERT_ERROR_ARG_VALUE, "256 does not fit u8"},
        {1, tilert_arg_i64(-1), TILERT_ERROR_ARG_VALUE, "-1 does not fit u8"},
        {1, tilert_arg_u64(UINT64_MAX), TILERT_ERROR_ARG_VALUE, "18446744073709551615 does not fit u8"},
        {2, tilert_arg_i32(32768), TILERT_ERROR_ARG_VALUE, "32768 does not fit i16"},
        {2, tilert_arg_u32(32767), TILERT_OK, NULL},
        {3, tilert_arg_i32(1), TILERT_ERROR_ARG_TYPE, "expected f16, got an integer i32"},
        {3, tilert_arg_bits(TILERT_F16, 0x3C00), TILERT_OK, NULL},
        {4, tilert_arg_bits(TILERT_F16, 0x3C00), TILERT_ERROR_ARG_TYPE, "expected bf16, got the bits of a f16"},
        {5, tilert_arg_f32(1.0f), TILERT_ERROR_ARG_TYPE, "pass fp8 scalars with tilert_arg_bits"},
        {5, tilert_arg_bits(TILERT_F8E4M3, 0x100), TILERT_ERROR_ARG_VALUE, "wider than f8e4m3"},
        {6, tilert_arg_bits(TILERT_F64, 0x3FF0000000000000ull), TILERT_OK, NULL},
        {7, tilert_arg_i64(-1), TILERT_ERROR_ARG_VALUE, "-1 does not fit u64"},
        {7, tilert_arg_i32(5), TILERT_OK, NULL},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tilert_arg b[8];
        memcpy(b, a, sizeof b);
        b[cases[c].i] = cases[c].v;
        expect(tilert_kernel_check(kk, b, 8, NULL), cases[c].want, cases[c].msg);
    }
    tilert_module_unload(m);
    free(img);
    free(meta);
}

/* An inspected module checks arguments, then refuses to launch. */
static void test_inspect_only_launch(void **state)
{
    Mod *x = *state;
    tilert_arg a[4] = {tilert_arg_ptr(DX, TILERT_F32), tilert_arg_ptr(DX, TILERT_F32), tilert_arg_ptr(DX, TILERT_F32),
                       tilert_arg_i32(1000)};
    expect(tilert_launch(x->vadd, NULL, a, 2), TILERT_ERROR_ARG_COUNT, NULL);
    expect(tilert_launch(x->vadd, NULL, a, 4), TILERT_ERROR_INSPECT_ONLY, "opened for inspection only");
    const uint32_t grid[3] = {1, 1, 70000};
    expect(tilert_launch_grid(x->vadd, NULL, grid, a, 4), TILERT_ERROR_GRID, "grid z = 70000 is above 65535");
}

static void test_helpers(void **state)
{
    (void)state;
    int64_t shape[3] = {2, 3, 4};
    tilert_tensor t = tilert_tensor_nd(DX, TILERT_BF16, 3, shape, NULL);
    assert_int_equal(t.stride[0], 12);
    assert_int_equal(t.stride[1], 4);
    assert_int_equal(t.stride[2], 1);
    t = tilert_tensor2d(DX, TILERT_F32, 5, 7);
    assert_int_equal(t.stride[0], 7);
    assert_int_equal(tilert_dtype_size(TILERT_BF16), 2);
    assert_int_equal(tilert_dtype_size(TILERT_I1), 1);
    assert_int_equal(tilert_dtype_size(TILERT_DTYPE_INVALID), 0);
    assert_string_equal(tilert_dtype_name(TILERT_F8E4M3), "f8e4m3");
    assert_string_equal(tilert_status_string(TILERT_ERROR_NO_DRIVER), "TILERT_ERROR_NO_DRIVER");
    for (int s = 0; s < TILERT_STATUS_COUNT; s++)
        assert_non_null(strstr(tilert_status_string((tilert_status)s), "TILERT_"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_elf_synthetic_ok),
        cmocka_unit_test(test_elf_truncated),
        cmocka_unit_test(test_elf_segments),
        cmocka_unit_test(test_elf_bad_headers),
        cmocka_unit_test(test_elf_metadata_missing),
        cmocka_unit_test(test_elf_arch_disagrees),
        cmocka_unit_test(test_check_arch),
        cmocka_unit_test(test_real_cubin),
        cmocka_unit_test_setup_teardown(test_kernel_lookup, mod_setup, mod_teardown),
        cmocka_unit_test_setup_teardown(test_args_ok_and_grid, mod_setup, mod_teardown),
        cmocka_unit_test_setup_teardown(test_args_rejected, mod_setup, mod_teardown),
        cmocka_unit_test_setup_teardown(test_inspect_only_launch, mod_setup, mod_teardown),
        cmocka_unit_test(test_scalar_params),
        cmocka_unit_test(test_helpers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
