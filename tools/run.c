/* run.c: `tilec run`, a kernel on the reference interpreter or on the GPU, on
 * data from .npy files or random, without writing a host program.
 *
 *   tilec run FILE --kernel NAME [-D NAME=VALUE]... --interp|--device ARG...
 *             [--out NAME=PATH.npy]... [--grid X[,Y[,Z]]] [--seed N]
 *
 * Steps:
 *   1. Parse the command line (usage errors: exit 2).
 *   2. Build the IR exactly as `tilec FILE` does (driver_compile to DRIVER_IR), and pick the kernel.
 *   3. Bind every ARG to its parameter: NAME=PATH.npy and NAME=DTYPE[d0,...]
 *      give a buffer (ptr<T>: the flat array; tensor<T, N>: shape and C-order
 *      strides of the array), NAME=VALUE a scalar.  Every mismatch is reported,
 *      then the run stops (exit 1).
 *   4. The grid: --grid, else the kernel's grid(...) clause.
 *   5. --interp: interpret; the buffers are the arrays' own bytes, so narrow
 *      types stay bit-exact.
 *      --device: open the GPU (its arch, unless --arch), compile the kernel to
 *      a cubin in process (driver_compile, resumed), load it through libtilert, copy the
 *      buffers to the device, launch, wait, copy them back (device.c).
 *   6. Write each --out buffer in the dtype and shape it came in.
 * `tilec bench` (bench.c) shares steps 1 to 3 and the device side.
 */
#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/fpconv.h"
#include "device.h"
#include "run.h"

static const char run_usage_text[] =
    "usage: tilec run FILE --kernel NAME --interp|--device ARG... [options]\n"
    "\n"
    "Runs one kernel of FILE (.tile or .tir) on the reference interpreter or on the GPU.\n"
    "\n"
    "Arguments (one per kernel parameter):\n"
    "  NAME=PATH.npy            a ptr<T> or tensor<T, N> parameter: the array in the file (C order).\n"
    "                           ptr<T> takes an array of any rank as its flat buffer; tensor<T, N>\n"
    "                           takes the array's shape and strides (its rank must be N).  The dtype\n"
    "                           must match T; f16 may come as <f2 or <u2, bf16 as <u2, f8e4m3 and\n"
    "                           f8e5m2 as |u1 (the bits), i1 as |b1.\n"
    "  NAME=DTYPE[d0,d1,...]    a buffer of that shape filled with random data (x=f32[4096,4096]):\n"
    "                           floats uniform in [-1, 1) and never 0, integers in [-63, 63] and never\n"
    "                           0 (unsigned: [1, 127]), i1 0 or 1.  Deterministic: each argument's\n"
    "                           stream comes from the seed and the argument's name.\n"
    "  NAME=VALUE               a scalar parameter: an integer (decimal or 0x hex; i1: true, false,\n"
    "                           0, 1) or a float (1.5, -2e-3, inf, nan), which must fit its type.\n"
    "\n"
    "Options:\n"
    "  --kernel NAME            the kernel to run (may be left out when FILE has only one)\n"
    "  --interp                 run on the CPU reference interpreter\n"
    "  --device                 run on the GPU (through libtilert; the kernel is compiled for the\n"
    "                           GPU's own arch unless --arch is given)\n"
    "  --out NAME=PATH.npy      after the run, write buffer argument NAME to PATH.npy; repeatable\n"
    "  --poison NAME[,NAME...]  these buffer arguments start with every byte 0xff (NaN for floats,\n"
    "                           -1 for integers), so elements the kernel fails to write show\n"
    "  --zero NAME[,NAME...]    these buffer arguments start as zeros (counters, histograms)\n"
    "  --check                  (--device) also run the interpreter on the same inputs and compare\n"
    "                           every buffer argument afterwards: integers bit for bit, floats\n"
    "                           within --atol + --rtol * |interpreter| (NaN matches NaN); exit 1\n"
    "                           on any difference (--out writes the GPU's results)\n"
    "  --rtol X, --atol X       --check's tolerances (default 1e-5 and 1e-6)\n"
    "  --grid X[,Y[,Z]]         the launch grid (default: the kernel's grid(...) clause)\n"
    "  --seed N                 the seed of the random arguments (default 1)\n"
    "  -D NAME=VALUE            set a compile-time parameter; repeatable\n"
    "  --pass=NAME[,NAME...]    run these passes instead of the default pipeline\n"
    "  -O0..-O3                 optimization level (default -O3; -O0: no IR passes)\n";
/* run_usage_text continues after the --arch option (print_run_usage) */
static const char run_usage_tail[] =
    "  -g                       (--device) check assert(...) on the GPU too\n"
    "  --no-lineinfo            (--device) no line information in the cubin\n"
    "  --fast-math              (--device) approximate math and f32 division on the GPU\n"
    "  --dump-after=NAME|all    print the IR after pass NAME (or every pass) to stderr\n"
    "  --ir-dump-dir=DIR        write those dumps to files in DIR instead\n"
    "  --remarks=NAME,...|all   explain the compiler's choices (see tilec --help)\n"
    "  --diagnostics-color=auto|always|never\n"
    "                           colour in error messages\n"
    "  -v                       print each stage, the bindings and the grid to stderr\n"
    "  -h, --help               print this help\n";

static const char bench_usage_text[] =
    "usage: tilec bench FILE --kernel NAME ARG... [options]\n"
    "\n"
    "Times one kernel of FILE on the GPU: compiles it for the GPU's arch (or --arch), binds the\n"
    "arguments as `tilec run` does (NAME=PATH.npy, NAME=DTYPE[d0,...] of random data such as\n"
    "x=f32[4096,4096], NAME=VALUE), launches it --warmup times, then --runs times, each timed\n"
    "with CUDA events and preceded by a 256 MiB write that empties the L2 cache.  Prints the\n"
    "median, minimum and maximum time and the spread, (p90 - p10) / median.\n"
    "\n"
    "Options:\n"
    "  --kernel NAME            the kernel to time (may be left out when FILE has only one)\n"
    "  --runs N                 timed runs (default 100)\n"
    "  --warmup N               untimed runs first (default 10)\n"
    "  --no-flush               do not empty the L2 cache between runs\n"
    "  --bytes EXPR             bytes one run moves: prints the achieved GB/s\n"
    "  --flops EXPR             floating-point operations of one run: prints the achieved TFLOP/s\n"
    "                           EXPR: numbers, + - * / %, parentheses, scalar arguments by name,\n"
    "                           NAME.bytes, NAME.numel and NAME.shape[i] of buffer arguments, and\n"
    "                           compile-time parameters (--flops '2*A.shape[0]*A.shape[1]*B.shape[1]')\n"
    "  --grid X[,Y[,Z]]         the launch grid (default: the kernel's grid(...) clause)\n"
    "  --seed N                 the seed of the random arguments (default 1)\n"
    "  -D NAME=VALUE            set a compile-time parameter; repeatable\n"
    "  -O0..-O3, --arch=ARCH, -g, --no-lineinfo, --fast-math, --pass=..., --dump-after=...,\n"
    "  --ir-dump-dir=..., --remarks=...\n"
    "                           as for tilec run\n"
    "  -v                       also print ptxas's report for the kernel (registers, spills)\n"
    "  -h, --help               print this help\n";

/* ---- command line --------------------------------------------------------------- */

static bool parse_u64(const char *s, uint64_t *out)
{
    if (!*s || *s < '0' || *s > '9') return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return false;
    *out = v;
    return true;
}

static bool parse_grid(const char *s, uint32_t grid[3])
{
    grid[0] = grid[1] = grid[2] = 1;
    for (int i = 0; i < 3; i++) {
        const char *comma = strchr(s, ',');
        char part[32];
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        uint64_t v;
        if (n == 0 || n >= sizeof part) return false;
        memcpy(part, s, n);
        part[n] = 0;
        if (!parse_u64(part, &v) || v < 1 || v > INT32_MAX) return false;
        grid[i] = (uint32_t)v;
        if (!comma) return true;
        s = comma + 1;
    }
    return false;
}

/* A count for --runs / --warmup: min..1000000. */
static bool parse_count(const char *s, uint32_t min, uint32_t *out)
{
    uint64_t v;
    if (!parse_u64(s, &v) || v < min || v > 1000000) return false;
    *out = (uint32_t)v;
    return true;
}

int run_parse_args(int argc, char **argv, RunOpts *ro)
{
    static const struct option longopts[] = {
        DRIVER_COMMON_LONGOPTS,
        {"interp", no_argument, NULL, OPT_INTERP},
        {"device", no_argument, NULL, OPT_DEVICE},
        {"out", required_argument, NULL, OPT_OUT},
        {"grid", required_argument, NULL, OPT_GRID},
        {"seed", required_argument, NULL, OPT_SEED},
        {"check", no_argument, NULL, OPT_CHECK},
        {"poison", required_argument, NULL, OPT_POISON},
        {"zero", required_argument, NULL, OPT_ZERO},
        {"rtol", required_argument, NULL, OPT_RTOL},
        {"atol", required_argument, NULL, OPT_ATOL},
        {"runs", required_argument, NULL, OPT_RUNS},
        {"warmup", required_argument, NULL, OPT_WARMUP},
        {"bytes", required_argument, NULL, OPT_BYTES},
        {"flops", required_argument, NULL, OPT_FLOPS},
        {"no-flush", no_argument, NULL, OPT_NO_FLUSH},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    const char *cmd = ro->drv.cmd;
    int c;
    driver_normalize_argv(argc, argv);
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":" DRIVER_COMMON_SHORTOPTS "h", longopts, NULL)) != -1) {
        int r = driver_common_opt(&ro->drv, c, optarg);
        if (r < 0) return 2;
        if (r > 0) continue;
        bool run_only = c == OPT_INTERP || c == OPT_DEVICE || c == OPT_OUT || c == OPT_CHECK || c == OPT_POISON || c == OPT_ZERO ||
                        c == OPT_RTOL || c == OPT_ATOL;
        bool bench_only = c == OPT_RUNS || c == OPT_WARMUP || c == OPT_BYTES || c == OPT_FLOPS || c == OPT_NO_FLUSH;
        if ((ro->bench && run_only) || (!ro->bench && bench_only)) {
            const char *name = "?";
            for (const struct option *lo = longopts; lo->name; lo++)
                if (lo->val == c) name = lo->name;
            return driver_usage_error(cmd, "--%s is an option of tilec %s", name, ro->bench ? "run" : "bench");
        }
        switch (c) {
        case OPT_INTERP: ro->interp = true; break;
        case OPT_DEVICE: ro->device = true; break;
        case OPT_OUT: {
            const char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg || !eq[1])
                return driver_usage_error(cmd, "--out wants NAME=PATH.npy, not '%s'", optarg);
            size_t n = (size_t)(eq - optarg);
            char *name = tl_xmalloc(n + 1);
            memcpy(name, optarg, n);
            name[n] = 0;
            OutReq req = {name, eq + 1};
            VEC_PUSH(ro->outs, ro->nouts, ro->outcap, req);
            break;
        }
        case OPT_GRID:
            if (!parse_grid(optarg, ro->grid))
                return driver_usage_error(cmd, "--grid wants X[,Y[,Z]] with each in 1..2147483647, not '%s'", optarg);
            ro->has_grid = true;
            break;
        case OPT_SEED:
            if (!parse_u64(optarg, &ro->seed))
                return driver_usage_error(cmd, "--seed wants a non-negative integer, not '%s'", optarg);
            break;
        case OPT_CHECK: ro->check = true; break;
        case OPT_POISON:
        case OPT_ZERO: {
            const char *opt = c == OPT_POISON ? "--poison" : "--zero";
            for (const char *p = optarg;;) {
                const char *comma = strchr(p, ',');
                size_t n = comma ? (size_t)(comma - p) : strlen(p);
                if (n == 0) return driver_usage_error(cmd, "%s wants buffer names, not '%s'", opt, optarg);
                char *name = tl_xmalloc(n + 1);
                memcpy(name, p, n);
                name[n] = 0;
                RunFill fill = {name, opt, c == OPT_POISON ? 0xff : 0x00};
                VEC_PUSH(ro->fills, ro->nfills, ro->fillcap, fill);
                if (!comma) break;
                p = comma + 1;
            }
            break;
        }
        case OPT_RTOL:
        case OPT_ATOL: {
            char *end;
            double v = strtod(optarg, &end);
            if (!*optarg || *end || !(v >= 0) || isinf(v))
                return driver_usage_error(cmd, "--%s wants a number >= 0, not '%s'", c == OPT_RTOL ? "rtol" : "atol",
                                          optarg);
            *(c == OPT_RTOL ? &ro->rtol : &ro->atol) = v;
            break;
        }
        case OPT_RUNS:
            if (!parse_count(optarg, 1, &ro->runs))
                return driver_usage_error(cmd, "--runs wants a count in 1..1000000, not '%s'", optarg);
            break;
        case OPT_WARMUP:
            if (!parse_count(optarg, 0, &ro->warmup))
                return driver_usage_error(cmd, "--warmup wants a count in 0..1000000, not '%s'", optarg);
            break;
        case OPT_BYTES: ro->bytes_expr = optarg; break;
        case OPT_FLOPS: ro->flops_expr = optarg; break;
        case OPT_NO_FLUSH: ro->flush = false; break;
        case 'h':
        case OPT_HELP:
            if (ro->bench) {
                fputs(bench_usage_text, stdout);
            } else {
                IrTargetList l;
                fputs(run_usage_text, stdout);
                printf("  --arch=%s\n                           (--device) the arch to compile for (default: the GPU's)\n",
                       ir_target_list(&l, 0, "|", "|"));
                fputs(run_usage_tail, stdout);
            }
            return 0;
        default: return driver_bad_option(cmd, c, argv);
        }
    }
    if (optind >= argc) return driver_usage_error(cmd, "no input file");
    ro->drv.input = argv[optind];
    for (int i = optind + 1; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        if (!eq || eq == argv[i])
            return driver_usage_error(cmd, "'%s' is not an argument binding (NAME=PATH.npy, NAME=DTYPE[d0,...] or "
                                      "NAME=VALUE)", argv[i]);
        VEC_PUSH(ro->args, ro->nargs, ro->argcap, argv[i]);
    }
    if (ro->bench) {
        ro->device = true;
    } else {
        if (!ro->interp && !ro->device)
            return driver_usage_error(cmd, "say where to run the kernel: --interp or --device");
        if (ro->interp && ro->device) return driver_usage_error(cmd, "--interp and --device exclude each other");
        if (ro->check && !ro->device)
            return driver_usage_error(cmd, "--check compares the GPU with the interpreter: give it with --device");
    }
    if (ro->drv.dump_dir && ro->drv.ndump_after == 0)
        VEC_PUSH(ro->drv.dump_after, ro->drv.ndump_after, ro->drv.dumpcap, tl_xstrdup("all"));
    return -1;
}

void run_opts_free(RunOpts *ro)
{
    for (uint32_t i = 0; i < ro->nfills; i++) free((char *)ro->fills[i].name);
    free(ro->fills);
    for (uint32_t i = 0; i < ro->nouts; i++) free((char *)ro->outs[i].name);
    free(ro->outs);
    free(ro->args);
    driver_opts_free(&ro->drv);
    memset(ro, 0, sizeof *ro);
}

/* ---- the kernel -------------------------------------------------------------------- */

IrFunc *run_pick_kernel(IrModule *m, const char *want, Diag *d)
{
    if (m->nfuncs == 1) return m->funcs[0];
    StrBuf list = {0};
    for (uint32_t i = 0; i < m->nfuncs; i++) sb_printf(&list, i ? ", %s" : "%s", m->funcs[i]->name);
    if (m->nfuncs == 0) diag_error_noloc(d, "'%s' holds no kernel to run", m->file);
    else if (!want) diag_error_noloc(d, "'%s' holds several kernels (%s): choose one with --kernel", m->file, list.s);
    else diag_error_noloc(d, "--kernel %s names several specializations (%s): give one symbol", want, list.s);
    sb_free(&list);
    return NULL;
}

static char *type_text(IrType t)
{
    StrBuf b = {0};
    ir_ty_print(&b, t);
    return b.s;
}

static void note_params(IrFunc *f, Diag *d)
{
    StrBuf b = {0};
    for (uint32_t i = 0; i < f->nparams; i++) {
        char *t = type_text(f->params[i].ty);
        sb_printf(&b, i ? ", %s: %s" : "%s: %s", f->params[i].name, t);
        free(t);
    }
    diag_note(d, (SrcLoc){0, 0}, "kernel '%s' takes (%s)", f->source_name, b.s ? b.s : "");
    sb_free(&b);
}

int run_find_param(const IrFunc *f, const char *name, size_t n)
{
    for (uint32_t i = 0; i < f->nparams; i++)
        if (strlen(f->params[i].name) == n && memcmp(f->params[i].name, name, n) == 0) return (int)i;
    return -1;
}

bool run_is_buffer_param(IrType t) { return t.kind == TY_VIEW || (t.kind == TY_TILE && t.isptr && t.rank == 0); }

/* ---- scalars --------------------------------------------------------------------- */

static double float_max(DType dt)
{
    switch (dt) {
    case DT_F8E4M3: return 448.0;
    case DT_F8E5M2: return 57344.0;
    case DT_F16: return 65504.0;
    case DT_BF16: return 3.3895313892515355e38;
    case DT_F32: return FLT_MAX;
    default: return DBL_MAX;
    }
}

static int digit_value(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return 99;
}

/* [+-]DIGITS or [+-]0xHEX into a sign and a 64-bit magnitude; false if malformed or too large. */
static bool parse_magnitude(const char *v, bool *neg, uint64_t *mag)
{
    *neg = *v == '-';
    if (*v == '-' || *v == '+') v++;
    unsigned base = 10;
    if (v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
        base = 16;
        v += 2;
    }
    if (!*v) return false;
    uint64_t m = 0;
    for (; *v; v++) {
        unsigned dv = (unsigned)digit_value(*v);
        if (dv >= base || m > (UINT64_MAX - dv) / base) return false;
        m = m * base + dv;
    }
    *mag = m;
    return true;
}

/* Parses VALUE for a scalar parameter of dtype dt into *arg; false after an error. */
static bool bind_scalar(const char *pname, DType dt, const char *v, InterpArg *arg, Diag *d)
{
    arg->kind = IARG_SCALAR;
    if (dt_is_float(dt)) {
        char *end;
        errno = 0;
        double x = strtod(v, &end);
        if (!*v || *end || end == v) {
            diag_error_noloc(d, "argument '%s' is %s: '%s' is not a number", pname, dt_name[dt], v);
            return false;
        }
        if ((errno == ERANGE && isinf(x)) || (isfinite(x) && fabs(x) > float_max(dt))) {
            diag_error_noloc(d, "argument '%s': %s is out of range for %s (largest finite: %g)", pname, v,
                             dt_name[dt], float_max(dt));
            return false;
        }
        arg->f = x;
        return true;
    }
    if (dt == DT_I1) {
        if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0) arg->i = 1;
        else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0) arg->i = 0;
        else {
            diag_error_noloc(d, "argument '%s' is i1: give true, false, 1 or 0, not '%s'", pname, v);
            return false;
        }
        return true;
    }
    bool neg;
    uint64_t mag;
    if (!parse_magnitude(v, &neg, &mag)) {
        diag_error_noloc(d, "argument '%s' is %s: '%s' is not an integer", pname, dt_name[dt], v);
        return false;
    }
    int bits = dt_bits[dt];
    bool fits;
    if (dt_is_signed(dt)) {
        uint64_t lim = 1ull << (bits - 1);
        fits = neg ? mag <= lim : mag < lim;
        arg->i = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    } else {
        fits = (!neg || mag == 0) && (bits == 64 || mag < 1ull << bits);
        arg->i = (int64_t)mag;
    }
    if (!fits) {
        diag_error_noloc(d, "argument '%s': %s is out of range for %s", pname, v, dt_name[dt]);
        return false;
    }
    return true;
}

/* ---- buffers -------------------------------------------------------------------- */

/* The .npy dtype a buffer of parameter dtype dt is made of when tilec makes it. */
static DType storage_dt(DType dt)
{
    switch (dt) {
    case DT_BF16: return DT_U16;
    case DT_F8E4M3:
    case DT_F8E5M2: return DT_U8;
    default: return dt;
    }
}

/* Whether an array of dtype `have` may stand for elements of dtype `want`. */
static bool dtype_fits(DType want, DType have)
{
    return have == want || have == storage_dt(want) || (want == DT_F16 && have == DT_U16);
}

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Random elements of dtype dt (stored as storage_dt(dt)), never 0 except for i1. */
static void fill_random(NpyArray *a, DType dt, uint64_t seed, const char *name)
{
    uint64_t s = seed;
    for (const char *p = name; *p; p++) s = (s ^ (uint8_t)*p) * 0x100000001b3ull; /* FNV-1a over the name */
    int64_t n = npy_numel(a);
    int sz = dt_bytes(dt);
    uint8_t *out = a->data;
    for (int64_t i = 0; i < n; i++) {
        uint8_t *p = out + i * sz;
        uint64_t r = splitmix64(&s);
        if (dt == DT_I1) {
            *p = (uint8_t)(r & 1);
        } else if (dt_is_float(dt)) {
            double x;
            do x = (double)(splitmix64(&s) >> 11) * 0x1p-52 - 1.0;
            while (fp_round(dt, x) == 0.0);
            fp_store(dt, p, x);
        } else {
            int64_t v = dt_is_signed(dt) ? (int64_t)(1 + r % 63) * ((r >> 32) & 1 ? -1 : 1) : (int64_t)(1 + r % 127);
            memcpy(p, &v, (size_t)sz); /* little endian: the low bytes */
        }
    }
}

/* NAME=DTYPE[d0,d1,...]: true if spec has that form (then *ok says whether it was valid). */
static bool random_array(const char *pname, DType want, const char *spec, uint64_t seed, NpyArray *a, Diag *d,
                         bool *ok)
{
    const char *lb = strchr(spec, '[');
    size_t n = strlen(spec);
    if (!lb || spec[n - 1] != ']' || lb == spec) return false;
    for (const char *p = spec; p < lb; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9'))) return false;
    *ok = false;
    memset(a, 0, sizeof *a);
    DType dt;
    if (!dt_from_name(spec, (size_t)(lb - spec), &dt)) {
        diag_error_noloc(d, "argument '%s': unknown dtype '%.*s' in '%s'", pname, (int)(lb - spec), spec, spec);
        return true;
    }
    if (dt != want) {
        diag_error_noloc(d, "argument '%s' holds %s elements, but '%s' asks for %s", pname, dt_name[want], spec,
                         dt_name[dt]);
        return true;
    }
    const char *p = lb + 1;
    uint64_t bytes = (uint64_t)dt_bytes(dt);
    while (*p != ']') {
        char *end;
        if (a->ndim == NPY_MAXDIM || *p < '0' || *p > '9') goto bad_shape;
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (errno || v > (1ull << 40)) goto bad_shape;
        a->shape[a->ndim++] = (int64_t)v;
        if (v && bytes > (1ull << 40) / v) {
            diag_error_noloc(d, "argument '%s': '%s' is too large", pname, spec);
            return true;
        }
        bytes *= v;
        p = end;
        while (*p == ' ') p++;
        if (*p == ',') p++;
        else if (*p != ']') goto bad_shape;
        while (*p == ' ') p++;
    }
    if (a->ndim == 0 || p[1]) goto bad_shape;
    a->dt = storage_dt(dt);
    a->bytes = (size_t)bytes;
    a->data = malloc(a->bytes ? a->bytes : 1);
    if (!a->data) {
        diag_error_noloc(d, "argument '%s': out of memory for %zu bytes", pname, a->bytes);
        return true;
    }
    fill_random(a, dt, seed, pname);
    *ok = true;
    return true;
bad_shape:
    diag_error_noloc(d, "argument '%s': '%s' is not DTYPE[d0,d1,...] with dimensions in 0..2^40", pname, spec);
    return true;
}

static bool looks_numeric(const char *s)
{
    char *end;
    if (!*s) return false;
    (void)strtod(s, &end);
    return *end == 0;
}

/* NAME=PATH.npy or NAME=DTYPE[...] for a ptr<T> or tensor<T, N> parameter. */
static bool bind_buffer(const RunOpts *ro, const IrParam *p, const char *spec, uint32_t bufidx, Binding *b,
                        InterpArg *arg, Diag *d)
{
    DType want = p->ty.dt;
    char *ptype = type_text(p->ty);
    bool ok = false;
    if (!random_array(p->name, want, spec, ro->seed, &b->arr, d, &ok)) {
        char err[256];
        if (looks_numeric(spec)) {
            diag_error_noloc(d, "argument '%s' is %s: give PATH.npy or DTYPE[d0,...], not the number %s", p->name,
                             ptype, spec);
        } else if (!npy_read(spec, &b->arr, err, sizeof err)) {
            diag_error_noloc(d, "argument '%s': cannot read '%s': %s", p->name, spec, err);
        } else if (!dtype_fits(want, b->arr.dt)) {
            const char *alt = want == DT_F16 ? " or <u2" : "";
            diag_error_noloc(d, "argument '%s' is %s, but '%s' holds %s (%s); expected %s%s", p->name, ptype, spec,
                             dt_name[b->arr.dt], npy_descr(b->arr.dt), npy_descr(storage_dt(want)), alt);
        } else {
            ok = true;
        }
    }
    if (ok && p->ty.kind == TY_VIEW && b->arr.ndim != p->ty.rank) {
        diag_error_noloc(d, "argument '%s' is %s, but '%s' has rank %u", p->name, ptype, spec, b->arr.ndim);
        ok = false;
    }
    free(ptype);
    if (!ok) {
        npy_free(&b->arr);
        return false;
    }
    arg->buf = bufidx;
    arg->offset = 0;
    if (p->ty.kind == TY_VIEW) {
        arg->kind = IARG_VIEW;
        int64_t stride = 1;
        for (int i = (int)b->arr.ndim - 1; i >= 0; i--) {
            arg->shape[i] = b->arr.shape[i];
            arg->stride[i] = stride;
            stride *= b->arr.shape[i];
        }
    } else {
        arg->kind = IARG_PTR;
    }
    return true;
}

/* Binds every ARG; reports each mismatch.  Buffers go to bufs[0 .. *nbufs) in the order bound. */
static bool bind_all(const RunOpts *ro, IrFunc *f, Binding *binds, InterpArg *args, InterpBuf *bufs,
                     uint32_t *nbufs, Diag *d)
{
    int errors = d->nerrors;
    bool listed = false;
    for (uint32_t a = 0; a < ro->nargs; a++) {
        const char *arg = ro->args[a], *eq = strchr(arg, '=');
        int pi = run_find_param(f, arg, (size_t)(eq - arg));
        if (pi < 0) {
            diag_error_noloc(d, "kernel '%s' has no parameter '%.*s'", f->source_name, (int)(eq - arg), arg);
            if (!listed) note_params(f, d);
            listed = true;
            continue;
        }
        IrParam *p = &f->params[pi];
        Binding *b = &binds[pi];
        if (b->spec) {
            diag_error_noloc(d, "argument '%s' is bound twice ('%s' and '%s')", p->name, b->spec, arg);
            continue;
        }
        b->spec = arg;
        /* a failure has been reported; the loop goes on to report the others */
        if (run_is_buffer_param(p->ty)) {
            if (bind_buffer(ro, p, eq + 1, *nbufs, b, &args[pi], d))
                bufs[(*nbufs)++] = (InterpBuf){b->arr.data, b->arr.bytes, p->name};
        } else if (ir_ty_is_scalar(p->ty)) {
            bind_scalar(p->name, p->ty.dt, eq + 1, &args[pi], d);
        } else {
            char *t = type_text(p->ty);
            diag_error_noloc(d, "argument '%s': a parameter of type %s cannot be bound", p->name, t);
            free(t);
        }
    }
    StrBuf missing = {0};
    for (uint32_t i = 0; i < f->nparams; i++)
        if (!binds[i].spec) sb_printf(&missing, missing.len ? ", %s" : "%s", f->params[i].name);
    if (missing.len) {
        diag_error_noloc(d, "kernel '%s' needs an argument for: %s", f->source_name, missing.s);
        if (!listed) note_params(f, d);
    }
    sb_free(&missing);
    return d->nerrors == errors;
}

/* --out NAME=PATH: NAME must be a bound buffer argument, at most once. */
static bool check_outs(const RunOpts *ro, IrFunc *f, Diag *d)
{
    int errors = d->nerrors;
    for (uint32_t i = 0; i < ro->nouts; i++) {
        const OutReq *o = &ro->outs[i];
        int pi = run_find_param(f, o->name, strlen(o->name));
        if (pi < 0) diag_error_noloc(d, "--out %s: kernel '%s' has no parameter '%s'", o->name, f->source_name, o->name);
        else if (!run_is_buffer_param(f->params[pi].ty))
            diag_error_noloc(d, "--out %s: '%s' is a scalar, not a buffer", o->name, o->name);
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(ro->outs[j].name, o->name) == 0) diag_error_noloc(d, "--out %s is given twice", o->name);
    }
    return d->nerrors == errors;
}

/* --poison NAME / --zero NAME: NAME must be a buffer argument. */
static bool check_fills(const RunOpts *ro, IrFunc *f, Diag *d)
{
    int errors = d->nerrors;
    for (uint32_t i = 0; i < ro->nfills; i++) {
        const char *name = ro->fills[i].name, *opt = ro->fills[i].option;
        int pi = run_find_param(f, name, strlen(name));
        if (pi < 0) diag_error_noloc(d, "%s %s: kernel '%s' has no parameter '%s'", opt, name, f->source_name, name);
        else if (!run_is_buffer_param(f->params[pi].ty))
            diag_error_noloc(d, "%s %s: '%s' is a scalar, not a buffer", opt, name, name);
    }
    return d->nerrors == errors;
}

bool run_bind(const RunOpts *ro, IrFunc *f, KernelArgs *ka, Diag *d)
{
    ka->f = f;
    ka->binds = tl_xcalloc(f->nparams + 1, sizeof *ka->binds);
    ka->args = tl_xcalloc(f->nparams + 1, sizeof *ka->args);
    ka->bufs = tl_xcalloc(f->nparams + 1, sizeof *ka->bufs);
    ka->nbufs = 0;
    bool ok = check_outs(ro, f, d);
    ok = check_fills(ro, f, d) && ok;
    ok = bind_all(ro, f, ka->binds, ka->args, ka->bufs, &ka->nbufs, d) && ok;
    if (!ok) return false;
    for (uint32_t i = 0; i < ro->nfills; i++) {
        NpyArray *a = &ka->binds[run_find_param(f, ro->fills[i].name, strlen(ro->fills[i].name))].arr;
        memset(a->data, ro->fills[i].byte, a->bytes);
    }
    return true;
}

void run_args_free(KernelArgs *ka)
{
    if (ka->binds)
        for (uint32_t i = 0; i < ka->f->nparams; i++) npy_free(&ka->binds[i].arr);
    free(ka->binds);
    free(ka->args);
    free(ka->bufs);
    memset(ka, 0, sizeof *ka);
}

bool run_grid(const RunOpts *ro, const KernelArgs *ka, uint32_t grid[3], Diag *d)
{
    /* the kernel's contracts hold for any launch, with its grid or another */
    if (!interp_requires(ka->f, ka->args, d)) return false;
    if (ro->has_grid) {
        memcpy(grid, ro->grid, sizeof ro->grid);
        return true;
    }
    if (ka->f->grid == IR_NONE) {
        diag_error_noloc(d, "kernel '%s' has no grid(...) clause: give the grid with --grid X[,Y[,Z]]",
                         ka->f->source_name);
        return false;
    }
    return interp_grid(ka->f, ka->args, grid, d);
}

bool run_write_outs(const RunOpts *ro, const KernelArgs *ka, Diag *d)
{
    bool ok = true;
    for (uint32_t i = 0; i < ro->nouts; i++) {
        const OutReq *o = &ro->outs[i];
        const NpyArray *a = &ka->binds[run_find_param(ka->f, o->name, strlen(o->name))].arr;
        char err[256];
        if (!npy_write(o->path, a, err, sizeof err)) {
            diag_error_noloc(d, "--out %s: cannot write '%s': %s", o->name, o->path, err);
            ok = false;
        }
    }
    return ok;
}

/* ---- tilec run -------------------------------------------------------------------- */

static bool run_interp(const KernelArgs *ka, const uint32_t grid[3], Diag *d)
{
    InterpOptions iopt = {.print_out = stdout};
    fflush(stdout);
    bool ok = interp_run(ka->f, ka->bufs, ka->nbufs, ka->args, grid, &iopt, d);
    fflush(stdout);
    return ok;
}

/* Opens the GPU, compiles m (whose one kernel ka holds) for it and loads the cubin. */
bool run_device_prepare(RunOpts *ro, Source *s, IrModule *m, DevSession *ds)
{
    Diag *d = &s->diag;
    if (!dev_open(ds, d)) return false;
    if (!ro->drv.arch_given) ro->drv.arch = ds->arch;
    if (ro->drv.verbose)
        fprintf(stderr, "tilec: device %d: %s, compute capability %d.%d, %d SMs; compiling for %s\n",
                ds->info.ordinal, ds->info.name, ds->info.cc_major, ds->info.cc_minor, ds->info.sm_count,
                ro->drv.arch->name);
    CgResult r;
    if (!driver_compile(s, &ro->drv, &m, DRIVER_CUBIN, &r)) return false;
    bool ok = dev_load(ds, r.cubin, r.cubin_len, m->funcs[0]->name, d);
    cg_result_free(&r);
    return ok;
}

static bool run_device(RunOpts *ro, Source *s, IrModule *m, const KernelArgs *ka, const uint32_t grid[3])
{
    Diag *d = &s->diag;
    DevSession ds;
    bool ok = run_device_prepare(ro, s, m, &ds) && dev_upload(&ds, ka, d) &&
              dev_launch(&ds, ro->has_grid ? grid : NULL, d) && dev_download(&ds, ka, d);
    fflush(stdout); /* the kernel's print output */
    dev_close(&ds);
    return ok;
}

/* --check: the GPU's buffers (gpu) against the interpreter's (ref), argument by argument. */
static bool compare_buffers(const RunOpts *ro, const KernelArgs *gpu, const KernelArgs *ref, Diag *d)
{
    const IrFunc *f = gpu->f;
    bool all_ok = true;
    for (uint32_t i = 0; i < f->nparams; i++) {
        if (!run_is_buffer_param(f->params[i].ty)) continue;
        DType dt = (DType)f->params[i].ty.dt;
        const NpyArray *g = &gpu->binds[i].arr, *r = &ref->binds[i].arr;
        int64_t n = npy_numel(g);
        size_t esz = (size_t)dt_bytes(dt);
        int64_t bad = 0, first = -1, worst = -1;
        double worst_err = 0;
        for (int64_t k = 0; k < n; k++) {
            const uint8_t *pg = (const uint8_t *)g->data + (size_t)k * esz, *pr = (const uint8_t *)r->data + (size_t)k * esz;
            bool same;
            double err = 0;
            if (dt_is_float(dt)) {
                double a = fp_load(dt, pg), b = fp_load(dt, pr);
                if (isnan(a) || isnan(b)) same = isnan(a) && isnan(b);
                else if (a == b) same = true;
                else {
                    err = fabs(a - b);
                    same = err <= ro->atol + ro->rtol * fabs(b);
                }
            } else {
                same = memcmp(pg, pr, esz) == 0;
                if (!same) err = INFINITY;
            }
            if (!same) {
                if (first < 0) first = k;
                bad++;
            }
            if (err > worst_err || (worst < 0 && !same)) {
                worst_err = err;
                worst = k;
            }
        }
        char *t = type_text(f->params[i].ty);
        if (bad) {
            const uint8_t *pg = (const uint8_t *)g->data + (size_t)first * esz;
            const uint8_t *pr = (const uint8_t *)r->data + (size_t)first * esz;
            if (dt_is_float(dt))
                diag_error_noloc(d, "--check: argument '%s' (%s): %lld of %lld elements differ from the interpreter; "
                                 "first: element %lld, GPU %.9g, interpreter %.9g (tolerance %g + %g * |interpreter|)",
                                 f->params[i].name, t, (long long)bad, (long long)n, (long long)first,
                                 fp_load(dt, pg), fp_load(dt, pr), ro->atol, ro->rtol);
            else {
                int64_t a = 0, b = 0;
                memcpy(&a, pg, esz); /* little endian: the low bytes */
                memcpy(&b, pr, esz);
                a = int_wrap(dt, a);
                b = int_wrap(dt, b);
                diag_error_noloc(d, "--check: argument '%s' (%s): %lld of %lld elements differ from the interpreter; "
                                 "first: element %lld, GPU %lld, interpreter %lld (integers must agree bit for bit)",
                                 f->params[i].name, t, (long long)bad, (long long)n, (long long)first, (long long)a,
                                 (long long)b);
            }
            all_ok = false;
        } else {
            printf("check: %s (%s): %lld elements agree", f->params[i].name, t, (long long)n);
            if (dt_is_float(dt)) printf(" (max |GPU - interpreter| %.3g)", worst_err);
            printf("\n");
        }
        free(t);
    }
    fflush(stdout);
    return all_ok;
}

void run_copy_args(const KernelArgs *ka, KernelArgs *out)
{
    const IrFunc *f = ka->f;
    out->f = ka->f;
    out->binds = tl_xcalloc(f->nparams + 1, sizeof *out->binds);
    out->args = tl_xcalloc(f->nparams + 1, sizeof *out->args);
    out->bufs = tl_xcalloc(f->nparams + 1, sizeof *out->bufs);
    out->nbufs = ka->nbufs;
    memcpy(out->args, ka->args, f->nparams * sizeof *out->args);
    for (uint32_t i = 0; i < f->nparams; i++) {
        out->binds[i] = ka->binds[i];
        if (!ka->binds[i].arr.data) continue;
        NpyArray *a = &out->binds[i].arr;
        a->data = tl_xmalloc(a->bytes ? a->bytes : 1);
        memcpy(a->data, ka->binds[i].arr.data, a->bytes);
    }
    /* bufs[] lists the buffer arguments in the order bound; point each at its copy */
    for (uint32_t b = 0; b < ka->nbufs; b++) {
        out->bufs[b] = ka->bufs[b];
        for (uint32_t i = 0; i < f->nparams; i++)
            if (ka->binds[i].arr.data == ka->bufs[b].data) out->bufs[b].data = out->binds[i].arr.data;
    }
}

/* --check: the interpreter first (code generation then annotates the IR with
 * layouts), on a copy of the inputs; then the GPU; then every buffer compared. */
static bool run_check(RunOpts *ro, Source *s, IrModule *m, KernelArgs *ka, const uint32_t grid[3])
{
    KernelArgs ref;
    run_copy_args(ka, &ref);
    bool ok = run_interp(&ref, grid, &s->diag) && run_device(ro, s, m, ka, grid) &&
              compare_buffers(ro, ka, &ref, &s->diag);
    run_args_free(&ref);
    return ok;
}

static int run_kernel(RunOpts *ro, Source *s, IrModule *m)
{
    Diag *d = &s->diag;
    IrFunc *f = run_pick_kernel(m, ro->drv.kernel, d);
    if (!f) return 1;
    KernelArgs ka = {0};
    uint32_t grid[3];
    int rc = 1;
    if (run_bind(ro, f, &ka, d) && run_grid(ro, &ka, grid, d)) {
        if (ro->drv.verbose) {
            for (uint32_t i = 0; i < f->nparams; i++) fprintf(stderr, "tilec: %s\n", ka.binds[i].spec);
            fprintf(stderr, "tilec: grid (%u, %u, %u)\n", grid[0], grid[1], grid[2]);
        }
        bool ok = ro->check    ? run_check(ro, s, m, &ka, grid)
                  : ro->device ? run_device(ro, s, m, &ka, grid)
                               : run_interp(&ka, grid, d);
        if (ok && run_write_outs(ro, &ka, d)) rc = 0;
    }
    run_args_free(&ka);
    return rc;
}

int run_main(int argc, char **argv)
{
    RunOpts ro = {.seed = RUN_DEFAULT_SEED, .rtol = RUN_DEFAULT_RTOL, .atol = RUN_DEFAULT_ATOL};
    driver_opts_init(&ro.drv, "tilec run");
    int rc = run_parse_args(argc, argv, &ro);
    if (rc < 0) {
        Source s;
        IrModule *m = NULL;
        rc = 1;
        if (source_open(&s, &ro.drv) && driver_compile(&s, &ro.drv, &m, DRIVER_IR, NULL)) rc = run_kernel(&ro, &s, m);
        driver_free_ir(&s, m);
        source_close(&s);
    }
    run_opts_free(&ro);
    return rc;
}
