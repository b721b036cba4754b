/* tilec.c: the compiler driver.
 *
 *   tilec FILE.tile|FILE.tir [options]      compile: tokens, AST, IR, LLVM IR, PTX, cubin, C header
 *   tilec run FILE --kernel NAME ...        run a kernel (run.c)
 *   tilec bench FILE --kernel NAME ...      time a kernel on the GPU (bench.c)
 *   tilec tune FILE --kernel NAME ...       tune its compile-time parameters (tune.c)
 *
 * This file holds the command line of `tilec FILE` and main; the compilation
 * itself is driver_compile (driver.c), which run.c and bench.c call too:
 *   read -> (.tile) parse -> lower | (.tir) parse -> select kernels
 *        -> verify -> passes (with dumps) -> emit tokens/AST/IR
 *        -> backend passes (with dumps) -> LLVM IR -> PTX -> cubin -> emit, or a C header (header.c).
 * Exit status: 0 success, 1 a user error (diagnostics printed), 2 a bad
 * command line (one line saying what, and a hint).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../codegen/meta_emit.h"
#include "../passes/pass.h"
#include "header.h"
#include "run.h"
#include "spec.h"
#include "tune.h"

#ifndef TILEC_VERSION
#error "TILEC_VERSION is defined by tools/CMakeLists.txt"
#endif
#ifndef TILEC_LLVM_VERSION
#error "TILEC_LLVM_VERSION is defined by tools/CMakeLists.txt"
#endif

/* ORDER: emit_names follows this enum. */
typedef enum { EMIT_TOKENS, EMIT_AST, EMIT_IR, EMIT_LLVM, EMIT_PTX, EMIT_CUBIN, EMIT_HEADER, EMIT_META } Emit;

static const char *const emit_names[] = {"tokens", "ast", "ir", "llvm", "ptx", "cubin", "header", "meta"};
/* The file name endings of the kinds, for -o STEM with several kinds (ORDER: Emit). */
static const char *const emit_exts[] = {".tokens", ".ast", ".tir", ".ll", ".ptx", ".cubin", ".h", ".json"};

/* One output of --emit=KIND[=PATH],... */
typedef struct EmitOut {
    Emit kind;
    const char *path;           /* KIND=PATH, or NULL: from -o (see output_path) */
} EmitOut;

/* What `tilec FILE` alone takes besides DriverOpts. */
typedef struct CompileOpts {
    Emit emit;                  /* the first output's kind */
    EmitOut *outs;              /* --emit=KIND[=PATH],...: one compilation, several outputs, in this order */
    uint32_t nouts, outcap;
    const char *out_path;       /* -o; NULL: standard output (a cubin: STEM.cubin).  With several
                                 * outputs: the stem of those without a PATH (STEM.EXT, emit_exts) */
    bool embed;                 /* --embed: the cubin inside the header */
    const char *cubin_path;     /* --cubin-path: where the header's loader looks (no --embed) */
    const char *module_name;    /* --module-name: the prefix of the header's module functions */
    bool list_kernels;          /* --list-kernels: the kernels of FILE, one a line, instead of compiling */
    const char *embed_c;        /* --embed-c: the cubin's bytes go to this .c, the header declares them */
    const IrTarget **archs;     /* --arch=A,B,...: a header with a cubin per arch (archs[0] is o->arch) */
    uint32_t narchs;
    const char *tune_table;     /* --tune-table: the specializations a tuning table chose (tune.c) */
    TuneTable *table;           /* that table, read */
} CompileOpts;

static const char usage_text[] =
    "usage: tilec FILE.tile|FILE.tir [options]\n"
    "       tilec run FILE --kernel NAME --interp|--device ARG... [options]   (see tilec run --help)\n"
    "       tilec bench FILE --kernel NAME ARG... [options]                  (see tilec bench --help)\n"
    "       tilec tune FILE --kernel NAME --interp|--device --shape 'ARG...'  (see tilec tune --help)\n"
    "\n"
    "Compiles tile-language kernels.  Without --kernel, every kernel in FILE is\n"
    "compiled with its default compile-time parameters.\n"
    "\n"
    "Options:\n"
    "  -o FILE                  write the output to FILE ('-': standard output).  Without -o, text\n"
    "                           (tokens, ast, ir, llvm, ptx, header) goes to standard output and a\n"
    "                           cubin to STEM.cubin in the current folder (STEM: FILE without .tile)\n"
    "  --emit=tokens|ast|ir|llvm|ptx|cubin|header|meta\n"
    "                           what to write (default: ir); a list, --emit=cubin,header,meta,\n"
    "                           compiles once and writes each: KIND=PATH where PATH is given,\n"
    "                           else STEM.tokens|.ast|.tir|.ll|.ptx|.cubin|.h|.json with -o STEM\n"
    "                           (default STEM: FILE without .tile, in the current folder):\n"
    "                             tokens, ast   the lexer's tokens, the syntax tree (.tile only)\n"
    "                             ir            tile IR after the passes\n"
    "                             llvm          LLVM IR after lowering, before LLVM's optimizer\n"
    "                             ptx           PTX, with the kernel metadata (__tilec_meta)\n"
    "                             cubin         an ELF cubin for --arch, through nvJitLink\n"
    "                             header        a C header with one typed launch function per\n"
    "                                           kernel (see 'C header' below)\n"
    "                             meta          JSON: each kernel's parameters, specialization,\n"
    "                                           grid clause, threads, shared memory, registers and\n"
    "                                           spills (compiled to a cubin for --arch)\n"
    "  --list-kernels           print the kernels of FILE, one a line (.tile: source names; .tir:\n"
    "                           specialization symbols), and compile nothing\n"
    "  --save-temps             also write the IR the backend lowers (after the backend passes), the\n"
    "                           LLVM IR, the PTX and the cubin of this compilation as STEM.tir,\n"
    "                           STEM.ll, STEM.ptx and STEM.cubin in the current folder\n";
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
    "  --fast-math, -use_fast_math\n"
    "                           exp, exp2, log, log2, rsqrt, sigmoid, tanh and f32 division through\n"
    "                           the GPU's approximate instructions (bounds in lang/REFERENCE.md)\n"
    "  --kernel NAME            compile only kernel NAME (in a .tir also a specialization symbol)\n"
    "  -D NAME=VALUE            set a compile-time parameter (-D BLOCK=256, -DT=f16); repeatable\n"
    "  --spec NAME=VALUE[,...]  one more specialization of every kernel (after the -D values);\n"
    "                           repeatable: one module, cubin and header hold them all\n"
    "  --tune-table=TABLE.json  compile the kernel of a tuning table (tilec tune) with its -D values\n"
    "                           and one specialization per -D set it chose; with --emit=header,\n"
    "                           K_launch picks the specialization by the arguments' shape\n"
    "  --pass=NAME[,NAME...]    run these IR passes in this order instead of the default pipeline\n"
    "  --dump-after=NAME|all    print the IR after pass NAME (or every pass) to stderr; the layout\n"
    "                           pass runs before code generation (--emit=llvm, ptx, cubin)\n"
    "  --ir-dump-dir=DIR        write those dumps to DIR/NN-KERNEL-PASS.tir instead\n"
    "                           (without --dump-after: after every pass)\n"
    "  --diagnostics-color=auto|always|never\n"
    "                           colour in error messages (default: auto, on a terminal)\n"
    "  --remarks=NAME[,NAME...]|all\n"
    "                           explain the compiler's choices as 'file:line:col: remark:' lines\n"
    "                           on stderr (see 'Remarks' below)\n"
    "  -v                       print each stage and the time it took to stderr, and per kernel\n"
    "                           the CPU time of lowering, LLVM's pipeline and its PTX backend\n"
    "                           (and ptxas's for the module); with --emit=cubin or --embed, also\n"
    "                           ptxas's report per kernel (registers, barriers, stack frame, spills)\n"
    "  -j N                     compile the kernels (and specializations) of FILE in N threads\n"
    "                           (default: the number of CPUs); the output is the same for any N\n"
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
    "  --embed-c=FILE.c         like --embed, but the cubin's bytes go to FILE.c (compile and link it\n"
    "                           once); the header declares them, so files including it compile fast\n"
    "  Per kernel K the header declares\n"
    "    tilert_status K_launch(CUstream stream, PARAMS...)       grid from grid(...)\n"
    "    tilert_status K_launch_grid(CUstream stream, const uint32_t grid[3], PARAMS...)\n"
    "    tilert_status K_kernel(tilert_kernel **out)\n"
    "  with tensor<T, N> -> tilert_tensor, ptr<T> -> a device pointer, scalars -> the C type;\n"
    "  and per module MODULE_module(tilert_module **out) and MODULE_unload().  Several\n"
    "  specializations of K (--spec) are K__P_V for the parameters P whose values V differ, and\n"
    "  K_launch / K_launch_grid choose among them from the arguments' dtypes where only type\n"
    "  parameters differ and the C signatures agree (tilert_kernel_select).  With --tune-table,\n"
    "  K_tune_entry(PARAMS...) gives the table's entry nearest to the arguments' shape and\n"
    "  K_launch / K_launch_grid launch the specialization the table chose for it.\n";

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
    return driver_strndup(base, n);
}

static char *input_stem(const char *input)
{
    return stem_of(input, driver_has_suffix(input, ".tir") ? ".tir" : ".tile");
}

/* --emit=header: the module name, the cubin path, and the header text, written
 * to hpath (NULL: standard output).  r: the compilation to a cubin for
 * co->archs[0] (--embed), else NULL. */
static bool emit_header(const DriverOpts *o, const CompileOpts *co, Source *s, IrModule *m, const char *hpath,
                        const CgResult *r, StrBuf *out)
{
    static const CgResult none;
    if (!r) r = &none;
    TL_ASSERT(!co->embed || r->cubin, "tilec");
    /* --arch=A,B,...: the first arch is m's; each other one compiles the source again for it */
    HeaderImage *images = tl_xcalloc(co->narchs + 1, sizeof *images);
    CgResult *more = tl_xcalloc(co->narchs + 1, sizeof *more);
    StrBuf archs = {0};
    bool built = true;
    for (uint32_t i = 0; i < co->narchs && built; i++) {
        sb_printf(&archs, i ? ",%s" : "%s", co->archs[i]->name);
        if (i == 0) {
            images[0] = (HeaderImage){co->archs[0]->name, r->cubin, r->cubin_len};
            continue;
        }
        DriverOpts oi = *o;
        oi.arch = co->archs[i];
        IrModule *mi = NULL;
        built = driver_compile(s, &oi, &mi, DRIVER_CUBIN, &more[i]);
        if (built) images[i] = (HeaderImage){co->archs[i]->name, more[i].cubin, more[i].cubin_len};
        driver_free_ir(s, mi);
    }
    char *stem = input_stem(o->input);
    char *name = co->module_name ? tl_xstrdup(co->module_name)
                 : hpath && strcmp(hpath, "-") != 0 ? stem_of(hpath, ".h")
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
        .cubin = r->cubin,
        .cubin_len = r->cubin_len,
        .cubin_path = co->cubin_path ? co->cubin_path : cubin_path,
        .tilec_version = TILEC_VERSION,
        .embed_c = co->embed_c,
        .images = images,
        .nimages = co->narchs,
    };
    HeaderTune tuned;
    if (co->table) {
        if (!tune_table_header(co->table, m, &tuned, &s->diag)) built = false;
        h.tune = &tuned;
    }
    if (co->narchs > 1) h.arch = archs.s;
    StrBuf csrc = {0};
    h.embed_c_out = co->embed_c ? &csrc : NULL;
    double t = now();
    bool ok = built && header_write(out, m, &h, &s->diag);
    if (ok && co->embed_c) ok = write_bytes(co->embed_c, csrc.s, csrc.len, &s->diag);
    sb_free(&csrc);
    for (uint32_t i = 1; i < co->narchs; i++) cg_result_free(&more[i]);
    free(more);
    free(images);
    sb_free(&archs);
    stage(o, "header", t);
    free(cubin_path);
    free(name);
    free(stem);
    return ok;
}

/* --list-kernels: .tile source names (from the syntax tree: no kernel is
 * specialized), .tir symbols. */
static bool list_kernels(Source *s, StrBuf *out)
{
    if (s->is_tir) {
        IrModule *m = ir_parse(s->path, s->text, s->len, &s->diag);
        if (!m) return false;
        bool ok = s->diag.nerrors == 0;
        for (uint32_t i = 0; ok && i < m->nfuncs; i++) sb_printf(out, "%s\n", m->funcs[i]->name);
        ir_module_free(m);
        return ok;
    }
    Ast *ast = ast_parse(s->path, s->text, s->len, &s->diag);
    bool ok = ast && s->diag.nerrors == 0;
    for (uint32_t i = 0; ok && i < ast->ndecls; i++)
        if (ast->decls[i]->kind == AST_KERNEL) sb_printf(out, "%s\n", ast->decls[i]->name);
    if (ast) ast_free(ast);
    return ok;
}

static void json_str(StrBuf *b, const char *s)
{
    sb_putc(b, '"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') sb_printf(b, "\\%c", ch);
        else if (ch < 0x20) sb_printf(b, "\\u%04x", ch);
        else sb_putc(b, (char)ch);
    }
    sb_putc(b, '"');
}

/* --emit=meta: what a launcher or a build system needs to know of each
 * kernel, after compiling the module to a cubin (r). */
static void emit_meta(const DriverOpts *o, const IrModule *m, const CgResult *r, StrBuf *b)
{
    sb_puts(b, "{\n  \"source\": ");
    json_str(b, o->input);
    sb_puts(b, ",\n  \"arch\": ");
    json_str(b, o->arch->name);
    sb_printf(b, ",\n  \"tilec\": \"%s\",\n  \"kernels\": [", TILEC_VERSION);
    for (uint32_t i = 0; i < m->nfuncs; i++) {
        const IrFunc *f = m->funcs[i];
        sb_puts(b, i ? ",\n    {\"name\": " : "\n    {\"name\": ");
        json_str(b, f->source_name);
        sb_puts(b, ", \"symbol\": ");
        json_str(b, f->name);
        sb_puts(b, ",\n     \"params\": [");
        for (uint32_t k = 0; k < f->nparams; k++) {
            StrBuf t = {0};
            ir_ty_print(&t, f->params[k].ty);
            sb_puts(b, k ? ", {\"name\": " : "{\"name\": ");
            json_str(b, f->params[k].name);
            sb_puts(b, ", \"type\": ");
            json_str(b, t.s);
            sb_putc(b, '}');
            sb_free(&t);
        }
        sb_puts(b, "],\n     \"specialization\": {");
        for (uint32_t k = 0; k < f->nspecs; k++) {
            if (k) sb_puts(b, ", ");
            json_str(b, f->specs[k].name);
            sb_puts(b, ": ");
            json_str(b, f->specs[k].value);
        }
        const CgKernelFacts *kf = &r->facts[i];
        sb_printf(b, "},\n     \"grid\": %s, \"warps\": %d, \"threads\": %d,\n", f->grid ? "true" : "false",
                  kf->warps, 32 * kf->warps);
        sb_printf(b, "     \"shared_memory\": {\"static\": %u, \"dynamic\": %u}", kf->smem_static, kf->smem_dynamic);
        int regs, st, ld;
        if (cg_ptxas_usage(r->info.s, f->name, &regs, &st, &ld))
            sb_printf(b, ",\n     \"registers\": %d, \"spill_stores\": %d, \"spill_loads\": %d", regs, st, ld);
        sb_putc(b, '}');
    }
    sb_puts(b, "\n  ]\n}\n");
}

/* STEM.ext in the current folder (as gcc's -save-temps and nvcc's --keep). */
static char *temp_path(const DriverOpts *o, const char *ext)
{
    char *stem = input_stem(o->input);
    size_t n = strlen(stem) + strlen(ext) + 1;
    char *path = tl_xmalloc(n);
    snprintf(path, n, "%s%s", stem, ext);
    free(stem);
    return path;
}

/* --save-temps: the stages of this compilation side by side. */
static bool save_temps(const DriverOpts *o, Source *s, const IrModule *m, const CgResult *r)
{
    StrBuf ir = {0};
    ir_print_module(&ir, m);
    const struct {
        const char *ext;
        const void *data;
        size_t len;
    } temps[] = {
        {".tir", ir.s, ir.len}, {".ll", r->llvm.s, r->llvm.len}, {".ptx", r->ptx.s, r->ptx.len},
        {".cubin", r->cubin, r->cubin_len},
    };
    bool ok = true;
    for (size_t i = 0; ok && i < TL_COUNTOF(temps); i++) {
        char *path = temp_path(o, temps[i].ext);
        ok = write_bytes(path, temps[i].data, temps[i].len, &s->diag);
        free(path);
    }
    sb_free(&ir);
    return ok;
}

/* Where output e goes (malloc'd; NULL: standard output): its own PATH; with
 * one output, -o (without it a cubin goes to STEM.cubin, the rest to standard
 * output); with several, -o STEM (default: the input's stem, in the current
 * folder) and the kind's ending. */
static char *output_path(const DriverOpts *o, const CompileOpts *co, const EmitOut *e)
{
    if (e->path) return tl_xstrdup(e->path);
    if (co->nouts <= 1 && co->out_path) return tl_xstrdup(co->out_path);
    if (co->nouts <= 1 && e->kind != EMIT_CUBIN) return NULL;
    char *stem = co->out_path ? tl_xstrdup(co->out_path) : input_stem(o->input);
    size_t n = strlen(stem) + strlen(emit_exts[e->kind]) + 1;
    char *path = tl_xmalloc(n);
    snprintf(path, n, "%s%s", stem, emit_exts[e->kind]);
    free(stem);
    return path;
}

/* tilec FILE: one compilation, as far as the outputs need, then each output
 * written in the order --emit named them. */
static int compile(const DriverOpts *o, const CompileOpts *co)
{
    Source s;
    if (!source_open(&s, o)) {
        source_close(&s);
        return 1;
    }
    StrBuf text[TL_COUNTOF(emit_names)] = {{0}};
    bool want[TL_COUNTOF(emit_names)] = {0};
    for (uint32_t i = 0; i < co->nouts; i++) want[co->outs[i].kind] = true;
    CgResult r = {0};
    IrModule *m = NULL;
    bool ok = true;
    double t = now();
    if (co->list_kernels) {
        ok = list_kernels(&s, &text[0]);
        if (ok) ok = write_bytes(co->out_path, text[0].s, text[0].len, &s.diag);
        sb_free(&text[0]);
        source_close(&s);
        return ok ? 0 : 1;
    }
    if (want[EMIT_TOKENS]) {
        ok = ast_dump_tokens(&text[EMIT_TOKENS], s.path, s.text, s.len, &s.diag) && s.diag.nerrors == 0;
        stage(o, "lex", t);
    }
    if (ok && want[EMIT_AST]) {
        t = now();
        Ast *ast = ast_parse(s.path, s.text, s.len, &s.diag);
        stage(o, "parse", t);
        ok = ast && s.diag.nerrors == 0;
        if (ok) ast_dump(&text[EMIT_AST], ast);
        if (ast) ast_free(ast);
    }
    bool compiles = false;
    for (Emit k = EMIT_IR; k <= EMIT_META; k++) compiles |= want[k];
    if (ok && compiles) {
        /* the furthest stage an output needs (--save-temps: a cubin) */
        DriverStage upto = o->save_temps || want[EMIT_CUBIN] || want[EMIT_META] || (want[EMIT_HEADER] && co->embed)
                               ? DRIVER_CUBIN
                           : want[EMIT_PTX]  ? DRIVER_PTX
                           : want[EMIT_LLVM] ? DRIVER_LLVM
                                             : DRIVER_IR;
        DriverOpts oc = *o;
        if (want[EMIT_LLVM]) oc.save_temps = true; /* the LLVM text also when compiling further */
        ok = driver_compile(&s, &oc, &m, DRIVER_IR, NULL);
        if (ok && want[EMIT_IR]) ir_print_module(&text[EMIT_IR], m);
        if (ok && upto != DRIVER_IR) ok = driver_compile(&s, &oc, &m, upto, &r);
        if (ok && o->save_temps) ok = save_temps(o, &s, m, &r);
        if (ok && want[EMIT_LLVM]) sb_puts(&text[EMIT_LLVM], r.llvm.s ? r.llvm.s : "");
        if (ok && want[EMIT_META]) emit_meta(o, m, &r, &text[EMIT_META]);
        for (uint32_t i = 0; ok && i < co->nouts; i++) {
            if (co->outs[i].kind != EMIT_HEADER) continue;
            char *hpath = output_path(o, co, &co->outs[i]);
            ok = emit_header(o, co, &s, m, hpath, co->embed ? &r : NULL, &text[EMIT_HEADER]);
            free(hpath);
            break;
        }
    }
    for (uint32_t i = 0; ok && i < co->nouts; i++) {
        Emit k = co->outs[i].kind;
        const void *bytes = k == EMIT_CUBIN ? r.cubin : k == EMIT_PTX ? (const void *)r.ptx.s : text[k].s;
        size_t n = k == EMIT_CUBIN ? r.cubin_len : k == EMIT_PTX ? r.ptx.len : text[k].len;
        char *path = output_path(o, co, &co->outs[i]);
        ok = write_bytes(path, bytes, n, &s.diag);
        free(path);
    }
    for (size_t k = 0; k < TL_COUNTOF(text); k++) sb_free(&text[k]);
    cg_result_free(&r);
    driver_free_ir(&s, m);
    source_close(&s);
    return ok ? 0 : 1;
}

static void print_help(void)
{
    IrTargetList l, all;
    fputs(usage_text, stdout);
    printf("  --arch=%s\n"
           "                           the GPU to compile for (default: %s); also nvcc's -arch=ARCH;\n"
           "                           a header (--embed, --embed-c) takes a list, --arch=%s:\n"
           "                           one cubin each, the one for the device loaded at run time\n",
           ir_target_list(&l, 0, "|", "|"), ir_target_default()->name, ir_target_list(&all, 0, ",", ","));
    fputs(usage_tail, stdout);
    fputs("\nRemarks (--remarks=NAME,...; all: every kind):\n", stdout);
    for (int k = 0; k < DIAG_NREMARKS; k++) printf("  %-24s %s\n", diag_remark_names[k], diag_remark_summaries[k]);
    fputs("\nPasses (the default pipeline runs the IR passes, in this order; layout runs before code "
          "generation):\n", stdout);
    for (size_t i = 0; i < pass_count; i++)
        printf("  %-24s %s%s\n", pass_table[i].name, pass_table[i].summary,
               pass_table[i].stage == PASS_BACKEND ? " (backend)" : "");
}

/* --emit=KIND[=PATH][,KIND[=PATH]...]: replaces the outputs.  False after a usage error. */
static bool parse_emit(const char *arg, CompileOpts *co)
{
    for (uint32_t i = 0; i < co->nouts; i++) free((char *)co->outs[i].path);
    co->nouts = 0;
    const char *p = arg;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        const char *eq = memchr(p, '=', n);
        size_t kn = eq ? (size_t)(eq - p) : n;
        size_t k = 0;
        while (k < TL_COUNTOF(emit_names) && !(strlen(emit_names[k]) == kn && strncmp(p, emit_names[k], kn) == 0)) k++;
        if (k == TL_COUNTOF(emit_names)) {
            driver_usage_error("tilec", "--emit wants tokens, ast, ir, llvm, ptx, cubin, header or meta, not '%.*s' "
                               "(several at once: --emit=cubin,header,meta, or with paths: "
                               "--emit=cubin=g.cubin,header=g.h)", (int)kn, p);
            return false;
        }
        if (eq && eq + 1 == p + n) {
            driver_usage_error("tilec", "--emit=%s= wants a path after '='", emit_names[k]);
            return false;
        }
        for (uint32_t i = 0; i < co->nouts; i++)
            if (co->outs[i].kind == (Emit)k) {
                driver_usage_error("tilec", "--emit names '%s' twice", emit_names[k]);
                return false;
            }
        EmitOut e = {(Emit)k, eq ? driver_strndup(eq + 1, (size_t)(p + n - eq - 1)) : NULL};
        VEC_PUSH(co->outs, co->nouts, co->outcap, e);
        if (!comma) break;
        p = comma + 1;
    }
    co->emit = co->outs[0].kind;
    return true;
}

static bool wants(const CompileOpts *co, Emit k)
{
    for (uint32_t i = 0; i < co->nouts; i++)
        if (co->outs[i].kind == k) return true;
    return false;
}

/* Checks the combination of options once they are all read; -1 to go on, else 2. */
static int check_compile_opts(const DriverOpts *o, const CompileOpts *co, int nfiles, char **files)
{
    if (nfiles == 0) return driver_usage_error("tilec", "no input file");
    if (nfiles > 1) return driver_usage_error("tilec", "more than one input file ('%s', '%s')", files[0], files[1]);
    if (!driver_has_suffix(files[0], ".tile") && !driver_has_suffix(files[0], ".tir"))
        return driver_usage_error("tilec", "'%s': unknown kind of input (expected FILE.tile or FILE.tir)", files[0]);
    bool tir = driver_has_suffix(files[0], ".tir");
    for (uint32_t i = 0; tir && i < co->nouts; i++)
        if (co->outs[i].kind == EMIT_TOKENS || co->outs[i].kind == EMIT_AST)
            return driver_usage_error("tilec", "--emit=%s needs a .tile input", emit_names[co->outs[i].kind]);
    if (tir && o->nspecs)
        return driver_usage_error("tilec", "--spec sets compile-time parameters of a .tile source; a .tir is "
                                  "already specialized");
    if (tir && o->ndefines)
        return driver_usage_error("tilec", "-D sets compile-time parameters of a .tile source; a .tir is "
                                  "already specialized");
    if (!wants(co, EMIT_HEADER)) {
        if (co->embed) return driver_usage_error("tilec", "--embed goes with --emit=header");
        if (co->cubin_path) return driver_usage_error("tilec", "--cubin-path goes with --emit=header");
        if (co->module_name) return driver_usage_error("tilec", "--module-name goes with --emit=header");
    }
    if (o->save_temps && (wants(co, EMIT_TOKENS) || wants(co, EMIT_AST) || wants(co, EMIT_HEADER)))
        return driver_usage_error("tilec", "--save-temps goes with --emit=ir, llvm, ptx, cubin or meta");
    if (co->list_kernels && o->save_temps)
        return driver_usage_error("tilec", "--list-kernels compiles nothing: no --save-temps with it");
    if (co->narchs > 1 && (!wants(co, EMIT_HEADER) || !co->embed))
        return driver_usage_error("tilec", "several archs (--arch=%s,...) go with --emit=header --embed or --embed-c",
                                  co->archs[0]->name);
    if (co->embed && co->cubin_path)
        return driver_usage_error("tilec", "--cubin-path and --embed exclude each other (an embedded cubin is "
                                  "loaded from memory)");
    if (co->module_name && !driver_is_ident(co->module_name, strlen(co->module_name)))
        return driver_usage_error("tilec", "--module-name wants a C identifier, not '%s'", co->module_name);
    uint32_t to_stdout = 0;
    for (uint32_t i = 0; i < co->nouts; i++) {
        const EmitOut *e = &co->outs[i];
        bool out = e->path ? strcmp(e->path, "-") == 0
                           : co->nouts == 1 && (co->out_path ? strcmp(co->out_path, "-") == 0 : e->kind != EMIT_CUBIN);
        to_stdout += out;
        if (out && e->kind == EMIT_CUBIN && isatty(STDOUT_FILENO))
            return driver_usage_error("tilec", "a cubin is binary: not writing it to a terminal (give -o FILE)");
    }
    if (to_stdout > 1) return driver_usage_error("tilec", "two outputs for standard output: give them paths (KIND=PATH)");
    if (co->nouts > 1 && co->out_path && strcmp(co->out_path, "-") == 0)
        return driver_usage_error("tilec", "with several outputs -o is their stem (STEM.cubin, STEM.h, ...), not '-'");
    return -1;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "run") == 0) return run_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "bench") == 0) return bench_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "tune") == 0) return tune_main(argc - 1, argv + 1);

    static const struct option longopts[] = {
        DRIVER_COMMON_LONGOPTS,
        {"emit", required_argument, NULL, OPT_EMIT},
        {"embed", no_argument, NULL, OPT_EMBED},
        {"cubin-path", required_argument, NULL, OPT_CUBIN_PATH},
        {"module-name", required_argument, NULL, OPT_MODULE_NAME},
        {"list-kernels", no_argument, NULL, OPT_LIST_KERNELS},
        {"save-temps", no_argument, NULL, OPT_SAVE_TEMPS},
        {"spec", required_argument, NULL, OPT_SPEC},
        {"embed-c", required_argument, NULL, OPT_EMBED_C},
        {"tune-table", required_argument, NULL, OPT_TUNE_TABLE},
        {"version", no_argument, NULL, OPT_VERSION},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    DriverOpts o;
    driver_opts_init(&o, "tilec");
    CompileOpts co = {.emit = EMIT_IR};
    EmitOut default_out = {EMIT_IR, NULL};
    int rc = -1, c;
    driver_normalize_argv(argc, argv);
    opterr = 0;
    while (rc < 0 && (c = getopt_long(argc, argv, ":o:" DRIVER_COMMON_SHORTOPTS "h", longopts, NULL)) != -1) {
        if (c == OPT_ARCH) {   /* the last --arch wins; a list (several archs) is a header's */
            free(co.archs);
            co.archs = NULL;
            co.narchs = 0;
            if (optarg && strchr(optarg, ',')) {
                if (driver_parse_arch_list("tilec", optarg, &co.archs, &co.narchs) < 0) rc = 2;
                else o.arch = co.archs[0], o.arch_given = true;
                continue;
            }
        }
        int r = driver_common_opt(&o, c, optarg);
        if (r < 0) rc = 2;
        if (r != 0) continue;
        switch (c) {
        case 'o': co.out_path = optarg; break;
        case OPT_EMIT:
            if (!parse_emit(optarg, &co)) rc = 2;
            break;
        case OPT_EMBED: co.embed = true; break;
        case OPT_CUBIN_PATH:
            if (!*optarg) rc = driver_usage_error("tilec", "--cubin-path wants a path");
            co.cubin_path = optarg;
            break;
        case OPT_MODULE_NAME: co.module_name = optarg; break;
        case OPT_LIST_KERNELS: co.list_kernels = true; break;
        case OPT_SAVE_TEMPS: o.save_temps = true; break;
        case OPT_SPEC:
            if (driver_add_spec("tilec", &o.specs, &o.nspecs, &o.speccap, optarg) < 0) rc = 2;
            break;
        case OPT_TUNE_TABLE:
            if (!*optarg) rc = driver_usage_error("tilec", "--tune-table wants a TABLE.json");
            co.tune_table = optarg;
            break;
        case OPT_EMBED_C:
            if (!*optarg) rc = driver_usage_error("tilec", "--embed-c wants a FILE.c");
            co.embed_c = optarg;
            co.embed = true;
            break;
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
    if (rc < 0 && co.nouts == 0) VEC_PUSH(co.outs, co.nouts, co.outcap, default_out);
    if (rc < 0) rc = check_compile_opts(&o, &co, argc - optind, argv + optind);
    if (rc < 0 && co.tune_table) {
        if (driver_has_suffix(argv[optind], ".tir"))
            rc = driver_usage_error("tilec", "--tune-table sets compile-time parameters of a .tile source; a .tir is "
                                    "already specialized");
        else if (!(co.table = tune_table_load(co.tune_table, o.color)))
            rc = 1;
        else
            rc = tune_table_apply(co.table, &o);
    }
    if (rc < 0) {
        o.input = argv[optind];
        if (o.dump_dir && o.ndump_after == 0) VEC_PUSH(o.dump_after, o.ndump_after, o.dumpcap, tl_xstrdup("all"));
        rc = compile(&o, &co);
    }
    driver_opts_free(&o);
    tune_table_free(co.table);
    free(co.archs);
    for (uint32_t i = 0; i < co.nouts; i++) free((char *)co.outs[i].path);
    free(co.outs);
    return rc;
}
