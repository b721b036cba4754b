/* test_npy.c: the .npy reader and writer (tools/npy.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tools/npy.h"

static const DType every_npy_dtype[] = {DT_F16, DT_F32, DT_F64, DT_U8,  DT_I8,  DT_I16,
                                         DT_U16, DT_I32, DT_U32, DT_I64, DT_U64, DT_I1};

/* A file image: magic, version major.0, the header text with its length field, then `data`. */
static StrBuf image(int major, const char *header, const void *data, size_t ndata)
{
    StrBuf b = {0};
    size_t hlen = strlen(header);
    sb_puts(&b, "\x93NUMPY");
    sb_putc(&b, (char)major);
    sb_putc(&b, 0);
    int nlen = major == 1 ? 2 : 4;
    for (int i = 0; i < nlen; i++) sb_putc(&b, (char)(hlen >> (8 * i) & 0xff));
    sb_puts(&b, header);
    for (size_t i = 0; i < ndata; i++) sb_putc(&b, ((const char *)data)[i]);
    return b;
}

static void expect_error(const StrBuf *img, const char *needle)
{
    NpyArray a;
    char err[256] = "";
    bool ok = npy_parse(img->s, img->len, &a, err, sizeof err);
    if (ok || !strstr(err, needle)) fail_msg("expected an error containing '%s', got %s: '%s'", needle, ok ? "success" : "error", err);
    assert_null(a.data);
}

static void test_roundtrip_every_dtype(void **state)
{
    static const int64_t shapes[][3] = {{0, 0, 0}, {5, 0, 0}, {2, 3, 4}, {0, 7, 0}};
    static const uint32_t ndims[] = {0, 1, 3, 2};
    char path[] = "/tmp/test_npy_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    for (size_t t = 0; t < TL_COUNTOF(every_npy_dtype); t++) {
        for (size_t s = 0; s < TL_COUNTOF(ndims); s++) {
            NpyArray a = {.dt = every_npy_dtype[t], .ndim = ndims[s]};
            memcpy(a.shape, shapes[s], sizeof shapes[s]);
            a.bytes = (size_t)npy_numel(&a) * (size_t)dt_bytes(a.dt);
            a.data = malloc(a.bytes + 1);
            for (size_t i = 0; i < a.bytes; i++)
                ((uint8_t *)a.data)[i] = a.dt == DT_I1 ? (uint8_t)(i % 2) : (uint8_t)(i * 37 + 11);
            char err[256] = "";
            assert_true(npy_write(path, &a, err, sizeof err));

            NpyArray b;
            if (!npy_read(path, &b, err, sizeof err)) fail_msg("%s: %s", dt_name[a.dt], err);
            assert_int_equal(b.dt, a.dt);
            assert_int_equal(b.ndim, a.ndim);
            assert_memory_equal(b.shape, a.shape, sizeof a.shape);
            assert_int_equal(b.bytes, a.bytes);
            if (a.bytes) assert_memory_equal(b.data, a.data, a.bytes);
            npy_free(&b);

            /* the header is 1.0, ends in '\n', and the data starts at a multiple of 64 */
            StrBuf h = {0};
            npy_header(&h, a.dt, a.ndim, a.shape);
            assert_int_equal(h.len % 64, 0);
            assert_int_equal(h.s[6], 1);
            assert_int_equal(h.s[h.len - 1], '\n');
            assert_non_null(strstr(h.s + 10, npy_descr(a.dt)));
            sb_free(&h);
            npy_free(&a);
        }
    }
    unlink(path);
}

static void test_descr_names(void **state)
{
    assert_string_equal(npy_descr(DT_F32), "<f4");
    assert_string_equal(npy_descr(DT_F16), "<f2");
    assert_string_equal(npy_descr(DT_U8), "|u1");
    assert_string_equal(npy_descr(DT_I1), "|b1");
    assert_string_equal(npy_descr(DT_U64), "<u8");
    assert_null(npy_descr(DT_BF16));
    assert_null(npy_descr(DT_F8E4M3));
    assert_null(npy_descr(DT_F8E5M2));
}

static void test_versions_2_and_3(void **state)
{
    const float data[3] = {1.5f, -2.0f, 3.25f};
    for (int major = 2; major <= 3; major++) {
        StrBuf img = image(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }   \n", data, sizeof data);
        NpyArray a;
        char err[256] = "";
        if (!npy_parse(img.s, img.len, &a, err, sizeof err)) fail_msg("version %d: %s", major, err);
        assert_int_equal(a.dt, DT_F32);
        assert_int_equal(a.ndim, 1);
        assert_int_equal(a.shape[0], 3);
        assert_memory_equal(a.data, data, sizeof data);
        npy_free(&a);
        sb_free(&img);
    }
}

/* What NumPy or Python 2 may write, and what the header grammar allows. */
static void test_lenient_headers(void **state)
{
    static const char *const ok[] = {
        "{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (2, 2)}\n",
        "{'shape': (2L, 2L), 'fortran_order': False, 'descr': '<i4'}",
        "{'descr':'=i4','fortran_order':False,'shape':(2,2,),}          \n",
        "  {'descr': '<i4', 'fortran_order': False, 'shape': (4, 1)}\n",
        "{'descr': '<i4', 'fortran_order': True, 'shape': (1, 4)}\n", /* Fortran order, same bytes */
    };
    const int32_t data[4] = {1, 2, 3, 4};
    for (size_t i = 0; i < TL_COUNTOF(ok); i++) {
        StrBuf img = image(1, ok[i], data, sizeof data);
        NpyArray a;
        char err[256] = "";
        if (!npy_parse(img.s, img.len, &a, err, sizeof err)) fail_msg("'%s': %s", ok[i], err);
        assert_int_equal(a.dt, DT_I32);
        assert_int_equal(npy_numel(&a), 4);
        assert_memory_equal(a.data, data, sizeof data);
        npy_free(&a);
        sb_free(&img);
    }
    /* one-byte types may carry any byte-order mark */
    const uint8_t bytes[2] = {7, 9};
    StrBuf img = image(1, "{'descr': '<u1', 'fortran_order': False, 'shape': (2,)}\n", bytes, 2);
    NpyArray a;
    char err[256] = "";
    assert_true(npy_parse(img.s, img.len, &a, err, sizeof err));
    assert_int_equal(a.dt, DT_U8);
    npy_free(&a);
    sb_free(&img);
}

static void test_malformed_headers(void **state)
{
    static const struct {
        const char *header, *error;
    } cases[] = {
        {"{'descr': '<f4', 'shape': (2,)}\n", "missing key 'fortran_order'"},
        {"{'descr': '<f4', 'fortran_order': False}\n", "missing key 'shape'"},
        {"{'fortran_order': False, 'shape': (2,)}\n", "missing key 'descr'"},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}\n", "appears twice"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}\n", "unexpected key 'extra'"},
        {"{'descr': '>f4', 'fortran_order': False, 'shape': (2,)}\n", "big-endian"},
        {"{'descr': '<c8', 'fortran_order': False, 'shape': (2,)}\n", "unsupported dtype '<c8'"},
        {"{'descr': '|f4', 'fortran_order': False, 'shape': (2,)}\n", "unsupported dtype"},
        {"{'descr': 'f4', 'fortran_order': False, 'shape': (2,)}\n", "unsupported dtype"},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}\n", "structured"},
        {"{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}\n", "unsupported dtype '<f4, '"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2)}\n", "not a tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': 2}\n", "not a tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}\n", "negative dimension"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,, 3)}\n", "expected a dimension"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}\n", "dimension too large"},
        {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}\n", "expected True or False"},
        {"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2,)}\n", "expected True or False"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk\n", "unexpected text"},
        {"{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}\n", "expected ',' or '}'"},
        {"{'descr' '<f4', 'fortran_order': False, 'shape': (2,)}\n", "expected ':'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)\n", "expected ',' or '}'"},
        {"['descr', '<f4']\n", "expected '{'"},
        {"", "expected '{'"},
        {"{'de\\scr': '<f4'}", "escape"},
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3)}\n", "Fortran-order"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296)}\n", "too large"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1)}\n",
         "more than 32"},
    };
    const float data[6] = {1, 2, 3, 4, 5, 6};
    for (size_t i = 0; i < TL_COUNTOF(cases); i++) {
        StrBuf img = image(1, cases[i].header, data, sizeof data);
        expect_error(&img, cases[i].error);
        sb_free(&img);
    }
}

static void test_bad_prefix(void **state)
{
    const char *h = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}\n";
    const float one = 1;
    StrBuf img = image(1, h, &one, sizeof one);
    img.s[1] = 'M';
    expect_error(&img, "bad magic");
    sb_free(&img);

    img = image(4, h, &one, sizeof one);
    expect_error(&img, "version 4.0");
    sb_free(&img);

    img = image(1, h, &one, sizeof one);
    img.s[7] = 1;
    expect_error(&img, "version 1.1");
    sb_free(&img);

    /* a header length beyond the file */
    img = image(1, h, &one, sizeof one);
    img.s[8] = (char)0xff;
    img.s[9] = 0x7f;
    expect_error(&img, "truncated header");
    sb_free(&img);

    /* a 2.0 header claiming 4 GiB */
    img = image(2, h, &one, sizeof one);
    img.s[11] = (char)0xff;
    expect_error(&img, "header too large");
    sb_free(&img);

    StrBuf tiny = {0};
    sb_puts(&tiny, "\x93NUM");
    expect_error(&tiny, "bad magic");
    sb_free(&tiny);
}

static void test_data_length(void **state)
{
    const char *h = "{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3)}\n";
    const int16_t data[7] = {1, 2, 3, 4, 5, 6, 7};
    StrBuf img = image(1, h, data, 11);
    expect_error(&img, "truncated data: the header promises 12 bytes, the file holds 11");
    sb_free(&img);
    img = image(1, h, data, 14);
    expect_error(&img, "2 bytes of unexpected data");
    sb_free(&img);
    img = image(1, h, data, 12);
    NpyArray a;
    char err[256];
    assert_true(npy_parse(img.s, img.len, &a, err, sizeof err));
    assert_int_equal(a.bytes, 12);
    npy_free(&a);
    sb_free(&img);

    const uint8_t bools[3] = {0, 1, 2};
    img = image(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,)}\n", bools, 3);
    expect_error(&img, "bool element 2 holds the byte 2");
    sb_free(&img);
}

/* Every prefix of a valid image, and every one-byte corruption of its header,
 * is either read or refused: never a crash, never an unreported failure. */
static void test_truncations_and_corruptions(void **state)
{
    NpyArray a = {.dt = DT_F32, .ndim = 2, .shape = {3, 2}, .bytes = 24};
    float data[6] = {1, 2, 3, 4, 5, 6};
    StrBuf img = {0};
    npy_header(&img, a.dt, a.ndim, a.shape);
    size_t hlen = img.len;
    for (size_t i = 0; i < sizeof data; i++) sb_putc(&img, ((char *)data)[i]);
    char err[256];
    for (size_t n = 0; n < img.len; n++) {
        NpyArray b;
        err[0] = 0;
        assert_false(npy_parse(img.s, n, &b, err, sizeof err));
        assert_true(err[0] != 0);
        assert_null(b.data);
    }
    static const char fuzz[] = {0, '\'', '"', '(', ')', ',', ':', '{', '}', '9', '-', 'L', ' ', '\n', (char)0xff};
    for (size_t pos = 0; pos < hlen; pos++) {
        char saved = img.s[pos];
        for (size_t k = 0; k < sizeof fuzz; k++) {
            img.s[pos] = fuzz[k];
            NpyArray b;
            err[0] = 0;
            if (npy_parse(img.s, img.len, &b, err, sizeof err)) {
                assert_int_equal(b.bytes, (size_t)npy_numel(&b) * (size_t)dt_bytes(b.dt));
                npy_free(&b);
            } else {
                assert_true(err[0] != 0);
            }
        }
        img.s[pos] = saved;
    }
    sb_free(&img);
}

static void test_read_errors(void **state)
{
    NpyArray a;
    char err[256] = "";
    assert_false(npy_read("/nonexistent/dir/x.npy", &a, err, sizeof err));
    assert_non_null(strstr(err, "No such file"));
    assert_false(npy_read("/tmp", &a, err, sizeof err));
    assert_string_equal(err, "is a directory");

    char path[] = "/tmp/test_npy_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "\x93NUMPY\x01\x00", 8), 8);
    close(fd);
    assert_false(npy_read(path, &a, err, sizeof err));
    assert_non_null(strstr(err, "bad magic"));
    assert_null(a.data);

    /* a complete file with a byte missing at the end */
    NpyArray w = {.dt = DT_F64, .ndim = 1, .shape = {4}, .bytes = 32};
    double d[4] = {1, -1, 0.5, 2};
    w.data = d;
    assert_true(npy_write(path, &w, err, sizeof err));
    StrBuf h = {0};
    npy_header(&h, w.dt, w.ndim, w.shape);
    assert_int_equal(truncate(path, (off_t)(h.len + w.bytes - 1)), 0);
    sb_free(&h);
    assert_false(npy_read(path, &a, err, sizeof err));
    assert_non_null(strstr(err, "truncated data"));
    unlink(path);

    assert_false(npy_write("/nonexistent/dir/x.npy", &w, err, sizeof err));
    assert_non_null(strstr(err, "No such file"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_every_dtype),
        cmocka_unit_test(test_descr_names),
        cmocka_unit_test(test_versions_2_and_3),
        cmocka_unit_test(test_lenient_headers),
        cmocka_unit_test(test_malformed_headers),
        cmocka_unit_test(test_bad_prefix),
        cmocka_unit_test(test_data_length),
        cmocka_unit_test(test_truncations_and_corruptions),
        cmocka_unit_test(test_read_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
