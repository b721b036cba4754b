/* driver.h: the compiler driver, which every command (tilec.c, run.c, bench.c)
 * calls: the options they share, reading the input, and the whole pipeline in
 * one function, driver_compile (driver.c).
 */
#ifndef TILEC_DRIVER_H
#define TILEC_DRIVER_H

#include "../codegen/cg.h"
#include "../frontend/frontend.h"

#define DRIVER_DEFAULT_OPT 3

/* Options shared by every command.  Arrays are malloc'd. */
typedef struct DriverOpts {
    const char *cmd;            /* "tilec", "tilec run" or "tilec bench", for usage messages */
    const char *input;
    const char *kernel;         /* --kernel: source or symbol name; NULL: every kernel */
    FeDefine *defines;          /* -D, one per name (a later -D of a name replaces the value) */
    uint32_t ndefines, definecap;
    const char **passes;        /* --pass, in order; empty: the default pipeline */
    uint32_t npasses, passcap;
    int opt_level;              /* -O0..-O3 (default 3): LLVM's and ptxas's level */
    bool no_passes;             /* -O0: no IR passes either */
    bool opt_given;             /* an -O flag was given: .tir input then runs the default pipeline too */
    const char **dump_after;    /* --dump-after: pass names (canonical or backend) or "all" */
    uint32_t ndump_after, dumpcap;
    const char *dump_dir;       /* --ir-dump-dir */
    DiagColor color;
    bool verbose;               /* -v: stages and times; nvJitLink's per-kernel resource report */
    const IrTarget *arch;       /* --arch: a row of ir/target.def, never NULL after parsing (ir_target_default()) */
    bool arch_given;            /* tilec run --device / bench: otherwise the device's own arch */
    bool debug;                 /* -g: keep assert checks in device code */
    bool lineinfo;              /* .loc line information (default on; --no-lineinfo) */
    bool fast_math;             /* --fast-math: hardware approximations for math and f32 division */
    bool save_temps;            /* --save-temps: code generation keeps the LLVM IR too (CgTarget.keep_llvm) */
    uint32_t remarks;           /* --remarks: bit k set prints remarks of kind k (common/remarks.def) */
    int jobs;                   /* -j: threads for code generation (default: the online CPUs); never below 1 */
    FeSpecSet *specs;           /* --spec (tilec FILE only; spec.c): several specializations */
    uint32_t nspecs, speccap;
} DriverOpts;

/* getopt_long codes of the long-only options. */
enum {
    OPT_KERNEL = 256, OPT_PASS, OPT_DUMP_AFTER, OPT_IR_DUMP_DIR, OPT_COLOR, OPT_EMIT, OPT_VERSION, OPT_HELP,
    OPT_ARCH, OPT_LINEINFO, OPT_NO_LINEINFO, OPT_FAST_MATH, OPT_REMARKS,
    /* tilec FILE --emit=header */
    OPT_EMBED, OPT_CUBIN_PATH, OPT_MODULE_NAME, OPT_SPEC, OPT_EMBED_C,
    /* tilec FILE */
    OPT_LIST_KERNELS, OPT_SAVE_TEMPS,
    /* tilec run, tilec bench */
    OPT_INTERP, OPT_DEVICE, OPT_OUT, OPT_GRID, OPT_SEED, OPT_CHECK, OPT_POISON, OPT_ZERO, OPT_RTOL, OPT_ATOL,
    /* tilec bench */
    OPT_RUNS, OPT_WARMUP, OPT_BYTES, OPT_FLOPS, OPT_NO_FLUSH,
};

/* Sets the defaults every command starts from. */
void driver_opts_init(DriverOpts *o, const char *cmd);
/* Handles an option common to every command (c: its getopt code).  Returns 1
 * if it was one, 0 if not, -1 after printing a usage error. */
int driver_common_opt(DriverOpts *o, int c, const char *arg);
/* The long options driver_common_opt handles, for a command's option table. */
#define DRIVER_COMMON_LONGOPTS                                                                        \
    {"kernel", required_argument, NULL, OPT_KERNEL}, {"pass", required_argument, NULL, OPT_PASS},     \
        {"dump-after", required_argument, NULL, OPT_DUMP_AFTER},                                      \
        {"ir-dump-dir", required_argument, NULL, OPT_IR_DUMP_DIR},                                    \
        {"diagnostics-color", required_argument, NULL, OPT_COLOR},                                    \
        {"arch", required_argument, NULL, OPT_ARCH}, {"lineinfo", no_argument, NULL, OPT_LINEINFO},   \
        {"no-lineinfo", no_argument, NULL, OPT_NO_LINEINFO},                                             \
        {"fast-math", no_argument, NULL, OPT_FAST_MATH}, {"remarks", required_argument, NULL, OPT_REMARKS}
/* The short options driver_common_opt handles (-D, -v, -O, -g, -j). */
#define DRIVER_COMMON_SHORTOPTS "D:vO::gj:"
/* nvcc's spellings -lineinfo, -use_fast_math, -arch=ARCH and -arch ARCH become
 * --lineinfo, --fast-math and --arch (getopt_long reads only "--" long options). */
void driver_normalize_argv(int argc, char **argv);
/* Reports a usage error ("tilec: error: ..." and a hint to run --help); returns 2. */
int driver_usage_error(const char *cmd, const char *fmt, ...) TL_PRINTF(2, 3);
/* Reports getopt_long's '?' or ':' for argv[optind - 1]; returns 2. */
int driver_bad_option(const char *cmd, int c, char **argv);
void driver_opts_free(DriverOpts *o);
/* The code-generation target the options ask for. */
CgTarget driver_target(const DriverOpts *o);

/* One input file and the diagnostics about it (which point into `text`). */
typedef struct Source {
    const char *path;
    char *text;
    size_t len;
    bool is_tir;                /* .tir: textual IR; otherwise tile source */
    uint32_t nhidden;           /* kernels --kernel left out of a .tir module (see driver_free_ir) */
    uint32_t ndumps;            /* IR dumps written so far: --ir-dump-dir numbers both pipelines' as one */
    Diag diag;
} Source;

/* Reads o->input; false (after an error) when it cannot be read. */
bool source_open(Source *s, const DriverOpts *o);
void source_close(Source *s);

/* Small string helpers the commands share. */
bool driver_is_ident(const char *s, size_t n);          /* a C identifier */
char *driver_strndup(const char *s, size_t n);          /* malloc'd, NUL-terminated */
bool driver_has_suffix(const char *s, const char *suffix);

/* How far driver_compile goes. ORDER: each stage includes the ones before. */
typedef enum DriverStage {
    DRIVER_IR,      /* verified IR of the selected kernels, after the canonical passes */
    DRIVER_LLVM,    /* then the backend passes and LLVM IR */
    DRIVER_PTX,     /* then PTX (with the kernel metadata) */
    DRIVER_CUBIN,   /* then a cubin through nvJitLink */
} DriverStage;

/* The whole compilation of one input, top to bottom:
 *   source (.tile: parse, lower) or IR text (.tir: parse, --kernel) -> verify
 *   -> canonical passes (or --pass) -> backend passes -> LLVM -> PTX -> cubin,
 * stopping after `upto`; the pass runner verifies the IR after every pass.
 * *m is the IR: when NULL it is built from s and set (also on failure, once
 * IR exists: free it with driver_free_ir); when set (a command that built the
 * IR first, to bind arguments, then chose the arch), compilation resumes at the
 * backend passes.  Past DRIVER_IR, *r holds the code-generation results
 * (cg_result_free it); with -v, ptxas's report goes to stderr.  False after
 * reporting errors to s->diag. */
bool driver_compile(Source *s, const DriverOpts *o, IrModule **m, DriverStage upto, CgResult *r);
/* Frees the IR driver_compile built (NULL is fine). */
void driver_free_ir(Source *s, IrModule *m);

#endif
