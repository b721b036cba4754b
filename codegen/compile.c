/* compile.c: one module's kernels, from layout-annotated tile IR to LLVM IR,
 * PTX and a cubin (cg.h).
 *
 * --emit=llvm (and the LLVM text --save-temps keeps): one LLVM context and
 * module for the whole IR module, each kernel lowered into it (lower.c) with
 * its own scratch arena, wiped after; the module is printed.
 *
 * PTX and cubins, kernel by kernel, in up to t->jobs threads:
 * 1. Each kernel is a job: its own LLVM context and module (LLVM contexts
 *    are not shared between threads), lowered, its module-local symbols
 *    (private strings, the print lock) renamed apart with the kernel's index,
 *    then LLVM's pipeline and the NVPTX backend write its PTX (target.c).
 *    Diagnostics go to a per-job Diag, captured; threads take the next job
 *    from a shared counter.
 * 2. After every job finished, in kernel order whatever the threads did: the
 *    jobs' diagnostics are replayed into d, and their PTX texts are merged
 *    into one (merge_ptx): the header once, each top-level declaration once
 *    (the shared-memory array, extern functions, .file), every function,
 *    its "callseq" comments renumbered (LLVM counts them process-wide).
 *    So -j1 and -jN write the same bytes.
 * 3. The kernel metadata (runtime/meta.h, codegen/meta_emit.c) is appended as
 *    the global byte array __tilec_meta, so it travels inside the cubin.
 * 4. nvJitLink turns the PTX into a cubin (jitlink.c); a module holding setmaxnreg goes
 *    through the toolkit's ptxas as a whole program instead, which keeps it (ptxas.c).
 */
#include "cg.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llvm-c/Core.h>

#include "../ir/ir.h"
#include "../passes/pressure.h"
#include "lower_int.h"
#include "meta_emit.h"

void cg_result_free(CgResult *r)
{
    sb_free(&r->llvm);
    sb_free(&r->ptx);
    sb_free(&r->info);
    free(r->cubin);
    for (uint32_t i = 0; r->facts && i < r->nfacts; i++) free((void *)r->facts[i].tma);
    free(r->facts);
    free(r->times);
    memset(r, 0, sizeof *r);
}

/* ptxas's report (nvJitLink's info log) on kernel `name`:
 *   ptxas info    : Compiling entry function 'NAME' for 'sm_90a'
 *   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
 *   ptxas info    : Used 36 registers, used 0 barriers
 * False when the log has no such block. */
bool cg_ptxas_usage(const char *log, const char *name, int *regs, int *spill_st, int *spill_ld)
{
    char head[512];
    snprintf(head, sizeof head, "Compiling entry function '%s'", name);
    const char *p = log ? strstr(log, head) : NULL;
    if (!p) return false;
    const char *end = strstr(p + 1, "Compiling entry function");
    *regs = *spill_st = *spill_ld = 0;
    bool got = false;
    const char *u = strstr(p, "Used ");
    if (u && (!end || u < end)) got = sscanf(u, "Used %d registers", regs) == 1;
    const char *s = strstr(p, "bytes spill stores");
    if (s && (!end || s < end)) {
        const char *q = s;
        while (q > p && q[-1] != ',' && q[-1] != '.') q--;
        sscanf(q, " %d", spill_st);
        sscanf(s, "bytes spill stores, %d bytes spill loads", spill_ld);
    }
    return got;
}

/* What ptxas used for kernel f (registers, spill bytes), or that it did not run:
 * the tail of the occupancy and schedule remarks. */
static void put_ptxas_usage(StrBuf *b, const CgResult *out, const IrFunc *f, bool ptxas_ran)
{
    int regs, st, ld;
    if (!ptxas_ran) sb_puts(b, "; ptxas did not run (it runs for a cubin)");
    else if (cg_ptxas_usage(out->info.s, f->name, &regs, &st, &ld))
        sb_printf(b, "; ptxas used %d registers, %d bytes spill stores, %d bytes spill loads", regs, st, ld);
}

/* The occupancy remark of every kernel: the hint, its estimate, and (with a
 * cubin) what ptxas used. */
static void remark_occupancy(IrModule *m, const CgTarget *t, const CgResult *out, bool ptxas_ran, Diag *d)
{
    for (uint32_t i = 0; i < m->nfuncs && i < out->nfacts; i++) {
        IrFunc *f = m->funcs[i];
        CgOccupancy occ, *o = &occ;
        cg_min_ctas(f, t->arch, out->facts[i].warps, o);
        StrBuf b = {0};
        if (o->min_ctas > 1) sb_printf(&b, "occupancy hint %d CTAs per SM (.minnctapersm)", o->min_ctas);
        else sb_puts(&b, "no occupancy hint");
        if (o->regs)
            sb_printf(&b, ": tiles need about %.0f registers per thread, %d with addressing and temporaries, "
                      "%d threads per CTA", o->peak, o->regs, 32 * out->facts[i].warps);
        else if (o->why)
            sb_printf(&b, " (%s)", o->why);
        put_ptxas_usage(&b, out, f, ptxas_ran);
        diag_remark(d, DIAG_REMARK_occupancy, f->loc, "%s", b.s);
        sb_free(&b);
    }
}


/* The schedule remark of every kernel: the scheduler's prediction (the
 * pressure model on the IR as lowered: passes/pressure.h) next to what ptxas
 * used, when it ran. */
static void remark_schedule(IrModule *m, const CgTarget *t, const CgResult *out, bool ptxas_ran, Diag *d)
{
    for (uint32_t i = 0; i < m->nfuncs && i < out->nfacts; i++) {
        IrFunc *f = m->funcs[i];
        PassPressure pr;
        pass_pressure_init(&pr, f, 32 * out->facts[i].warps);
        double peak = pass_pressure_peak(&pr, f->body);
        pass_pressure_fini(&pr);
        int need = pass_pressure_regs(f, peak), cap = pass_pressure_kernel_cap(f, t->arch);
        StrBuf b = {0};
        sb_printf(&b, "predicted: tiles peak at %.0f registers per thread, about %d registers of %d: %s", peak, need,
                  cap, need > cap ? "spills predicted" : "no spills predicted");
        put_ptxas_usage(&b, out, f, ptxas_ran);
        diag_remark(d, DIAG_REMARK_schedule, f->loc, "%s", b.s);
        sb_free(&b);
    }
}

static double cpu_now(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sb_putn(StrBuf *b, const char *s, size_t n)
{
    VEC_RESERVE(b->s, b->len, b->cap, b->len + (uint32_t)n + 1);
    memcpy(b->s + b->len, s, n);
    b->len += (uint32_t)n;
    b->s[b->len] = 0;
}

/* --emit=llvm, --save-temps: every kernel into one LLVM module, printed. */
static bool llvm_text(IrModule *m, const CgTarget *t, CgKernelFacts *facts, StrBuf *out, Diag *d)
{
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(m->file, ctx);
    bool ok = true;
    for (uint32_t i = 0; i < m->nfuncs && ok; i++) {
        Arena scratch;
        arena_init(&scratch);
        ok = cg_lower_func(m->funcs[i], t, ctx, mod, &scratch, &facts[i], d);
        arena_free(&scratch);
    }
    if (ok) {
        char *s = LLVMPrintModuleToString(mod);
        sb_puts(out, s);
        LLVMDisposeMessage(s);
    }
    LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
    return ok;
}

/* One kernel's way to PTX (step 1). */
typedef struct Job {
    IrFunc *f;
    uint32_t index;
    CgKernelFacts *facts;
    CgTimes *times;
    Diag d;             /* captured (out NULL): replayed into the caller's in kernel order */
    StrBuf ptx;
    bool ok;
} Job;

typedef struct Pool {
    const CgTarget *t;
    const char *file;
    Job *jobs;
    uint32_t njobs, next;   /* next: the first job no thread took yet (under mu) */
    pthread_mutex_t mu;
} Pool;

/* Module-local symbols are named by the kernel's index, so that the PTX of
 * several kernels' modules can share one file: "__tilec_str" of kernel 3
 * becomes "__tilec_k3_str" (LLVM uniquifies within a module as before). */
static void rename_locals(LLVMModuleRef mod, uint32_t index)
{
    for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g)) {
        LLVMLinkage l = LLVMGetLinkage(g);
        if (l != LLVMPrivateLinkage && l != LLVMInternalLinkage) continue;
        size_t n;
        const char *name = LLVMGetValueName2(g, &n);
        const char *rest = n > 8 && strncmp(name, "__tilec_", 8) == 0 ? name + 8 : name;
        char buf[256];
        int len = snprintf(buf, sizeof buf, "__tilec_k%u_%.*s", index, (int)(n - (size_t)(rest - name)), rest);
        TL_ASSERT(len > 0 && (size_t)len < sizeof buf, "codegen");
        LLVMSetValueName2(g, buf, (size_t)len);
    }
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
        LLVMLinkage l = LLVMGetLinkage(fn);
        TL_ASSERT(LLVMIsDeclaration(fn) || (l != LLVMPrivateLinkage && l != LLVMInternalLinkage), "codegen");
    }
}

static void run_job(Pool *p, Job *j)
{
    double t0 = cpu_now(CLOCK_THREAD_CPUTIME_ID);
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(p->file, ctx);
    Arena scratch;
    arena_init(&scratch);
    j->ok = cg_lower_func(j->f, p->t, ctx, mod, &scratch, j->facts, &j->d) && j->d.nerrors == 0;
    arena_free(&scratch);
    j->times->lower = cpu_now(CLOCK_THREAD_CPUTIME_ID) - t0;
    if (j->ok) {
        rename_locals(mod, j->index);
        j->ok = cg_emit_ptx_timed(mod, p->t, &j->ptx, j->times, &j->d); /* consumes mod */
    } else {
        LLVMDisposeModule(mod);
    }
    LLVMContextDispose(ctx);
}

static void *worker(void *arg)
{
    Pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        uint32_t i = p->next < p->njobs ? p->next++ : UINT32_MAX;
        pthread_mutex_unlock(&p->mu);
        if (i == UINT32_MAX) return NULL;
        run_job(p, &p->jobs[i]);
    }
}

/* Runs the jobs in min(t->jobs, njobs) threads (this one among them). */
static void run_pool(Pool *p)
{
    uint32_t nthreads = p->t->jobs > 1 ? (uint32_t)p->t->jobs : 1;
    if (nthreads > p->njobs) nthreads = p->njobs;
    pthread_t *th = tl_xcalloc(nthreads ? nthreads : 1, sizeof *th);
    uint32_t started = 0;
    for (uint32_t k = 1; k < nthreads; k++) {
        if (pthread_create(&th[k], NULL, worker, p) != 0) break; /* fewer threads: the work still gets done */
        started++;
    }
    worker(p);
    for (uint32_t k = 1; k <= started; k++) pthread_join(th[k], NULL);
    free(th);
}

/* ---- merging the kernels' PTX (step 2) ---------------------------------------- */

/* One top-level statement of a PTX text: [s, s + n), from its first line to the
 * line where it closes (a ';' or its braces), with the comment and blank lines
 * before it.  `text` holds a statement's significant part alone, for telling
 * duplicates apart. */
typedef struct Stmt {
    const char *s, *text;
    size_t n, ntext;
} Stmt;

/* The next statement at p (NULL at the end).  Braces inside strings and
 * comments do not count. */
static const char *next_stmt(const char *p, Stmt *st)
{
    if (!*p) return NULL;
    st->s = p;
    st->text = NULL;
    int depth = 0;
    bool open = false;  /* inside a statement: past its first significant character */
    for (;;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        const char *q = p;
        while (q < p + n && (*q == ' ' || *q == '\t')) q++;
        bool comment = q + 1 < p + n && q[0] == '/' && q[1] == '/';
        if (!open && !comment && q < p + n) {
            open = true;
            st->text = q;
        }
        if (open) {
            bool str = false;
            char last = 0;
            for (const char *c = q; c < p + n; c++) {
                if (*c == '"') str = !str;
                if (str) continue;
                if (c[0] == '/' && c + 1 < p + n && c[1] == '/') break;
                if (*c == '{') depth++;
                if (*c == '}') depth--;
                if (*c != ' ' && *c != '\t') last = *c;
            }
            if (depth == 0 && (last == ';' || last == '}' || (last != ',' && last != '(' && q[0] == '.' &&
                                                              (strncmp(q, ".version", 8) == 0 ||
                                                               strncmp(q, ".target", 7) == 0 ||
                                                               strncmp(q, ".address_size", 13) == 0 ||
                                                               strncmp(q, ".file", 5) == 0)))) {
                p += n + (e != NULL);
                break;
            }
        }
        p += n + (e != NULL);
        if (!*p) break;
    }
    st->n = (size_t)(p - st->s);
    st->ntext = st->text ? (size_t)(p - st->text) : 0;
    return p;
}

static bool starts(const Stmt *st, const char *word)
{
    size_t n = strlen(word);
    return st->text && st->ntext >= n && strncmp(st->text, word, n) == 0;
}

/* A function (its body in braces), as opposed to a declaration. */
static bool is_function(const Stmt *st)
{
    return st->text && memchr(st->text, '{', st->ntext) && (starts(st, ".visible") || starts(st, ".entry") ||
                                                          starts(st, ".func") || starts(st, ".weak"));
}

/* Appends function text [p, p + n) to out, renumbering its "// callseq N"
 * comments from *next on: LLVM's NVPTX backend numbers call sequences with
 * a counter global to the process, so threads would number them by timing. */
static void put_function(StrBuf *out, const char *p, size_t n, uint32_t *next)
{
    static const char tag[] = "// callseq ";
    const size_t taglen = sizeof tag - 1;
    struct {
        uint32_t from, to;
    } *map = NULL;
    uint32_t nmap = 0, cap = 0;
    const char *end = p + n;
    while (p < end) {
        const char *q = p;
        while (q + taglen <= end && memcmp(q, tag, taglen) != 0) q++;
        if (q + taglen > end) {
            sb_putn(out, p, (size_t)(end - p));
            break;
        }
        q += taglen;
        sb_putn(out, p, (size_t)(q - p));
        uint32_t old = 0;
        const char *d = q;
        while (d < end && *d >= '0' && *d <= '9') old = old * 10 + (uint32_t)(*d++ - '0');
        if (d == q) { /* no number: leave as it is */
            p = q;
            continue;
        }
        uint32_t k = 0;
        while (k < nmap && map[k].from != old) k++;
        if (k == nmap) {
            VEC_RESERVE(map, nmap, cap, nmap + 1);
            map[nmap].from = old;
            map[nmap++].to = (*next)++;
        }
        sb_printf(out, "%u", map[k].to);
        p = d;
    }
    free(map);
}

/* Appends kernel PTX `ptx` to `out`: the header (.version, .target, .address_size
 * and the comments before them) only for the first kernel, any other
 * top-level statement only if no earlier kernel had the same one, functions
 * always.  Two kernels disagreeing on the header or on what a .file number
 * names would be a compiler bug: every kernel comes from one source file and
 * one target. */
static void merge_ptx(StrBuf *out, const char *ptx, bool first, StrBuf *seen_header, StrBuf *seen, uint32_t *callseq)
{
    Stmt st;
    StrBuf header = {0};
    for (const char *p = ptx; (p = next_stmt(p, &st));) {
        bool head = starts(&st, ".version") || starts(&st, ".target") || starts(&st, ".address_size");
        if (head) {
            sb_putn(&header, st.text, st.ntext);
            if (first) sb_putn(out, st.s, st.n);
            continue;
        }
        if (!st.text) { /* trailing comments */
            if (first) sb_putn(out, st.s, st.n);
            continue;
        }
        if (is_function(&st)) {
            put_function(out, st.s, st.n, callseq);
            continue;
        }
        /* a declaration: seen holds each one met so far, NUL-separated */
        bool dup = false;
        for (uint32_t k = 0; k < seen->len && !dup;) {
            size_t len = strlen(seen->s + k);
            dup = len == st.ntext && memcmp(seen->s + k, st.text, len) == 0;
            if (!dup && starts(&st, ".file")) {
                /* ".file N" naming another file than before: not mergeable */
                const char *a = seen->s + k, *b = st.text;
                int na = 0, nb = 0;
                bool same_number = strncmp(a, ".file", 5) == 0 && sscanf(a + 5, "%d", &na) == 1 &&
                                   sscanf(b + 5, "%d", &nb) == 1 && na == nb;
                TL_ASSERT(!same_number, "codegen");
            }
            k += (uint32_t)len + 1;
        }
        if (dup) continue;
        sb_putn(seen, st.text, st.ntext);
        sb_putc(seen, 0);
        sb_putn(out, st.s, st.n);
    }
    if (first) {
        if (header.len) sb_putn(seen_header, header.s, header.len);
    } else {
        TL_ASSERT(header.len == seen_header->len && (!header.len || memcmp(header.s, seen_header->s, header.len) == 0),
                  "codegen");
    }
    sb_free(&header);
}

bool cg_compile_module(IrModule *m, const CgTarget *t, CgEmit upto, CgResult *out, Diag *d)
{
    memset(out, 0, sizeof *out);
    TL_ASSERT(t->arch, "codegen");
    uint32_t n = m->nfuncs;
    out->facts = tl_xcalloc(n ? n : 1, sizeof *out->facts);
    out->nfacts = n;
    out->times = tl_xcalloc(n ? n : 1, sizeof *out->times);
    if (upto == CG_EMIT_LLVM || t->keep_llvm) {
        double t0 = cpu_now(CLOCK_THREAD_CPUTIME_ID);
        if (upto != CG_EMIT_LLVM) {
            /* the text only: the jobs below report any error and remark (once) */
            Diag quiet;
            diag_init(&quiet, d->file, d->src, d->src_len, NULL, DIAG_COLOR_NEVER);
            llvm_text(m, t, out->facts, &out->llvm, &quiet);
            diag_free(&quiet);
            for (uint32_t i = 0; i < n; i++) free((void *)out->facts[i].tma);
            memset(out->facts, 0, n * sizeof *out->facts);
        } else {
            bool ok = llvm_text(m, t, out->facts, &out->llvm, d);
            for (uint32_t i = 0; i < n; i++) out->times[i].lower = (cpu_now(CLOCK_THREAD_CPUTIME_ID) - t0) / n;
            if (ok && diag_remark_on(d, DIAG_REMARK_occupancy)) remark_occupancy(m, t, out, false, d);
            if (ok && diag_remark_on(d, DIAG_REMARK_schedule)) remark_schedule(m, t, out, false, d);
            return ok;
        }
    }

    /* 1. each kernel to PTX, in threads */
    Pool pool = {.t = t, .file = m->file, .njobs = n};
    pool.jobs = tl_xcalloc(n ? n : 1, sizeof *pool.jobs);
    pthread_mutex_init(&pool.mu, NULL);
    for (uint32_t i = 0; i < n; i++) {
        Job *j = &pool.jobs[i];
        j->f = m->funcs[i];
        j->index = i;
        j->facts = &out->facts[i];
        j->times = &out->times[i];
        diag_init(&j->d, d->file, d->src, d->src_len, NULL, DIAG_COLOR_NEVER);
        j->d.color = d->color;
        j->d.remarks = d->remarks;
        j->d.max_errors = d->max_errors;
        j->d.capture = true;
    }
    run_pool(&pool);
    pthread_mutex_destroy(&pool.mu);

    /* 2. in kernel order: diagnostics, then one PTX text */
    bool ok = true;
    StrBuf seen_header = {0}, seen = {0};
    uint32_t callseq = 0;
    for (uint32_t i = 0; i < n; i++) {
        Job *j = &pool.jobs[i];
        if (j->d.buf.len) {
            if (d->out) fputs(j->d.buf.s, d->out);
            if (d->capture) sb_puts(&d->buf, j->d.buf.s);
        }
        d->nerrors += j->d.nerrors;
        d->nwarnings += j->d.nwarnings;
        ok = ok && j->ok;
        if (ok) merge_ptx(&out->ptx, j->ptx.s ? j->ptx.s : "", i == 0, &seen_header, &seen, &callseq);
        sb_free(&j->ptx);
        diag_free(&j->d);
    }
    sb_free(&seen_header);
    sb_free(&seen);
    free(pool.jobs);
    if (!ok) return false;

    /* 3. the metadata */
    Arena a;
    arena_init(&a);
    CgMeta meta;
    ok = cg_meta_build((const IrFunc *const *)m->funcs, out->facts, n, t->arch, &a, &meta, d);
    if (ok) {
        sb_putc(&out->ptx, '\n');
        cg_meta_ptx(&out->ptx, &meta);
    }
    arena_free(&a);

    /* 4. the cubin */
    if (ok && upto == CG_EMIT_CUBIN) {
        double c0 = cpu_now(CLOCK_PROCESS_CPUTIME_ID);
        double child = 0;
        /* a warp-specialized kernel's setmaxnreg survives only a whole-program ptxas (ptxas.c) */
        bool bad_env = false;
        out->whole_program = cg_ptxas_wanted(out->ptx.s, out->ptx.len) && cg_ptxas_available(d, &bad_env);
        if (bad_env)
            ok = false;
        else if (out->whole_program)
            ok = cg_ptxas_to_cubin(out->ptx.s, out->ptx.len, t, &out->cubin, &out->cubin_len, &out->info, &child, d);
        else
            ok = cg_ptx_to_cubin(out->ptx.s, out->ptx.len, t, &out->cubin, &out->cubin_len, &out->info, d);
        out->ptxas_cpu = cpu_now(CLOCK_PROCESS_CPUTIME_ID) - c0 + child;
    }
    if (ok && diag_remark_on(d, DIAG_REMARK_occupancy)) remark_occupancy(m, t, out, upto == CG_EMIT_CUBIN, d);
    if (ok && diag_remark_on(d, DIAG_REMARK_schedule)) remark_schedule(m, t, out, upto == CG_EMIT_CUBIN, d);
    return ok;
}
