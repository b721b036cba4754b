/* mknpy: makes and checks .npy files for the driver tests (there is no NumPy here).
 *
 *   mknpy rand PATH DTYPE D0[,D1...] [SEED]   random, non-zero, deterministic data
 *                                             (floats in [-1, 1), integers in [1, 100] with a random sign
 *                                             when signed; i1 0/1); DTYPE: f16 f32 f64 i8 ... u64 i1
 *   mknpy check add OUT X Y                   OUT == X + Y elementwise (float64 reference)
 *   mknpy check scale OUT X A                 OUT == X * A
 *   mknpy check copy OUT X                    OUT has X's dtype, shape and bytes
 *   mknpy check iota OUT A                    OUT[i] == i + A (flat index i)
 *   mknpy bad KIND PATH                       a file tilec must refuse: fortran, bigendian, truncated,
 *                                             magic
 * Exit status 0 when the check holds, 1 (with the first mismatches) when not.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/fpconv.h"
#include "tools/npy.h"

static int die(const char *fmt, const char *arg)
{
    fprintf(stderr, "mknpy: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return 1;
}

static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int make_random(const char *path, const char *dtype, const char *dims, uint64_t seed)
{
    NpyArray a = {0};
    if (!dt_from_name(dtype, strlen(dtype), &a.dt) || !npy_descr(a.dt)) return die("bad dtype '%s'", dtype);
    for (const char *p = dims; *p;) {
        char *end;
        long long d = strtoll(p, &end, 10);
        if (end == p || d < 0 || a.ndim == NPY_MAXDIM) return die("bad shape '%s'", dims);
        a.shape[a.ndim++] = d;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return die("bad shape '%s'", dims);
    }
    int64_t n = npy_numel(&a);
    int sz = dt_bytes(a.dt);
    a.bytes = (size_t)n * (size_t)sz;
    a.data = malloc(a.bytes + 1);
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        uint8_t *p = (uint8_t *)a.data + i * sz;
        uint64_t r = next(&s);
        if (a.dt == DT_I1) {
            *p = (uint8_t)(r & 1);
        } else if (dt_is_float(a.dt)) {
            double x;
            do x = (double)(next(&s) >> 11) * 0x1p-52 - 1.0;
            while (fp_round(a.dt, x) == 0.0);
            fp_store(a.dt, p, x);
        } else {
            double v = (double)(1 + r % 100);
            if (dt_is_signed(a.dt) && (r >> 40 & 1)) v = -v;
            fp_store(a.dt, p, v);
        }
    }
    char err[256];
    bool ok = npy_write(path, &a, err, sizeof err);
    npy_free(&a);
    return ok ? 0 : die("%s", err);
}

static bool load(const char *path, NpyArray *a)
{
    char err[256];
    if (npy_read(path, a, err, sizeof err)) return true;
    fprintf(stderr, "mknpy: %s: %s\n", path, err);
    return false;
}

static double elem(const NpyArray *a, int64_t i) { return fp_load(a->dt, (const uint8_t *)a->data + i * dt_bytes(a->dt)); }

static bool same_shape(const NpyArray *a, const NpyArray *b)
{
    return a->ndim == b->ndim && memcmp(a->shape, b->shape, sizeof a->shape) == 0;
}

/* OUT against a float64 reference, rounded to OUT's dtype; a tolerance of one unit in the last place. */
static int check(const char *op, const char *outp, const char *xp, const char *third)
{
    NpyArray out, x = {0}, y = {0};
    if (!load(outp, &out)) return 1;
    int rc = 0;
    if (strcmp(op, "iota") == 0) {
        double a = strtod(xp, NULL);
        for (int64_t i = 0; i < npy_numel(&out); i++)
            if (elem(&out, i) != (double)i + a) {
                if (rc++ < 5) fprintf(stderr, "mknpy: element %lld: got %.9g, want %.9g\n", (long long)i, elem(&out, i), (double)i + a);
            }
        if (!rc) printf("ok: %lld elements\n", (long long)npy_numel(&out));
        npy_free(&out);
        return rc ? 1 : 0;
    }
    if (!load(xp, &x)) {
        npy_free(&out);
        return 1;
    }
    double scale = 0;
    if (strcmp(op, "copy") == 0) {
        if (out.dt != x.dt || !same_shape(&out, &x) || out.bytes != x.bytes || memcmp(out.data, x.data, x.bytes)) {
            fprintf(stderr, "mknpy: %s is not a copy of %s\n", outp, xp);
            rc = 1;
        }
        goto done;
    }
    if (strcmp(op, "add") == 0) {
        if (!third || !load(third, &y)) {
            rc = 1;
            goto done;
        }
    } else if (strcmp(op, "scale") == 0 && third) {
        scale = strtod(third, NULL);
    } else {
        rc = die("unknown check '%s'", op);
        goto done;
    }
    if (!same_shape(&out, &x) || (y.data && !same_shape(&out, &y))) {
        fprintf(stderr, "mknpy: the shapes differ\n");
        rc = 1;
        goto done;
    }
    int64_t n = npy_numel(&out), bad = 0;
    double maxerr = 0;
    for (int64_t i = 0; i < n; i++) {
        double ref = y.data ? elem(&x, i) + elem(&y, i) : elem(&x, i) * scale;
        double got = elem(&out, i), want = dt_is_float(out.dt) ? fp_round(out.dt, ref) : ref;
        double err = fabs(got - want), ulp = dt_is_float(out.dt) ? fabs(want) * 0x1p-23 : 0;
        if (err > maxerr) maxerr = err;
        if (!(err <= ulp)) {
            if (bad++ < 5) fprintf(stderr, "mknpy: element %lld: got %.9g, want %.9g\n", (long long)i, got, want);
        }
    }
    if (bad) {
        fprintf(stderr, "mknpy: %lld of %lld elements differ\n", (long long)bad, (long long)n);
        rc = 1;
    } else {
        printf("ok: %lld elements, max abs error %g\n", (long long)n, maxerr);
    }
done:
    npy_free(&out);
    npy_free(&x);
    npy_free(&y);
    return rc;
}

/* Writes one of the files a reader must refuse, from a correct header edited. */
static int make_bad(const char *kind, const char *path)
{
    const char *hdr;
    size_t ndata = 24;
    if (strcmp(kind, "fortran") == 0) hdr = "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }";
    else if (strcmp(kind, "bigendian") == 0) hdr = "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }";
    else if (strcmp(kind, "truncated") == 0) hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", ndata = 20;
    else if (strcmp(kind, "magic") == 0) hdr = NULL;
    else return die("unknown kind '%s'", kind);
    FILE *f = fopen(path, "wb");
    if (!f) return die("cannot write '%s'", path);
    if (!hdr) {
        fputs("this is not a .npy file\n", f);
    } else {
        size_t hlen = 118; /* 10 + 118 = 128 */
        fwrite("\x93NUMPY\x01\x00", 1, 8, f);
        fputc((int)(hlen & 0xff), f);
        fputc((int)(hlen >> 8), f);
        fputs(hdr, f);
        for (size_t i = strlen(hdr) + 1; i < hlen; i++) fputc(' ', f);
        fputc('\n', f);
        for (size_t i = 0; i < ndata; i++) fputc(0x3f, f);
    }
    return fclose(f) == 0 ? 0 : die("cannot write '%s'", path);
}

int main(int argc, char **argv)
{
    if (argc >= 5 && strcmp(argv[1], "rand") == 0)
        return make_random(argv[2], argv[3], argv[4], argc > 5 ? strtoull(argv[5], NULL, 10) : 1);
    if (argc >= 5 && strcmp(argv[1], "check") == 0) return check(argv[2], argv[3], argv[4], argc > 5 ? argv[5] : NULL);
    if (argc == 4 && strcmp(argv[1], "bad") == 0) return make_bad(argv[2], argv[3]);
    fprintf(stderr, "usage: mknpy rand PATH DTYPE D0[,D1...] [SEED] | check add|scale|copy|iota OUT X|A [Y|A] | bad KIND PATH\n");
    return 2;
}
