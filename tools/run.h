/* run.h: `tilec run`, and the front half of the pipeline it shares with
 * `tilec FILE` (defined in tilec.c): options both accept, reading the input,
 * and building verified, optimized IR from it. */
#ifndef TILEC_RUN_H
#define TILEC_RUN_H

#include "../frontend/frontend.h"

/* Options shared by `tilec FILE` and `tilec run FILE`.  Arrays are malloc'd. */
typedef struct DriverOpts {
    const char *cmd;            /* "tilec" or "tilec run", for usage messages */
    const char *input;
    const char *kernel;         /* --kernel: source or symbol name; NULL: every kernel */
    FeDefine *defines;          /* -D, one per name (a later -D of a name replaces the value) */
    uint32_t ndefines, definecap;
    const char **passes;        /* --pass, in order; empty: the default pipeline */
    uint32_t npasses, passcap;
    bool no_passes;             /* -O0 */
    bool opt_given;             /* an -O flag was given: .tir input then runs the default pipeline too */
    const char **dump_after;    /* --dump-after: pass names or "all" */
    uint32_t ndump_after, dumpcap;
    const char *dump_dir;       /* --ir-dump-dir */
    DiagColor color;
    bool verbose;               /* -v: each stage and its time on stderr */
} DriverOpts;

/* getopt_long codes of the long-only options both commands accept. */
enum {
    OPT_KERNEL = 256, OPT_PASS, OPT_DUMP_AFTER, OPT_IR_DUMP_DIR, OPT_COLOR, OPT_EMIT, OPT_VERSION, OPT_HELP,
    /* tilec run */
    OPT_INTERP, OPT_DEVICE, OPT_OUT, OPT_GRID, OPT_SEED,
};

/* Handles an option common to both commands (c: its getopt code).  Returns 1 if
 * it was one, 0 if not, -1 after printing a usage error. */
int driver_common_opt(DriverOpts *o, int c, const char *arg);
/* Reports a usage error ("tilec: error: ..." and a hint to run --help); returns 2. */
int driver_usage_error(const char *cmd, const char *fmt, ...) TL_PRINTF(2, 3);
/* Reports getopt_long's '?' or ':' for argv[optind - 1]; returns 2. */
int driver_bad_option(const char *cmd, int c, char **argv);
void driver_opts_free(DriverOpts *o);

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

/* `tilec run ...`: argv[0] is "run".  Returns the exit status. */
int run_main(int argc, char **argv);

#endif
