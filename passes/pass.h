/* pass.h: the pass registry and the pipeline runner.
 *
 * A pass transforms one function in place.  Before a pipeline runs, the
 * runner checks that its passes can run in that order (each pass declares in
 * passes.def the IR facts it refuses, drops and makes); after every pass it
 * verifies the function, and dumps it when asked (--dump-after=NAME|all,
 * --ir-dump-dir=DIR).  In a pass list the user chose (--pass), an order that
 * cannot run and IR that fails to verify are errors naming the pass; in the
 * default pipelines they are compiler bugs.
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

/* Facts about one function's IR that passes refuse, drop or make (a bit set).
 * ORDER: ALL_FACTS and fact_names in pass.c name every one. */
typedef enum PassFact {
    PASS_FACT_LAYOUTS = 1u << 0,    /* every tile value has a layout (f->val_layout) */
} PassFact;
typedef uint32_t PassFacts;
/* The absence of fact x, as a fact of its own, so that a pass can require x by
 * refusing its absence: PASS_NEEDS(PASS_FACT_LAYOUTS) in passes.def's refuses
 * column.  The runner keeps the absences in step with the facts (a pass that
 * drops x makes its absence); passes.def names only the facts themselves in
 * drops and makes. */
#define PASS_FACT_ABSENT(x) ((PassFacts)(x) << 16)
#define PASS_NEEDS(x) PASS_FACT_ABSENT(x)

typedef enum PassStage { PASS_CANON, PASS_BACKEND } PassStage;

typedef struct PassInfo {
    const char *name;
    const char *summary;
    PassFn run;
    PassStage stage;
    PassFacts refuses;      /* must not hold when it runs (PASS_NEEDS(x): x must) */
    PassFacts drops;        /* the runner removes them before it runs */
    PassFacts makes;        /* hold after it */
} PassInfo;

#define PASS(name, stage, refuses, drops, makes, summary) void pass_##name(IrFunc *f, PassCtx *cx);
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
    uint32_t *seq;          /* dumps written so far, shared by the pipelines of one compilation; NULL: from 0 */
} PassDump;

/* The facts f's IR has now. */
PassFacts pass_facts_of(const IrFunc *f);
/* Whether p can run on IR with `facts`, and the facts after it. */
bool pass_can_run(const PassInfo *p, PassFacts facts);
PassFacts pass_facts_after(const PassInfo *p, PassFacts facts);

/* Runs `names` (the user's --pass list; or, when n == 0, the default
 * pipeline: the PASS_CANON passes in table order) on every function of m,
 * verifying after each pass.  Returns false after an error: an order that
 * cannot run, IR that fails to verify after a pass of `names`, or an I/O
 * error writing dumps (reported to d, except an I/O error on dump->out). */
bool pass_run_pipeline(IrModule *m, const char *const *names, uint32_t n, const PassDump *dump, Diag *d);
/* The backend pipeline (PASS_BACKEND passes), before code generation.  It
 * starts from IR without layouts: layouts the input carries (a laid-out .tir,
 * or --pass=...,layout) are dropped first, since its layout pass assigns
 * every layout again. */
bool pass_run_backend(IrModule *m, const PassDump *dump, Diag *d);

#endif
