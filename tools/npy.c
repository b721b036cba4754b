/* npy.c: the .npy reader and writer (see npy.h).
 *
 * The file is: "\x93NUMPY", major, minor, the header length (2 bytes little
 * endian in 1.0, 4 bytes in 2.0 and 3.0), then the header: a Python dict
 * literal such as  {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 * padded with spaces and ended by '\n', then the raw data.  The dict is parsed
 * by a small recursive-descent reader that accepts exactly the Python literal
 * syntax NumPy writes (either quote, trailing commas, `3L` from Python 2) and
 * nothing that would need an evaluator.
 */
#include "npy.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.c assumes a little-endian host"
#endif

static const uint8_t npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* The type codes without their byte-order character. */
static const struct {
    const char *code;
    DType dt;
} npy_types[] = {
    {"f2", DT_F16}, {"f4", DT_F32}, {"f8", DT_F64}, {"u1", DT_U8},  {"i1", DT_I8},  {"i2", DT_I16},
    {"u2", DT_U16}, {"i4", DT_I32}, {"u4", DT_U32}, {"i8", DT_I64}, {"u8", DT_U64}, {"b1", DT_I1},
};

static bool fail(char *err, size_t errlen, const char *fmt, ...) TL_PRINTF(3, 4);
static bool fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return false;
}

const char *npy_descr(DType dt)
{
    static const char *const names[] = {"<f2", "<f4", "<f8", "|u1", "|i1", "<i2",
                                        "<u2", "<i4", "<u4", "<i8", "<u8", "|b1"};
    for (size_t i = 0; i < TL_COUNTOF(npy_types); i++)
        if (npy_types[i].dt == dt) return names[i];
    return NULL;
}

int64_t npy_numel(const NpyArray *a)
{
    int64_t n = 1;
    for (uint32_t i = 0; i < a->ndim; i++) n *= a->shape[i];
    return n;
}

void npy_free(NpyArray *a)
{
    free(a->data);
    memset(a, 0, sizeof *a);
}

/* ---- the header dictionary ------------------------------------------------- */

typedef struct Cursor {
    const char *p, *start, *end;
    char *err;
    size_t errlen;
} Cursor;

static bool bad(Cursor *c, const char *what)
{
    return fail(c->err, c->errlen, "malformed header: %s at offset %td", what, c->p - c->start);
}

static void skip_space(Cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static bool eat(Cursor *c, char ch)
{
    skip_space(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* A quoted string without escapes (none of the keys or type codes has one). */
static bool read_string(Cursor *c, char *out, size_t cap)
{
    skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return bad(c, "expected a quoted string");
    char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\') return bad(c, "escape sequences are not supported");
        if (n + 1 >= cap) return bad(c, "string too long");
        out[n++] = *c->p++;
    }
    if (c->p >= c->end) return bad(c, "unterminated string");
    c->p++;
    out[n] = 0;
    return true;
}

static bool read_word(Cursor *c, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0) return false;
    const char *after = c->p + n;
    if (after < c->end && ((*after >= 'a' && *after <= 'z') || (*after >= 'A' && *after <= 'Z') ||
                           (*after >= '0' && *after <= '9') || *after == '_'))
        return false;
    c->p = after;
    return true;
}

static bool read_bool(Cursor *c, bool *out)
{
    skip_space(c);
    if (read_word(c, "True")) *out = true;
    else if (read_word(c, "False")) *out = false;
    else return bad(c, "expected True or False");
    return true;
}

static bool read_dim(Cursor *c, int64_t *out)
{
    skip_space(c);
    if (c->p < c->end && *c->p == '-') return bad(c, "negative dimension");
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return bad(c, "expected a dimension");
    int64_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        int d = *c->p++ - '0';
        if (v > (INT64_MAX - d) / 10) return bad(c, "dimension too large");
        v = v * 10 + d;
    }
    if (c->p < c->end && (*c->p == 'L' || *c->p == 'l')) c->p++; /* Python 2 long */
    *out = v;
    return true;
}

/* A tuple of dimensions: () or (n,) or (n, m, ...) with an optional trailing comma. */
static bool read_shape(Cursor *c, NpyArray *a)
{
    if (!eat(c, '(')) return bad(c, "the shape is not a tuple");
    a->ndim = 0;
    if (eat(c, ')')) return true;
    for (;;) {
        if (a->ndim == NPY_MAXDIM) return bad(c, "more than 32 dimensions");
        if (!read_dim(c, &a->shape[a->ndim++])) return false;
        if (eat(c, ')')) return a->ndim > 1 || bad(c, "the shape is not a tuple (missing ',')");
        if (!eat(c, ',')) return bad(c, "expected ',' or ')' in the shape");
        if (eat(c, ')')) return true;
    }
}

static bool read_descr(Cursor *c, NpyArray *a)
{
    skip_space(c);
    if (c->p < c->end && (*c->p == '[' || *c->p == '{'))
        return fail(c->err, c->errlen, "structured dtypes are not supported");
    char s[64];
    if (!read_string(c, s, sizeof s)) return false;
    for (size_t i = 0; i < TL_COUNTOF(npy_types); i++) {
        if (strcmp(s + (s[0] ? 1 : 0), npy_types[i].code) != 0) continue;
        bool onebyte = dt_bytes(npy_types[i].dt) == 1;
        if (s[0] == '>' && !onebyte)
            return fail(c->err, c->errlen, "big-endian data ('%s') is not supported; convert with .astype('<%s')",
                        s, npy_types[i].code);
        if (s[0] == '<' || s[0] == '=' || (onebyte && (s[0] == '|' || s[0] == '>'))) {
            a->dt = npy_types[i].dt;
            return true;
        }
    }
    return fail(c->err, c->errlen,
                "unsupported dtype '%s' (supported: <f2 <f4 <f8 |u1 |i1 <i2 <u2 <i4 <u4 <i8 <u8 |b1)", s);
}

/* Fortran order is the same bytes as C order when at most one dimension exceeds 1. */
static bool layout_is_trivial(const NpyArray *a)
{
    int big = 0;
    for (uint32_t i = 0; i < a->ndim; i++) big += a->shape[i] > 1;
    return big <= 1;
}

static bool parse_dict(Cursor *c, NpyArray *a)
{
    enum { HAVE_DESCR = 1, HAVE_ORDER = 2, HAVE_SHAPE = 4 };
    unsigned have = 0;
    bool fortran = false;
    if (!eat(c, '{')) return bad(c, "expected '{'");
    while (!eat(c, '}')) {
        char key[32];
        unsigned bit;
        if (!read_string(c, key, sizeof key)) return false;
        if (!eat(c, ':')) return bad(c, "expected ':' after a key");
        if (strcmp(key, "descr") == 0) {
            bit = HAVE_DESCR;
            if (!read_descr(c, a)) return false;
        } else if (strcmp(key, "fortran_order") == 0) {
            bit = HAVE_ORDER;
            if (!read_bool(c, &fortran)) return false;
        } else if (strcmp(key, "shape") == 0) {
            bit = HAVE_SHAPE;
            if (!read_shape(c, a)) return false;
        } else {
            return fail(c->err, c->errlen, "malformed header: unexpected key '%s'", key);
        }
        if (have & bit) return fail(c->err, c->errlen, "malformed header: key '%s' appears twice", key);
        have |= bit;
        if (!eat(c, ',')) {
            if (!eat(c, '}')) return bad(c, "expected ',' or '}'");
            break;
        }
    }
    skip_space(c);
    if (c->p != c->end) return bad(c, "unexpected text after the dictionary");
    if (have != (HAVE_DESCR | HAVE_ORDER | HAVE_SHAPE))
        return fail(c->err, c->errlen, "malformed header: missing key '%s'",
                    !(have & HAVE_DESCR) ? "descr" : !(have & HAVE_ORDER) ? "fortran_order" : "shape");
    if (fortran && !layout_is_trivial(a))
        return fail(c->err, c->errlen,
                    "Fortran-order (column-major) arrays are not supported; save np.ascontiguousarray(a)");
    return true;
}

/* Sets a->bytes from the shape and dtype, refusing sizes that overflow. */
static bool size_array(NpyArray *a, char *err, size_t errlen)
{
    uint64_t n = (uint64_t)dt_bytes(a->dt);
    for (uint32_t i = 0; i < a->ndim; i++) {
        uint64_t d = (uint64_t)a->shape[i];
        if (d && n > (uint64_t)(INT64_MAX / 2) / d) return fail(err, errlen, "the array is too large");
        n *= d;
    }
    if (n > SIZE_MAX / 2) return fail(err, errlen, "the array is too large");
    a->bytes = (size_t)n;
    return true;
}

bool npy_parse_header(const void *buf, size_t len, NpyArray *a, size_t *data_off, char *err, size_t errlen)
{
    const uint8_t *p = buf;
    memset(a, 0, sizeof *a);
    if (len < 10 || memcmp(p, npy_magic, sizeof npy_magic) != 0)
        return fail(err, errlen, "not a .npy file (bad magic string)");
    unsigned major = p[6], minor = p[7];
    size_t prefix, hlen;
    if (major == 1) {
        prefix = 10;
        hlen = (size_t)p[8] | (size_t)p[9] << 8;
    } else if (major == 2 || major == 3) {
        if (len < 12) return fail(err, errlen, "truncated header");
        prefix = 12;
        hlen = (size_t)p[8] | (size_t)p[9] << 8 | (size_t)p[10] << 16 | (size_t)p[11] << 24;
    } else {
        return fail(err, errlen, "unsupported .npy format version %u.%u", major, minor);
    }
    if (minor != 0) return fail(err, errlen, "unsupported .npy format version %u.%u", major, minor);
    if (hlen > NPY_MAX_HEADER) return fail(err, errlen, "header too large (%zu bytes)", hlen);
    if (len - prefix < hlen) return fail(err, errlen, "truncated header");
    Cursor c = {(const char *)p + prefix, (const char *)p + prefix, (const char *)p + prefix + hlen, err, errlen};
    if (!parse_dict(&c, a) || !size_array(a, err, errlen)) {
        memset(a, 0, sizeof *a);
        return false;
    }
    *data_off = prefix + hlen;
    return true;
}

/* Booleans must be 0 or 1: NumPy never writes anything else, and the i1 they bind to has no other value. */
static bool check_bools(const NpyArray *a, char *err, size_t errlen)
{
    if (a->dt != DT_I1) return true;
    const uint8_t *b = a->data;
    for (size_t i = 0; i < a->bytes; i++)
        if (b[i] > 1) return fail(err, errlen, "bool element %zu holds the byte %u (not 0 or 1)", i, b[i]);
    return true;
}

static bool check_length(const NpyArray *a, size_t have, char *err, size_t errlen)
{
    if (have < a->bytes)
        return fail(err, errlen, "truncated data: the header promises %zu bytes, the file holds %zu", a->bytes, have);
    if (have > a->bytes)
        return fail(err, errlen, "%zu bytes of unexpected data after the array", have - a->bytes);
    return true;
}

bool npy_parse(const void *buf, size_t len, NpyArray *a, char *err, size_t errlen)
{
    size_t off;
    if (!npy_parse_header(buf, len, a, &off, err, errlen)) return false;
    if (!check_length(a, len - off, err, errlen)) goto fail;
    a->data = malloc(a->bytes ? a->bytes : 1);
    if (!a->data) {
        fail(err, errlen, "out of memory for %zu bytes", a->bytes);
        goto fail;
    }
    memcpy(a->data, (const uint8_t *)buf + off, a->bytes);
    if (check_bools(a, err, errlen)) return true;
fail:
    npy_free(a);
    return false;
}

bool npy_read(const char *path, NpyArray *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    FILE *f = fopen(path, "rb");
    if (!f) return fail(err, errlen, "%s", strerror(errno));
    struct stat st;
    uint8_t *head = NULL;
    bool ok = false;
    if (fstat(fileno(f), &st) != 0) {
        fail(err, errlen, "%s", strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        fail(err, errlen, "%s", S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
        goto out;
    }
    /* Read as much as the longest header allowed could span; the parser checks the rest. */
    size_t nhead = (uint64_t)st.st_size < NPY_MAX_HEADER + 12 ? (size_t)st.st_size : NPY_MAX_HEADER + 12;
    head = tl_xmalloc(nhead);
    if (fread(head, 1, nhead, f) != nhead) {
        fail(err, errlen, "read error: %s", ferror(f) ? strerror(errno) : "the file shrank while reading");
        goto out;
    }
    size_t off;
    if (!npy_parse_header(head, nhead, a, &off, err, errlen)) goto out;
    if (!check_length(a, (size_t)st.st_size - off, err, errlen)) goto out;
    a->data = malloc(a->bytes ? a->bytes : 1);
    if (!a->data) {
        fail(err, errlen, "out of memory for %zu bytes", a->bytes);
        goto out;
    }
    if (fseek(f, (long)off, SEEK_SET) != 0 || fread(a->data, 1, a->bytes, f) != a->bytes) {
        fail(err, errlen, "read error: %s", ferror(f) ? strerror(errno) : "the file shrank while reading");
        goto out;
    }
    ok = check_bools(a, err, errlen);
out:
    if (!ok) npy_free(a);
    free(head);
    fclose(f);
    return ok;
}

/* ---- writing --------------------------------------------------------------- */

void npy_header(StrBuf *b, DType dt, uint32_t ndim, const int64_t *shape)
{
    const char *descr = npy_descr(dt);
    TL_ASSERT(descr != NULL && ndim <= NPY_MAXDIM, "npy");
    StrBuf dict = {0};
    sb_printf(&dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (uint32_t i = 0; i < ndim; i++) sb_printf(&dict, i ? ", %lld" : "%lld", (long long)shape[i]);
    sb_puts(&dict, ndim == 1 ? ",), }" : "), }");
    /* prefix + dict + padding + '\n' is a multiple of 64.  With at most NPY_MAXDIM
     * dimensions the dict stays far below 1.0's 64 KiB limit, so 2.0 is never needed. */
    size_t hlen = (10 + dict.len + 1 + 63) / 64 * 64 - 10;
    TL_ASSERT(hlen <= 65535, "npy");
    for (int i = 0; i < 6; i++) sb_putc(b, (char)npy_magic[i]);
    sb_putc(b, 1);
    sb_putc(b, 0);
    sb_putc(b, (char)(hlen & 0xff));
    sb_putc(b, (char)(hlen >> 8));
    sb_puts(b, dict.s);
    for (size_t i = dict.len + 1; i < hlen; i++) sb_putc(b, ' ');
    sb_putc(b, '\n');
    sb_free(&dict);
}

bool npy_write(const char *path, const NpyArray *a, char *err, size_t errlen)
{
    NpyArray sized = *a;
    if (!npy_descr(a->dt)) return fail(err, errlen, "dtype %s has no .npy type code", dt_name[a->dt]);
    if (!size_array(&sized, err, errlen)) return false;
    TL_ASSERT(sized.bytes == a->bytes, "npy");
    StrBuf h = {0};
    npy_header(&h, a->dt, a->ndim, a->shape);
    FILE *f = fopen(path, "wb");
    if (!f) {
        sb_free(&h);
        return fail(err, errlen, "%s", strerror(errno));
    }
    bool ok = fwrite(h.s, 1, h.len, f) == h.len && (a->bytes == 0 || fwrite(a->data, 1, a->bytes, f) == a->bytes);
    int werr = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        werr = errno;
    }
    sb_free(&h);
    if (!ok) return fail(err, errlen, "write error: %s", strerror(werr));
    return true;
}
