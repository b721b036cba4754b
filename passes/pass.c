/* pass.c: the pass registry and the pipeline runner.
 *
 * Algorithm of pass_run_pipeline:
 *   1. Resolve the pass list: the names given, or every pass of passes.def of
 *      the stage in table order (PASS_CANON: the default pipeline;
 *      PASS_BACKEND: before code generation).  An unknown name is a bug in the
 *      caller (the driver checks names with pass_find first).
 *   2. For each function of the module, in module order, run each pass in
 *      turn, then ir_verify the function; a verifier failure is an internal
 *      compiler error naming the pass and the kernel (tl_fatal).
 *   3. After a pass named in the dump list (or any pass, for "all"), print the
 *      function: to dump->out under the header
 *        // -----// IR Dump After NAME (kernel SYMBOL) //----- //
 *      or, with dump->dir, into DIR/NN-SYMBOL-NAME.tir, where NN counts the
 *      dumps of this run from 01, in the order they are written.
 */
#include "pass.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const PassInfo pass_table[] = {
#define PASS(name, stage, summary) {#name, summary, pass_##name, stage},
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

static void run_one(const PassInfo *p, IrFunc *f, Diag *d, Dumper *dp)
{
    PassCtx cx = {d, false};
    /* canonicalisation adds and removes values: layouts no longer hold after it */
    if (p->stage == PASS_CANON && f->val_layout) ir_func_drop_layouts(f);
    p->run(f, &cx);
    if (!ir_verify(f, d, p->name)) {
        char where[64];
        snprintf(where, sizeof where, "pass:%s", p->name);
        tl_fatal(where, "IR verification failed after pass '%s' on kernel '%s'", p->name, f->name);
    }
    if (wants(dp->cfg, p->name)) dump(dp, f, p->name);
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
    Dumper dp = {dump_cfg, 0, true, d};
    for (uint32_t fi = 0; fi < m->nfuncs; fi++)
        for (uint32_t i = 0; i < nlist; i++) run_one(list[i], m->funcs[fi], d, &dp);
    free(list);
    return dp.ok;
}

bool pass_run_pipeline(IrModule *m, const char *const *names, uint32_t n, const PassDump *dump_cfg, Diag *d)
{
    return run_list(m, names, n, PASS_CANON, dump_cfg, d);
}

bool pass_run_backend(IrModule *m, const PassDump *dump_cfg, Diag *d)
{
    return run_list(m, NULL, 0, PASS_BACKEND, dump_cfg, d);
}
