#include "diag.h"

#include <stdarg.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

static bool getenv_is_dumb(void)
{
    const char *t = getenv("TERM");
    return !t || strcmp(t, "dumb") == 0 || getenv("NO_COLOR") != NULL;
}

void diag_init(Diag *d, const char *file, const char *src, size_t src_len, FILE *out, DiagColor color)
{
    memset(d, 0, sizeof *d);
    d->file = file ? file : "<input>";
    d->src = src;
    d->src_len = src_len;
    d->out = out;
    if (color == DIAG_COLOR_ALWAYS)
        d->color = true;
    else if (color == DIAG_COLOR_AUTO)
        d->color = out && isatty(fileno(out)) && !getenv_is_dumb();
    d->max_errors = 20;
}

void diag_free(Diag *d) { sb_free(&d->buf); }

/* Where the last error or warning went: notes follow it only if it was shown. */
static bool shown(Diag *d) { return d->nerrors <= d->max_errors; }

static void emit(Diag *d, const char *s)
{
    if (d->out) fputs(s, d->out);
    if (d->capture) sb_puts(&d->buf, s);
}

static void source_line(Diag *d, StrBuf *b, SrcLoc loc)
{
    if (!d->src || loc.line == 0) return;
    const char *p = d->src, *end = d->src + d->src_len;
    for (uint32_t l = 1; l < loc.line && p < end; p++)
        if (*p == '\n') l++;
    if (p >= end && loc.line > 1) return;
    const char *e = p;
    while (e < end && *e != '\n' && *e != '\r') e++;
    size_t n = (size_t)(e - p);
    if (n > 400) n = 400; /* keep huge one-line inputs readable */
    sb_puts(b, "    ");
    for (size_t i = 0; i < n; i++) sb_putc(b, (p[i] == '\t' || (unsigned char)p[i] < 32) ? ' ' : p[i]);
    sb_puts(b, "\n    ");
    uint32_t col = loc.col ? loc.col : 1;
    for (uint32_t i = 1; i < col && i <= n; i++) sb_putc(b, ' ');
    sb_puts(b, d->color ? "\033[1;32m^\033[0m\n" : "^\n");
}

static void vreport(Diag *d, const char *kind, const char *kcolor, SrcLoc loc, bool with_loc,
                    const char *fmt, va_list ap)
{
    StrBuf b = {0};
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (d->color) sb_puts(&b, "\033[1m");
    if (with_loc && loc.line)
        sb_printf(&b, "%s:%u:%u: ", d->file, loc.line, loc.col);
    else if (with_loc)
        sb_printf(&b, "%s: ", d->file);
    else
        sb_puts(&b, "tilec: ");
    if (d->color) sb_printf(&b, "%s%s:\033[0m\033[1m %s\033[0m\n", kcolor, kind, msg);
    else sb_printf(&b, "%s: %s\n", kind, msg);
    if (with_loc) source_line(d, &b, loc);
    emit(d, b.s);
    sb_free(&b);
}

void diag_error(Diag *d, SrcLoc loc, const char *fmt, ...)
{
    d->nerrors++;
    if (!shown(d)) {
        if (d->nerrors == d->max_errors + 1) emit(d, "tilec: fatal error: too many errors emitted, stopping now\n");
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vreport(d, "error", "\033[1;31m", loc, true, fmt, ap);
    va_end(ap);
}

void diag_warning(Diag *d, SrcLoc loc, const char *fmt, ...)
{
    d->nwarnings++;
    if (!shown(d)) return;
    va_list ap;
    va_start(ap, fmt);
    vreport(d, "warning", "\033[1;35m", loc, true, fmt, ap);
    va_end(ap);
}

void diag_note(Diag *d, SrcLoc loc, const char *fmt, ...)
{
    if (!shown(d)) return;
    va_list ap;
    va_start(ap, fmt);
    vreport(d, "note", "\033[1;36m", loc, true, fmt, ap);
    va_end(ap);
}

const char *const diag_remark_names[DIAG_NREMARKS] = {
#define REMARK(name, summary) #name,
#include "remarks.def"
#undef REMARK
};
const char *const diag_remark_summaries[DIAG_NREMARKS] = {
#define REMARK(name, summary) summary,
#include "remarks.def"
#undef REMARK
};

bool diag_remark_on(const Diag *d, DiagRemark kind) { return (d->remarks >> kind) & 1u; }

int diag_remark_find(const char *name)
{
    for (int k = 0; k < DIAG_NREMARKS; k++)
        if (strcmp(diag_remark_names[k], name) == 0) return k;
    return -1;
}

void diag_remark(Diag *d, DiagRemark kind, SrcLoc loc, const char *fmt, ...)
{
    if (!diag_remark_on(d, kind)) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    StrBuf b = {0};
    if (loc.line) sb_printf(&b, "%s:%u:%u: ", d->file, loc.line, loc.col);
    else sb_printf(&b, "%s: ", d->file);
    if (d->color) sb_printf(&b, "\033[1;34mremark:\033[0m %s [%s]\n", msg, diag_remark_names[kind]);
    else sb_printf(&b, "remark: %s [%s]\n", msg, diag_remark_names[kind]);
    emit(d, b.s);
    sb_free(&b);
}

void diag_error_noloc(Diag *d, const char *fmt, ...)
{
    d->nerrors++;
    if (!shown(d)) return;
    va_list ap;
    va_start(ap, fmt);
    vreport(d, "error", "\033[1;31m", (SrcLoc){0, 0}, false, fmt, ap);
    va_end(ap);
}

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) return (size_t)-1;
    size_t row[65];
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t prev = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cur = row[j];
            size_t sub = prev + (a[i - 1] != b[j - 1]);
            size_t del = row[j] + 1, ins = row[j - 1] + 1;
            row[j] = TL_MIN(sub, TL_MIN(del, ins));
            prev = cur;
        }
    }
    return row[lb];
}

const char *diag_closest(const char *name, const char *const *cands, size_t n)
{
    const char *best = NULL;
    size_t bestd = (size_t)-1, len = strlen(name);
    size_t limit = len / 3 > 2 ? len / 3 : 2;
    for (size_t i = 0; i < n; i++) {
        size_t dd = edit_distance(name, cands[i]);
        if (dd < bestd && dd > 0) {
            bestd = dd;
            best = cands[i];
        }
    }
    return bestd <= limit ? best : NULL;
}

void diag_unknown_kernel(Diag *d, const char *name, const char *const *names, size_t n)
{
    diag_error_noloc(d, "no kernel named '%s' in '%s'", name, d->file);
    const char *near = diag_closest(name, names, n);
    if (near) diag_note(d, (SrcLoc){0, 0}, "did you mean '%s'?", near);
    if (!n) {
        diag_note(d, (SrcLoc){0, 0}, "this file declares no kernel");
        return;
    }
    StrBuf list = {0};
    for (size_t i = 0; i < n; i++) sb_printf(&list, i ? ", %s" : "%s", names[i]);
    diag_note(d, (SrcLoc){0, 0}, "kernels in this file: %s", list.s);
    sb_free(&list);
}
