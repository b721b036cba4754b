/* pass.c: the pass registry and the pipeline runner.
 *
 * Algorithm of pass_run_pipeline:
 *   1. Resolve the pass list: the names given, or every pass of passes.def of
 *      the stage in table order (PASS_CANON: the default pipeline;
 *      PASS_BACKEND: before code generation).  An unknown name is a bug in the
 *      caller (the driver checks names with pass_find first).
 *   2. Check the order on every function before running anything: from the
 *      function's facts (pass_facts_of), each pass in turn must not meet a
 *      fact it refuses; its drops go before it, its makes hold after it.  A
 *      user's list that cannot run is an error naming the pass and the kernel;
 *      a default pipeline that cannot is a compiler bug.
 *   3. For each function of the module, in module order, run each pass in
 *      turn (dropping what it drops), then ir_verify the function; a verifier
 *      failure is an error naming the pass and the kernel in a user's list,
 *      and an internal compiler error (tl_fatal) in a default pipeline.
 *   4. After a pass named in the dump list (or any pass, for "all"), print the
 *      function: to dump->out under the header
 *        // -----// IR Dump After NAME (kernel SYMBOL) //----- //
 *      or, with dump->dir, into DIR/NN-SYMBOL-NAME.tir, where NN counts the
 *      dumps from 01, in the order they are written (across the pipelines
 *      that share dump->seq).
 */
#include "pass.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const PassInfo pass_table[] = {
#define PASS(name, stage, refuses, drops, makes, summary) {#name, summary, pass_##name, stage, refuses, drops, makes},
#include "passes.def"
#undef PASS
};
const size_t pass_count = TL_COUNTOF(pass_table);

const PassInfo *pass_find(const char *name)
{
    for (size_t i = 0; i < pass_count; i++)
        if (strcmp(pass_table[i].name, name) == 0) return &pass_table[i];
    return NULL;
}

/* Every fact (PassFact's bits), and `facts` with the absence of each fact it lacks. */
#define ALL_FACTS ((PassFacts)PASS_FACT_LAYOUTS)
static PassFacts with_absences(PassFacts facts)
{
    facts &= ALL_FACTS;
    return facts | PASS_FACT_ABSENT(ALL_FACTS & ~facts);
}

PassFacts pass_facts_of(const IrFunc *f)
{
    return with_absences(f->val_layout ? PASS_FACT_LAYOUTS : 0);
}

/* The facts p runs on: `facts` less what the runner drops before it. */
static PassFacts facts_at(const PassInfo *p, PassFacts facts)
{
    return with_absences(facts & ~p->drops);
}

bool pass_can_run(const PassInfo *p, PassFacts facts)
{
    return (facts_at(p, facts) & p->refuses) == 0;
}

PassFacts pass_facts_after(const PassInfo *p, PassFacts facts)
{
    return with_absences(facts_at(p, facts) | p->makes);
}

/* What each fact is, for messages.  ORDER: PassFact, bit by bit. */
static const struct {
    PassFacts fact;
    const char *what;
} fact_names[] = {
    {PASS_FACT_LAYOUTS, "layouts"},
};

/* Reports that list[at], which needs `fact`, would run on f without it: the
 * last pass before that dropped it, else the input, and which passes make it. */
static void report_need(const PassInfo *const *list, uint32_t at, PassFacts fact, const char *what, const IrFunc *f,
                        Diag *d)
{
    const PassInfo *p = list[at], *dropper = NULL;
    for (uint32_t i = 0; i < at; i++) {
        if (list[i]->makes & fact) dropper = NULL;
        if (list[i]->drops & fact) dropper = list[i];
    }
    if (dropper)
        diag_error_noloc(d, "--pass: '%s' cannot run after '%s' on kernel '%s': it needs IR with %s, which '%s' drops",
                         p->name, dropper->name, f->name, what, dropper->name);
    else
        diag_error_noloc(d, "--pass: '%s' cannot run on kernel '%s': it needs IR with %s, and the input has none",
                         p->name, f->name, what);
    StrBuf making = {0};
    for (size_t i = 0; i < pass_count; i++)
        if (pass_table[i].makes & fact) sb_printf(&making, "%s'%s'", making.len ? ", " : "", pass_table[i].name);
    diag_note(d, (SrcLoc){0, 0}, "run %s before it (with no pass that drops %s in between)",
              making.s ? making.s : "a pass that makes them", what);
    sb_free(&making);
}

/* Reports that list[at] cannot run on f: which fact, and where it came from
 * (the last pass before that made it, else the input). */
static void report_order(const PassInfo *const *list, uint32_t at, PassFacts facts, const IrFunc *f, Diag *d)
{
    const PassInfo *p = list[at];
    PassFacts bad = facts_at(p, facts) & p->refuses;
    for (size_t k = 0; k < TL_COUNTOF(fact_names); k++) {
        if (bad & PASS_FACT_ABSENT(fact_names[k].fact)) {
            report_need(list, at, fact_names[k].fact, fact_names[k].what, f, d);
            continue;
        }
        if (!(bad & fact_names[k].fact)) continue;
        const char *what = fact_names[k].what;
        const PassInfo *maker = NULL;
        for (uint32_t i = 0; i < at; i++) {
            if (list[i]->drops & fact_names[k].fact) maker = NULL;
            if (list[i]->makes & fact_names[k].fact) maker = list[i];
        }
        if (maker)
            diag_error_noloc(d, "--pass: '%s' cannot run after '%s' on kernel '%s': it needs IR without %s",
                             p->name, maker->name, f->name, what);
        else
            diag_error_noloc(d, "--pass: '%s' cannot run on kernel '%s': its IR already has %s (from the input)",
                             p->name, f->name, what);
        StrBuf refusing = {0}, dropping = {0}, making = {0};
        for (size_t i = 0; i < pass_count; i++) {
            const PassInfo *q = &pass_table[i];
            if (q->refuses & fact_names[k].fact) sb_printf(&refusing, "%s'%s'", refusing.len ? ", " : "", q->name);
            if (q->drops & fact_names[k].fact) sb_printf(&dropping, "%s'%s'", dropping.len ? ", " : "", q->name);
            if (q->makes & fact_names[k].fact) sb_printf(&making, "%s'%s'", making.len ? ", " : "", q->name);
        }
        diag_note(d, (SrcLoc){0, 0}, "%s must run before %s, or after a pass that drops %s (%s)",
                  refusing.s ? refusing.s : "no pass", making.s ? making.s : "no pass", what,
                  dropping.s ? dropping.s : "none");
        sb_free(&refusing);
        sb_free(&dropping);
        sb_free(&making);
    }
}

/* Step 2: whether `list` can run in order on f; if not, reports it (user) or dies. */
static bool check_order(const PassInfo *const *list, uint32_t n, const IrFunc *f, bool user, Diag *d)
{
    PassFacts facts = pass_facts_of(f);
    for (uint32_t i = 0; i < n; i++) {
        if (!pass_can_run(list[i], facts)) {
            if (!user) tl_fatal("pass", "the default pipeline cannot run '%s' on kernel '%s'", list[i]->name, f->name);
            report_order(list, i, facts, f, d);
            return false;
        }
        facts = pass_facts_after(list[i], facts);
    }
    return true;
}

/* Dump state for one pipeline run. */
typedef struct Dumper {
    const PassDump *cfg;
    uint32_t seq;       /* dumps written so far (files are numbered seq+1) */
    bool ok;            /* false after an I/O error */
    Diag *diag;
} Dumper;

static bool wants(const PassDump *cfg, const char *name)
{
    if (!cfg) return false;
    for (uint32_t i = 0; i < cfg->nafter; i++)
        if (strcmp(cfg->after[i], "all") == 0 || strcmp(cfg->after[i], name) == 0) return true;
    return false;
}

static void dump(Dumper *dp, IrFunc *f, const char *pass)
{
    StrBuf b = {0};
    ir_print_func(&b, f);
    dp->seq++;
    if (!dp->cfg->dir) {
        FILE *out = dp->cfg->out ? dp->cfg->out : stderr;
        fprintf(out, "// -----// IR Dump After %s (kernel %s) //----- //\n", pass, f->name);
        if (b.len) fwrite(b.s, 1, b.len, out);
        if (ferror(out)) dp->ok = false;
    } else {
        char *path = NULL;
        size_t n = (size_t)snprintf(NULL, 0, "%s/%02u-%s-%s.tir", dp->cfg->dir, dp->seq, f->name, pass);
        path = tl_xmalloc(n + 1);
        snprintf(path, n + 1, "%s/%02u-%s-%s.tir", dp->cfg->dir, dp->seq, f->name, pass);
        FILE *fp = fopen(path, "w");
        if (!fp) {
            diag_error_noloc(dp->diag, "cannot write IR dump '%s': %s", path, strerror(errno));
            dp->ok = false;
        } else {
            if (b.len) fwrite(b.s, 1, b.len, fp);
            bool bad = ferror(fp) != 0;
            if (fclose(fp) != 0 || bad) {
                diag_error_noloc(dp->diag, "cannot write IR dump '%s': %s", path, strerror(errno));
                dp->ok = false;
            }
        }
        free(path);
    }
    sb_free(&b);
}

/* Runs p on f, then verifies f; false after a user's pass broke the IR. */
static bool run_one(const PassInfo *p, IrFunc *f, bool user, Diag *d, Dumper *dp)
{
    PassCtx cx = {d, false};
    if ((p->drops & PASS_FACT_LAYOUTS) && f->val_layout) ir_func_drop_layouts(f);
    p->run(f, &cx);
    if (!ir_verify(f, d, p->name)) {
        if (user) {
            diag_error_noloc(d, "--pass: the IR of kernel '%s' does not verify after pass '%s' (see above)", f->name,
                             p->name);
            return false;
        }
        char where[64];
        snprintf(where, sizeof where, "pass:%s", p->name);
        tl_fatal(where, "IR verification failed after pass '%s' on kernel '%s'", p->name, f->name);
    }
    if (wants(dp->cfg, p->name)) dump(dp, f, p->name);
    return true;
}

static bool run_list(IrModule *m, const char *const *names, uint32_t n, PassStage stage, const PassDump *dump_cfg,
                     Diag *d)
{
    const PassInfo **list = tl_xcalloc(n ? n : pass_count, sizeof *list);
    uint32_t nlist = 0;
    if (n == 0) {
        for (size_t i = 0; i < pass_count; i++)
            if (pass_table[i].stage == stage) list[nlist++] = &pass_table[i];
    } else {
        for (uint32_t i = 0; i < n; i++) {
            const PassInfo *p = pass_find(names[i]);
            if (!p) tl_fatal("pass", "unknown pass '%s'", names[i]);
            list[nlist++] = p;
        }
    }
    bool user = n != 0, ok = true;
    for (uint32_t fi = 0; fi < m->nfuncs && ok; fi++) ok = check_order(list, nlist, m->funcs[fi], user, d);
    Dumper dp = {dump_cfg, dump_cfg && dump_cfg->seq ? *dump_cfg->seq : 0, true, d};
    for (uint32_t fi = 0; fi < m->nfuncs && ok; fi++)
        for (uint32_t i = 0; i < nlist && ok; i++) ok = run_one(list[i], m->funcs[fi], user, d, &dp);
    if (dump_cfg && dump_cfg->seq) *dump_cfg->seq = dp.seq;
    free(list);
    return ok && dp.ok;
}

bool pass_run_pipeline(IrModule *m, const char *const *names, uint32_t n, const PassDump *dump_cfg, Diag *d)
{
    return run_list(m, names, n, PASS_CANON, dump_cfg, d);
}

bool pass_run_backend(IrModule *m, const PassDump *dump_cfg, Diag *d)
{
    for (uint32_t i = 0; i < m->nfuncs; i++)
        if (m->funcs[i]->val_layout) ir_func_drop_layouts(m->funcs[i]);
    return run_list(m, NULL, 0, PASS_BACKEND, dump_cfg, d);
}
