/* run.h: what `tilec run` and `tilec bench` share.
 *
 *   tilec FILE ...          tilec.c   compile: tokens, AST, IR, LLVM IR, PTX, cubin, C header
 *   tilec run FILE ...      run.c     one kernel on the interpreter (--interp) or the GPU (--device)
 *   tilec bench FILE ...    bench.c   time one kernel on the GPU
 *
 * All three compile through driver.c (the options they share, reading the
 * input, and the pipeline in one function); run.c defines argument binding,
 * which bench reuses; device.c the GPU side of run and bench; header.c the
 * --emit=header writer.
 */
#ifndef TILEC_RUN_H
#define TILEC_RUN_H

#include "../ir/interp.h"
#include "driver.h"
#include "npy.h"

#define RUN_DEFAULT_SEED 1
#define RUN_DEFAULT_RTOL 1e-5
#define RUN_DEFAULT_ATOL 1e-6
#define BENCH_DEFAULT_RUNS 100
#define BENCH_DEFAULT_WARMUP 10

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
/* A copy of ka whose buffers are fresh copies of ka's (same bindings and arguments). */
void run_copy_args(const KernelArgs *ka, KernelArgs *out);
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
