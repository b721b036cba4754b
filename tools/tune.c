/* tune.c: `tilec tune`, offline autotuning into the build (tune.h).
 *
 *   tilec tune FILE.tile --kernel K --interp|--device [--space NAME=V1,V2,...]...
 *              --shape 'ARG ...'... [--shapes FILE] [-o TABLE.json] [options]
 *
 * Steps:
 *   1. The search space: the kernel's tune(NAME = [v, ...], ...) clause (read from
 *      the syntax tree; compilation ignores it), each --space NAME=V1,V2 replacing
 *      NAME's values or adding NAME.  The candidates are the points of the product,
 *      the first parameter varying slowest.
 *   2. Compile each candidate (the shared -D values, then its own) to IR and to a
 *      cubin (for the device's arch with --device, else --arch).  One that fails
 *      (static_assert, too much shared memory, ...) is skipped with the first error.
 *   3. For each shape (the ARGs of `tilec run`: NAME=DTYPE[d0,...] random, never 0;
 *      NAME=PATH.npy; NAME=VALUE; buffers named by --poison start as 0xff bytes):
 *      run each candidate (interpreter or GPU) on the same inputs.  A candidate
 *      whose arguments do not bind, whose requires(...) fail or whose launch fails
 *      is skipped on that shape; one that leaves a poisoned element unwritten, or
 *      whose buffers differ from the reference beyond --rtol/--atol, is rejected.
 *      The reference: the interpreter's run of the first candidate that runs
 *      (--reference=interp), or the first candidate's own run that passes
 *      (--reference=first); auto (default): interp on --interp, and on --device
 *      for shapes whose buffers hold at most 2^20 elements, else first.
 *   4. --device: time each passing candidate as `tilec bench` does (bench_time_runs:
 *      --warmup launches, --runs timed ones with CUDA events, each after a 256 MiB
 *      write that empties L2); the best has the least median.  --interp: nothing is
 *      timed (the interpreter's speed says nothing of the GPU's): the table says
 *      "timed": false and the best is the first passing candidate.
 *   5. Write the table (JSON; the same inputs give the same bytes, but for the times).
 * The table's reader (tune_table_load) and its use by `tilec FILE --tune-table` are
 * at the end.
 */
#include "tune.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/fpconv.h"
#include "device.h"
#include "spec.h"

#define TUNE_DEFAULT_RUNS 20
#define TUNE_DEFAULT_WARMUP 3
#define TUNE_DEFAULT_TOL 1e-2
#define TUNE_MAX_CANDIDATES 4096
#define TUNE_AUTO_INTERP_ELEMS ((int64_t)1 << 20)
#define TUNE_MAX_KEY 64

static const char tune_usage_text[] =
    "usage: tilec tune FILE.tile --kernel NAME --interp|--device --shape 'ARG...'... [options]\n"
    "\n"
    "Tunes the compile-time parameters of one kernel: compiles it once per point of the search\n"
    "space, runs every candidate on every shape, checks it against a reference, times it on the\n"
    "GPU (--device), and writes a tuning table (JSON) naming the best -D set for each shape.\n"
    "`tilec FILE --emit=header --tune-table TABLE.json` turns the table into a launcher that\n"
    "picks the specialization by the arguments' shape.\n"
    "\n"
    "The search space:\n"
    "  the kernel's tune(NAME = [V, ...], ...) clause, and\n"
    "  --space NAME=V1,V2,...   the values of compile-time parameter NAME (replacing the clause's\n"
    "                           values for NAME); repeatable.  The candidates are every combination,\n"
    "                           the first parameter varying slowest\n"
    "Shapes (at least one):\n"
    "  --shape 'ARG ARG ...'    one problem: the kernel's arguments as `tilec run` takes them,\n"
    "                           separated by spaces: NAME=DTYPE[d0,...] (random data, never 0),\n"
    "                           NAME=PATH.npy, NAME=VALUE; repeatable\n"
    "  --shapes FILE            one shape a line ('#' starts a comment line)\n"
    "Options:\n"
    "  --interp                 run on the interpreter; nothing is timed: the table's best is the\n"
    "                           first candidate that passes (for tests, and to check a space)\n"
    "  --device                 run and time on the GPU (the kernel compiled for its arch unless\n"
    "                           --arch is given)\n"
    "  -o FILE                  write the table to FILE (default: standard output)\n"
    "  --poison NAME[,NAME...]  these buffers (the outputs) start as 0xff bytes; a candidate that\n"
    "                           leaves such an element unwritten is rejected\n"
    "  --zero NAME[,NAME...]    these buffers start as zeros\n"
    "  --reference=auto|interp|first\n"
    "                           what candidates are checked against: the interpreter's run of the\n"
    "                           first candidate, or the first candidate that passes (auto: interp\n"
    "                           with --interp, and with --device for shapes of at most 2^20\n"
    "                           buffer elements)\n"
    "  --rtol X, --atol X       the check's tolerance: |x - reference| <= atol + rtol * |reference|\n"
    "                           (default 1e-2 and 1e-2; integers must agree bit for bit)\n"
    "  --runs N, --warmup N     (--device) timed runs per candidate and shape (default 20), untimed\n"
    "                           ones before them (default 3); the median is compared\n"
    "  --no-flush               (--device) do not empty the L2 cache before each timed run\n"
    "  --seed N                 the seed of the random arguments (default 1)\n"
    "  -D NAME=VALUE            a compile-time parameter every candidate shares; repeatable\n"
    "  -O0..-O3, --arch=ARCH, -g, --no-lineinfo, --fast-math, --pass=...\n"
    "                           as for tilec run\n"
    "  -v                       print every candidate's result as it comes\n"
    "  -h, --help               print this help\n";

/* getopt codes of tilec tune's own options, past driver.h's and OPT_TUNE_TABLE. */
enum { OPT_SPACE = 1001, OPT_SHAPE, OPT_SHAPES, OPT_REFERENCE };

typedef enum { REF_AUTO, REF_INTERP, REF_FIRST } RefKind;

typedef struct Axis {           /* one parameter of the search space */
    const char *name;
    char **values;              /* malloc'd */
    uint32_t nvalues, cap;
} Axis;

typedef struct Shape {
    char *text;                 /* the ARGs joined by single spaces */
    char *store;                /* the ARGs, NUL-separated; args point into it */
    const char **args;
    uint32_t nargs, cap;
} Shape;

typedef struct TuneOpts {
    RunOpts ro;                 /* drv: the shared options and -D; seed, fills, rtol/atol, runs/warmup/flush */
    Axis *axes;                 /* --space, in order */
    uint32_t naxes, axcap;
    Shape *shapes;
    uint32_t nshapes, shapecap;
    const char *out_path;
    RefKind reference;
} TuneOpts;

typedef enum { RES_NONE, RES_OK, RES_SKIPPED, RES_REJECTED } ResStatus;

static const char *const res_names[] = {"none", "ok", "skipped", "rejected"};

typedef struct Result {         /* one candidate on one shape */
    ResStatus status;
    char *note;
    double median_us, min_us, max_us;
    bool timed;
} Result;

typedef struct Cand {
    FeDefine *defs;             /* its point of the space: names from the axes, canonical values once compiled */
    uint32_t ndefs;
    char *label;                /* "BM=64,BN=128" */
    DriverOpts drv;             /* the shared options with defs added (own defines array) */
    IrModule *m;                /* its IR, for binding and the interpreter; NULL when it did not compile */
    CgResult cg;                /* its cubin */
    char *note;                 /* why it did not compile */
} Cand;

/* ---- small helpers --------------------------------------------------------------- */

static char *xprintf(const char *fmt, ...) TL_PRINTF(1, 2);
static char *xprintf(const char *fmt, ...)
{
    char small[256];
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    size_t len = n > 0 ? (size_t)n : 0;
    char *s = tl_xmalloc(len + 1);
    if (len < sizeof small) memcpy(s, small, len + 1);
    else vsnprintf(s, len + 1, fmt, aq);
    va_end(aq);
    return s;
}

static void json_str(StrBuf *b, const char *s)
{
    sb_putc(b, '"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') sb_printf(b, "\\%c", ch);
        else if (ch == '\n') sb_puts(b, "\\n");
        else if (ch < 0x20) sb_printf(b, "\\u%04x", ch);
        else sb_putc(b, (char)ch);
    }
    sb_putc(b, '"');
}

/* Diagnostics of one candidate are collected, not printed: the first error becomes its note. */
typedef struct Quiet {
    FILE *out;
    bool color;
    int nerrors;
} Quiet;

static Quiet quiet(Diag *d)
{
    Quiet q = {d->out, d->color, d->nerrors};
    d->out = NULL;
    d->color = false;
    d->capture = true;
    d->buf.len = 0;
    if (d->buf.s) d->buf.s[0] = 0;
    return q;
}

/* Restores d; returns the first error line collected (malloc'd), or NULL when there was none. */
static char *loud(Diag *d, Quiet q)
{
    char *note = NULL;
    if (d->buf.s) {
        const char *e = strstr(d->buf.s, "error: ");
        if (e) {
            const char *start = e;
            while (start > d->buf.s && start[-1] != '\n') start--;
            const char *end = strchr(e, '\n');
            if (strncmp(start, "tilec: error: ", 14) == 0) start += 14;   /* no location: the message alone */
            note = driver_strndup(start, end ? (size_t)(end - start) : strlen(start));
        }
    }
    if (!note && d->nerrors > q.nerrors) note = tl_xstrdup("failed");
    d->out = q.out;
    d->color = q.color;
    d->capture = false;
    d->buf.len = 0;
    d->nerrors = q.nerrors;
    return note;
}

/* ---- the key: what a launcher reads of the arguments to choose --------------------- */

/* Every dimension of each tensor parameter, then each integer scalar, in parameter order.
 * The names ("A.shape[0]", "n") go to names[] (malloc'd each) when it is not NULL. */
static uint32_t key_of(const IrFunc *f, uint32_t *kp, int32_t *kd, char **names)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < f->nparams; i++) {
        IrType t = f->params[i].ty;
        if (t.kind == TY_VIEW) {
            for (int32_t j = 0; j < (int32_t)t.rank && n < TUNE_MAX_KEY; j++, n++) {
                kp[n] = i, kd[n] = j;
                if (names) names[n] = xprintf("%s.shape[%d]", f->params[i].name, j);
            }
        } else if (ir_ty_is_scalar(t) && !t.isptr && t.dt != DT_I1 &&
                   (dt_is_signed((DType)t.dt) || dt_is_unsigned((DType)t.dt)) && n < TUNE_MAX_KEY) {
            kp[n] = i, kd[n] = -1;
            if (names) names[n] = tl_xstrdup(f->params[i].name);
            n++;
        }
    }
    return n;
}

/* ---- command line ----------------------------------------------------------------- */

static bool is_value(const char *s, size_t n)
{
    if (n == 0) return false;
    size_t i = s[0] == '-' ? 1 : 0;
    if (i == n) return false;
    if (s[i] >= '0' && s[i] <= '9') {
        for (; i < n; i++)
            if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') || (s[i] >= 'A' && s[i] <= 'F') ||
                  s[i] == 'x' || s[i] == 'X'))
                return false;
        return true;
    }
    return i == 0 && driver_is_ident(s, n);
}

static void free_axis(Axis *a)
{
    for (uint32_t i = 0; i < a->nvalues; i++) free(a->values[i]);
    free(a->values);
    free((char *)a->name);
}

/* NAME=V1,V2,... into an axis; -1 after a usage error. */
static int add_axis(TuneOpts *to, const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (!eq || !driver_is_ident(arg, (size_t)(eq - arg)) || !eq[1])
        return driver_usage_error("tilec tune", "--space wants NAME=V1,V2,..., not '%s'", arg), -1;
    Axis ax = {driver_strndup(arg, (size_t)(eq - arg)), NULL, 0, 0};
    for (const char *p = eq + 1;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        bool dup = false;
        for (uint32_t i = 0; i < ax.nvalues; i++) dup = dup || (strlen(ax.values[i]) == n && !memcmp(ax.values[i], p, n));
        if (!is_value(p, n) || dup) {
            if (dup) driver_usage_error("tilec tune", "--space '%s' lists '%.*s' twice", arg, (int)n, p);
            else driver_usage_error("tilec tune", "--space '%s': '%.*s' is not an integer or a type name", arg, (int)n, p);
            for (uint32_t i = 0; i < ax.nvalues; i++) free(ax.values[i]);
            free(ax.values);
            free((char *)ax.name);
            return -1;
        }
        VEC_PUSH(ax.values, ax.nvalues, ax.cap, driver_strndup(p, n));
        if (!comma) break;
        p = comma + 1;
    }
    for (uint32_t i = 0; i < to->naxes; i++)
        if (strcmp(to->axes[i].name, ax.name) == 0) {
            driver_usage_error("tilec tune", "--space %s is given twice", ax.name);
            free_axis(&ax);
            return -1;
        }
    VEC_PUSH(to->axes, to->naxes, to->axcap, ax);
    return 1;
}

/* One shape from text (ARGs separated by blanks); `where` names it in messages.  -1 after an error. */
static int add_shape(TuneOpts *to, const char *text, const char *where)
{
    Shape sh = {0};
    sh.store = tl_xstrdup(text);
    StrBuf norm = {0};
    for (char *p = sh.store;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
        if (!*p) break;
        char *a = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') p++;
        bool last = !*p;
        *p = 0;
        const char *eq = strchr(a, '=');
        if (!eq || eq == a) {
            driver_usage_error("tilec tune", "%s: '%s' is not an argument (NAME=DTYPE[d0,...], NAME=PATH.npy or "
                               "NAME=VALUE)", where, a);
            free(sh.store);
            free(sh.args);
            sb_free(&norm);
            return -1;
        }
        VEC_PUSH(sh.args, sh.nargs, sh.cap, a);
        sb_printf(&norm, norm.len ? " %s" : "%s", a);
        if (last) break;
        p++;
    }
    if (!sh.nargs) {
        free(sh.store);
        free(sh.args);
        return driver_usage_error("tilec tune", "%s: an empty shape (give the kernel's arguments)", where), -1;
    }
    sh.text = norm.s;
    for (uint32_t i = 0; i < to->nshapes; i++)
        if (strcmp(to->shapes[i].text, sh.text) == 0) {
            driver_usage_error("tilec tune", "%s: the shape '%s' is given twice", where, sh.text);
            free(sh.store);
            free(sh.args);
            free(sh.text);
            return -1;
        }
    VEC_PUSH(to->shapes, to->nshapes, to->shapecap, sh);
    return 1;
}

static int read_shapes(TuneOpts *to, const char *path)
{
    size_t len;
    char *text = tl_read_file(path, &len);
    int err = errno;
    if (!text) return driver_usage_error("tilec tune", "--shapes: cannot read '%s': %s", path, strerror(err)), -1;
    int rc = 1, line = 0;
    for (char *p = text; rc > 0 && *p;) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = 0;
        line++;
        const char *q = p;
        while (*q == ' ' || *q == '\t' || *q == '\r') q++;
        if (*q && *q != '#') {
            char where[600];
            snprintf(where, sizeof where, "%s:%d", path, line);
            rc = add_shape(to, q, where);
        }
        if (!nl) break;
        p = nl + 1;
    }
    free(text);
    if (rc > 0 && to->nshapes == 0)
        return driver_usage_error("tilec tune", "--shapes: '%s' holds no shape", path), -1;
    return rc;
}

static void tune_opts_free(TuneOpts *to)
{
    for (uint32_t i = 0; i < to->naxes; i++) free_axis(&to->axes[i]);
    free(to->axes);
    for (uint32_t i = 0; i < to->nshapes; i++) {
        free(to->shapes[i].text);
        free(to->shapes[i].store);
        free(to->shapes[i].args);
    }
    free(to->shapes);
    run_opts_free(&to->ro);
}

/* -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, TuneOpts *to)
{
    static const struct option longopts[] = {
        DRIVER_COMMON_LONGOPTS,
        {"interp", no_argument, NULL, OPT_INTERP},
        {"device", no_argument, NULL, OPT_DEVICE},
        {"space", required_argument, NULL, OPT_SPACE},
        {"shape", required_argument, NULL, OPT_SHAPE},
        {"shapes", required_argument, NULL, OPT_SHAPES},
        {"reference", required_argument, NULL, OPT_REFERENCE},
        {"poison", required_argument, NULL, OPT_POISON},
        {"zero", required_argument, NULL, OPT_ZERO},
        {"rtol", required_argument, NULL, OPT_RTOL},
        {"atol", required_argument, NULL, OPT_ATOL},
        {"runs", required_argument, NULL, OPT_RUNS},
        {"warmup", required_argument, NULL, OPT_WARMUP},
        {"no-flush", no_argument, NULL, OPT_NO_FLUSH},
        {"seed", required_argument, NULL, OPT_SEED},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    const char *cmd = "tilec tune";
    RunOpts *ro = &to->ro;
    int c;
    driver_normalize_argv(argc, argv);
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:" DRIVER_COMMON_SHORTOPTS "h", longopts, NULL)) != -1) {
        int r = driver_common_opt(&ro->drv, c, optarg);
        if (r < 0) return 2;
        if (r > 0) continue;
        switch (c) {
        case 'o': to->out_path = optarg; break;
        case OPT_INTERP: ro->interp = true; break;
        case OPT_DEVICE: ro->device = true; break;
        case OPT_SPACE:
            if (add_axis(to, optarg) < 0) return 2;
            break;
        case OPT_SHAPE:
            if (add_shape(to, optarg, "--shape") < 0) return 2;
            break;
        case OPT_SHAPES:
            if (read_shapes(to, optarg) < 0) return 2;
            break;
        case OPT_REFERENCE:
            if (strcmp(optarg, "auto") == 0) to->reference = REF_AUTO;
            else if (strcmp(optarg, "interp") == 0) to->reference = REF_INTERP;
            else if (strcmp(optarg, "first") == 0) to->reference = REF_FIRST;
            else return driver_usage_error(cmd, "--reference wants auto, interp or first, not '%s'", optarg);
            break;
        case OPT_POISON:
        case OPT_ZERO: {
            const char *opt = c == OPT_POISON ? "--poison" : "--zero";
            for (const char *p = optarg;;) {
                const char *comma = strchr(p, ',');
                size_t n = comma ? (size_t)(comma - p) : strlen(p);
                if (n == 0) return driver_usage_error(cmd, "%s wants buffer names, not '%s'", opt, optarg);
                RunFill fill = {driver_strndup(p, n), opt, c == OPT_POISON ? 0xff : 0x00};
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
        case OPT_WARMUP:
        case OPT_SEED: {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 10);
            bool bad = !*optarg || *optarg == '-' || *end || errno;
            if (c == OPT_SEED) {
                if (bad) return driver_usage_error(cmd, "--seed wants a non-negative integer, not '%s'", optarg);
                ro->seed = v;
            } else if (bad || v > 1000000 || (c == OPT_RUNS && v < 1)) {
                return driver_usage_error(cmd, "--%s wants a count in %s..1000000, not '%s'",
                                          c == OPT_RUNS ? "runs" : "warmup", c == OPT_RUNS ? "1" : "0", optarg);
            } else {
                *(c == OPT_RUNS ? &ro->runs : &ro->warmup) = (uint32_t)v;
            }
            break;
        }
        case OPT_NO_FLUSH: ro->flush = false; break;
        case 'h':
        case OPT_HELP: fputs(tune_usage_text, stdout); return 0;
        default: return driver_bad_option(cmd, c, argv);
        }
    }
    if (optind >= argc) return driver_usage_error(cmd, "no input file");
    if (argc - optind > 1)
        return driver_usage_error(cmd, "more than one input file ('%s', '%s'); give shapes with --shape 'ARG ...'",
                                  argv[optind], argv[optind + 1]);
    ro->drv.input = argv[optind];
    if (!driver_has_suffix(ro->drv.input, ".tile"))
        return driver_usage_error(cmd, "'%s': tilec tune takes a .tile source (its compile-time parameters are "
                                  "what it tunes)", ro->drv.input);
    if (!ro->drv.kernel) return driver_usage_error(cmd, "say which kernel to tune: --kernel NAME");
    if (!ro->interp && !ro->device) return driver_usage_error(cmd, "say where to run the candidates: --interp or --device");
    if (ro->interp && ro->device) return driver_usage_error(cmd, "--interp and --device exclude each other");
    if (to->nshapes == 0) return driver_usage_error(cmd, "no shape: give --shape 'ARG ARG ...' or --shapes FILE");
    return -1;
}

/* ---- the search space -------------------------------------------------------------- */

/* The kernel's declaration in the syntax tree; NULL after an error. */
static const AstNode *find_kernel(const Ast *ast, const char *name, Diag *d)
{
    const char **names = tl_xcalloc(ast->ndecls + 1, sizeof *names);
    size_t n = 0;
    for (uint32_t i = 0; i < ast->ndecls; i++) {
        if (ast->decls[i]->kind != AST_KERNEL) continue;
        if (strcmp(ast->decls[i]->name, name) == 0) {
            free(names);
            return ast->decls[i];
        }
        names[n++] = ast->decls[i]->name;
    }
    diag_unknown_kernel(d, name, names, n);
    free(names);
    return NULL;
}

static char *literal_text(const AstNode *v)
{
    if (v->kind == AST_NAME) return tl_xstrdup(v->name);
    if (v->kind == AST_INT) return xprintf("%llu", (unsigned long long)v->uval);
    return xprintf("-%llu", (unsigned long long)v->a->uval); /* AST_UNARY '-' of AST_INT (the parser checked) */
}

/* The space: the tune(...) clause of k, with the --space axes replacing or adding parameters.
 * False after an error. */
static bool build_space(TuneOpts *to, const AstNode *k, Axis **out, uint32_t *nout, Diag *d)
{
    Axis *axes = NULL;
    uint32_t n = 0, cap = 0;
    for (uint32_t i = 0; i < k->ntune; i++) {
        const AstNode *t = k->tune[i];
        Axis ax = {tl_xstrdup(t->name), NULL, 0, 0};
        for (uint32_t j = 0; j < t->nlist; j++) VEC_PUSH(ax.values, ax.nvalues, ax.cap, literal_text(t->list[j]));
        VEC_PUSH(axes, n, cap, ax);
    }
    bool ok = true;
    for (uint32_t i = 0; i < to->naxes; i++) {
        const Axis *src = &to->axes[i];
        bool known = false;
        for (uint32_t j = 0; j < k->ncparams; j++) known = known || strcmp(k->cparams[j].name, src->name) == 0;
        if (!known) {
            StrBuf list = {0};
            for (uint32_t j = 0; j < k->ncparams; j++) sb_printf(&list, j ? ", %s" : "%s", k->cparams[j].name);
            diag_error_noloc(d, "--space %s: kernel '%s' has no compile-time parameter '%s' (it has: %s)", src->name,
                             k->name, src->name, list.s ? list.s : "none");
            sb_free(&list);
            ok = false;
            continue;
        }
        Axis ax = {tl_xstrdup(src->name), NULL, 0, 0};
        for (uint32_t j = 0; j < src->nvalues; j++) VEC_PUSH(ax.values, ax.nvalues, ax.cap, tl_xstrdup(src->values[j]));
        uint32_t at = n;
        for (uint32_t j = 0; j < n; j++)
            if (strcmp(axes[j].name, ax.name) == 0) at = j;
        if (at < n) {
            free_axis(&axes[at]);
            axes[at] = ax;
        } else {
            VEC_PUSH(axes, n, cap, ax);
        }
    }
    for (uint32_t i = 0; ok && i < n; i++)
        for (uint32_t j = 0; j < to->ro.drv.ndefines; j++)
            if (strcmp(to->ro.drv.defines[j].name, axes[i].name) == 0) {
                diag_error_noloc(d, "-D %s=%s fixes a parameter the search space varies (%s)", axes[i].name,
                                 to->ro.drv.defines[j].value, axes[i].name);
                ok = false;
            }
    if (ok && n == 0) {
        diag_error_noloc(d, "kernel '%s' has no search space: give --space NAME=V1,V2,... or a tune(...) clause",
                         k->name);
        ok = false;
    }
    uint64_t count = 1;
    for (uint32_t i = 0; ok && i < n; i++) {
        count *= axes[i].nvalues;
        if (count > TUNE_MAX_CANDIDATES) {
            diag_error_noloc(d, "the search space has more than %d candidates: narrow it", TUNE_MAX_CANDIDATES);
            ok = false;
        }
    }
    *out = axes;
    *nout = n;
    return ok;
}

/* ---- candidates ---------------------------------------------------------------------- */

static const char *spec_value(const IrFunc *f, const char *name)
{
    for (uint32_t i = 0; i < f->nspecs; i++)
        if (strcmp(f->specs[i].name, name) == 0) return f->specs[i].value;
    return NULL;
}

static void set_label(Cand *c)
{
    StrBuf b = {0};
    for (uint32_t i = 0; i < c->ndefs; i++) sb_printf(&b, i ? ",%s=%s" : "%s=%s", c->defs[i].name, c->defs[i].value);
    free(c->label);
    c->label = b.s;
}

/* Candidate number idx (mixed radix over the axes, the first slowest), compiled. */
static void make_cand(TuneOpts *to, Source *s, const Axis *axes, uint32_t naxes, uint64_t idx, Cand *c)
{
    memset(c, 0, sizeof *c);
    c->defs = tl_xcalloc(naxes, sizeof *c->defs);
    c->ndefs = naxes;
    for (uint32_t i = naxes; i-- > 0;) {
        c->defs[i] = (FeDefine){axes[i].name, tl_xstrdup(axes[i].values[idx % axes[i].nvalues])};
        idx /= axes[i].nvalues;
    }
    set_label(c);
    c->drv = to->ro.drv;
    c->drv.defines = NULL;
    c->drv.ndefines = c->drv.definecap = 0;
    for (uint32_t i = 0; i < to->ro.drv.ndefines; i++) VEC_PUSH(c->drv.defines, c->drv.ndefines, c->drv.definecap, to->ro.drv.defines[i]);
    for (uint32_t i = 0; i < naxes; i++) VEC_PUSH(c->drv.defines, c->drv.ndefines, c->drv.definecap, c->defs[i]);
    Quiet q = quiet(&s->diag);
    bool ok = driver_compile(s, &c->drv, &c->m, DRIVER_IR, NULL) && c->m && c->m->nfuncs == 1;
    if (ok) {
        IrModule *m2 = NULL;   /* a second IR for the cubin: code generation annotates its IR */
        ok = driver_compile(s, &c->drv, &m2, DRIVER_CUBIN, &c->cg);
        driver_free_ir(s, m2);
    }
    c->note = loud(&s->diag, q);
    if (!ok && !c->note) c->note = tl_xstrdup("did not compile");
    if (!ok) {
        driver_free_ir(s, c->m);
        c->m = NULL;
        return;
    }
    free(c->note);
    c->note = NULL;
    const IrFunc *f = c->m->funcs[0];   /* the values as the compiler spells them (0x40 -> 64) */
    for (uint32_t i = 0; i < naxes; i++) {
        const char *v = spec_value(f, c->defs[i].name);
        if (v) {
            free((char *)c->defs[i].value);
            c->defs[i].value = tl_xstrdup(v);
        }
    }
    set_label(c);
}

static void free_cand(Source *s, Cand *c)
{
    for (uint32_t i = 0; i < c->ndefs; i++) free((char *)c->defs[i].value);
    free(c->defs);
    free(c->drv.defines);
    free(c->label);
    free(c->note);
    driver_free_ir(s, c->m);
    cg_result_free(&c->cg);
}

/* ---- running and checking ----------------------------------------------------------- */

static bool all_ff(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0xff) return false;
    return true;
}

/* A note when a poisoned buffer still holds a poisoned element, else NULL. */
static char *unwritten(const RunOpts *ro, const KernelArgs *ka)
{
    for (uint32_t i = 0; i < ro->nfills; i++) {
        if (ro->fills[i].byte != 0xff) continue;
        int pi = run_find_param(ka->f, ro->fills[i].name, strlen(ro->fills[i].name));
        if (pi < 0) continue;
        const NpyArray *a = &ka->binds[pi].arr;
        size_t esz = (size_t)dt_bytes((DType)ka->f->params[pi].ty.dt);
        int64_t n = npy_numel(a), bad = 0, first = -1;
        for (int64_t k = 0; k < n; k++)
            if (all_ff((const uint8_t *)a->data + (size_t)k * esz, esz)) {
                if (first < 0) first = k;
                bad++;
            }
        if (bad)
            return xprintf("left %lld of %lld elements of '%s' unwritten (still poisoned; the first: element %lld)",
                           (long long)bad, (long long)n, ro->fills[i].name, (long long)first);
    }
    return NULL;
}

/* A note on the first buffer of a that differs from ref's beyond the tolerance, else NULL. */
static char *differs(const RunOpts *ro, const KernelArgs *a, const KernelArgs *ref, const char *refname)
{
    const IrFunc *f = a->f;
    for (uint32_t i = 0; i < f->nparams; i++) {
        if (!run_is_buffer_param(f->params[i].ty)) continue;
        DType dt = (DType)f->params[i].ty.dt;
        const NpyArray *x = &a->binds[i].arr, *r = &ref->binds[i].arr;
        if (x->bytes != r->bytes) return xprintf("'%s' has another size than in the reference", f->params[i].name);
        size_t esz = (size_t)dt_bytes(dt);
        int64_t n = npy_numel(x), bad = 0, first = -1;
        for (int64_t k = 0; k < n; k++) {
            const uint8_t *px = (const uint8_t *)x->data + (size_t)k * esz, *pr = (const uint8_t *)r->data + (size_t)k * esz;
            bool same;
            if (dt_is_float(dt)) {
                double u = fp_load(dt, px), v = fp_load(dt, pr);
                same = isnan(u) || isnan(v) ? isnan(u) && isnan(v) : fabs(u - v) <= ro->atol + ro->rtol * fabs(v);
            } else {
                same = memcmp(px, pr, esz) == 0;
            }
            if (!same && first < 0) first = k;
            bad += !same;
        }
        if (!bad) continue;
        const uint8_t *px = (const uint8_t *)x->data + (size_t)first * esz, *pr = (const uint8_t *)r->data + (size_t)first * esz;
        if (dt_is_float(dt))
            return xprintf("'%s': %lld of %lld elements differ from %s; the first: element %lld, %.6g against %.6g "
                           "(tolerance %g + %g * |reference|)",
                           f->params[i].name, (long long)bad, (long long)n, refname, (long long)first, fp_load(dt, px),
                           fp_load(dt, pr), ro->atol, ro->rtol);
        int64_t u = 0, v = 0;
        memcpy(&u, px, esz);
        memcpy(&v, pr, esz);
        return xprintf("'%s': %lld of %lld elements differ from %s; the first: element %lld, %lld against %lld",
                       f->params[i].name, (long long)bad, (long long)n, refname, (long long)first,
                       (long long)int_wrap(dt, u), (long long)int_wrap(dt, v));
    }
    return NULL;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static bool interp(KernelArgs *ka, const uint32_t grid[3], Diag *d)
{
    InterpOptions iopt = {.print_out = stderr};
    return interp_run(ka->f, ka->bufs, ka->nbufs, ka->args, grid, &iopt, d);
}

/* Everything a shape's runs share. */
typedef struct ShapeRun {
    TuneOpts *to;
    Source *s;
    DevSession *ds;             /* --device */
    const Shape *shape;
    RefKind ref_kind;           /* REF_INTERP or REF_FIRST for this shape */
    KernelArgs ref;             /* the reference, once there is one (ref.f set) */
    KernelArgs inputs;          /* the arguments as first bound (inputs.f set): candidates whose
                                   parameters have the same types start from copies of them */
    char *ref_name;             /* "the interpreter's run of BM=64" / "BM=64" */
    int64_t key[TUNE_MAX_KEY];
    uint32_t nkey;
    bool have_key;
} ShapeRun;

static int64_t buffer_elems(const KernelArgs *ka)
{
    int64_t n = 0;
    for (uint32_t i = 0; i < ka->f->nparams; i++)
        if (ka->binds[i].arr.data) n += npy_numel(&ka->binds[i].arr);
    return n;
}

/* Runs candidate c on the shape of sr; fills *res. */
static void run_cand(ShapeRun *sr, Cand *c, Result *res)
{
    TuneOpts *to = sr->to;
    Diag *d = &sr->s->diag;
    memset(res, 0, sizeof *res);
    if (!c->m) {
        res->status = RES_SKIPPED;
        res->note = tl_xstrdup(c->note);
        return;
    }
    RunOpts ro = to->ro;
    ro.drv = c->drv;
    ro.args = sr->shape->args;
    ro.nargs = sr->shape->nargs;
    ro.has_grid = false;
    IrFunc *f = c->m->funcs[0];
    KernelArgs ka = {0};
    uint32_t grid[3];
    bool same = sr->inputs.f && sr->inputs.f->nparams == f->nparams;
    for (uint32_t i = 0; same && i < f->nparams; i++) same = ir_ty_eq(sr->inputs.f->params[i].ty, f->params[i].ty);
    Quiet q = quiet(d);
    bool ok;
    if (same) {   /* the same random data as a new binding would make, without making it again */
        run_copy_args(&sr->inputs, &ka);
        ka.f = f;
        ok = run_grid(&ro, &ka, grid, d);
    } else {
        ok = run_bind(&ro, f, &ka, d);
        if (ok && !sr->inputs.f) run_copy_args(&ka, &sr->inputs);
        ok = ok && run_grid(&ro, &ka, grid, d);
    }
    char *note = loud(d, q);
    if (!ok) {
        res->status = RES_SKIPPED;
        res->note = note ? note : tl_xstrdup("the arguments do not fit");
        run_args_free(&ka);
        return;
    }
    free(note);
    if (!sr->have_key) {
        uint32_t kp[TUNE_MAX_KEY];
        int32_t kd[TUNE_MAX_KEY];
        sr->nkey = key_of(f, kp, kd, NULL);
        for (uint32_t i = 0; i < sr->nkey; i++)
            sr->key[i] = kd[i] >= 0 ? ka.args[kp[i]].shape[kd[i]] : ka.args[kp[i]].i;
        sr->have_key = true;
        if (sr->ref_kind == REF_AUTO)
            sr->ref_kind = to->ro.interp || buffer_elems(&ka) <= TUNE_AUTO_INTERP_ELEMS ? REF_INTERP : REF_FIRST;
    }
    /* the interpreter's reference, from the first candidate that binds (on --device) */
    if (!to->ro.interp && sr->ref_kind == REF_INTERP && !sr->ref.f) {
        KernelArgs r;
        run_copy_args(&ka, &r);
        q = quiet(d);
        ok = interp(&r, grid, d);
        note = loud(d, q);
        if (!ok && !note) note = tl_xstrdup("the run failed");
        if (ok && !note) note = unwritten(&ro, &r);
        if (note) {
            res->status = RES_REJECTED;
            res->note = xprintf("on the interpreter: %s", note);
            free(note);
            run_args_free(&r);
            run_args_free(&ka);
            return;
        }
        sr->ref = r;
        sr->ref_name = xprintf("the interpreter's run of %s", c->label);
    }
    /* the run */
    q = quiet(d);
    if (to->ro.interp) {
        ok = interp(&ka, grid, d);
    } else if (!dev_load(sr->ds, c->cg.cubin, c->cg.cubin_len, f->name, d) || !dev_upload(sr->ds, &ka, d) ||
               !dev_launch(sr->ds, NULL, d)) {
        /* it does not launch (too much shared memory for the device, ...): not a wrong result */
        note = loud(d, q);
        res->status = RES_SKIPPED;
        res->note = note ? note : tl_xstrdup("cannot launch");
        dev_close(sr->ds);
        run_args_free(&ka);
        return;
    } else {
        ok = dev_download(sr->ds, &ka, d);
    }
    note = loud(d, q);
    if (!ok && !note) note = tl_xstrdup("the run failed");
    if (ok && !note) note = unwritten(&ro, &ka);
    if (ok && !note && sr->ref.f) note = differs(&ro, &ka, &sr->ref, sr->ref_name);
    if (note) {
        res->status = RES_REJECTED;
        res->note = note;
        if (!to->ro.interp) dev_close(sr->ds);
        run_args_free(&ka);
        return;
    }
    res->status = RES_OK;
    if (!to->ro.interp) {
        float *times = tl_xcalloc(ro.runs, sizeof *times);
        q = quiet(d);
        ok = bench_time_runs(&ro, sr->ds, NULL, times, d);
        note = loud(d, q);
        if (ok) {
            qsort(times, ro.runs, sizeof *times, cmp_float);
            uint32_t n = ro.runs;
            double med = n % 2 ? times[n / 2] : 0.5 * ((double)times[n / 2 - 1] + times[n / 2]);
            res->median_us = med * 1e3;
            res->min_us = times[0] * 1e3;
            res->max_us = times[n - 1] * 1e3;
            res->timed = true;
            free(note);
        } else {
            res->status = RES_REJECTED;
            res->note = xprintf("timing failed: %s", note ? note : "?");
            free(note);
        }
        free(times);
        dev_close(sr->ds);
    }
    if (!sr->ref.f && res->status == RES_OK) {   /* the first that passes is the reference */
        sr->ref = ka;
        sr->ref_name = xprintf("the reference (%s)", c->label);
        return;
    }
    run_args_free(&ka);
}

/* ---- the table ------------------------------------------------------------------------ */

static void json_defs(StrBuf *b, const FeDefine *defs, uint32_t n)
{
    sb_putc(b, '{');
    for (uint32_t i = 0; i < n; i++) {
        if (i) sb_puts(b, ", ");
        json_str(b, defs[i].name);
        sb_puts(b, ": ");
        json_str(b, defs[i].value);
    }
    sb_putc(b, '}');
}

static void write_table(StrBuf *b, const TuneOpts *to, const DevSession *ds, const Axis *axes, uint32_t naxes,
                        const Cand *cands, uint32_t ncands, Result *const *res, const int32_t *best,
                        ShapeRun *runs, char **keynames, uint32_t nkey)
{
    const DriverOpts *o = &to->ro.drv;
    sb_puts(b, "{\n  \"tilec_tune_table\": 1,\n  \"source\": ");
    json_str(b, o->input);
    sb_puts(b, ",\n  \"kernel\": ");
    json_str(b, o->kernel);
    sb_puts(b, ",\n  \"tuned_on\": ");
    json_str(b, to->ro.interp ? "interpreter" : ds->info.name);
    sb_puts(b, ",\n  \"arch\": ");
    json_str(b, o->arch->name);
    sb_printf(b, ",\n  \"timed\": %s", to->ro.interp ? "false" : "true");
    if (!to->ro.interp)
        sb_printf(b, ",\n  \"runs\": %u, \"warmup\": %u, \"l2_flush\": %s", to->ro.runs, to->ro.warmup,
                  to->ro.flush ? "true" : "false");
    sb_printf(b, ",\n  \"rtol\": %g, \"atol\": %g, \"seed\": %llu", to->ro.rtol, to->ro.atol,
              (unsigned long long)to->ro.seed);
    sb_puts(b, ",\n  \"defines\": ");
    json_defs(b, o->defines, o->ndefines);
    sb_puts(b, ",\n  \"space\": {");
    for (uint32_t i = 0; i < naxes; i++) {
        sb_puts(b, i ? ", " : "");
        json_str(b, axes[i].name);
        sb_puts(b, ": [");
        for (uint32_t j = 0; j < axes[i].nvalues; j++) {
            sb_puts(b, j ? ", " : "");
            json_str(b, axes[i].values[j]);
        }
        sb_putc(b, ']');
    }
    sb_puts(b, "},\n  \"key\": [");
    for (uint32_t i = 0; i < nkey; i++) {
        sb_puts(b, i ? ", " : "");
        json_str(b, keynames[i]);
    }
    sb_puts(b, "],\n  \"entries\": [");
    for (uint32_t s = 0; s < to->nshapes; s++) {
        sb_puts(b, s ? ",\n    {\n      \"shape\": " : "\n    {\n      \"shape\": ");
        json_str(b, to->shapes[s].text);
        sb_puts(b, ",\n      \"key\": [");
        for (uint32_t i = 0; i < runs[s].nkey; i++) sb_printf(b, i ? ", %lld" : "%lld", (long long)runs[s].key[i]);
        sb_puts(b, "],\n      \"best\": ");
        json_defs(b, cands[best[s]].defs, cands[best[s]].ndefs);
        sb_puts(b, ",\n      \"candidates\": [");
        for (uint32_t c = 0; c < ncands; c++) {
            const Result *r = &res[s][c];
            sb_puts(b, c ? ",\n        {\"defines\": " : "\n        {\"defines\": ");
            json_defs(b, cands[c].defs, cands[c].ndefs);
            sb_printf(b, ", \"status\": \"%s\"", res_names[r->status]);
            if (r->timed)
                sb_printf(b, ", \"median_us\": %.3f, \"min_us\": %.3f, \"max_us\": %.3f", r->median_us, r->min_us,
                          r->max_us);
            if (r->note) {
                sb_puts(b, ", \"note\": ");
                json_str(b, r->note);
            }
            sb_putc(b, '}');
        }
        sb_puts(b, "\n      ]\n    }");
    }
    sb_puts(b, "\n  ]\n}\n");
}

static bool write_file(const char *path, const StrBuf *b, Diag *d)
{
    bool to_stdout = !path || strcmp(path, "-") == 0;
    FILE *f = to_stdout ? stdout : fopen(path, "wb");
    if (!f) {
        diag_error_noloc(d, "cannot write '%s': %s", path, strerror(errno));
        return false;
    }
    bool ok = fwrite(b->s, 1, b->len, f) == b->len;
    ok = (to_stdout ? fflush(f) : fclose(f)) == 0 && ok;
    if (!ok) diag_error_noloc(d, "cannot write '%s': %s", to_stdout ? "<stdout>" : path, strerror(errno));
    return ok;
}

static void progress(const TuneOpts *to, uint32_t s, const Cand *c, const Result *r)
{
    if (!to->ro.drv.verbose && r->status == RES_OK) return;
    fprintf(stderr, "tilec tune: shape %u, %s: %s", s + 1, c->label, res_names[r->status]);
    if (r->timed) fprintf(stderr, ", median %.3f us", r->median_us);
    if (r->note) fprintf(stderr, ": %s", r->note);
    fputc('\n', stderr);
}

static int tune(TuneOpts *to)
{
    Source s;
    if (!source_open(&s, &to->ro.drv)) {
        source_close(&s);
        return 1;
    }
    Diag *d = &s.diag;
    int rc = 1;
    Axis *axes = NULL;
    uint32_t naxes = 0, ncands = 0;
    Cand *cands = NULL;
    Result **res = NULL;
    ShapeRun *runs = NULL;
    int32_t *best = NULL;
    DevSession ds;
    memset(&ds, 0, sizeof ds);
    bool dev_opened = false;
    Ast *ast = ast_parse(s.path, s.text, s.len, d);
    const AstNode *k = ast && d->nerrors == 0 ? find_kernel(ast, to->ro.drv.kernel, d) : NULL;
    if (!k || !build_space(to, k, &axes, &naxes, d)) goto out;
    /* the device first: its arch is what the candidates compile for */
    if (to->ro.device) {
        if (!dev_open(&ds, d)) goto out;
        dev_opened = true;
        if (!to->ro.drv.arch_given) to->ro.drv.arch = ds.arch;
        fprintf(stderr, "tilec tune: %s (compute capability %d.%d, %d SMs), compiling for %s\n", ds.info.name,
                ds.info.cc_major, ds.info.cc_minor, ds.info.sm_count, to->ro.drv.arch->name);
    }
    ncands = 1;
    for (uint32_t i = 0; i < naxes; i++) ncands *= axes[i].nvalues;
    cands = tl_xcalloc(ncands, sizeof *cands);
    uint32_t nvalid = 0;
    for (uint32_t c = 0; c < ncands; c++) {
        make_cand(to, &s, axes, naxes, c, &cands[c]);
        if (cands[c].m) nvalid++;
        else fprintf(stderr, "tilec tune: %s: skipped: %s\n", cands[c].label, cands[c].note);
    }
    fprintf(stderr, "tilec tune: %s: %u of %u candidates compiled; %u shape%s\n", to->ro.drv.kernel, nvalid, ncands,
            to->nshapes, to->nshapes == 1 ? "" : "s");
    bool poisoned = false;
    for (uint32_t i = 0; i < to->ro.nfills; i++) poisoned = poisoned || to->ro.fills[i].byte == 0xff;
    if (!poisoned)
        fprintf(stderr, "tilec tune: note: no --poison: an output a candidate leaves unwritten keeps its random data, "
                        "and only the comparison with the reference can catch it\n");
    if (!nvalid) {
        diag_error_noloc(d, "no candidate of kernel '%s' compiled (the first: %s: %s)", to->ro.drv.kernel,
                         cands[0].label, cands[0].note);
        goto out;
    }
    res = tl_xcalloc(to->nshapes, sizeof *res);
    runs = tl_xcalloc(to->nshapes, sizeof *runs);
    best = tl_xcalloc(to->nshapes, sizeof *best);
    bool all = true;
    for (uint32_t sh = 0; sh < to->nshapes; sh++) {
        ShapeRun *sr = &runs[sh];
        sr->to = to;
        sr->s = &s;
        sr->ds = &ds;
        sr->shape = &to->shapes[sh];
        sr->ref_kind = to->reference;
        res[sh] = tl_xcalloc(ncands, sizeof *res[sh]);
        best[sh] = -1;
        for (uint32_t c = 0; c < ncands; c++) {
            run_cand(sr, &cands[c], &res[sh][c]);
            const Result *r = &res[sh][c];
            if (cands[c].m) progress(to, sh, &cands[c], r);
            if (r->status != RES_OK) continue;
            if (best[sh] < 0 || (r->timed && r->median_us < res[sh][best[sh]].median_us)) best[sh] = (int32_t)c;
        }
        if (best[sh] < 0) {
            const char *why = "?";
            for (uint32_t c = ncands; c-- > 0;)
                if (res[sh][c].note) why = res[sh][c].note;
            diag_error_noloc(d, "shape %u ('%s'): no candidate passed (the first note: %s)", sh + 1,
                             to->shapes[sh].text, why);
            all = false;
        } else {
            fprintf(stderr, "tilec tune: shape %u (%s): best %s", sh + 1, to->shapes[sh].text, cands[best[sh]].label);
            if (res[sh][best[sh]].timed) fprintf(stderr, ", %.3f us", res[sh][best[sh]].median_us);
            fputc('\n', stderr);
        }
        run_args_free(&sr->ref);
        run_args_free(&sr->inputs);
        free(sr->ref_name);
        sr->ref_name = NULL;
    }
    for (uint32_t a = 0; all && a < to->nshapes; a++)
        for (uint32_t b = 0; b < a; b++)
            if (runs[a].nkey == runs[b].nkey && !memcmp(runs[a].key, runs[b].key, runs[a].nkey * sizeof runs[a].key[0])) {
                diag_error_noloc(d, "shapes %u and %u have the same key (the tensors' dimensions and integer scalars): "
                                 "a launcher could not tell them apart", b + 1, a + 1);
                all = false;
            }
    if (!all) goto out;
    /* the key's names, from a candidate that compiled */
    const IrFunc *f = NULL;
    for (uint32_t c = 0; c < ncands && !f; c++)
        if (cands[c].m) f = cands[c].m->funcs[0];
    uint32_t kp[TUNE_MAX_KEY];
    int32_t kd[TUNE_MAX_KEY];
    char *keynames[TUNE_MAX_KEY];
    uint32_t nkey = key_of(f, kp, kd, keynames);
    StrBuf table = {0};
    write_table(&table, to, &ds, axes, naxes, cands, ncands, res, best, runs, keynames, nkey);
    for (uint32_t i = 0; i < nkey; i++) free(keynames[i]);
    if (write_file(to->out_path, &table, d)) rc = 0;
    sb_free(&table);
out:
    if (dev_opened) dev_close(&ds);
    if (res)
        for (uint32_t sh = 0; sh < to->nshapes; sh++) {
            for (uint32_t c = 0; res[sh] && c < ncands; c++) free(res[sh][c].note);
            free(res[sh]);
        }
    free(res);
    free(runs);
    free(best);
    for (uint32_t c = 0; cands && c < ncands; c++) free_cand(&s, &cands[c]);
    free(cands);
    for (uint32_t i = 0; i < naxes; i++) free_axis(&axes[i]);
    free(axes);
    if (ast) ast_free(ast);
    source_close(&s);
    return rc;
}

int tune_main(int argc, char **argv)
{
    TuneOpts to = {.ro = {.seed = RUN_DEFAULT_SEED, .rtol = TUNE_DEFAULT_TOL, .atol = TUNE_DEFAULT_TOL,
                          .runs = TUNE_DEFAULT_RUNS, .warmup = TUNE_DEFAULT_WARMUP, .flush = true}};
    driver_opts_init(&to.ro.drv, "tilec tune");
    int rc = parse_args(argc, argv, &to);
    if (rc < 0) rc = tune(&to);
    tune_opts_free(&to);
    return rc;
}

/* ---- reading a table -------------------------------------------------------------------- */

/* A JSON value, with where it starts (for messages). */
typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } JKind;
typedef struct JVal JVal;
struct JVal {
    JKind kind;
    SrcLoc loc;
    char *str;                  /* J_STR: the text; J_NUM: the literal */
    bool b;
    JVal **items;               /* J_ARR, J_OBJ: the values */
    char **keys;                /* J_OBJ: the names */
    uint32_t n, cap, keycap;
};

typedef struct JParser {
    const char *p, *end, *line_start;
    uint32_t line;
    int depth;
    Diag *d;
    bool failed;
} JParser;

static SrcLoc jloc(const JParser *j) { return (SrcLoc){j->line, (uint32_t)(j->p - j->line_start) + 1}; }

static void jfail(JParser *j, const char *what)
{
    if (!j->failed) diag_error(j->d, jloc(j), "%s", what);
    j->failed = true;
}

static void jspace(JParser *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\r' || *j->p == '\n')) {
        if (*j->p == '\n') {
            j->line++;
            j->line_start = j->p + 1;
        }
        j->p++;
    }
}

static void jfree(JVal *v)
{
    if (!v) return;
    for (uint32_t i = 0; i < v->n; i++) {
        jfree(v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

static char *jstring(JParser *j)
{
    StrBuf b = {0};
    sb_puts(&b, "");
    j->p++; /* '"' */
    while (j->p < j->end && *j->p != '"') {
        unsigned char ch = (unsigned char)*j->p;
        if (ch < 0x20) {
            jfail(j, "a control character in a string (write it as \\uXXXX)");
            break;
        }
        if (ch != '\\') {
            sb_putc(&b, (char)ch);
            j->p++;
            continue;
        }
        j->p++;
        char e = j->p < j->end ? *j->p : 0;
        const char *map = strchr("\"\\/bfnrt", e);
        if (e && map) {
            static const char out[] = "\"\\/\b\f\n\r\t";
            sb_putc(&b, out[map - "\"\\/bfnrt"]);
            j->p++;
        } else if (e == 'u' && j->end - j->p >= 5) {
            unsigned v = 0;
            for (int i = 1; i <= 4; i++) {
                char h = j->p[i];
                int dv = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                if (dv < 0) v = 0x110000;
                v = v * 16 + (unsigned)(dv < 0 ? 0 : dv);
            }
            if (v == 0 || v >= 0x80) {
                jfail(j, "only \\u0001 to \\u007f are read in a tuning table's strings");
                break;
            }
            sb_putc(&b, (char)v);
            j->p += 5;
        } else {
            jfail(j, "an unknown escape in a string");
            break;
        }
    }
    if (!j->failed && j->p >= j->end) jfail(j, "the string does not end (a '\"' is missing)");
    if (j->failed) {
        sb_free(&b);
        return NULL;
    }
    j->p++;
    return b.s;
}

static JVal *jvalue(JParser *j)
{
    jspace(j);
    if (j->p >= j->end) {
        jfail(j, "expected a value, found the end of the file");
        return NULL;
    }
    if (++j->depth > 32) {
        jfail(j, "the values nest too deeply");
        return NULL;
    }
    JVal *v = tl_xcalloc(1, sizeof *v);
    v->loc = jloc(j);
    char c = *j->p;
    if (c == '{' || c == '[') {
        v->kind = c == '{' ? J_OBJ : J_ARR;
        char close = c == '{' ? '}' : ']';
        j->p++;
        jspace(j);
        if (j->p < j->end && *j->p == close) {
            j->p++;
        } else {
            for (;;) {
                char *key = NULL;
                if (v->kind == J_OBJ) {
                    jspace(j);
                    if (j->p >= j->end || *j->p != '"') {
                        jfail(j, "expected a \"name\" in the object");
                        break;
                    }
                    key = jstring(j);
                    if (!key) break;
                    for (uint32_t i = 0; i < v->n; i++)
                        if (strcmp(v->keys[i], key) == 0) jfail(j, "a name is given twice in the object");
                    jspace(j);
                    if (j->p >= j->end || *j->p != ':') {
                        free(key);
                        jfail(j, "expected ':' after the name");
                        break;
                    }
                    j->p++;
                }
                JVal *item = jvalue(j);
                if (!item) {
                    free(key);
                    break;
                }
                if (v->kind == J_OBJ) {
                    uint32_t n = v->n;
                    VEC_PUSH(v->keys, n, v->keycap, key);
                }
                VEC_PUSH(v->items, v->n, v->cap, item);
                jspace(j);
                if (j->p < j->end && *j->p == ',') {
                    j->p++;
                    continue;
                }
                if (j->p < j->end && *j->p == close) {
                    j->p++;
                    break;
                }
                jfail(j, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
                break;
            }
        }
    } else if (c == '"') {
        v->kind = J_STR;
        v->str = jstring(j);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        const char *start = j->p;
        while (j->p < j->end && strchr("+-0123456789.eE", *j->p)) j->p++;
        v->kind = J_NUM;
        v->str = driver_strndup(start, (size_t)(j->p - start));
        char *end;
        (void)strtod(v->str, &end);
        if (*end) {
            j->p = start;
            jfail(j, "a malformed number");
        }
    } else if (j->end - j->p >= 4 && (!memcmp(j->p, "true", 4) || !memcmp(j->p, "null", 4))) {
        v->kind = j->p[0] == 't' ? J_BOOL : J_NULL;
        v->b = true;
        j->p += 4;
    } else if (j->end - j->p >= 5 && !memcmp(j->p, "false", 5)) {
        v->kind = J_BOOL;
        j->p += 5;
    } else {
        jfail(j, "expected a value (an object, array, string, number, true, false or null)");
    }
    j->depth--;
    if (j->failed) {
        jfree(v);
        return NULL;
    }
    return v;
}

static const JVal *jget(const JVal *o, const char *key)
{
    for (uint32_t i = 0; o && o->kind == J_OBJ && i < o->n; i++)
        if (strcmp(o->keys[i], key) == 0) return o->items[i];
    return NULL;
}

typedef struct TuneEntry {
    char *shape;
    int64_t *key;
    FeDefine *best;
    uint32_t nbest;
} TuneEntry;

struct TuneTable {
    char *path, *text;
    Diag diag;                  /* on the table's text */
    char *kernel, *tuned_on;
    FeDefine *defines;
    uint32_t ndefines;
    char **keynames;
    uint32_t nkey;
    TuneEntry *entries;
    uint32_t nentries;
    char **strs;                /* texts -D and --spec point into (tune_table_apply) */
    uint32_t nstrs, strcap;
    /* tune_table_header's arrays */
    uint32_t *key_param, *entry_func;
    int32_t *key_dim;
    int64_t *keys;
    const char **shapes;
};

/* An object of string values into defs (malloc'd strings); false after an error. */
static bool read_defs(TuneTable *t, const JVal *v, const char *what, FeDefine **defs, uint32_t *n)
{
    if (!v || v->kind != J_OBJ) {
        diag_error(&t->diag, v ? v->loc : (SrcLoc){1, 1}, "%s must be an object of \"NAME\": \"VALUE\"", what);
        return false;
    }
    *defs = tl_xcalloc(v->n + 1, sizeof **defs);
    *n = 0;
    for (uint32_t i = 0; i < v->n; i++) {
        const JVal *x = v->items[i];
        if (x->kind != J_STR || !driver_is_ident(v->keys[i], strlen(v->keys[i])) || !is_value(x->str, strlen(x->str))) {
            diag_error(&t->diag, x->loc, "%s: \"%s\" must name a compile-time parameter and give it an integer or a "
                       "type name as a string", what, v->keys[i]);
            return false;
        }
        (*defs)[(*n)++] = (FeDefine){tl_xstrdup(v->keys[i]), tl_xstrdup(x->str)};
    }
    return true;
}

static void free_defs(FeDefine *defs, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        free((char *)defs[i].name);
        free((char *)defs[i].value);
    }
    free(defs);
}

void tune_table_free(TuneTable *t)
{
    if (!t) return;
    for (uint32_t i = 0; i < t->nentries; i++) {
        free(t->entries[i].shape);
        free(t->entries[i].key);
        free_defs(t->entries[i].best, t->entries[i].nbest);
    }
    free(t->entries);
    for (uint32_t i = 0; i < t->nkey; i++) free(t->keynames[i]);
    free(t->keynames);
    free_defs(t->defines, t->ndefines);
    for (uint32_t i = 0; i < t->nstrs; i++) free(t->strs[i]);
    free(t->strs);
    free(t->key_param);
    free(t->key_dim);
    free(t->entry_func);
    free(t->keys);
    free(t->shapes);
    free(t->kernel);
    free(t->tuned_on);
    diag_free(&t->diag);
    free(t->text);
    free(t->path);
    free(t);
}

static bool read_table(TuneTable *t, const JVal *root)
{
    Diag *d = &t->diag;
    if (root->kind != J_OBJ) {
        diag_error(d, root->loc, "a tuning table is a JSON object (see lang/REFERENCE.md, 'tilec tune')");
        return false;
    }
    const JVal *ver = jget(root, "tilec_tune_table");
    if (!ver || ver->kind != J_NUM || strcmp(ver->str, "1") != 0) {
        diag_error(d, ver ? ver->loc : root->loc, "not a tuning table of this tilec: \"tilec_tune_table\": 1 is %s",
                   ver ? "expected" : "missing");
        return false;
    }
    const JVal *kernel = jget(root, "kernel"), *on = jget(root, "tuned_on"), *key = jget(root, "key");
    const JVal *entries = jget(root, "entries"), *defines = jget(root, "defines");
    if (!kernel || kernel->kind != J_STR || !driver_is_ident(kernel->str, strlen(kernel->str))) {
        diag_error(d, kernel ? kernel->loc : root->loc, "\"kernel\" must be the kernel's name, as a string");
        return false;
    }
    t->kernel = tl_xstrdup(kernel->str);
    t->tuned_on = tl_xstrdup(on && on->kind == J_STR ? on->str : "?");
    if (defines && !read_defs(t, defines, "\"defines\"", &t->defines, &t->ndefines)) return false;
    if (!key || key->kind != J_ARR || key->n > TUNE_MAX_KEY) {
        diag_error(d, key ? key->loc : root->loc, "\"key\" must be an array of the key's names (\"A.shape[0]\", ...)");
        return false;
    }
    t->keynames = tl_xcalloc(key->n + 1, sizeof *t->keynames);
    for (uint32_t i = 0; i < key->n; i++) {
        if (key->items[i]->kind != J_STR) {
            diag_error(d, key->items[i]->loc, "\"key\" must be an array of strings");
            return false;
        }
        t->keynames[t->nkey++] = tl_xstrdup(key->items[i]->str);
    }
    if (!entries || entries->kind != J_ARR || entries->n == 0) {
        diag_error(d, entries ? entries->loc : root->loc, "\"entries\" must be a non-empty array of tuned shapes");
        return false;
    }
    t->entries = tl_xcalloc(entries->n, sizeof *t->entries);
    for (uint32_t e = 0; e < entries->n; e++) {
        const JVal *en = entries->items[e];
        TuneEntry *te = &t->entries[t->nentries++];
        const JVal *shape = jget(en, "shape"), *k = jget(en, "key"), *b = jget(en, "best");
        if (en->kind != J_OBJ || !shape || shape->kind != J_STR) {
            diag_error(d, shape ? shape->loc : en->loc, "an entry must be an object with a \"shape\" string");
            return false;
        }
        te->shape = tl_xstrdup(shape->str);
        if (!k || k->kind != J_ARR || k->n != t->nkey) {
            diag_error(d, k ? k->loc : en->loc, "the entry's \"key\" must be an array of %u integers (one per name of "
                       "the table's \"key\")", t->nkey);
            return false;
        }
        te->key = tl_xcalloc(t->nkey + 1, sizeof *te->key);
        for (uint32_t i = 0; i < k->n; i++) {
            char *end;
            errno = 0;
            long long v = k->items[i]->kind == J_NUM ? strtoll(k->items[i]->str, &end, 10) : 0;
            if (k->items[i]->kind != J_NUM || *end || errno) {
                diag_error(d, k->items[i]->loc, "a key value must be an integer");
                return false;
            }
            te->key[i] = v;
        }
        if (!read_defs(t, b, "the entry's \"best\"", &te->best, &te->nbest)) return false;
        if (te->nbest == 0) {
            diag_error(d, b->loc, "the entry's \"best\" names no parameter");
            return false;
        }
        for (uint32_t p = 0; p < e; p++)
            if (!memcmp(t->entries[p].key, te->key, t->nkey * sizeof *te->key)) {
                diag_error(d, k->loc, "entries %u and %u have the same key", p + 1, e + 1);
                return false;
            }
    }
    return true;
}

TuneTable *tune_table_load(const char *path, DiagColor color)
{
    TuneTable *t = tl_xcalloc(1, sizeof *t);
    t->path = tl_xstrdup(path);
    size_t len = 0;
    t->text = tl_read_file(path, &len);
    int err = errno;
    diag_init(&t->diag, path, t->text, t->text ? len : 0, stderr, color);
    if (!t->text) {
        diag_error_noloc(&t->diag, "cannot read the tuning table '%s': %s", path, strerror(err));
        tune_table_free(t);
        return NULL;
    }
    JParser j = {t->text, t->text + len, t->text, 1, 0, &t->diag, false};
    JVal *root = jvalue(&j);
    if (root) {
        jspace(&j);
        if (j.p < j.end) jfail(&j, "text after the table's end");
    }
    bool ok = root && !j.failed && read_table(t, root);
    jfree(root);
    if (!ok) {
        tune_table_free(t);
        return NULL;
    }
    return t;
}

static const char *keep(TuneTable *t, char *s)
{
    VEC_PUSH(t->strs, t->nstrs, t->strcap, s);
    return s;
}

int tune_table_apply(TuneTable *t, DriverOpts *o)
{
    if (o->kernel && strcmp(o->kernel, t->kernel) != 0)
        return driver_usage_error(o->cmd, "--kernel %s, but the tuning table '%s' tunes '%s'", o->kernel, t->path,
                                  t->kernel);
    if (o->nspecs)
        return driver_usage_error(o->cmd, "--spec and --tune-table exclude each other (the table chooses the "
                                  "specializations)");
    o->kernel = t->kernel;
    for (uint32_t i = 0; i < t->ndefines; i++) {
        const FeDefine *td = &t->defines[i];
        for (uint32_t j = 0; j < o->ndefines; j++)
            if (strcmp(o->defines[j].name, td->name) == 0 && strcmp(o->defines[j].value, td->value) != 0)
                return driver_usage_error(o->cmd, "-D %s=%s, but the tuning table '%s' was tuned with %s=%s", td->name,
                                          o->defines[j].value, t->path, td->name, td->value);
        if (driver_common_opt(o, 'D', keep(t, xprintf("%s=%s", td->name, td->value))) < 0) return 2;
    }
    for (uint32_t e = 0; e < t->nentries; e++) {
        const TuneEntry *te = &t->entries[e];
        for (uint32_t i = 0; i < te->nbest; i++)
            for (uint32_t j = 0; j < o->ndefines; j++)
                if (strcmp(o->defines[j].name, te->best[i].name) == 0)
                    return driver_usage_error(o->cmd, "-D %s=%s fixes a parameter the tuning table '%s' chooses",
                                              o->defines[j].name, o->defines[j].value, t->path);
        StrBuf b = {0};
        for (uint32_t i = 0; i < te->nbest; i++)
            sb_printf(&b, i ? ",%s=%s" : "%s=%s", te->best[i].name, te->best[i].value);
        bool seen = false;
        for (uint32_t s = 0; s < o->nspecs; s++) seen = seen || strcmp(o->specs[s].text, b.s) == 0;
        if (seen) {
            sb_free(&b);
            continue;
        }
        if (driver_add_spec(o->cmd, &o->specs, &o->nspecs, &o->speccap, keep(t, b.s)) < 0) return 2;
    }
    return -1;
}

bool tune_table_header(TuneTable *t, const IrModule *m, HeaderTune *ht, Diag *d)
{
    free(t->entry_func);
    t->entry_func = tl_xcalloc(t->nentries, sizeof *t->entry_func);
    const IrFunc *lead = NULL;
    for (uint32_t e = 0; e < t->nentries; e++) {
        const TuneEntry *te = &t->entries[e];
        bool found = false;
        for (uint32_t i = 0; i < m->nfuncs && !found; i++) {
            const IrFunc *f = m->funcs[i];
            if (strcmp(f->source_name, t->kernel) != 0) continue;
            bool match = true;
            for (uint32_t k = 0; k < te->nbest && match; k++) {
                const char *v = spec_value(f, te->best[k].name);
                match = v && strcmp(v, te->best[k].value) == 0;
            }
            if (match) {
                t->entry_func[e] = i;
                found = true;
                if (!lead) lead = f;
            }
        }
        if (!found) {
            diag_error_noloc(d, "tuning table '%s': no specialization of '%s' is entry %u's choice", t->path, t->kernel,
                             e + 1);
            return false;
        }
    }
    uint32_t kp[TUNE_MAX_KEY];
    int32_t kd[TUNE_MAX_KEY];
    char *names[TUNE_MAX_KEY];
    uint32_t nkey = key_of(lead, kp, kd, names);
    bool same = nkey == t->nkey;
    StrBuf have = {0}, want = {0};
    for (uint32_t i = 0; i < nkey; i++) {
        same = same && strcmp(names[i], t->keynames[i]) == 0;
        sb_printf(&have, i ? ", %s" : "%s", names[i]);
        free(names[i]);
    }
    for (uint32_t i = 0; i < t->nkey; i++) sb_printf(&want, i ? ", %s" : "%s", t->keynames[i]);
    if (!same)
        diag_error_noloc(d, "tuning table '%s': its key (%s) is not that of kernel '%s' (%s): its parameters "
                         "changed since the tuning; tune it again", t->path, want.s ? want.s : "", t->kernel,
                         have.s ? have.s : "");
    sb_free(&have);
    sb_free(&want);
    if (!same) return false;
    free(t->key_param);
    free(t->key_dim);
    free(t->keys);
    free(t->shapes);
    t->key_param = tl_xcalloc(nkey + 1, sizeof *t->key_param);
    t->key_dim = tl_xcalloc(nkey + 1, sizeof *t->key_dim);
    memcpy(t->key_param, kp, nkey * sizeof *kp);
    memcpy(t->key_dim, kd, nkey * sizeof *kd);
    t->keys = tl_xcalloc((size_t)t->nentries * nkey + 1, sizeof *t->keys);
    t->shapes = tl_xcalloc(t->nentries, sizeof *t->shapes);
    for (uint32_t e = 0; e < t->nentries; e++) {
        memcpy(t->keys + (size_t)e * nkey, t->entries[e].key, nkey * sizeof *t->keys);
        t->shapes[e] = t->entries[e].shape;
    }
    *ht = (HeaderTune){
        .kernel = t->kernel,
        .table = t->path,
        .tuned_on = t->tuned_on,
        .nkey = nkey,
        .nentries = t->nentries,
        .key_param = t->key_param,
        .key_dim = t->key_dim,
        .keys = t->keys,
        .entry_func = t->entry_func,
        .shapes = t->shapes,
    };
    return true;
}
