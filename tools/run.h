/* run.h: what the commands of the driver share.
 *
 *   tilec FILE ...          tilec.c   compile: tokens, AST, IR, LLVM IR, PTX, cubin, C header
 *   tilec run FILE ...      run.c     one kernel on the interpreter (--interp) or the GPU (--device)
 *   tilec bench FILE ...    bench.c   time one kernel on the GPU
 *
 * tilec.c defines the front half of the pipeline all three use (options,
 * reading the input, verified and optimized IR) and the back half (layout,
 * code generation); run.c defines argument binding, which bench reuses;
 * device.c the GPU side of run and bench; header.c the --emit=header writer.
 */
#ifndef TILEC_RUN_H
#define TILEC_RUN_H

#include "../codegen/cg.h"
#include "../frontend/frontend.h"
#include "../ir/interp.h"
#include "npy.h"

#define DRIVER_DEFAULT_OPT 3
#define RUN_DEFAULT_SEED 1
#define RUN_DEFAULT_RTOL 1e-5
#define RUN_DEFAULT_ATOL 1e-6
#define BENCH_DEFAULT_RUNS 100
#define BENCH_DEFAULT_WARMUP 10

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
    const IrTarget *arch;       /* --arch: never NULL after parsing (ir_target_default()) */
    bool arch_given;            /* tilec run --device / bench: otherwise the device's own arch */
    bool debug;                 /* -g: keep assert checks in device code */
    bool lineinfo;              /* .loc line information (default on; --no-lineinfo) */
    bool fast_math;             /* --fast-math: hardware approximations for math and f32 division */
} DriverOpts;

/* getopt_long codes of the long-only options. */
enum {
    OPT_KERNEL = 256, OPT_PASS, OPT_DUMP_AFTER, OPT_IR_DUMP_DIR, OPT_COLOR, OPT_EMIT, OPT_VERSION, OPT_HELP,
    OPT_ARCH, OPT_LINEINFO, OPT_NO_LINEINFO, OPT_FAST_MATH,
    /* tilec FILE --emit=header */
    OPT_EMBED, OPT_CUBIN_PATH, OPT_MODULE_NAME,
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
        {"fast-math", no_argument, NULL, OPT_FAST_MATH}
/* The short options driver_common_opt handles (-D, -v, -O, -g). */
#define DRIVER_COMMON_SHORTOPTS "D:vO::g"
/* nvcc's spelling -lineinfo becomes --lineinfo (getopt_long reads only "--" long options). */
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
    Diag diag;
} Source;

/* Reads o->input; false (after an error) when it cannot be read. */
bool source_open(Source *s, const DriverOpts *o);
void source_close(Source *s);

/* Tile source or textual IR -> verified IR of the selected kernels -> passes
 * (with dumps).  Returns NULL after reporting errors to s->diag. */
IrModule *driver_build_ir(Source *s, const DriverOpts *o);
/* Frees what driver_build_ir returned (NULL is fine). */
void driver_free_ir(Source *s, IrModule *m);
/* The back half: the backend passes (layout; dumped as --dump-after asks),
 * then code generation up to `upto` for o's target.  With -v, nvJitLink's
 * report (registers, shared memory, spills per kernel) goes to stderr.
 * False after reporting errors to s->diag; *r is then empty. */
bool driver_codegen(Source *s, IrModule *m, const DriverOpts *o, CgEmit upto, CgResult *r);

/* ---- tilec run and tilec bench ------------------------------------------------ */

typedef struct OutReq {         /* --out NAME=PATH */
    const char *name, *path;
} OutReq;

typedef struct RunFill {
    const char *name;           /* a buffer argument */
    const char *option;         /* "--poison" or "--zero", for messages */
    unsigned char byte;         /* every byte of the buffer starts as this */
} RunFill;

typedef struct RunOpts {
    DriverOpts drv;
    const char **args;          /* the ARGs, NAME=SPEC, pointing into argv */
    uint32_t nargs, argcap;
    OutReq *outs;
    uint32_t nouts, outcap;
    uint32_t grid[3];
    bool has_grid, interp, device;
    uint64_t seed;
    RunFill *fills;             /* --poison (every byte 0xff) and --zero: buffers' first contents */
    uint32_t nfills, fillcap;
    bool check;                 /* --check: the interpreter too, and compare every buffer */
    double rtol, atol;          /* --check's float tolerance: |gpu - interp| <= atol + rtol * |interp| */
    bool bench;                 /* tilec bench: the options below */
    uint32_t runs, warmup;      /* timed runs (default 100), untimed ones before them (default 10) */
    const char *bytes_expr;     /* --bytes / --flops: expressions over the arguments (bench.c) */
    const char *flops_expr;
    bool flush;                 /* write a 256 MiB buffer between runs to empty L2 (default on) */
} RunOpts;

/* One kernel parameter and what was bound to it. */
typedef struct Binding {
    const char *spec;           /* the ARG that bound it (NULL: unbound) */
    NpyArray arr;               /* buffer parameters: the data, in the dtype it came in */
} Binding;

/* The arguments of one kernel, bound from the command line. */
typedef struct KernelArgs {
    IrFunc *f;
    Binding *binds;             /* [f->nparams] */
    InterpArg *args;            /* [f->nparams] */
    InterpBuf *bufs;            /* [nbufs]: buffer arguments in the order bound */
    uint32_t nbufs;
} KernelArgs;

/* The one kernel of m the command runs (several: an error naming them). */
IrFunc *run_pick_kernel(IrModule *m, const char *want, Diag *d);
/* Binds every ARG of ro to f's parameters and checks --out; reports each
 * mismatch; false if there was any (ka is then still to be freed). */
bool run_bind(const RunOpts *ro, IrFunc *f, KernelArgs *ka, Diag *d);
void run_args_free(KernelArgs *ka);
/* The launch grid: --grid, else f's grid(...) clause on the arguments. */
bool run_grid(const RunOpts *ro, const KernelArgs *ka, uint32_t grid[3], Diag *d);
bool run_is_buffer_param(IrType t);
int run_find_param(const IrFunc *f, const char *name, size_t n);
/* Writes each --out buffer as .npy. */
bool run_write_outs(const RunOpts *ro, const KernelArgs *ka, Diag *d);

/* `tilec run ...` and `tilec bench ...`: argv[0] is "run" / "bench".  Return the exit status. */
int run_main(int argc, char **argv);
int bench_main(int argc, char **argv);
/* Parses the command line of run or bench (ro->bench chooses); -1 to go on, else the exit status. */
int run_parse_args(int argc, char **argv, RunOpts *ro);
void run_opts_free(RunOpts *ro);

#endif
