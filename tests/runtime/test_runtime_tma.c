/* test_runtime_tma.c: TMA descriptors without a GPU: cuTensorMapEncodeTiled's
 * arguments computed from a descriptor and a tensor (runtime/tma.c), every rule
 * of the driver checked with a message naming the rule and the values, and the
 * same checks through a module's kernel (naming the kernel and the argument),
 * on a synthetic cubin and on a real one made by nvJitLink. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "meta.h"
#include "rt_util.h"
#include "tilert.h"
#include "tma.h"

static tilert_meta_tma desc2(tilert_dtype dt, uint16_t box0, uint16_t box1, uint8_t swizzle)
{
    tilert_meta_tma d;
    memset(&d, 0, sizeof d);
    d.dtype = (uint8_t)dt;
    d.rank = 2;
    d.swizzle = swizzle;
    d.box[0] = box0;
    d.box[1] = box1;
    d.elem_stride[0] = d.elem_stride[1] = 1;
    return d;
}

static tilert_meta_param tparam(const char *name, tilert_dtype dt, uint8_t rank)
{
    tilert_meta_param p = {name, TILERT_PARAM_TENSOR, (uint8_t)dt, rank, 0, NULL, 0};
    return p;
}

/* prepare must fail with `want` and a message holding `phrase` */
static void prepare_fails(const tilert_meta_param *p, const tilert_meta_tma *d, const tilert_tensor *t,
                          tilert_status want, const char *phrase)
{
    tilert_tma_encode e;
    char err[400] = "";
    tilert_status s = tilert_tma_prepare(p, d, t, &e, err, sizeof err);
    if (s != want) fail_msg("got %s (%s), want %s", tilert_status_string(s), err, tilert_status_string(want));
    if (!strstr(err, phrase)) fail_msg("message '%s' lacks '%s'", err, phrase);
}

/* ---- the pure computation --------------------------------------------------------- */

static void test_prepare_row_major(void **state)
{
    (void)state;
    /* f32 [100, 75] with rows padded to 80 elements (320 bytes) */
    tilert_meta_param p = tparam("A", TILERT_F32, 2);
    tilert_meta_tma d = desc2(TILERT_F32, 32, 16, TILERT_TMA_SWIZZLE_128B);
    d.l2_promotion = TILERT_TMA_L2_256B;
    d.oob_fill = TILERT_TMA_OOB_NAN;
    d.elem_stride[1] = 2;
    int64_t shape[2] = {100, 75}, stride[2] = {80, 1};
    tilert_tensor t = tilert_tensor_nd((void *)0x7f0000001000, TILERT_F32, 2, shape, stride);
    tilert_tma_encode e;
    char err[400] = "";
    assert_int_equal(tilert_tma_prepare(&p, &d, &t, &e, err, sizeof err), TILERT_OK);
    assert_int_equal(e.data_type, TILERT_CU_TMA_FLOAT32);
    assert_int_equal(e.rank, 2);
    assert_true(e.address == 0x7f0000001000ull);
    assert_int_equal(e.dims[0], 75);   /* innermost first */
    assert_int_equal(e.dims[1], 100);
    assert_int_equal(e.dims[2], 0);
    assert_int_equal(e.strides[0], 320); /* bytes, of dims[1] */
    assert_int_equal(e.strides[1], 0);
    assert_int_equal(e.box[0], 32);
    assert_int_equal(e.box[1], 16);
    assert_int_equal(e.elem_strides[0], 1);
    assert_int_equal(e.elem_strides[1], 2);
    assert_int_equal(e.interleave, 0);
    assert_int_equal(e.swizzle, TILERT_TMA_SWIZZLE_128B);
    assert_int_equal(e.l2_promotion, TILERT_TMA_L2_256B);
    assert_int_equal(e.oob_fill, TILERT_TMA_OOB_NAN);
    char buf[400];
    tilert_tma_format(&e, buf, sizeof buf);
    assert_non_null(strstr(buf, "globalDim {75, 100} globalStrides {320} boxDim {32, 16} elementStrides {1, 2}"));
    assert_non_null(strstr(buf, "address 0x7f0000001000"));
    /* every byte set: two preparations of the same thing compare equal (the launcher's cache key) */
    tilert_tma_encode e2;
    memset(&e2, 0xAB, sizeof e2);
    assert_int_equal(tilert_tma_prepare(&p, &d, &t, &e2, err, sizeof err), TILERT_OK);
    assert_memory_equal(&e, &e2, sizeof e);
}

static void test_prepare_rank4(void **state)
{
    (void)state;
    /* bf16 [2, 3, 5, 64] contiguous: strides 128, 640, 1920 bytes from the inside out */
    tilert_meta_param p = tparam("X", TILERT_BF16, 4);
    tilert_meta_tma d;
    memset(&d, 0, sizeof d);
    d.dtype = TILERT_U16; /* moved as 16-bit integers: same size, allowed */
    d.rank = 4;
    uint16_t box[4] = {64, 5, 1, 2};
    for (int i = 0; i < 4; i++) d.box[i] = box[i], d.elem_stride[i] = 1;
    int64_t shape[4] = {2, 3, 5, 64};
    tilert_tensor t = tilert_tensor_nd((void *)0x10000, TILERT_BF16, 4, shape, NULL);
    tilert_tma_encode e;
    char err[400] = "";
    assert_int_equal(tilert_tma_prepare(&p, &d, &t, &e, err, sizeof err), TILERT_OK);
    assert_int_equal(e.data_type, TILERT_CU_TMA_UINT16);
    uint64_t dims[4] = {64, 5, 3, 2}, strides[3] = {128, 640, 1920};
    assert_memory_equal(e.dims, dims, sizeof dims);
    assert_memory_equal(e.strides, strides, sizeof strides);
    assert_int_equal(e.box[2], 1);
}

/* A dimension of extent 1 never applies its stride: an unusable one is replaced, a usable one kept. */
static void test_prepare_extent_one(void **state)
{
    (void)state;
    tilert_meta_param p = tparam("v", TILERT_F16, 2);
    tilert_meta_tma d = desc2(TILERT_F16, 64, 1, 0);
    tilert_tma_encode e;
    char err[400] = "";
    int64_t shape[2] = {1, 100}, stride[2] = {3, 1}; /* 6 bytes: unusable, but never used */
    tilert_tensor t = tilert_tensor_nd((void *)0x2000, TILERT_F16, 2, shape, stride);
    assert_int_equal(tilert_tma_prepare(&p, &d, &t, &e, err, sizeof err), TILERT_OK);
    assert_int_equal(e.strides[0], 208); /* 100 * 2 bytes rounded up to 16 */
    stride[0] = 1024;
    t = tilert_tensor_nd((void *)0x2000, TILERT_F16, 2, shape, stride);
    assert_int_equal(tilert_tma_prepare(&p, &d, &t, &e, err, sizeof err), TILERT_OK);
    assert_int_equal(e.strides[0], 2048);
    /* an innermost dimension of extent 1 may have any stride; the outer one must still obey */
    int64_t shape2[2] = {40, 1}, stride2[2] = {8, 5};
    t = tilert_tensor_nd((void *)0x2000, TILERT_F16, 2, shape2, stride2);
    assert_int_equal(tilert_tma_prepare(&p, &d, &t, &e, err, sizeof err), TILERT_OK);
    assert_int_equal(e.strides[0], 16);
    stride2[0] = 4;
    t = tilert_tensor_nd((void *)0x2000, TILERT_F16, 2, shape2, stride2);
    prepare_fails(&p, &d, &t, TILERT_ERROR_ARG_VALUE, "stride[0] = 4 elements = 8 bytes is not a multiple of 16");
}

/* Every rule that depends on the argument. */
static void test_prepare_argument_rules(void **state)
{
    (void)state;
    tilert_meta_param p = tparam("B", TILERT_BF16, 2);
    tilert_meta_tma d = desc2(TILERT_BF16, 64, 64, TILERT_TMA_SWIZZLE_128B);
    int64_t shape[2] = {64, 100}, stride[2] = {128, 1};
    tilert_tensor t = tilert_tensor_nd((void *)0x100008, TILERT_BF16, 2, shape, stride);
    prepare_fails(&p, &d, &t, TILERT_ERROR_ARG_ALIGN, "TMA needs the base address 16-byte aligned, got 0x100008");

    stride[0] = 100;
    t = tilert_tensor_nd((void *)0x100000, TILERT_BF16, 2, shape, stride);
    prepare_fails(&p, &d, &t, TILERT_ERROR_ARG_VALUE, "stride[0] = 100 elements = 200 bytes is not a multiple of 16");

    stride[0] = -128;
    t = tilert_tensor_nd((void *)0x100000, TILERT_BF16, 2, shape, stride);
    prepare_fails(&p, &d, &t, TILERT_ERROR_ARG_VALUE, "stride[0] = -128 elements is negative");

    stride[0] = INT64_C(1) << 39; /* 2^40 bytes */
    t = tilert_tensor_nd((void *)0x100000, TILERT_BF16, 2, shape, stride);
    prepare_fails(&p, &d, &t, TILERT_ERROR_ARG_VALUE, "not below TMA's limit of 2^40 bytes");
    stride[0] = (INT64_C(1) << 39) - 8; /* the largest multiple of 16 bytes below 2^40 */
    t = tilert_tensor_nd((void *)0x100000, TILERT_BF16, 2, shape, stride);
    tilert_tma_encode e;
    char err[400];
    assert_int_equal(tilert_tma_prepare(&p, &d, &t, &e, err, sizeof err), TILERT_OK);
    assert_true(e.strides[0] == (UINT64_C(1) << 40) - 16);
    stride[0] = INT64_MAX / 2; /* the byte count would overflow */
    t = tilert_tensor_nd((void *)0x100000, TILERT_BF16, 2, shape, stride);
    prepare_fails(&p, &d, &t, TILERT_ERROR_ARG_VALUE, "2^40");

    /* a transposed view: the innermost dimension is not contiguous */
    int64_t tstride[2] = {1, 64};
    t = tilert_tensor_nd((void *)0x100000, TILERT_BF16, 2, shape, tstride);
    prepare_fails(&p, &d, &t, TILERT_ERROR_ARG_VALUE,
                  "TMA needs the innermost dimension contiguous: stride[1] = 64 elements, must be 1");

    int64_t zero[2] = {0, 100};
    t = tilert_tensor_nd((void *)0x100000, TILERT_BF16, 2, zero, NULL);
    prepare_fails(&p, &d, &t, TILERT_ERROR_ARG_VALUE, "shape[0] = 0: TMA cannot describe an empty dimension");

    int64_t big[2] = {2, (INT64_C(1) << 32) + 8};
    t = tilert_tensor_nd((void *)0x100000, TILERT_BF16, 2, big, NULL);
    prepare_fails(&p, &d, &t, TILERT_ERROR_ARG_VALUE, "shape[1] = 4294967304 is above TMA's limit of 2^32");
    int64_t edge[2] = {2, INT64_C(1) << 32}; /* exactly 2^32 is allowed */
    t = tilert_tensor_nd((void *)0x100000, TILERT_BF16, 2, edge, NULL);
    assert_int_equal(tilert_tma_prepare(&p, &d, &t, &e, err, sizeof err), TILERT_OK);

    /* a tensor of another rank or element size than the descriptor's */
    t = tilert_tensor1d((void *)0x100000, TILERT_BF16, 64);
    prepare_fails(&p, &d, &t, TILERT_ERROR_ARG_TYPE, "does not fit the descriptor");
}

/* Every rule that depends on the descriptor alone (the metadata checks: tilert_meta_check_tma). */
static void test_descriptor_rules(void **state)
{
    (void)state;
    tilert_meta_param p = tparam("W", TILERT_F32, 2);
    int64_t shape[2] = {256, 256};
    tilert_tensor t = tilert_tensor_nd((void *)0x100000, TILERT_F32, 2, shape, NULL);
    struct {
        tilert_meta_tma d;
        const char *phrase;
    } bad[14];
    int n = 0;
    bad[n].d = desc2(TILERT_F32, 32, 257, 0), bad[n++].phrase = "box extent 257 along tensor dim 0 is outside 1..256";
    bad[n].d = desc2(TILERT_F32, 32, 0, 0), bad[n++].phrase = "box extent 0 along tensor dim 0";
    bad[n].d = desc2(TILERT_F32, 10, 8, 0),
    bad[n++].phrase = "innermost extent (tensor dim 1) is 10 x f32 = 40 bytes, not a multiple of 16";
    bad[n].d = desc2(TILERT_F32, 32, 8, TILERT_TMA_SWIZZLE_64B),
    bad[n++].phrase = "128 bytes, more than the 64-byte span of swizzle 64B";
    bad[n].d = desc2(TILERT_F32, 16, 8, TILERT_TMA_SWIZZLE_32B),
    bad[n++].phrase = "64 bytes, more than the 32-byte span of swizzle 32B";
    bad[n].d = desc2(TILERT_F32, 64, 8, TILERT_TMA_SWIZZLE_128B), bad[n++].phrase = "256 bytes, more than the 128-byte";
    bad[n].d = desc2(TILERT_F32, 32, 8, 4), bad[n++].phrase = "swizzle 4";
    bad[n].d = desc2(TILERT_F32, 32, 8, 0), bad[n].d.elem_stride[1] = 9,
    bad[n++].phrase = "element stride 9 along tensor dim 0 is outside 1..8";
    bad[n].d = desc2(TILERT_F32, 32, 8, 0), bad[n].d.elem_stride[0] = 2, bad[n++].phrase = "innermost dim 1";
    bad[n].d = desc2(TILERT_F32, 32, 8, 0), bad[n].d.interleave = 1, bad[n++].phrase = "interleave 1";
    bad[n].d = desc2(TILERT_F32, 32, 8, 0), bad[n].d.rank = 3, bad[n++].phrase = "TMA rank 3, but the tensor has rank 2";
    bad[n].d = desc2(TILERT_F16, 32, 8, 0), bad[n++].phrase = "TMA dtype f16 (code 12) does not have the size of the tensor's f32";
    bad[n].d = desc2(TILERT_I32, 32, 8, 0), bad[n].d.oob_fill = TILERT_TMA_OOB_NAN,
    bad[n++].phrase = "NaN out-of-bounds fill needs a float dtype";
    bad[n].d = desc2(TILERT_F32, 32, 8, 0), bad[n].d.l2_promotion = 4, bad[n++].phrase = "L2 promotion 4";
    for (int i = 0; i < n; i++) {
        char err[400] = "";
        assert_false(tilert_meta_check_tma(&bad[i].d, &p, err, sizeof err));
        if (!strstr(err, bad[i].phrase)) fail_msg("case %d: '%s' lacks '%s'", i, err, bad[i].phrase);
        prepare_fails(&p, &bad[i].d, &t, TILERT_ERROR_BAD_METADATA, bad[i].phrase);
    }
    /* the limits themselves are fine */
    tilert_meta_tma ok[] = {desc2(TILERT_F32, 256, 256, 0), desc2(TILERT_F32, 4, 1, 0),
                            desc2(TILERT_F32, 8, 1, TILERT_TMA_SWIZZLE_32B), desc2(TILERT_F32, 16, 3, TILERT_TMA_SWIZZLE_64B),
                            desc2(TILERT_F32, 32, 8, TILERT_TMA_SWIZZLE_128B), desc2(TILERT_U32, 32, 8, 0)};
    ok[1].elem_stride[1] = 8;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char err[400] = "";
        if (!tilert_meta_check_tma(&ok[i], &p, err, sizeof err)) fail_msg("ok case %zu: %s", i, err);
    }
    /* NaN fill for every float type, fp8 excluded (TMA moves fp8 as bytes) */
    tilert_meta_param hp = tparam("h", TILERT_BF16, 2), ep = tparam("e", TILERT_F8E4M3, 2);
    tilert_meta_tma hd = desc2(TILERT_BF16, 64, 8, 0), ed = desc2(TILERT_F8E4M3, 64, 8, 0);
    hd.oob_fill = ed.oob_fill = TILERT_TMA_OOB_NAN;
    char err[400] = "";
    assert_true(tilert_meta_check_tma(&hd, &hp, err, sizeof err));
    assert_false(tilert_meta_check_tma(&ed, &ep, err, sizeof err));
    assert_non_null(strstr(err, "not f8e4m3"));
    /* only tensors take descriptors */
    tilert_meta_param sp = {"n", TILERT_PARAM_SCALAR, TILERT_I32, 0, 0, NULL, 0};
    assert_false(tilert_meta_check_tma(&ok[0], &sp, err, sizeof err));
    assert_non_null(strstr(err, "parameter 'n' is not a tensor"));
    char desc[120];
    tilert_meta_describe_tma(&hd, desc, sizeof desc);
    assert_string_equal(desc, "box [8, 64] of bf16, swizzle none");
}

static void test_data_types(void **state)
{
    (void)state;
    static const struct {
        tilert_dtype dt;
        uint32_t cu;
    } map[] = {
        {TILERT_I1, TILERT_CU_TMA_UINT8},       {TILERT_I8, TILERT_CU_TMA_UINT8},
        {TILERT_U8, TILERT_CU_TMA_UINT8},       {TILERT_F8E4M3, TILERT_CU_TMA_UINT8},
        {TILERT_F8E5M2, TILERT_CU_TMA_UINT8},   {TILERT_I16, TILERT_CU_TMA_UINT16},
        {TILERT_U16, TILERT_CU_TMA_UINT16},     {TILERT_I32, TILERT_CU_TMA_INT32},
        {TILERT_U32, TILERT_CU_TMA_UINT32},     {TILERT_I64, TILERT_CU_TMA_INT64},
        {TILERT_U64, TILERT_CU_TMA_UINT64},     {TILERT_F16, TILERT_CU_TMA_FLOAT16},
        {TILERT_BF16, TILERT_CU_TMA_BFLOAT16},  {TILERT_F32, TILERT_CU_TMA_FLOAT32},
        {TILERT_F64, TILERT_CU_TMA_FLOAT64},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (tilert_tma_data_type(map[i].dt) != map[i].cu)
            fail_msg("%s: %u, want %u", tilert_dtype_name(map[i].dt), tilert_tma_data_type(map[i].dt), map[i].cu);
    assert_int_equal(TILERT_DTYPE_COUNT, 16); /* a new dtype needs a line here */
}

/* ---- through a module ------------------------------------------------------------------- */

static void expect(tilert_status got, tilert_status want, const char *msg)
{
    if (got != want)
        fail_msg("got %s, want %s: %s", tilert_status_string(got), tilert_status_string(want), tilert_last_error());
    if (msg && !strstr(tilert_last_error(), msg)) fail_msg("message '%s' lacks '%s'", tilert_last_error(), msg);
}

static void check_tma_module(tilert_module *m)
{
    tilert_kernel *k;
    expect(tilert_kernel_get(m, "tma_tile", &k), TILERT_OK, NULL);
    tilert_param_info pi;
    expect(tilert_kernel_param(k, 0, &pi), TILERT_OK, NULL);
    assert_int_equal(pi.ntma, RT_TMA_NDESC);
    assert_int_equal(pi.tma_optional, 0);
    expect(tilert_kernel_param(k, 1, &pi), TILERT_OK, NULL);
    assert_int_equal(pi.ntma, 0);
    tilert_tma_info ti;
    expect(tilert_kernel_param_tma(k, 0, 1, &ti), TILERT_OK, NULL);
    assert_int_equal(ti.dtype, TILERT_F32);
    assert_int_equal(ti.rank, 2);
    assert_int_equal(ti.box[0], 8); /* the tensor's order: rows, then columns */
    assert_int_equal(ti.box[1], 32);
    assert_int_equal(ti.swizzle_bytes, 128);
    assert_int_equal(ti.oob_nan, 0);
    expect(tilert_kernel_param_tma(k, 0, 2, &ti), TILERT_OK, NULL);
    assert_int_equal(ti.elem_stride[0], 2);
    assert_int_equal(ti.elem_stride[1], 1);
    expect(tilert_kernel_param_tma(k, 0, 3, &ti), TILERT_OK, NULL);
    assert_int_equal(ti.oob_nan, 1);
    assert_int_equal(ti.l2_promotion_bytes, 128);
    expect(tilert_kernel_param_tma(k, 0, 4, &ti), TILERT_ERROR_INVALID_VALUE, "descriptor 4 out of range");
    expect(tilert_kernel_param_tma(k, 1, 0, &ti), TILERT_ERROR_INVALID_VALUE, "parameter 'out' has 0");

    /* good arguments: [100, 75] f32 with rows of 80 */
    int64_t shape[2] = {100, 75}, stride[2] = {80, 1};
    tilert_arg a[3] = {tilert_arg_tensor(tilert_tensor_nd((void *)0x100000, TILERT_F32, 2, shape, stride)),
                       tilert_arg_ptr((void *)0x200000, TILERT_F32), tilert_arg_i32(0)};
    uint32_t g[3];
    expect(tilert_kernel_check(k, a, 3, g), TILERT_OK, NULL);
    assert_int_equal(g[0], 3);
    assert_int_equal(g[1], 7);
    assert_int_equal(g[2], 1);

    /* the rules through the kernel: the message names kernel, argument, descriptor and rule */
    a[0].v.tensor.data = (void *)0x100008;
    expect(tilert_kernel_check(k, a, 3, g), TILERT_ERROR_ARG_ALIGN,
           "kernel 'tma_tile', argument 0 ('A'): TMA needs the base address 16-byte aligned, got 0x100008");
    a[0].v.tensor.data = (void *)0x100000;
    a[0].v.tensor.stride[0] = 75;
    expect(tilert_kernel_check(k, a, 3, g), TILERT_ERROR_ARG_VALUE,
           "kernel 'tma_tile', argument 0 ('A'), TMA descriptor 0 (box [16, 32] of f32, swizzle none): "
           "stride[0] = 75 elements = 300 bytes is not a multiple of 16");
    a[0].v.tensor.stride[0] = 1;
    a[0].v.tensor.stride[1] = 100;
    expect(tilert_kernel_check(k, a, 3, g), TILERT_ERROR_ARG_VALUE, "innermost dimension contiguous");
    a[0].v.tensor.stride[0] = 80;
    a[0].v.tensor.stride[1] = 1;
    /* an empty tensor: the launch is empty, so no map is needed and nothing is refused... */
    a[0].v.tensor.shape[0] = 0;
    expect(tilert_kernel_check(k, a, 3, g), TILERT_OK, NULL);
    assert_int_equal(g[1], 0);
    /* ...but without a grid to tell, the map is checked as for a real launch */
    expect(tilert_kernel_check(k, a, 3, NULL), TILERT_ERROR_ARG_VALUE, "shape[0] = 0: TMA cannot describe");
    a[0].v.tensor.shape[0] = 100;
    /* launching an inspected module: the arguments are checked first, then the launch is refused */
    a[0].v.tensor.stride[0] = 75;
    expect(tilert_launch(k, NULL, a, 3), TILERT_ERROR_ARG_VALUE, "300 bytes is not a multiple of 16");
    a[0].v.tensor.stride[0] = 80;
    expect(tilert_launch(k, NULL, a, 3), TILERT_ERROR_INSPECT_ONLY, NULL);
}

static void test_module_synthetic(void **state)
{
    (void)state;
    size_t mlen, len;
    uint8_t *meta = rt_tma_meta("sm_90a", &mlen);
    assert_non_null(meta);
    RtElfOpts o = rt_elf_opts(90);
    uint8_t *img = rt_make_elf(meta, mlen, &o, &len);
    tilert_module *m;
    expect(tilert_module_inspect_data(img, len, &m), TILERT_OK, NULL);
    check_tma_module(m);
    tilert_module_unload(m);
    free(img);
    free(meta);
    /* TMA needs sm_90: the writer refuses descriptors on an sm_80 kernel */
    assert_null(rt_tma_meta("sm_80", &mlen));
}

static void test_module_cubin(void **state)
{
    (void)state;
    char log[4096];
    size_t len;
    uint8_t *cubin = rt_tma_cubin("sm_90a", &len, log, sizeof log);
    if (!cubin) {
        print_message("SKIP: %s\n", log);
        skip();
    }
    tilert_module *m;
    expect(tilert_module_inspect_data(cubin, len, &m), TILERT_OK, NULL);
    check_tma_module(m);
    tilert_module_unload(m);
    free(cubin);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prepare_row_major),
        cmocka_unit_test(test_prepare_rank4),
        cmocka_unit_test(test_prepare_extent_one),
        cmocka_unit_test(test_prepare_argument_rules),
        cmocka_unit_test(test_descriptor_rules),
        cmocka_unit_test(test_data_types),
        cmocka_unit_test(test_module_synthetic),
        cmocka_unit_test(test_module_cubin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
