/* driver.c: the compiler driver every command calls (tilec.c, run.c, bench.c).
 *
 * driver_compile is the whole compilation of one input, top to bottom, in
 * the manner of QBE's main.c:
 *   1. Front end: a .tile is parsed and lowered (fe_lower; --kernel keeps one
 *      kernel, -D sets parameters); a .tir is parsed and --kernel selects
 *      kernels by symbol or source name.
 *   2. The IR is verified.  IR lowered from source that does not verify is a
 *      compiler bug; a .tir that does not is the user's error.
 *   3. Canonical passes (passes.def, or --pass in its order); the pass runner
 *      checks each pass's preconditions before it runs and verifies the IR
 *      after it, and dumps it as --dump-after and --ir-dump-dir ask.
 *   4. Backend passes (pipelining, remat, layout), the same way.
 *   5. LLVM IR -> PTX -> cubin (codegen/compile.c), for --arch.
 * Each stage stops the compilation when it reported an error.  The rest of
 * the file: the options every command shares, and reading the input.
 */
#include "driver.h"
#include "spec.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../passes/pass.h"

/* ---- the pipeline --------------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void stage(const DriverOpts *o, const char *what, double since)
{
    if (o->verbose) fprintf(stderr, "tilec: %-8s %8.3f ms\n", what, (now() - since) * 1e3);
}

/* -v after code generation: where its CPU time went (the machine may be
 * shared, so CPU seconds rather than wall-clock ones), per kernel and for
 * ptxas (nvJitLink, the whole module at once), and the whole stage's wall and
 * CPU time with the threads it had. */
static void codegen_times(const DriverOpts *o, const IrModule *m, const CgResult *r, DriverStage upto,
                          double wall0, double cpu0)
{
    if (!o->verbose) return;
    double lower = 0, opt = 0, ptx = 0;
    for (uint32_t i = 0; i < m->nfuncs && i < r->nfacts; i++) {
        const CgTimes *c = &r->times[i];
        lower += c->lower, opt += c->opt, ptx += c->ptx;
        if (upto == DRIVER_LLVM) continue;
        fprintf(stderr, "tilec:   kernel %s: lower %.1f ms, llvm-opt %.1f ms, llvm-ptx %.1f ms (CPU)\n", m->funcs[i]->name,
                c->lower * 1e3, c->opt * 1e3, c->ptx * 1e3);
    }
    fprintf(stderr, "tilec:   CPU: lower %.1f ms, llvm-opt %.1f ms, llvm-ptx %.1f ms", lower * 1e3, opt * 1e3, ptx * 1e3);
    if (upto == DRIVER_CUBIN)
        fprintf(stderr, ", ptxas %.1f ms%s", r->ptxas_cpu * 1e3,
                r->whole_program ? " (the toolkit's ptxas, whole program: setmaxnreg kept)" : "");
    fprintf(stderr, "; the stage: %.1f ms CPU, %.1f ms wall, -j%d\n", (cpu_now() - cpu0) * 1e3, (now() - wall0) * 1e3,
            o->jobs);
}

static IrModule *lower_tile(Source *s, const DriverOpts *o)
{
    Diag *d = &s->diag;
    double t = now();
    Ast *ast = ast_parse(s->path, s->text, s->len, d);
    stage(o, "parse", t);
    if (!ast || d->nerrors) {
        if (ast) ast_free(ast);
        return NULL;
    }
    FeOptions fo = {o->defines, o->ndefines, o->kernel};
    t = now();
    IrModule *m = fe_lower_specs(ast, &fo, o->specs, o->nspecs, d);
    stage(o, "lower", t);
    if (m && d->nerrors) {
        ir_module_free(m);
        m = NULL;
    }
    ast_free(ast);
    return m;
}

/* --kernel on a .tir: keeps the kernels whose symbol or source name is `name`.
 * The others move to the end of m->funcs, past m->nfuncs: still owned by the
 * module, s->nhidden of them, until driver_free_ir counts them back in for
 * ir_module_free. */
static bool select_kernels(IrModule *m, Source *s, const char *name)
{
    uint32_t keep = 0;
    for (uint32_t i = 0; i < m->nfuncs; i++) {
        IrFunc *f = m->funcs[i];
        if (strcmp(f->name, name) == 0 || strcmp(f->source_name, name) == 0) {
            m->funcs[i] = m->funcs[keep];
            m->funcs[keep++] = f;
        }
    }
    if (keep) {
        s->nhidden = m->nfuncs - keep;
        m->nfuncs = keep;
        return true;
    }
    const char **names = tl_xcalloc(m->nfuncs + 1, sizeof *names);
    for (uint32_t i = 0; i < m->nfuncs; i++) names[i] = m->funcs[i]->name;
    diag_unknown_kernel(&s->diag, name, names, m->nfuncs);
    free(names);
    return false;
}

static IrModule *parse_tir(Source *s, const DriverOpts *o)
{
    double t = now();
    IrModule *m = ir_parse(s->path, s->text, s->len, &s->diag);
    stage(o, "parse", t);
    if (m && (s->diag.nerrors || (o->kernel && !select_kernels(m, s, o->kernel)))) {
        driver_free_ir(s, m);
        m = NULL;
    }
    return m;
}

void driver_free_ir(Source *s, IrModule *m)
{
    if (!m) return;
    m->nfuncs += s->nhidden;
    s->nhidden = 0;
    ir_module_free(m);
}

/* mkdir -p */
static bool make_dir(const char *path, Diag *d)
{
    char *p = tl_xstrdup(path);
    bool ok = true;
    for (char *q = p + 1;; q++) {
        if (*q != '/' && *q) continue;
        char c = *q;
        *q = 0;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            diag_error_noloc(d, "cannot create the dump folder '%s': %s", p, strerror(errno));
            ok = false;
            break;
        }
        *q = c;
        if (!c) break;
    }
    struct stat st;
    if (ok && (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))) {
        diag_error_noloc(d, "cannot create the dump folder '%s': not a folder", path);
        ok = false;
    }
    free(p);
    return ok;
}

/* Runs one pass pipeline (canonical: `names`, or the default one; backend:
 * the default one) with the dumps the options ask for. */
static bool run_passes(IrModule *m, Source *s, const DriverOpts *o, PassStage which, const char *what)
{
    Diag *d = &s->diag;
    PassDump dump = {o->dump_after, o->ndump_after, o->dump_dir, stderr, &s->ndumps};
    if (o->dump_dir && !make_dir(o->dump_dir, d)) return false;
    int errors = d->nerrors;
    double t = now();
    m->target = o->arch; /* backend passes, also named with --pass, see the target (tilec run --device may change it) */
    bool ok = which == PASS_CANON ? pass_run_pipeline(m, o->passes, o->npasses, &dump, d)
                                  : pass_run_backend(m, &dump, d);
    stage(o, what, t);
    if (!ok && d->nerrors == errors) diag_error_noloc(d, "cannot write the IR dumps: %s", strerror(errno));
    return ok && d->nerrors == errors;
}

/* -v: ptxas's report, one block per kernel (registers, barriers, stack frame,
 * spills, shared memory), from nvJitLink's info log, less the summary
 * nvJitLink adds ("info    : ..."), which says the same again. */
static void print_ptxas_report(const char *log)
{
    for (const char *p = log; *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (strncmp(p, "info    :", 9) != 0) fprintf(stderr, "%.*s\n", (int)n, p);
        p += n + (e != NULL);
    }
}

bool driver_compile(Source *s, const DriverOpts *o, IrModule **mp, DriverStage upto, CgResult *r)
{
    Diag *d = &s->diag;
    int errors = d->nerrors;
    if (r) memset(r, 0, sizeof *r);
    if (!*mp) {
        /* 1. source or IR text -> IR of the selected kernels */
        IrModule *m = s->is_tir ? parse_tir(s, o) : lower_tile(s, o);
        if (!m) return false;
        *mp = m;
        m->target = o->arch; /* the passes and num_sms() in the interpreter see the target */

        /* 2. verified */
        double t = now();
        bool valid = ir_verify_module(m, d, s->is_tir ? "parse" : "lower");
        stage(o, "verify", t);
        if (!valid && !s->is_tir) tl_fatal("lower", "the IR lowered from '%s' does not verify (see above)", s->path);
        if (!valid) return false;

        /* 3. canonical passes.  A .tile runs the default pipeline; a .tir is
         * already IR, as a test or a dump wrote it, so it runs only the passes
         * asked for (--pass or -O). */
        bool canon = o->npasses || !(o->no_passes || (s->is_tir && !o->opt_given));
        if (canon && !run_passes(m, s, o, PASS_CANON, "passes")) return false;
    }
    if (upto == DRIVER_IR) return true;
    IrModule *m = *mp;

    /* 4. backend passes: the layout pass gives every tile value its layout */
    if (!run_passes(m, s, o, PASS_BACKEND, "layout")) return false;

    /* 5. LLVM -> PTX -> cubin */
    CgTarget target = driver_target(o);
    CgEmit cg_upto = upto == DRIVER_LLVM ? CG_EMIT_LLVM : upto == DRIVER_PTX ? CG_EMIT_PTX : CG_EMIT_CUBIN;
    double t = now(), c = cpu_now();
    bool ok = cg_compile_module(m, &target, cg_upto, r, d) && d->nerrors == errors;
    stage(o, upto == DRIVER_LLVM ? "llvm" : upto == DRIVER_PTX ? "ptx" : "cubin", t);
    if (ok) codegen_times(o, m, r, upto, t, c);
    if (ok && o->verbose && r->info.len) print_ptxas_report(r->info.s);
    if (!ok) cg_result_free(r);
    return ok;
}

/* ---- options every command shares -------------------------------------------- */

bool driver_is_ident(const char *s, size_t n)
{
    if (n == 0 || (s[0] >= '0' && s[0] <= '9')) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
    }
    return true;
}

char *driver_strndup(const char *s, size_t n)
{
    char *p = tl_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

int driver_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fputs("tilec: error: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\ntilec: run '%s --help' for the options\n", cmd);
    return 2;
}

int driver_bad_option(const char *cmd, int c, char **argv)
{
    const char *arg = argv[optind - 1];
    if (c == ':') {
        if (optopt && optopt < 256) return driver_usage_error(cmd, "option '-%c' needs a value", optopt);
        return driver_usage_error(cmd, "option '%s' needs a value", arg);
    }
    if (optopt && optopt < 256) return driver_usage_error(cmd, "unknown option '-%c'", optopt);
    return driver_usage_error(cmd, "unknown option '%s'", arg);
}

static int add_define(DriverOpts *o, const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (!eq || !driver_is_ident(arg, (size_t)(eq - arg)) || !eq[1]) {
        driver_usage_error(o->cmd, "-D wants NAME=VALUE, not '%s'", arg);
        return -1;
    }
    size_t n = (size_t)(eq - arg);
    for (uint32_t i = 0; i < o->ndefines; i++)
        if (strlen(o->defines[i].name) == n && memcmp(o->defines[i].name, arg, n) == 0) {
            free((char *)o->defines[i].name);
            o->defines[i] = (FeDefine){driver_strndup(arg, n), eq + 1};
            return 1;
        }
    FeDefine def = {driver_strndup(arg, n), eq + 1};
    VEC_PUSH(o->defines, o->ndefines, o->definecap, def);
    return 1;
}

static void unknown_pass(const char *cmd, const char *opt, const char *name)
{
    const char **names = tl_xcalloc(pass_count + 1, sizeof *names);
    StrBuf known = {0};
    for (size_t i = 0; i < pass_count; i++) {
        names[i] = pass_table[i].name;
        sb_printf(&known, i ? ", %s" : "%s", names[i]);
    }
    const char *near = diag_closest(name, names, pass_count);
    if (near) driver_usage_error(cmd, "%s: unknown pass '%s'; did you mean '%s'?", opt, name, near);
    else driver_usage_error(cmd, "%s: unknown pass '%s' (passes: %s)", opt, name, known.s ? known.s : "none");
    sb_free(&known);
    free(names);
}

/* Appends a comma-separated list of pass names (and "all" when allow_all) to *list. */
static int add_pass_names(const char *cmd, const char ***list, uint32_t *n, uint32_t *cap, const char *arg,
                          const char *opt, bool allow_all)
{
    const char *p = arg;
    do {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0) {
            driver_usage_error(cmd, "%s wants pass names, not '%s'", opt, arg);
            return -1;
        }
        char *name = driver_strndup(p, len);
        if (!(allow_all && strcmp(name, "all") == 0) && !pass_find(name)) {
            unknown_pass(cmd, opt, name);
            free(name);
            return -1;
        }
        VEC_PUSH(*list, *n, *cap, name);
        p = comma ? comma + 1 : NULL;
    } while (p);
    return 1;
}

/* --remarks=NAME[,NAME...]|all: the kinds of remarks to print. */
static int add_remarks(DriverOpts *o, const char *arg)
{
    const char *p = arg;
    do {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char *name = driver_strndup(p, len);
        int k = diag_remark_find(name);
        if (strcmp(name, "all") == 0) o->remarks = (1u << DIAG_NREMARKS) - 1;
        else if (k >= 0) o->remarks |= 1u << k;
        else {
            StrBuf known = {0};
            for (int i = 0; i < DIAG_NREMARKS; i++) sb_printf(&known, "%s, ", diag_remark_names[i]);
            driver_usage_error(o->cmd, "--remarks: unknown remark '%s' (remarks: %sall)", name, known.s);
            sb_free(&known);
            free(name);
            return -1;
        }
        free(name);
        p = comma ? comma + 1 : NULL;
    } while (p);
    return 1;
}

int driver_common_opt(DriverOpts *o, int c, const char *arg)
{
    switch (c) {
    case 'D': return add_define(o, arg);
    case 'v': o->verbose = true; return 1;
    case 'g': o->debug = true; return 1;
    case 'j': {
        char *end;
        errno = 0;
        long n = strtol(arg, &end, 10);
        if (errno || *end || end == arg || n < 1 || n > 1024) {
            driver_usage_error(o->cmd, "-j wants a number of threads from 1 to 1024, not '%s'", arg);
            return -1;
        }
        o->jobs = (int)n;
        return 1;
    }
    case 'O':
        o->opt_given = true;
        if (!arg) arg = "3";
        if (arg[0] < '0' || arg[0] > '3' || arg[1]) {
            driver_usage_error(o->cmd, "unknown optimization level '-O%s' (use -O0, -O1, -O2 or -O3)", arg);
            return -1;
        }
        o->opt_level = arg[0] - '0';
        o->no_passes = o->opt_level == 0;
        return 1;
    case OPT_ARCH: {
        const IrTarget *tg = ir_target_find(arg);
        if (!tg) {
            IrTargetList l;
            driver_usage_error(o->cmd, "unknown GPU arch '--arch=%s' (use %s)", arg, ir_target_list(&l, 0, ", ", " or "));
            return -1;
        }
        o->arch = tg;
        o->arch_given = true;
        return 1;
    }
    case OPT_LINEINFO: o->lineinfo = true; return 1;
    case OPT_NO_LINEINFO: o->lineinfo = false; return 1;
    case OPT_FAST_MATH: o->fast_math = true; return 1;
    case OPT_REMARKS: return add_remarks(o, arg);
    case OPT_KERNEL: o->kernel = arg; return 1;
    case OPT_PASS: return add_pass_names(o->cmd, &o->passes, &o->npasses, &o->passcap, arg, "--pass", false);
    case OPT_DUMP_AFTER:
        return add_pass_names(o->cmd, &o->dump_after, &o->ndump_after, &o->dumpcap, arg, "--dump-after", true);
    case OPT_IR_DUMP_DIR:
        if (!*arg) {
            driver_usage_error(o->cmd, "--ir-dump-dir wants a folder");
            return -1;
        }
        o->dump_dir = arg;
        return 1;
    case OPT_COLOR:
        if (strcmp(arg, "auto") == 0) o->color = DIAG_COLOR_AUTO;
        else if (strcmp(arg, "always") == 0) o->color = DIAG_COLOR_ALWAYS;
        else if (strcmp(arg, "never") == 0) o->color = DIAG_COLOR_NEVER;
        else {
            driver_usage_error(o->cmd, "--diagnostics-color wants auto, always or never, not '%s'", arg);
            return -1;
        }
        return 1;
    default: return 0;
    }
}

void driver_opts_init(DriverOpts *o, const char *cmd)
{
    memset(o, 0, sizeof *o);
    o->cmd = cmd;
    o->opt_level = DRIVER_DEFAULT_OPT;
    o->arch = ir_target_default();
    o->lineinfo = true;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    o->jobs = cpus < 1 ? 1 : cpus > 1024 ? 1024 : (int)cpus;
}

void driver_normalize_argv(int argc, char **argv)
{
    static char lineinfo[] = "--lineinfo", fast_math[] = "--fast-math", arch[] = "--arch";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) break;
        if (strcmp(argv[i], "-lineinfo") == 0) argv[i] = lineinfo;
        else if (strcmp(argv[i], "-use_fast_math") == 0) argv[i] = fast_math;
        else if (strcmp(argv[i], "-arch") == 0) argv[i] = arch;
        else if (strncmp(argv[i], "-arch=", 6) == 0) {
            /* "--arch=" + the value; argv keeps it for the rest of the run */
            size_t n = strlen(argv[i]);
            char *s = tl_xmalloc(n + 2);
            s[0] = '-';
            memcpy(s + 1, argv[i], n + 1);
            argv[i] = s;
        }
    }
}

CgTarget driver_target(const DriverOpts *o)
{
    CgTarget t = {0};
    t.arch = o->arch;
    t.opt_level = o->opt_level;
    t.lineinfo = o->lineinfo;
    t.verbose = o->verbose;
    t.debug = o->debug;
    t.fast_math = o->fast_math;
    t.keep_llvm = o->save_temps;
    t.jobs = o->jobs;
    return t;
}

void driver_opts_free(DriverOpts *o)
{
    for (uint32_t i = 0; i < o->ndefines; i++) free((char *)o->defines[i].name);
    for (uint32_t i = 0; i < o->npasses; i++) free((char *)o->passes[i]);
    for (uint32_t i = 0; i < o->ndump_after; i++) free((char *)o->dump_after[i]);
    free(o->defines);
    free(o->passes);
    free(o->dump_after);
    driver_free_specs(o->specs, o->nspecs);
    memset(o, 0, sizeof *o);
}

/* ---- reading the input ------------------------------------------------------- */

bool driver_has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

bool source_open(Source *s, const DriverOpts *o)
{
    memset(s, 0, sizeof *s);
    s->path = o->input;
    s->is_tir = driver_has_suffix(o->input, ".tir");
    diag_init(&s->diag, o->input, NULL, 0, stderr, o->color);
    struct stat st;
    if (stat(o->input, &st) == 0 && S_ISDIR(st.st_mode)) {
        diag_error_noloc(&s->diag, "cannot read '%s': is a directory", o->input);
        return false;
    }
    s->text = tl_read_file(o->input, &s->len);
    if (!s->text) {
        diag_error_noloc(&s->diag, "cannot read '%s': %s", o->input, strerror(errno));
        return false;
    }
    s->diag.remarks = o->remarks;
    s->diag.src = s->text;
    s->diag.src_len = s->len;
    return true;
}

void source_close(Source *s)
{
    diag_free(&s->diag);
    free(s->text);
    s->text = NULL;
}

