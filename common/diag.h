/* diag.h: user-facing diagnostics.
 *
 * Every error a user can cause is reported as
 *     file:line:col: error: message
 *         source line
 *             ^
 * followed by optional `note:` lines, then compilation stops with exit status 1.
 * Compiler bugs are not diagnostics: they go through tl_fatal().
 * A Diag belongs to one compilation (no global state); the source text it points
 * at must outlive it.
 */
#ifndef TILEC_DIAG_H
#define TILEC_DIAG_H

#include <stdio.h>

#include "base.h"

typedef struct SrcLoc {
    uint32_t line, col; /* 1-based; line 0 means "no location" */
} SrcLoc;

typedef enum { DIAG_COLOR_AUTO, DIAG_COLOR_ALWAYS, DIAG_COLOR_NEVER } DiagColor;

/* Remarks (--remarks=NAME,...): why the compiler did what it did, printed as
 *     file:line:col: remark: message [NAME]
 * at the op's location.  Kinds: remarks.def. */
typedef enum DiagRemark {
#define REMARK(name, summary) DIAG_REMARK_##name,
#include "remarks.def"
#undef REMARK
    DIAG_NREMARKS
} DiagRemark;
extern const char *const diag_remark_names[DIAG_NREMARKS];
extern const char *const diag_remark_summaries[DIAG_NREMARKS];

typedef struct Diag {
    const char *file;   /* name printed before each location */
    const char *src;    /* whole source text (NUL-terminated), for the caret line; may be NULL */
    size_t src_len;
    FILE *out;          /* where messages go; NULL: keep them only in `buf` */
    StrBuf buf;         /* every message also lands here when capture is set */
    bool capture;
    bool color;
    int nerrors, nwarnings;
    uint32_t remarks;   /* bit k: remarks of kind k (DiagRemark) are printed */
    int max_errors;     /* after this many errors, further ones are dropped (0: 20) */
} Diag;

void diag_init(Diag *d, const char *file, const char *src, size_t src_len, FILE *out, DiagColor color);
void diag_free(Diag *d);
void diag_error(Diag *d, SrcLoc loc, const char *fmt, ...) TL_PRINTF(3, 4);
void diag_warning(Diag *d, SrcLoc loc, const char *fmt, ...) TL_PRINTF(3, 4);
/* A note attaches to the previous error or warning (dropped if that one was). */
void diag_note(Diag *d, SrcLoc loc, const char *fmt, ...) TL_PRINTF(3, 4);
/* Whether remarks of `kind` are printed (callers skip work for remarks off). */
bool diag_remark_on(const Diag *d, DiagRemark kind);
/* A remark of `kind` at loc, when d->remarks asks for it: one line, no caret. */
void diag_remark(Diag *d, DiagRemark kind, SrcLoc loc, const char *fmt, ...) TL_PRINTF(4, 5);
/* The kind named `name` (as --remarks spells it); -1 when none is. */
int diag_remark_find(const char *name);
/* An error with no source position: "tilec: error: ..." */
void diag_error_noloc(Diag *d, const char *fmt, ...) TL_PRINTF(2, 3);

/* "no kernel named NAME in FILE", then "did you mean" and the kernels there
 * are (`names`, n of them): the one report of an unknown --kernel, for source
 * files (fe_lower) and IR files (the driver) alike. */
void diag_unknown_kernel(Diag *d, const char *name, const char *const *names, size_t n);

/* The closest candidate to `name` among `cands` (edit distance <= 2, or a third
 * of the length), or NULL.  For "did you mean 'arange'?" notes. */
const char *diag_closest(const char *name, const char *const *cands, size_t n);

#endif
