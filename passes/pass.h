/* pass.h: the pass registry and the pipeline runner.
 *
 * A pass transforms one function in place.  The runner verifies the function
 * after every pass (a failure is a compiler bug naming the pass) and dumps it
 * when asked (--dump-after=NAME|all, --ir-dump-dir=DIR).
 */
#ifndef TILEC_PASS_H
#define TILEC_PASS_H

#include <stdio.h>

#include "../ir/ir.h"

typedef struct PassCtx {
    Diag *diag;
    bool changed;           /* a pass sets it when it changed the function */
} PassCtx;

typedef void (*PassFn)(IrFunc *f, PassCtx *cx);

typedef enum PassStage { PASS_CANON, PASS_BACKEND } PassStage;

typedef struct PassInfo {
    const char *name;
    const char *summary;
    PassFn run;
    PassStage stage;
} PassInfo;

#define PASS(name, stage, summary) void pass_##name(IrFunc *f, PassCtx *cx);
#include "passes.def"
#undef PASS

extern const PassInfo pass_table[];
extern const size_t pass_count;
const PassInfo *pass_find(const char *name);

typedef struct PassDump {
    const char **after;     /* pass names to dump after; "all" matches every pass */
    uint32_t nafter;
    const char *dir;        /* --ir-dump-dir: one file per (kernel, pass), numbered; NULL: to `out` */
    FILE *out;              /* default stderr */
} PassDump;

/* Runs `names` (or, when n == 0, every pass of `stage` in table order: the
 * default pipeline is PASS_CANON) on every function of m,
 * verifying after each pass.  Returns false on an I/O error writing dumps. */
bool pass_run_pipeline(IrModule *m, const char *const *names, uint32_t n, const PassDump *dump, Diag *d);
/* The backend pipeline (PASS_BACKEND passes), before code generation. */
bool pass_run_backend(IrModule *m, const PassDump *dump, Diag *d);

#endif
