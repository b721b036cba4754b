/* tilec.c: the compiler driver.
 *
 *   tilec FILE.tile|FILE.tir [options]      compile: tokens, AST, IR, LLVM IR, PTX, cubin, C header
 *   tilec run FILE --kernel NAME ...        run a kernel (run.c)
 *   tilec bench FILE --kernel NAME ...      time a kernel on the GPU (bench.c)
 *
 * The pipeline for one input reads top to bottom in driver_build_ir() and
 * driver_codegen():
 *   read -> (.tile) parse -> lower | (.tir) parse -> select kernels
 *        -> verify -> passes (with dumps) -> emit tokens/AST/IR
 *        -> layout (with dumps) -> LLVM IR -> PTX -> cubin -> emit, or a C header (header.c).
 * Exit status: 0 success, 1 a user error (diagnostics printed), 2 a bad
 * command line (one line saying what, and a hint).
 */
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
#include "header.h"
#include "run.h"

#ifndef TILEC_VERSION
#error "TILEC_VERSION is defined by tools/CMakeLists.txt"
#endif
#ifndef TILEC_LLVM_VERSION
#error "TILEC_LLVM_VERSION is defined by tools/CMakeLists.txt"
#endif

/* ORDER: emit_names follows this enum. */
typedef enum { EMIT_TOKENS, EMIT_AST, EMIT_IR, EMIT_LLVM, EMIT_PTX, EMIT_CUBIN, EMIT_HEADER } Emit;

static const char *const emit_names[] = {"tokens", "ast", "ir", "llvm", "ptx", "cubin", "header"};

/* What `tilec FILE` alone takes besides DriverOpts. */
typedef struct CompileOpts {
    Emit emit;
    const char *out_path;       /* -o; NULL: standard output (a cubin: STEM.cubin) */
    bool embed;                 /* --embed: the cubin inside the header */
    const char *cubin_path;     /* --cubin-path: where the header's loader looks (no --embed) */
    const char *module_name;    /* --module-name: the prefix of the header's module functions */
} CompileOpts;

static const char usage_text[] =
    "usage: tilec FILE.tile|FILE.tir [options]\n"
    "       tilec run FILE --kernel NAME --interp|--device ARG... [options]   (see tilec run --help)\n"
    "       tilec bench FILE --kernel NAME ARG... [options]                  (see tilec bench --help)\n"
    "\n"
    "Compiles tile-language kernels.  Without --kernel, every kernel in FILE is\n"
    "compiled with its default compile-time parameters.\n"
    "\n"
    "Options:\n"
    "  -o FILE                  write the output to FILE ('-': standard output).  Without -o, text\n"
    "                           (tokens, ast, ir, llvm, ptx, header) goes to standard output and a\n"
    "                           cubin to STEM.cubin in the current folder (STEM: FILE without .tile)\n"
    "  --emit=tokens|ast|ir|llvm|ptx|cubin|header\n"
    "                           what to write (default: ir):\n"
    "                             tokens, ast   the lexer's tokens, the syntax tree (.tile only)\n"
    "                             ir            tile IR after the passes\n"
    "                             llvm          LLVM IR after lowering, before LLVM's optimizer\n"
    "                             ptx           PTX, with the kernel metadata (__tilec_meta)\n"
    "                             cubin         an ELF cubin for --arch, through nvJitLink\n"
    "                             header        a C header with one typed launch function per\n"
    "                                           kernel (see 'C header' below)\n";
/* usage_text continues after the --arch option (print_help) */
static const char usage_tail[] =
    "  -O0, -O1, -O2, -O3       optimization level (default -O3).  -O0: no IR passes, LLVM and\n"
    "                           ptxas at -O0; -O1..-O3: the IR pipeline, LLVM and ptxas at that\n"
    "                           level; -O is -O3.  A .tir runs the IR passes only when -O1..-O3 is\n"
    "                           given (it is IR as a test or a dump wrote it)\n"
    "  -g                       keep assert(...) checks in device code (otherwise they compile to\n"
    "                           nothing on the GPU; the interpreter always checks them)\n"
    "  -lineinfo, --lineinfo    line information (.loc) naming .tile lines, for ncu and\n"
    "                           compute-sanitizer (default: on)\n"
    "  --no-lineinfo            leave line information out\n"
    "  --fast-math              exp, exp2, log, log2, rsqrt, sigmoid, tanh and f32 division through\n"
    "                           the GPU's approximate instructions (bounds in lang/REFERENCE.md)\n"
    "  --kernel NAME            compile only kernel NAME (in a .tir also a specialization symbol)\n"
    "  -D NAME=VALUE            set a compile-time parameter (-D BLOCK=256, -DT=f16); repeatable\n"
    "  --pass=NAME[,NAME...]    run these IR passes in this order instead of the default pipeline\n"
    "  --dump-after=NAME|all    print the IR after pass NAME (or every pass) to stderr; the layout\n"
    "                           pass runs before code generation (--emit=llvm, ptx, cubin)\n"
    "  --ir-dump-dir=DIR        write those dumps to DIR/NN-KERNEL-PASS.tir instead\n"
    "                           (without --dump-after: after every pass)\n"
    "  --diagnostics-color=auto|always|never\n"
    "                           colour in error messages (default: auto, on a terminal)\n"
    "  -v                       print each stage and the time it took to stderr; with\n"
    "                           --emit=cubin or --embed, also ptxas's report per kernel\n"
    "                           (registers, shared memory, spills)\n"
    "  --version                print the version of tilec and of the LLVM it is built for\n"
    "  -h, --help               print this help\n"
    "\n"
    "C header (--emit=header):\n"
    "  --embed                  put the cubin inside the header (compiled for --arch)\n"
    "  --cubin-path=PATH        without --embed: the cubin the header loads (default: STEM.cubin,\n"
    "                           relative to the program's working folder); a program may change\n"
    "                           it with MODULE_set_cubin_path() before its first launch\n"
    "  --module-name=NAME       the prefix of the module functions (default: the stem of -o, else\n"
    "                           of FILE)\n"
    "  Per kernel K the header declares\n"
    "    tilert_status K_launch(CUstream stream, PARAMS...)       grid from grid(...)\n"
    "    tilert_status K_launch_grid(CUstream stream, const uint32_t grid[3], PARAMS...)\n"
    "    tilert_status K_kernel(tilert_kernel **out)\n"
    "  with tensor<T, N> -> tilert_tensor, ptr<T> -> a device pointer, scalars -> the C type;\n"
    "  and per module MODULE_module(tilert_module **out) and MODULE_unload().\n";

/* ---- options both commands share -------------------------------------------- */

static bool is_ident(const char *s, size_t n)
{
    if (n == 0 || (s[0] >= '0' && s[0] <= '9')) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
    }
    return true;
}

static char *copy_n(const char *s, size_t n)
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
    if (!eq || !is_ident(arg, (size_t)(eq - arg)) || !eq[1]) {
        driver_usage_error(o->cmd, "-D wants NAME=VALUE, not '%s'", arg);
        return -1;
    }
    size_t n = (size_t)(eq - arg);
    for (uint32_t i = 0; i < o->ndefines; i++)
        if (strlen(o->defines[i].name) == n && memcmp(o->defines[i].name, arg, n) == 0) {
            free((char *)o->defines[i].name);
            o->defines[i] = (FeDefine){copy_n(arg, n), eq + 1};
            return 1;
        }
    FeDefine def = {copy_n(arg, n), eq + 1};
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
        char *name = copy_n(p, len);
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

int driver_common_opt(DriverOpts *o, int c, const char *arg)
{
    switch (c) {
    case 'D': return add_define(o, arg);
    case 'v': o->verbose = true; return 1;
    case 'g': o->debug = true; return 1;
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
}

void driver_normalize_argv(int argc, char **argv)
{
    static char lineinfo[] = "--lineinfo";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) break;
        if (strcmp(argv[i], "-lineinfo") == 0) argv[i] = lineinfo;
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
    memset(o, 0, sizeof *o);
}

/* ---- reading the input ------------------------------------------------------- */

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

bool source_open(Source *s, const DriverOpts *o)
{
    memset(s, 0, sizeof *s);
    s->path = o->input;
    s->is_tir = has_suffix(o->input, ".tir");
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

/* ---- the pipeline --------------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void stage(const DriverOpts *o, const char *what, double since)
{
    if (o->verbose) fprintf(stderr, "tilec: %-8s %8.3f ms\n", what, (now() - since) * 1e3);
}

/* Whether the AST declares kernel `name`; if not, says so and lists those it declares. */
static bool ast_has_kernel(const Ast *ast, const char *name, Diag *d)
{
    for (uint32_t i = 0; i < ast->ndecls; i++)
        if (ast->decls[i]->kind == AST_KERNEL && strcmp(ast->decls[i]->name, name) == 0) return true;
    const char **names = tl_xcalloc(ast->ndecls + 1, sizeof *names);
    size_t n = 0;
    StrBuf list = {0};
    for (uint32_t i = 0; i < ast->ndecls; i++) {
        if (ast->decls[i]->kind != AST_KERNEL) continue;
        names[n] = ast->decls[i]->name;
        sb_printf(&list, n ? ", %s" : "%s", names[n]);
        n++;
    }
    diag_error_noloc(d, "no kernel named '%s' in '%s'", name, d->file);
    const char *near = diag_closest(name, names, n);
    if (near) diag_note(d, (SrcLoc){0, 0}, "did you mean '%s'?", near);
    if (n) diag_note(d, (SrcLoc){0, 0}, "kernels in this file: %s", list.s);
    else diag_note(d, (SrcLoc){0, 0}, "this file declares no kernel");
    sb_free(&list);
    free(names);
    return false;
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
    IrModule *m = NULL;
    if (!o->kernel || ast_has_kernel(ast, o->kernel, d)) {
        FeOptions fo = {o->defines, o->ndefines, o->kernel};
        t = now();
        m = fe_lower(ast, &fo, d);
        stage(o, "lower", t);
        if (m && d->nerrors) {
            ir_module_free(m);
            m = NULL;
        }
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
    StrBuf list = {0};
    const char **names = tl_xcalloc(m->nfuncs + 1, sizeof *names);
    for (uint32_t i = 0; i < m->nfuncs; i++) {
        sb_printf(&list, i ? ", %s" : "%s", m->funcs[i]->name);
        names[i] = m->funcs[i]->name;
    }
    Diag *d = &s->diag;
    diag_error_noloc(d, "no kernel named '%s' in '%s'", name, s->path);
    const char *near = diag_closest(name, names, m->nfuncs);
    if (near) diag_note(d, (SrcLoc){0, 0}, "did you mean '%s'?", near);
    if (m->nfuncs) diag_note(d, (SrcLoc){0, 0}, "kernels in this file: %s", list.s);
    else diag_note(d, (SrcLoc){0, 0}, "this file declares no kernel");
    sb_free(&list);
    free(names);
    return false;
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

static bool run_passes(IrModule *m, Source *s, const DriverOpts *o)
{
    /* A .tile runs the default pipeline; a .tir is already IR, as a test or a
     * dump wrote it, so it runs only the passes asked for (--pass or -O). */
    if (o->npasses == 0 && (o->no_passes || (s->is_tir && !o->opt_given))) return true;
    Diag *d = &s->diag;
    PassDump dump = {o->dump_after, o->ndump_after, o->dump_dir, stderr};
    if (o->dump_dir && !make_dir(o->dump_dir, d)) return false;
    int errors = d->nerrors;
    double t = now();
    bool ok = pass_run_pipeline(m, o->passes, o->npasses, &dump, d);
    stage(o, "passes", t);
    if (!ok && d->nerrors == errors) diag_error_noloc(d, "cannot write the IR dumps: %s", strerror(errno));
    return ok && d->nerrors == errors;
}

IrModule *driver_build_ir(Source *s, const DriverOpts *o)
{
    Diag *d = &s->diag;
    IrModule *m;
    if (!s->is_tir) {
        m = lower_tile(s, o);
    } else {
        double t = now();
        m = ir_parse(s->path, s->text, s->len, d);
        stage(o, "parse", t);
        if (m && d->nerrors) {
            ir_module_free(m);
            m = NULL;
        }
        if (m && o->kernel && !select_kernels(m, s, o->kernel)) {
            ir_module_free(m);
            m = NULL;
        }
    }
    if (!m) return NULL;
    m->target = o->arch; /* the passes (backend ones named with --pass too) and num_sms() in the interpreter */

    double t = now();
    bool valid = ir_verify_module(m, d, s->is_tir ? "parse" : "lower");
    stage(o, "verify", t);
    if (!valid) {
        /* a .tir file may be wrong; IR the frontend built must not be */
        if (!s->is_tir) tl_fatal("lower", "the IR lowered from '%s' does not verify (see above)", s->path);
        driver_free_ir(s, m);
        return NULL;
    }
    if (!run_passes(m, s, o)) {
        driver_free_ir(s, m);
        return NULL;
    }
    return m;
}

bool driver_codegen(Source *s, IrModule *m, const DriverOpts *o, CgEmit upto, CgResult *r)
{
    Diag *d = &s->diag;
    memset(r, 0, sizeof *r);
    PassDump dump = {o->dump_after, o->ndump_after, o->dump_dir, stderr};
    if (o->dump_dir && !make_dir(o->dump_dir, d)) return false;
    int errors = d->nerrors;
    double t = now();
    m->target = o->arch; /* the layout pass gives DOT the wgmma accumulator where the target has it */
    bool ok = pass_run_backend(m, &dump, d);
    stage(o, "layout", t);
    if (!ok && d->nerrors == errors) diag_error_noloc(d, "cannot write the IR dumps: %s", strerror(errno));
    if (!ok || d->nerrors != errors) return false;
    CgTarget target = driver_target(o);
    t = now();
    ok = cg_compile_module(m, &target, upto, r, d);
    stage(o, upto == CG_EMIT_LLVM ? "llvm" : upto == CG_EMIT_PTX ? "ptx" : "cubin", t);
    if (ok && d->nerrors != errors) ok = false;
    if (ok && o->verbose && r->info.len) {
        /* ptxas's report, one block per kernel: registers, shared memory, spills */
        fputs(r->info.s, stderr);
        if (r->info.s[r->info.len - 1] != '\n') fputc('\n', stderr);
    }
    if (!ok) cg_result_free(r);
    return ok;
}

/* ---- tilec FILE ----------------------------------------------------------------- */

static bool write_bytes(const char *path, const void *data, size_t len, Diag *d)
{
    bool to_stdout = !path || strcmp(path, "-") == 0;
    FILE *f = to_stdout ? stdout : fopen(path, "wb");
    if (!f) {
        diag_error_noloc(d, "cannot write '%s': %s", path, strerror(errno));
        return false;
    }
    bool ok = len == 0 || fwrite(data, 1, len, f) == len;
    ok = (to_stdout ? fflush(f) : fclose(f)) == 0 && ok;
    if (!ok) {
        diag_error_noloc(d, "cannot write '%s': %s", to_stdout ? "<stdout>" : path, strerror(errno));
        if (!to_stdout) remove(path);
    }
    return ok;
}

/* The file name of `path` without its folder and without `suffix` (if it ends so). */
static char *stem_of(const char *path, const char *suffix)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base), m = strlen(suffix);
    if (n > m && strcmp(base + n - m, suffix) == 0) n -= m;
    return copy_n(base, n);
}

static char *input_stem(const char *input)
{
    return stem_of(input, has_suffix(input, ".tir") ? ".tir" : ".tile");
}

/* --emit=header: the module name, the cubin path, and the header text. */
static bool emit_header(const DriverOpts *o, const CompileOpts *co, Source *s, IrModule *m, StrBuf *out)
{
    CgResult r = {0};
    if (co->embed && !driver_codegen(s, m, o, CG_EMIT_CUBIN, &r)) return false;
    char *stem = input_stem(o->input);
    char *name = co->module_name ? tl_xstrdup(co->module_name)
                 : co->out_path && strcmp(co->out_path, "-") != 0 ? stem_of(co->out_path, ".h")
                                                                   : tl_xstrdup(stem);
    char *cubin_path = NULL;
    if (!co->embed) {
        size_t n = strlen(stem) + sizeof ".cubin";
        cubin_path = tl_xmalloc(n);
        snprintf(cubin_path, n, "%s.cubin", stem);
    }
    HeaderOpts h = {
        .module_name = name,
        .source = o->input,
        .arch = o->arch->name,
        .opt_level = o->opt_level,
        .debug = o->debug,
        .cubin = r.cubin,
        .cubin_len = r.cubin_len,
        .cubin_path = co->cubin_path ? co->cubin_path : cubin_path,
        .tilec_version = TILEC_VERSION,
    };
    double t = now();
    bool ok = header_write(out, m, &h, &s->diag);
    stage(o, "header", t);
    free(cubin_path);
    free(name);
    free(stem);
    cg_result_free(&r);
    return ok;
}

static int compile(const DriverOpts *o, const CompileOpts *co)
{
    Source s;
    if (!source_open(&s, o)) {
        source_close(&s);
        return 1;
    }
    StrBuf out = {0};
    const void *bytes = NULL;   /* what to write: out, or a cubin */
    size_t nbytes = 0;
    CgResult r = {0};
    IrModule *m = NULL;
    bool ok = false;
    double t = now();
    switch (co->emit) {
    case EMIT_TOKENS:
        ok = ast_dump_tokens(&out, s.path, s.text, s.len, &s.diag) && s.diag.nerrors == 0;
        stage(o, "lex", t);
        break;
    case EMIT_AST: {
        Ast *ast = ast_parse(s.path, s.text, s.len, &s.diag);
        stage(o, "parse", t);
        ok = ast && s.diag.nerrors == 0;
        if (ok) ast_dump(&out, ast);
        if (ast) ast_free(ast);
        break;
    }
    case EMIT_IR:
        m = driver_build_ir(&s, o);
        ok = m != NULL;
        if (ok) ir_print_module(&out, m);
        break;
    case EMIT_LLVM:
    case EMIT_PTX:
    case EMIT_CUBIN: {
        CgEmit upto = co->emit == EMIT_LLVM ? CG_EMIT_LLVM : co->emit == EMIT_PTX ? CG_EMIT_PTX : CG_EMIT_CUBIN;
        m = driver_build_ir(&s, o);
        ok = m && driver_codegen(&s, m, o, upto, &r);
        if (ok && upto == CG_EMIT_CUBIN) {
            bytes = r.cubin;
            nbytes = r.cubin_len;
        } else if (ok) {
            const StrBuf *text = upto == CG_EMIT_LLVM ? &r.llvm : &r.ptx;
            bytes = text->s;
            nbytes = text->len;
        }
        break;
    }
    case EMIT_HEADER:
        m = driver_build_ir(&s, o);
        ok = m && emit_header(o, co, &s, m, &out);
        break;
    }
    if (ok && !bytes) {
        bytes = out.s;
        nbytes = out.len;
    }
    char *default_path = NULL;
    const char *path = co->out_path;
    if (ok && co->emit == EMIT_CUBIN && !path) {
        char *stem = input_stem(o->input);
        size_t n = strlen(stem) + sizeof ".cubin";
        default_path = tl_xmalloc(n);
        snprintf(default_path, n, "%s.cubin", stem);
        free(stem);
        path = default_path;
    }
    if (ok) ok = write_bytes(path, bytes, nbytes, &s.diag);
    free(default_path);
    cg_result_free(&r);
    driver_free_ir(&s, m);
    sb_free(&out);
    source_close(&s);
    return ok ? 0 : 1;
}

static void print_help(void)
{
    IrTargetList l;
    fputs(usage_text, stdout);
    printf("  --arch=%s\n                           the GPU to compile for (default: %s)\n",
           ir_target_list(&l, 0, "|", "|"), ir_target_default()->name);
    fputs(usage_tail, stdout);
    fputs("\nPasses (the default pipeline runs the IR passes, in this order; layout runs before code "
          "generation):\n", stdout);
    for (size_t i = 0; i < pass_count; i++)
        printf("  %-24s %s%s\n", pass_table[i].name, pass_table[i].summary,
               pass_table[i].stage == PASS_BACKEND ? " (backend)" : "");
}

/* False after a usage error. */
static bool parse_emit(const char *arg, Emit *emit)
{
    for (size_t i = 0; i < TL_COUNTOF(emit_names); i++)
        if (strcmp(arg, emit_names[i]) == 0) {
            *emit = (Emit)i;
            return true;
        }
    driver_usage_error("tilec", "--emit wants tokens, ast, ir, llvm, ptx, cubin or header, not '%s'", arg);
    return false;
}

/* Checks the combination of options once they are all read; -1 to go on, else 2. */
static int check_compile_opts(const DriverOpts *o, const CompileOpts *co, int nfiles, char **files)
{
    if (nfiles == 0) return driver_usage_error("tilec", "no input file");
    if (nfiles > 1) return driver_usage_error("tilec", "more than one input file ('%s', '%s')", files[0], files[1]);
    if (!has_suffix(files[0], ".tile") && !has_suffix(files[0], ".tir"))
        return driver_usage_error("tilec", "'%s': unknown kind of input (expected FILE.tile or FILE.tir)", files[0]);
    bool tir = has_suffix(files[0], ".tir");
    if (tir && (co->emit == EMIT_TOKENS || co->emit == EMIT_AST))
        return driver_usage_error("tilec", "--emit=%s needs a .tile input", emit_names[co->emit]);
    if (tir && o->ndefines)
        return driver_usage_error("tilec", "-D sets compile-time parameters of a .tile source; a .tir is "
                                  "already specialized");
    if (co->emit != EMIT_HEADER) {
        if (co->embed) return driver_usage_error("tilec", "--embed goes with --emit=header");
        if (co->cubin_path) return driver_usage_error("tilec", "--cubin-path goes with --emit=header");
        if (co->module_name) return driver_usage_error("tilec", "--module-name goes with --emit=header");
    }
    if (co->embed && co->cubin_path)
        return driver_usage_error("tilec", "--cubin-path and --embed exclude each other (an embedded cubin is "
                                  "loaded from memory)");
    if (co->module_name && !is_ident(co->module_name, strlen(co->module_name)))
        return driver_usage_error("tilec", "--module-name wants a C identifier, not '%s'", co->module_name);
    if (co->emit == EMIT_CUBIN && co->out_path && strcmp(co->out_path, "-") == 0 && isatty(STDOUT_FILENO))
        return driver_usage_error("tilec", "a cubin is binary: not writing it to a terminal (give -o FILE)");
    return -1;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "run") == 0) return run_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "bench") == 0) return bench_main(argc - 1, argv + 1);

    static const struct option longopts[] = {
        DRIVER_COMMON_LONGOPTS,
        {"emit", required_argument, NULL, OPT_EMIT},
        {"embed", no_argument, NULL, OPT_EMBED},
        {"cubin-path", required_argument, NULL, OPT_CUBIN_PATH},
        {"module-name", required_argument, NULL, OPT_MODULE_NAME},
        {"version", no_argument, NULL, OPT_VERSION},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    DriverOpts o;
    driver_opts_init(&o, "tilec");
    CompileOpts co = {.emit = EMIT_IR};
    int rc = -1, c;
    driver_normalize_argv(argc, argv);
    opterr = 0;
    while (rc < 0 && (c = getopt_long(argc, argv, ":o:" DRIVER_COMMON_SHORTOPTS "h", longopts, NULL)) != -1) {
        int r = driver_common_opt(&o, c, optarg);
        if (r < 0) rc = 2;
        if (r != 0) continue;
        switch (c) {
        case 'o': co.out_path = optarg; break;
        case OPT_EMIT:
            if (!parse_emit(optarg, &co.emit)) rc = 2;
            break;
        case OPT_EMBED: co.embed = true; break;
        case OPT_CUBIN_PATH:
            if (!*optarg) rc = driver_usage_error("tilec", "--cubin-path wants a path");
            co.cubin_path = optarg;
            break;
        case OPT_MODULE_NAME: co.module_name = optarg; break;
        case OPT_VERSION:
            printf("tilec %s\nbuilt for LLVM %s\n", TILEC_VERSION, TILEC_LLVM_VERSION);
            rc = 0;
            break;
        case 'h':
        case OPT_HELP:
            print_help();
            rc = 0;
            break;
        default: rc = driver_bad_option("tilec", c, argv); break;
        }
    }
    if (rc < 0) rc = check_compile_opts(&o, &co, argc - optind, argv + optind);
    if (rc < 0) {
        o.input = argv[optind];
        if (o.dump_dir && o.ndump_after == 0) VEC_PUSH(o.dump_after, o.ndump_after, o.dumpcap, tl_xstrdup("all"));
        rc = compile(&o, &co);
    }
    driver_opts_free(&o);
    return rc;
}
