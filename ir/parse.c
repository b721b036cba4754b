/* parse.c: reads the textual IR (ir/FORMAT.md) back into a module.
 *
 * 1. A hand-written lexer turns the text into tokens one at a time (with one
 *    token of look-ahead where `{` may start either attributes or a region).
 * 2. A recursive-descent parser builds each kernel with the builder of ir.c as
 *    it goes: an op is built as soon as its header is read, then its regions
 *    are read into the blocks the builder made.
 * 3. Layouts (after the layout pass): the table at the top of a body is read
 *    as written coordinates; a value's `#NAME` after its type builds the
 *    Layout from the value's dims on first use (ir/FORMAT.md, "Layouts").
 * 4. Value names live in one hash table per kernel section (body, grid).  A
 *    region's names are hidden again when the region closes, and an op's
 *    results are defined only after its regions, so any use the parser accepts
 *    is a use of a value defined before it in an enclosing scope.
 * The first error is reported through diag_error and unwinds with longjmp to
 * ir_parse, which frees the half-built module.  Everything the parser
 * allocates hangs off the Parser or the module, so nothing leaks on that path.
 * Types and shapes are not checked here: that is the verifier's job.
 */
#include "ir.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "scalar.h"
#include "text.h"

#define MAX_NESTING 256

typedef enum { T_EOF, T_VALUE, T_SYMBOL, T_IDENT, T_NUM, T_STRING, T_PUNCT, T_HASH } TokKind;

typedef struct Tok {
    TokKind kind;
    const char *s;   /* T_VALUE/T_SYMBOL (bare)/T_IDENT/T_NUM/T_HASH: the text (without % @ #) */
    uint32_t n;
    char *str;       /* T_STRING and quoted T_SYMBOL: decoded, in the scratch arena */
    char punct;      /* T_PUNCT */
    SrcLoc loc;
} Tok;

typedef struct Name {
    const char *s;   /* points into the source text; NULL: empty slot */
    uint32_t n;
    IrVal v;
    bool hidden;     /* defined in a region that has closed */
    SrcLoc loc;
} Name;

/* One entry of the parser's scratch stack: an operand, a result type, a
 * region argument (name, optional type, initial value) or a parameter/spec. */
typedef struct Item {
    Tok name;
    IrType ty;
    bool typed;
    IrVal v;
    char *text;
    uint32_t lay;       /* a `#NAME` layout reference after the type: 1 + its index in ldefs; 0: none */
    SrcLoc layloc;
} Item;

/* One entry `#NAME = #linear<...>` of the kernel's layout table, as written:
 * each basis as coordinates.  The tile dims are not written; they come from
 * the type of the first value that uses the entry, which is when
 * f->layouts[idx] is built.  Every later user must have the same dims. */
typedef struct LayoutDef {
    Tok name;
    uint8_t rank;                                   /* coordinates per basis */
    uint8_t nbits[LL_NIN];
    int32_t coord[LL_NIN][LL_MAXBITS][IR_MAXRANK];
    uint32_t idx;                                   /* index in f->layouts */
    IrType user;                                    /* the first user's type; kind TY_NONE: no user yet */
    SrcLoc userloc;
} LayoutDef;

typedef struct LayoutUse {
    IrVal v;
    uint32_t idx;    /* index in f->layouts */
} LayoutUse;

/* What an op's `{...}` gives: its own attributes and the schedule annotations
 * (IrOp.latency, IrOp.stage) any op may carry. */
typedef struct OpAttrs {
    IrAttr a;
    uint8_t latency, stage;
} OpAttrs;

typedef struct Parser {
    const char *cur, *end;
    uint32_t line, col;   /* position of cur */
    Tok tok;              /* the current token */
    Diag *d;
    jmp_buf fail;
    Arena scratch;        /* decoded strings */
    IrModule *m;
    IrFunc *f;
    Name *names;          /* open addressing; capacity a power of two, at most half full */
    uint32_t nnames, namecap;
    Item *items;          /* scratch stack: each op pushes above what its callers hold */
    uint32_t nitems, itemcap;
    int depth;
    LayoutDef *ldefs;     /* the current kernel's layout table */
    uint32_t nldefs, ldefcap;
    LayoutUse *luses;     /* values given a layout so far; f->val_layout is made at the kernel's end */
    uint32_t nluses, lusecap;
} Parser;

/* ---- errors --------------------------------------------------------------- */

TL_NORETURN static void fail(Parser *p) { longjmp(p->fail, 1); }

#define ERR(p, loc, ...)                                                                          \
    do {                                                                                          \
        diag_error((p)->d, (loc), __VA_ARGS__);                                                   \
        fail(p);                                                                                  \
    } while (0)

/* A short description of a token for "expected X, found Y". */
static const char *describe(Parser *p, const Tok *t)
{
    switch (t->kind) {
    case T_EOF: return "end of input";
    case T_STRING: return "a string";
    case T_PUNCT: return arena_printf(&p->scratch, "'%c'", t->punct);
    case T_VALUE: return arena_printf(&p->scratch, "'%%%.*s'", (int)TL_MIN(t->n, 40u), t->s);
    case T_SYMBOL: return "a kernel symbol";
    case T_HASH: return arena_printf(&p->scratch, "'#%.*s'", (int)TL_MIN(t->n, 40u), t->s);
    default: return arena_printf(&p->scratch, "'%.*s'", (int)TL_MIN(t->n, 40u), t->s);
    }
}

/* ---- lexer ---------------------------------------------------------------- */

static void advance(Parser *p)
{
    if (*p->cur == '\n') {
        p->line++;
        p->col = 1;
    } else {
        p->col++;
    }
    p->cur++;
}

static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_word(char c) { return is_alpha(c) || is_digit(c); }
static bool at(Parser *p, size_t k, char c) { return (size_t)(p->end - p->cur) > k && p->cur[k] == c; }

static int hexval(char c)
{
    if (is_digit(c)) return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Reads a quoted string at p->cur (on '"'); returns it decoded. */
static char *lex_string(Parser *p, SrcLoc loc)
{
    StrBuf b = {0};
    advance(p);
    for (;;) {
        if (p->cur >= p->end || *p->cur == '\n') {
            sb_free(&b);
            ERR(p, loc, "unterminated string");
        }
        char c = *p->cur;
        if (c == '"') break;
        SrcLoc here = {p->line, p->col};
        if (c != '\\') {
            if (c == 0) {
                sb_free(&b);
                ERR(p, here, "NUL byte in a string");
            }
            sb_putc(&b, c);
            advance(p);
            continue;
        }
        advance(p);
        char e = p->cur < p->end ? *p->cur : 0;
        int v = -1;
        switch (e) {
        case '"': v = '"'; break;
        case '\\': v = '\\'; break;
        case 'n': v = '\n'; break;
        case 't': v = '\t'; break;
        case 'r': v = '\r'; break;
        case 'x':
            if (p->end - p->cur >= 3 && hexval(p->cur[1]) >= 0 && hexval(p->cur[2]) >= 0) {
                v = hexval(p->cur[1]) * 16 + hexval(p->cur[2]);
                advance(p);
                advance(p);
            }
            if (v == 0) v = -2;
            break;
        default: break;
        }
        if (v < 0) {
            sb_free(&b);
            ERR(p, here, v == -2 ? "'\\x00' is not allowed in a string" : "unknown escape sequence in a string");
        }
        sb_putc(&b, (char)v);
        advance(p);
    }
    advance(p);
    char *s = arena_strndup(&p->scratch, b.s ? b.s : "", b.len);
    sb_free(&b);
    return s;
}

static void lex(Parser *p, Tok *t)
{
    for (;;) {
        while (p->cur < p->end && (*p->cur == ' ' || *p->cur == '\t' || *p->cur == '\n' || *p->cur == '\r'))
            advance(p);
        if (at(p, 0, '/') && at(p, 1, '/')) {
            while (p->cur < p->end && *p->cur != '\n') advance(p);
            continue;
        }
        break;
    }
    memset(t, 0, sizeof *t);
    t->loc = (SrcLoc){p->line, p->col};
    if (p->cur >= p->end) {
        t->kind = T_EOF;
        return;
    }
    const char *start = p->cur;
    char c = *p->cur;
    if (c == '%' || (c == '@' && !at(p, 1, '"'))) {
        advance(p);
        const char *s = p->cur;
        while (p->cur < p->end && (c == '%' ? is_word(*p->cur) : ir_text_symchar(*p->cur))) advance(p);
        if (p->cur == s) ERR(p, t->loc, c == '%' ? "expected a value name after '%%'" : "expected a kernel name after '@'");
        t->kind = c == '%' ? T_VALUE : T_SYMBOL;
        t->s = s;
        t->n = (uint32_t)(p->cur - s);
        return;
    }
    if (c == '#') {
        advance(p);
        const char *s = p->cur;
        while (p->cur < p->end && is_word(*p->cur)) advance(p);
        if (p->cur == s) ERR(p, t->loc, "expected a layout name after '#'");
        t->kind = T_HASH;
        t->s = s;
        t->n = (uint32_t)(p->cur - s);
        return;
    }
    if (c == '@') {
        advance(p);
        t->kind = T_SYMBOL;
        t->str = lex_string(p, t->loc);
        return;
    }
    if (c == '"') {
        t->kind = T_STRING;
        t->str = lex_string(p, t->loc);
        return;
    }
    if (is_digit(c) || (c == '-' && p->end - p->cur > 1 && (is_digit(p->cur[1]) || p->cur[1] == 'i'))) {
        if (c == '-') advance(p);
        if (c == '0' && p->end - p->cur > 2 && (p->cur[1] == 'x' || p->cur[1] == 'X') && isxdigit((unsigned char)p->cur[2])) {
            advance(p); /* 0x and hex digits: a float constant's bits */
            advance(p);
            while (p->cur < p->end && isxdigit((unsigned char)*p->cur)) advance(p);
        } else if (is_digit(*p->cur)) {
            while (p->cur < p->end && is_digit(*p->cur)) advance(p);
            if (at(p, 0, '.')) {
                advance(p);
                while (p->cur < p->end && is_digit(*p->cur)) advance(p);
            }
            if (at(p, 0, 'e') || at(p, 0, 'E')) {
                advance(p);
                if (at(p, 0, '+') || at(p, 0, '-')) advance(p);
                while (p->cur < p->end && is_digit(*p->cur)) advance(p);
            }
        } else {
            while (p->cur < p->end && is_word(*p->cur)) advance(p); /* -inf */
        }
        if (p->cur < p->end && is_word(*p->cur)) ERR(p, t->loc, "malformed number");
        t->kind = T_NUM;
        t->s = start;
        t->n = (uint32_t)(p->cur - start);
        if (c == '-' && !is_digit(start[1]) && !(t->n == 4 && memcmp(start, "-inf", 4) == 0))
            ERR(p, t->loc, "malformed number");
        return;
    }
    if (is_alpha(c)) {
        while (p->cur < p->end && is_word(*p->cur)) advance(p);
        t->kind = T_IDENT;
        t->s = start;
        t->n = (uint32_t)(p->cur - start);
        return;
    }
    if (strchr("(){}[]<>,:=", c) && c != 0) {
        advance(p);
        t->kind = T_PUNCT;
        t->punct = c;
        return;
    }
    if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f) ERR(p, t->loc, "unexpected byte 0x%02x", (unsigned char)c);
    ERR(p, t->loc, "unexpected character '%c'", c);
}

static void next(Parser *p) { lex(p, &p->tok); }

/* The k-th token after the current one (k >= 1), without consuming anything. */
static Tok peek(Parser *p, int k)
{
    const char *cur = p->cur;
    uint32_t line = p->line, col = p->col;
    Tok t;
    for (int i = 0; i < k; i++) lex(p, &t);
    p->cur = cur;
    p->line = line;
    p->col = col;
    return t;
}

static bool is_punct(const Tok *t, char c) { return t->kind == T_PUNCT && t->punct == c; }
static bool is_word_tok(const Tok *t, const char *w)
{
    return t->kind == T_IDENT && strlen(w) == t->n && memcmp(t->s, w, t->n) == 0;
}

static void expect(Parser *p, char c)
{
    if (!is_punct(&p->tok, c)) ERR(p, p->tok.loc, "expected '%c', found %s", c, describe(p, &p->tok));
    next(p);
}

static void expect_word(Parser *p, const char *w)
{
    if (!is_word_tok(&p->tok, w)) ERR(p, p->tok.loc, "expected '%s', found %s", w, describe(p, &p->tok));
    next(p);
}

static bool accept(Parser *p, char c)
{
    if (!is_punct(&p->tok, c)) return false;
    next(p);
    return true;
}

/* An integer token within [lo, hi]; `what` names it in errors. */
static int64_t expect_int(Parser *p, int64_t lo, int64_t hi, const char *what)
{
    Tok t = p->tok;
    char buf[32];
    if (t.kind != T_NUM) ERR(p, t.loc, "expected %s, found %s", what, describe(p, &t));
    if (t.n >= sizeof buf) ERR(p, t.loc, "%s out of range", what);
    memcpy(buf, t.s, t.n);
    buf[t.n] = 0;
    char *e;
    errno = 0;
    long long v = strtoll(buf, &e, 10);
    if (*e) ERR(p, t.loc, "expected %s (an integer), found '%s'", what, buf);
    if (errno == ERANGE || v < lo || v > hi) ERR(p, t.loc, "%s out of range: %s", what, buf);
    next(p);
    return v;
}

static char *expect_string(Parser *p, const char *what)
{
    if (p->tok.kind != T_STRING) ERR(p, p->tok.loc, "expected %s (a string), found %s", what, describe(p, &p->tok));
    char *s = p->tok.str;
    next(p);
    return s;
}

/* ---- names ---------------------------------------------------------------- */

static uint32_t hash(const char *s, uint32_t n)
{
    uint32_t h = 2166136261u;
    for (uint32_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static uint32_t slot(Parser *p, const char *s, uint32_t n)
{
    uint32_t mask = p->namecap - 1, i = hash(s, n) & mask;
    while (p->names[i].s && !(p->names[i].n == n && memcmp(p->names[i].s, s, n) == 0)) i = (i + 1) & mask;
    return i;
}

static void names_reset(Parser *p)
{
    free(p->names);
    p->namecap = 64;
    p->names = tl_xcalloc(p->namecap, sizeof(Name));
    p->nnames = 0;
}

static void grow_names(Parser *p)
{
    Name *old = p->names;
    uint32_t oldcap = p->namecap;
    if (oldcap > UINT32_MAX / 4) tl_fatal("ir-parse", "too many value names");
    p->namecap = oldcap * 2;
    p->names = tl_xcalloc(p->namecap, sizeof(Name));
    for (uint32_t i = 0; i < oldcap; i++)
        if (old[i].s) p->names[slot(p, old[i].s, old[i].n)] = old[i];
    free(old);
}

static void define(Parser *p, const Tok *name, IrVal v)
{
    uint32_t i = slot(p, name->s, name->n);
    if (p->names[i].s) {
        diag_error(p->d, name->loc, "redefinition of value '%%%.*s'", (int)name->n, name->s);
        diag_note(p->d, p->names[i].loc, "previous definition is here");
        fail(p);
    }
    p->names[i] = (Name){name->s, name->n, v, false, name->loc};
    p->nnames++;
    if (p->nnames * 2 > p->namecap) grow_names(p);
}

/* Hides the names of values with ids >= mark: a region passes the value count
 * from before its arguments were made, since ids only grow, that is exactly
 * the values defined inside it (the owner's results come earlier). */
static void close_scope(Parser *p, uint32_t mark)
{
    for (uint32_t i = 0; i < p->namecap; i++)
        if (p->names[i].s && !p->names[i].hidden && p->names[i].v && p->names[i].v >= mark) p->names[i].hidden = true;
}

/* Reads a value operand. */
static IrVal use(Parser *p)
{
    Tok t = p->tok;
    if (t.kind != T_VALUE) ERR(p, t.loc, "expected a value, found %s", describe(p, &t));
    uint32_t i = slot(p, t.s, t.n);
    if (!p->names[i].s) ERR(p, t.loc, "use of undefined value '%%%.*s'", (int)t.n, t.s);
    if (p->names[i].hidden) {
        diag_error(p->d, t.loc, "value '%%%.*s' is not visible here", (int)t.n, t.s);
        diag_note(p->d, p->names[i].loc, "it is defined inside a region that has ended");
        fail(p);
    }
    next(p);
    return p->names[i].v;
}

/* ---- scratch stack ---------------------------------------------------------- */

/* Pushes a zeroed item and returns its index.  The push may move p->items:
 * never write `p->items[push(p)]`. */
static uint32_t push(Parser *p)
{
    Item it;
    memset(&it, 0, sizeof it);
    VEC_PUSH(p->items, p->nitems, p->itemcap, it);
    return p->nitems - 1;
}

static void push_val(Parser *p, IrVal v)
{
    uint32_t it = push(p);
    p->items[it].v = v;
}

/* ---- types and locations ---------------------------------------------------- */

static DType expect_dtype(Parser *p)
{
    DType dt;
    Tok t = p->tok;
    if (t.kind != T_IDENT || !dt_from_name(t.s, t.n, &dt))
        ERR(p, t.loc, "expected an element type (i1 ... f64), found %s", describe(p, &t));
    next(p);
    return dt;
}

static IrType parse_type(Parser *p)
{
    Tok t = p->tok;
    DType dt;
    if (t.kind == T_IDENT && dt_from_name(t.s, t.n, &dt)) {
        next(p);
        return ir_ty_scalar(dt);
    }
    if (is_word_tok(&t, "ptr")) {
        next(p);
        expect(p, '<');
        dt = expect_dtype(p);
        expect(p, '>');
        return ir_ty_ptr(dt);
    }
    if (is_word_tok(&t, "tensor")) {
        next(p);
        expect(p, '<');
        dt = expect_dtype(p);
        expect(p, ',');
        int rank = (int)expect_int(p, 1, IR_MAXRANK, "a tensor rank (1-4)");
        expect(p, '>');
        return ir_ty_view(dt, rank);
    }
    if (is_word_tok(&t, "tile")) {
        next(p);
        expect(p, '<');
        bool isptr = is_word_tok(&p->tok, "ptr");
        if (isptr) {
            next(p);
            expect(p, '<');
        }
        dt = expect_dtype(p);
        if (isptr) expect(p, '>');
        expect(p, '>');
        expect(p, '[');
        int32_t dims[IR_MAXRANK];
        int rank = 0;
        do {
            if (rank == IR_MAXRANK) ERR(p, p->tok.loc, "a tile has at most %d dimensions", IR_MAXRANK);
            dims[rank++] = (int32_t)expect_int(p, 1, INT32_MAX, "a tile dimension");
        } while (accept(p, ','));
        expect(p, ']');
        return ir_ty_tile(dt, isptr, rank, dims);
    }
    if (is_word_tok(&t, "smem")) {
        next(p);
        expect(p, '<');
        dt = expect_dtype(p);
        expect(p, '>');
        expect(p, '[');
        int32_t dims[IR_MAXRANK];
        int rank = 0;
        do {
            if (rank == IR_MAXRANK)
                ERR(p, p->tok.loc, "an smem buffer has a stage count and at most %d tile dimensions", IR_MAXRANK - 1);
            dims[rank] = (int32_t)expect_int(p, 1, INT32_MAX, rank ? "a tile dimension" : "a stage count");
            rank++;
        } while (accept(p, ','));
        if (rank < 2) ERR(p, p->tok.loc, "an smem buffer has a stage count and at least one tile dimension");
        expect(p, ']');
        return ir_ty_smem(dt, dims[0], rank - 1, dims + 1);
    }
    ERR(p, t.loc, "expected a type, found %s", describe(p, &t));
}

static SrcLoc parse_loc(Parser *p)
{
    SrcLoc loc = {0, 0};
    if (!is_word_tok(&p->tok, "loc")) return loc;
    next(p);
    expect(p, '(');
    loc.line = (uint32_t)expect_int(p, 1, UINT32_MAX, "a line number");
    expect(p, ':');
    loc.col = (uint32_t)expect_int(p, 0, UINT32_MAX, "a column number");
    expect(p, ')');
    return loc;
}

/* ---- layouts ------------------------------------------------------------------ */

static const char *typestr(Parser *p, IrType t)
{
    StrBuf b = {0};
    ir_ty_print(&b, t);
    char *s = arena_strndup(&p->scratch, b.s ? b.s : "", b.len);
    sb_free(&b);
    return s;
}

static bool is_hash(const Tok *t, const char *w)
{
    return t->kind == T_HASH && strlen(w) == t->n && memcmp(t->s, w, t->n) == 0;
}

/* '#linear' '<' 'reg' '=' bases ',' 'lane' '=' bases ',' 'warp' '=' bases '>'
 * with bases := '[' [coords (',' coords)*] ']' and coords := '[' INT (',' INT)* ']'. */
static void parse_linear(Parser *p, LayoutDef *L)
{
    static const char *const kinds[LL_NIN] = {"reg", "lane", "warp"};
    if (!is_hash(&p->tok, "linear")) ERR(p, p->tok.loc, "expected '#linear<...>', found %s", describe(p, &p->tok));
    next(p);
    expect(p, '<');
    bool first = true;
    for (int k = 0; k < LL_NIN; k++) {
        if (k) expect(p, ',');
        expect_word(p, kinds[k]);
        expect(p, '=');
        expect(p, '[');
        if (!is_punct(&p->tok, ']')) {
            do {
                SrcLoc bl = p->tok.loc;
                if (L->nbits[k] == LL_MAXBITS) ERR(p, bl, "more than %d %s bases", LL_MAXBITS, kinds[k]);
                int32_t *c = L->coord[k][L->nbits[k]++];
                int n = 0;
                expect(p, '[');
                do {
                    if (n == IR_MAXRANK) ERR(p, p->tok.loc, "a basis has at most %d coordinates", IR_MAXRANK);
                    c[n++] = (int32_t)expect_int(p, 0, INT32_MAX, "a coordinate");
                } while (accept(p, ','));
                expect(p, ']');
                if (first) L->rank = (uint8_t)n;
                else if (n != L->rank)
                    ERR(p, bl, "this basis has %d coordinate%s, the first has %u", n, n == 1 ? "" : "s", L->rank);
                first = false;
            } while (accept(p, ','));
        }
        expect(p, ']');
    }
    expect(p, '>');
}

/* The layout table at the top of a kernel body: ('#' NAME '=' linear)*.
 * Needs the kernel's warps(N): the warp bases are log2(N). */
static void parse_layout_table(Parser *p)
{
    IrFunc *f = p->f;
    while (p->tok.kind == T_HASH) {
        Tok name = p->tok;
        if (is_hash(&name, "linear")) ERR(p, name.loc, "expected a layout name before '#linear'");
        for (uint32_t i = 0; i < p->nldefs; i++) {
            const Tok *o = &p->ldefs[i].name;
            if (o->n == name.n && memcmp(o->s, name.s, name.n) == 0) {
                diag_error(p->d, name.loc, "redefinition of layout '#%.*s'", (int)name.n, name.s);
                diag_note(p->d, o->loc, "previous definition is here");
                fail(p);
            }
        }
        next(p);
        expect(p, '=');
        LayoutDef def;
        memset(&def, 0, sizeof def);
        def.name = name;
        parse_linear(p, &def);
        if (def.nbits[LL_LANE] != 5)
            ERR(p, name.loc, "layout '#%.*s' has %u lane bases, not 5 (a warp has 32 lanes)", (int)name.n, name.s,
                def.nbits[LL_LANE]);
        int w = f->warps, lw = 0;
        if (w == 0) ERR(p, name.loc, "a kernel with layouts needs warps(N)");
        while ((1 << lw) < w) lw++;
        if ((1 << lw) != w) ERR(p, name.loc, "warps(%d) is not a power of two, so no layout fits it", w);
        if (def.nbits[LL_WARP] != lw)
            ERR(p, name.loc, "layout '#%.*s' has %u warp bases, but warps(%d) needs %d", (int)name.n, name.s,
                def.nbits[LL_WARP], w, lw);
        if (f->nlayouts == 0) { /* layouts[0] is "none" */
            Layout none;
            memset(&none, 0, sizeof none);
            VEC_PUSH(f->layouts, f->nlayouts, f->layoutcap, none);
        }
        Layout empty;
        memset(&empty, 0, sizeof empty);
        VEC_PUSH(f->layouts, f->nlayouts, f->layoutcap, empty);
        def.idx = f->nlayouts - 1;
        VEC_PUSH(p->ldefs, p->nldefs, p->ldefcap, def);
    }
}

/* An optional `#NAME` after a type: 1 + the entry's index in ldefs, or 0. */
static uint32_t parse_layout_ref(Parser *p, SrcLoc *loc)
{
    if (p->tok.kind != T_HASH) return 0;
    Tok t = p->tok;
    *loc = t.loc;
    for (uint32_t i = 0; i < p->nldefs; i++)
        if (p->ldefs[i].name.n == t.n && memcmp(p->ldefs[i].name.s, t.s, t.n) == 0) {
            next(p);
            return i + 1;
        }
    if (is_hash(&t, "linear"))
        ERR(p, t.loc, "a value names its layout ('#L1'); '#linear<...>' belongs in the table at the top of the kernel");
    Tok t1 = peek(p, 1);
    if (is_punct(&t1, '=')) ERR(p, t.loc, "layouts are defined at the top of the kernel body, before its ops");
    ERR(p, t.loc, "use of undefined layout '#%.*s'", (int)t.n, t.s);
}

/* Gives value v the layout entry `ref` (0: none).  The first use builds the
 * Layout from v's dims and the written coordinates, which must lie inside the
 * dims; later uses must have the same dims. */
static void bind_layout(Parser *p, IrVal v, uint32_t ref, SrcLoc loc)
{
    static const char *const kinds[LL_NIN] = {"reg", "lane", "warp"};
    if (!ref) return;
    IrFunc *f = p->f;
    LayoutDef *def = &p->ldefs[ref - 1];
    const Tok *nm = &def->name;
    IrType t = ir_vty(f, v);
    if (t.kind != TY_TILE || t.rank == 0)
        ERR(p, loc, "a value of type %s has no layout (only tiles of rank 1 or more do)", typestr(p, t));
    if (def->rank != t.rank)
        ERR(p, loc, "layout '#%.*s' has %u-d bases, but the value is %s", (int)nm->n, nm->s, def->rank, typestr(p, t));
    Layout L;
    memset(&L, 0, sizeof L);
    L.rank = t.rank;
    int total = 0;
    for (int d = 0; d < t.rank; d++) {
        int b = 0;
        while (b < 31 && (INT32_C(1) << b) < t.dims[d]) b++;
        if ((INT32_C(1) << b) != t.dims[d])
            ERR(p, loc, "%s has a dimension that is not a power of two, so no layout fits it", typestr(p, t));
        L.dimbits[d] = (uint8_t)b;
        total += b;
    }
    if (total > LL_MAXBITS)
        ERR(p, loc, "%s has more than 2^%d elements, too many for a layout", typestr(p, t), LL_MAXBITS);
    for (int k = 0; k < LL_NIN; k++) {
        L.nbits[k] = def->nbits[k];
        for (int i = 0; i < def->nbits[k]; i++) {
            uint32_t x = 0;
            for (int d = 0; d < t.rank; d++) {
                int32_t c = def->coord[k][i][d];
                if (c >= t.dims[d]) {
                    diag_error(p->d, loc, "%s basis %d of layout '#%.*s' has coordinate %d in dimension %d, outside %s",
                               kinds[k], i, (int)nm->n, nm->s, c, d, typestr(p, t));
                    diag_note(p->d, nm->loc, "the layout is defined here");
                    fail(p);
                }
                x |= (uint32_t)c << layout_dim_offset(&L, d);
            }
            L.basis[k][i] = x;
        }
    }
    if (def->user.kind == TY_NONE) {
        f->layouts[def->idx] = L;
        def->user = t;
        def->userloc = loc;
    } else if (!layout_eq(&f->layouts[def->idx], &L)) {
        diag_error(p->d, loc, "layout '#%.*s' is used for %s here but for %s before; a layout belongs to one shape",
                   (int)nm->n, nm->s, typestr(p, t), typestr(p, def->user));
        diag_note(p->d, def->userloc, "first used here");
        fail(p);
    }
    LayoutUse u = {v, def->idx};
    VEC_PUSH(p->luses, p->nluses, p->lusecap, u);
}

/* At the end of a kernel: every table entry is used, and f->val_layout holds
 * what the values named. */
static void finish_layouts(Parser *p)
{
    IrFunc *f = p->f;
    for (uint32_t i = 0; i < p->nldefs; i++)
        if (p->ldefs[i].user.kind == TY_NONE)
            ERR(p, p->ldefs[i].name.loc, "layout '#%.*s' is not used by any value", (int)p->ldefs[i].name.n,
                p->ldefs[i].name.s);
    if (p->nluses) {
        ir_func_reset_layouts(f);
        for (uint32_t i = 0; i < p->nluses; i++) f->val_layout[p->luses[i].v] = p->luses[i].idx;
    }
    p->nldefs = 0;
    p->nluses = 0;
}

/* ---- ops ---------------------------------------------------------------------- */

static void parse_ops(Parser *p, IrBlk blk);

/* '{' op* '}' into blk, whose arguments the caller has defined; then hides
 * every value from id `mark` on. */
static void parse_region(Parser *p, IrBlk blk, uint32_t mark)
{
    expect(p, '{');
    parse_ops(p, blk);
    expect(p, '}');
    close_scope(p, mark);
}

/* Region argument: VALUE [':' type]; item gets the name and the optional type. */
static void parse_carg(Parser *p, uint32_t it)
{
    if (p->tok.kind != T_VALUE) ERR(p, p->tok.loc, "expected a region argument name, found %s", describe(p, &p->tok));
    p->items[it].name = p->tok;
    next(p);
    if (accept(p, ':')) {
        IrType ty = parse_type(p);
        p->items[it].ty = ty;
        p->items[it].typed = true;
    }
    SrcLoc ll = {0, 0};
    uint32_t lay = parse_layout_ref(p, &ll);
    p->items[it].lay = lay;
    p->items[it].layloc = ll;
}

static void add_region_arg(Parser *p, IrBlk blk, const Item *it, IrType init_ty)
{
    IrVal v = ir_block_add_arg(p->f, blk, it->typed ? it->ty : init_ty);
    define(p, &it->name, v);
    bind_layout(p, v, it->lay, it->layloc);
}

/* A schedule annotation `latency = L` or `stage = S` (text.h), whose name is
 * the current token; false when the name is neither. */
static bool parse_annotation(Parser *p, OpAttrs *oa, bool seen[2])
{
    Tok name = p->tok;
    int k = is_word_tok(&name, IR_TEXT_LATENCY) ? 0 : is_word_tok(&name, IR_TEXT_STAGE) ? 1 : -1;
    if (k < 0) return false;
    if (seen[k]) ERR(p, name.loc, "attribute '%s' given twice", k ? IR_TEXT_STAGE : IR_TEXT_LATENCY);
    seen[k] = true;
    next(p);
    expect(p, '=');
    if (k == 0) oa->latency = (uint8_t)expect_int(p, 0, UINT8_MAX, "a latency (0-255)");
    else oa->stage = (uint8_t)(expect_int(p, 0, UINT8_MAX - 1, "a stage (0-254)") + 1);
    return true;
}

/* Whether `{` starts attributes rather than a region: `{ NAME =`.  A region
 * never starts so: its first op begins with a value, or with an op name that
 * is not followed by '='. */
static bool at_attrs(Parser *p)
{
    if (!is_punct(&p->tok, '{') || peek(p, 1).kind != T_IDENT) return false;
    Tok t2 = peek(p, 2);
    return is_punct(&t2, '=');
}

static void parse_attrs(Parser *p, IrOpcode opc, OpAttrs *oa)
{
    IrTextAttr at[IR_TEXT_MAX_ATTRS];
    int n = ir_text_attrs(opc, at);
    bool seen[IR_TEXT_MAX_ATTRS] = {false}, seen_annot[2] = {false, false};
    IrAttr *attr = &oa->a;
    if (is_punct(&p->tok, '{')) {
        next(p);
        do {
            Tok name = p->tok;
            int k = 0;
            if (name.kind != T_IDENT) ERR(p, name.loc, "expected an attribute name, found %s", describe(p, &name));
            if (parse_annotation(p, oa, seen_annot)) continue;
            while (k < n && !is_word_tok(&name, at[k].name)) k++;
            if (k == n) ERR(p, name.loc, "'%s' has no attribute '%.*s'", ir_opinfo[opc].name, (int)name.n, name.s);
            if (seen[k]) ERR(p, name.loc, "attribute '%s' given twice", at[k].name);
            seen[k] = true;
            next(p);
            expect(p, '=');
            switch (at[k].kind) {
            case TA_AXIS: case TA_I_NONZERO: attr->i = expect_int(p, INT32_MIN, INT32_MAX, "an integer"); break;
            case TA_J: attr->j = expect_int(p, INT32_MIN, INT32_MAX, "an integer"); break;
            case TA_J_FLAG: {
                int64_t bit = at[k].bit ? at[k].bit : 1;
                if (is_word_tok(&p->tok, "true")) attr->j |= bit;
                else if (is_word_tok(&p->tok, "false")) attr->j &= ~bit;
                else ERR(p, p->tok.loc, "expected 'true' or 'false', found %s", describe(p, &p->tok));
                next(p);
                break;
            }
            case TA_PERM:
                expect(p, '[');
                attr->nshape = 0;
                if (!is_punct(&p->tok, ']')) {
                    do {
                        if (attr->nshape == IR_MAXRANK) ERR(p, p->tok.loc, "a permutation has at most %d entries", IR_MAXRANK);
                        attr->shape[attr->nshape++] = (int32_t)expect_int(p, 0, IR_MAXRANK - 1, "a dimension index");
                    } while (accept(p, ','));
                }
                expect(p, ']');
                break;
            case TA_STR: {
                char *s = expect_string(p, "the attribute's value");
                attr->str = ir_module_str(p->m, s, strlen(s));
                break;
            }
            }
        } while (accept(p, ','));
        expect(p, '}');
    }
    for (int k = 0; k < n; k++)
        if (!seen[k] && at[k].kind != TA_I_NONZERO && at[k].kind != TA_J_FLAG)
            ERR(p, p->tok.loc, "'%s' needs the attribute '%s'", ir_opinfo[opc].name, at[k].name);
}

/* Parses `: types` for nres results into the items stack (pushed from base). */
static void parse_result_types(Parser *p, IrOpcode opc, uint32_t nres, SrcLoc oploc)
{
    if (nres == 0) {
        if (is_punct(&p->tok, ':')) ERR(p, p->tok.loc, "'%s' here has no results, so no result types", ir_opinfo[opc].name);
        return;
    }
    if (!is_punct(&p->tok, ':')) ERR(p, p->tok.loc, "expected ':' and %u result type%s, found %s", nres, nres > 1 ? "s" : "", describe(p, &p->tok));
    next(p);
    uint32_t k = 0;
    do {
        SrcLoc tl = p->tok.loc;
        IrType ty = parse_type(p);
        if (++k > nres) ERR(p, tl, "more result types than the %u result%s named", nres, nres > 1 ? "s" : "");
        SrcLoc ll = {0, 0};
        uint32_t lay = parse_layout_ref(p, &ll);
        uint32_t it = push(p);
        p->items[it].ty = ty;
        p->items[it].lay = lay;
        p->items[it].layloc = ll;
    } while (accept(p, ','));
    if (k < nres) ERR(p, oploc, "%u result%s named but only %u type%s given", nres, nres > 1 ? "s" : "", k, k > 1 ? "s" : "");
}

static void check_counts(Parser *p, IrOpcode opc, uint32_t nopnd, uint32_t nres, SrcLoc loc)
{
    const IrOpInfo *in = &ir_opinfo[opc];
    if (in->nres >= 0 && nres != (uint32_t)in->nres)
        ERR(p, loc, "'%s' has %d result%s, not %u", in->name, in->nres, in->nres == 1 ? "" : "s", nres);
    if ((int64_t)nopnd < in->min_opnd || (in->max_opnd >= 0 && (int64_t)nopnd > in->max_opnd)) {
        if (in->min_opnd == in->max_opnd)
            ERR(p, loc, "'%s' takes %d operand%s, not %u", in->name, in->min_opnd, in->min_opnd == 1 ? "" : "s", nopnd);
        if (in->max_opnd < 0)
            ERR(p, loc, "'%s' takes at least %d operand%s, not %u", in->name, in->min_opnd, in->min_opnd == 1 ? "" : "s", nopnd);
        ERR(p, loc, "'%s' takes %d to %d operands, not %u", in->name, in->min_opnd, in->max_opnd, nopnd);
    }
}

/* The operand and type lists an op has read: items[base .. base+nopnd) are the
 * operands, the nres after them the result types. */
static uint32_t build(Parser *p, IrBlk blk, IrOpcode opc, uint32_t base, uint32_t nopnd, uint32_t nres,
                      const OpAttrs *oa, SrcLoc loc)
{
    IrVal *o = ARENA_ARRAY(&p->scratch, IrVal, nopnd + 1);
    IrType *t = ARENA_ARRAY(&p->scratch, IrType, nres + 1);
    for (uint32_t i = 0; i < nopnd; i++) o[i] = p->items[base + i].v;
    for (uint32_t i = 0; i < nres; i++) t[i] = p->items[base + nopnd + i].ty;
    IrBuilder b;
    ir_builder_at_end(&b, p->f, blk);
    b.loc = loc;
    uint32_t id = ir_build(&b, opc, o, nopnd, t, nres, &oa->a);
    p->f->ops[id].latency = oa->latency;
    p->f->ops[id].stage = oa->stage;
    for (uint32_t i = 0; i < nres; i++) {
        const Item *it = &p->items[base + nopnd + i];
        bind_layout(p, p->f->ops[id].res + i, it->lay, it->layloc);
    }
    return id;
}

static void define_results(Parser *p, const Tok *name, uint32_t id)
{
    const IrOp *op = &p->f->ops[id];
    if (op->nres == 0) return;
    if (op->nres == 1) {
        define(p, name, op->res);
        return;
    }
    /* %N:k names N, N+1, ..., N+k-1; the parser checked that N is a number */
    uint64_t first = strtoull(arena_strndup(&p->scratch, name->s, name->n), NULL, 10);
    for (uint32_t r = 0; r < op->nres; r++) {
        char *s = arena_printf(&p->scratch, "%llu", (unsigned long long)(first + r));
        Tok t = *name;
        t.s = s;
        t.n = (uint32_t)strlen(s);
        define(p, &t, op->res + r);
    }
}

/* for carg '=' lb 'to' ub 'step' st ['iter' '(' carg '=' VALUE, ... ')'] [attrs] [':' types] [loc] region */
/* carg '=' VALUE (',' carg '=' VALUE)*: region arguments with their initial
 * values, pushed as items; returns how many. */
static uint32_t parse_carg_inits(Parser *p)
{
    uint32_t n = 0;
    do {
        uint32_t it = push(p);
        parse_carg(p, it);
        expect(p, '=');
        p->items[it].v = use(p);
        n++;
    } while (accept(p, ','));
    return n;
}

static uint32_t parse_for(Parser *p, IrBlk blk, uint32_t nres, SrcLoc oploc)
{
    uint32_t iv = push(p);
    parse_carg(p, iv);
    expect(p, '=');
    IrVal bounds[3];
    bounds[0] = use(p);
    expect_word(p, "to");
    bounds[1] = use(p);
    expect_word(p, "step");
    bounds[2] = use(p);
    uint32_t cbase = p->nitems, n = 0;
    if (is_word_tok(&p->tok, "iter")) {
        next(p);
        expect(p, '(');
        n = parse_carg_inits(p);
        expect(p, ')');
    }
    /* the operands, contiguous for build(): lb, ub, step, the initial values */
    uint32_t obase = p->nitems;
    for (int k = 0; k < 3; k++) push_val(p, bounds[k]);
    for (uint32_t k = 0; k < n; k++) push_val(p, p->items[cbase + k].v);
    OpAttrs oa;
    memset(&oa, 0, sizeof oa);
    if (at_attrs(p)) parse_attrs(p, IR_FOR, &oa);
    parse_result_types(p, IR_FOR, nres, oploc);
    SrcLoc loc = parse_loc(p);
    uint32_t id = build(p, blk, IR_FOR, obase, 3 + n, nres, &oa, loc);
    IrBlk body = p->f->ops[id].region[0];
    uint32_t vmark = p->f->nvals;
    add_region_arg(p, body, &p->items[iv], ir_vty(p->f, bounds[0]));
    for (uint32_t k = 0; k < n; k++)
        add_region_arg(p, body, &p->items[cbase + k], ir_vty(p->f, p->items[cbase + k].v));
    parse_region(p, body, vmark);
    return id;
}

/* if VALUE [attrs] [':' types] [loc] region 'else' region */
static uint32_t parse_if(Parser *p, IrBlk blk, uint32_t nres, SrcLoc oploc)
{
    uint32_t base = p->nitems;
    push_val(p, use(p));
    OpAttrs oa;
    memset(&oa, 0, sizeof oa);
    if (at_attrs(p)) parse_attrs(p, IR_IF, &oa);
    parse_result_types(p, IR_IF, nres, oploc);
    SrcLoc loc = parse_loc(p);
    uint32_t id = build(p, blk, IR_IF, base, 1, nres, &oa, loc);
    IrBlk then = p->f->ops[id].region[0], els = p->f->ops[id].region[1];
    parse_region(p, then, p->f->nvals);
    expect_word(p, "else");
    parse_region(p, els, p->f->nvals);
    return id;
}

/* while '(' [carg '=' VALUE, ...] ')' [attrs] [':' types] [loc] region 'do' '(' [VALUE ':' type, ...] ')' region */
static uint32_t parse_while(Parser *p, IrBlk blk, uint32_t nres, SrcLoc oploc)
{
    expect(p, '(');
    uint32_t cbase = p->nitems, n = is_punct(&p->tok, ')') ? 0 : parse_carg_inits(p);
    expect(p, ')');
    OpAttrs oa;
    memset(&oa, 0, sizeof oa);
    if (at_attrs(p)) parse_attrs(p, IR_WHILE, &oa);
    parse_result_types(p, IR_WHILE, nres, oploc);
    SrcLoc loc = parse_loc(p);
    uint32_t id = build(p, blk, IR_WHILE, cbase, n, nres, &oa, loc);
    IrBlk before = p->f->ops[id].region[0], after = p->f->ops[id].region[1];
    uint32_t vmark = p->f->nvals;
    for (uint32_t k = 0; k < n; k++) add_region_arg(p, before, &p->items[cbase + k], ir_vty(p->f, p->items[cbase + k].v));
    parse_region(p, before, vmark);
    expect_word(p, "do");
    expect(p, '(');
    vmark = p->f->nvals;
    if (!is_punct(&p->tok, ')')) {
        do {
            uint32_t it = push(p);
            if (p->tok.kind != T_VALUE) ERR(p, p->tok.loc, "expected a region argument name, found %s", describe(p, &p->tok));
            p->items[it].name = p->tok;
            next(p);
            expect(p, ':');
            p->items[it].ty = parse_type(p);
            p->items[it].typed = true;
            SrcLoc ll = {0, 0};
            uint32_t lay = parse_layout_ref(p, &ll);
            p->items[it].lay = lay;
            p->items[it].layloc = ll;
            add_region_arg(p, after, &p->items[it], p->items[it].ty);
        } while (accept(p, ','));
    }
    expect(p, ')');
    parse_region(p, after, vmark);
    return id;
}

/* Whether the current %value begins the next op (`%v =`, `%v:2 =`) rather
 * than being an operand: line breaks mean nothing, so after an op that takes
 * no operands (`yield`) only this look-ahead tells the two apart. */
static bool starts_def(Parser *p)
{
    Tok t1 = peek(p, 1);
    if (is_punct(&t1, '=')) return true;
    return is_punct(&t1, ':') && peek(p, 2).kind == T_NUM;
}

static void parse_op(Parser *p, IrBlk blk)
{
    uint32_t saved = p->nitems;
    Tok resname;
    memset(&resname, 0, sizeof resname);
    uint32_t nres = 0;
    if (p->tok.kind == T_VALUE) {
        resname = p->tok;
        nres = 1;
        next(p);
        if (accept(p, ':')) {
            for (uint32_t i = 0; i < resname.n; i++)
                if (!is_digit(resname.s[i]))
                    ERR(p, resname.loc, "only a numbered value can name several results ('%%%.*s:N')", (int)resname.n, resname.s);
            if (resname.n > 9) ERR(p, resname.loc, "value number too large");
            nres = (uint32_t)expect_int(p, 1, 255, "a result count");
        }
        expect(p, '=');
    }
    Tok name = p->tok;
    IrOpcode opc;
    if (name.kind != T_IDENT) ERR(p, name.loc, "expected an op name, found %s", describe(p, &name));
    if (!ir_opcode_from_name(name.s, name.n, &opc)) {
        const char *cands[IR_NUM_OPS];
        for (int i = 0; i < IR_NUM_OPS; i++) cands[i] = ir_opinfo[i].name;
        char *s = arena_strndup(&p->scratch, name.s, name.n);
        const char *close = diag_closest(s, cands, IR_NUM_OPS);
        diag_error(p->d, name.loc, "unknown op '%s'", s);
        if (close) diag_note(p->d, name.loc, "did you mean '%s'?", close);
        fail(p);
    }
    next(p);
    if (++p->depth > MAX_NESTING) ERR(p, name.loc, "regions nested deeper than %d", MAX_NESTING);
    uint32_t id;
    if (opc == IR_FOR || opc == IR_IF || opc == IR_WHILE) {
        if (opc == IR_FOR) id = parse_for(p, blk, nres, name.loc);
        else if (opc == IR_IF) id = parse_if(p, blk, nres, name.loc);
        else id = parse_while(p, blk, nres, name.loc);
        const IrOp *op = &p->f->ops[id];
        check_counts(p, opc, op->nopnd, nres, name.loc);
    } else {
        OpAttrs oa;
        memset(&oa, 0, sizeof oa);
        uint32_t base = p->nitems, nopnd = 0;
        Tok num;
        memset(&num, 0, sizeof num);
        if (opc == IR_CONST) {
            num = p->tok;
            bool word = num.kind == T_IDENT && (is_word_tok(&num, "inf") || is_word_tok(&num, "nan"));
            if (num.kind != T_NUM && !word) ERR(p, num.loc, "expected a number, found %s", describe(p, &num));
            next(p);
        } else if (opc == IR_CMP) {
            int k = 0;
            while (k < CMP_COUNT && !is_word_tok(&p->tok, ir_cmp_name[k])) k++;
            if (k == CMP_COUNT) ERR(p, p->tok.loc, "expected a predicate (eq ne lt le gt ge), found %s", describe(p, &p->tok));
            oa.a.i = k;
            next(p);
        }
        if (p->tok.kind == T_VALUE && !starts_def(p)) {
            do {
                push_val(p, use(p));
                nopnd++;
            } while (accept(p, ','));
        }
        check_counts(p, opc, nopnd, nres, name.loc);
        parse_attrs(p, opc, &oa);
        parse_result_types(p, opc, nres, name.loc);
        SrcLoc loc = parse_loc(p);
        if (opc == IR_CONST) {
            DType dt = (DType)p->items[base + nopnd].ty.dt;
            char *s = arena_strndup(&p->scratch, num.s, num.n);
            char *e;
            errno = 0;
            if (dt_is_float(dt) && (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))) {
                unsigned long long bits = strtoull(s + 2, &e, 16);
                int w = dt_bits[dt];
                if (*e || errno == ERANGE || (w < 64 && bits >> w))
                    ERR(p, num.loc, "float constant '%s' has more than the %d bits of %s", s, w, dt_name[dt]);
                oa.a.f = ir_scalar_from_bits(dt, bits).f;
            } else if (dt_is_float(dt)) {
                oa.a.f = strtod(s, &e);
                if (*e) ERR(p, num.loc, "malformed float constant '%s'", s);
            } else {
                oa.a.i = strtoll(s, &e, 10);
                if (*e || num.kind != T_NUM) ERR(p, num.loc, "expected an integer constant for type %s, found '%s'", dt_name[dt], s);
                if (errno == ERANGE) ERR(p, num.loc, "integer constant out of range: %s", s);
            }
        }
        id = build(p, blk, opc, base, nopnd, nres, &oa, loc);
        if (opc == IR_BLOCK_LOAD) {
            IrOp *op = &p->f->ops[id];
            IrType vt = ir_vty(p->f, ir_opnd(p->f, op, 0));
            op->attr.j = vt.kind == TY_VIEW && op->nopnd == 2u + vt.rank;
        }
    }
    p->depth--;
    define_results(p, &resname, id);
    p->nitems = saved;
}

static void parse_ops(Parser *p, IrBlk blk)
{
    while (!is_punct(&p->tok, '}') && p->tok.kind != T_EOF) {
        if (p->tok.kind == T_HASH) ERR(p, p->tok.loc, "layouts are defined at the top of the kernel body, before its ops");
        parse_op(p, blk);
    }
}

/* ---- kernels ------------------------------------------------------------------- */

static void parse_kernel(Parser *p)
{
    expect_word(p, "kernel");
    Tok sym = p->tok;
    if (sym.kind != T_SYMBOL) ERR(p, sym.loc, "expected the kernel's @symbol, found %s", describe(p, &sym));
    char *symbol = sym.str ? sym.str : arena_strndup(&p->scratch, sym.s, sym.n);
    if (!symbol[0]) ERR(p, sym.loc, "empty kernel name");
    for (uint32_t i = 0; i < p->m->nfuncs; i++)
        if (strcmp(p->m->funcs[i]->name, symbol) == 0) ERR(p, sym.loc, "kernel '@%s' defined twice", symbol);
    next(p);
    char *source = expect_string(p, "the kernel's source name");
    names_reset(p);
    uint32_t pbase = p->nitems, np = 0;
    expect(p, '(');
    if (!is_punct(&p->tok, ')')) {
        do {
            uint32_t it = push(p);
            if (p->tok.kind != T_VALUE) ERR(p, p->tok.loc, "expected a parameter name, found %s", describe(p, &p->tok));
            p->items[it].name = p->tok;
            next(p);
            expect(p, ':');
            p->items[it].ty = parse_type(p);
            np++;
        } while (accept(p, ','));
    }
    expect(p, ')');
    uint32_t sbase = p->nitems, ns = 0;
    if (is_word_tok(&p->tok, "spec")) {
        next(p);
        expect(p, '(');
        do {
            uint32_t it = push(p);
            if (p->tok.kind != T_IDENT) ERR(p, p->tok.loc, "expected a specialization parameter name, found %s", describe(p, &p->tok));
            p->items[it].name = p->tok;
            next(p);
            expect(p, '=');
            p->items[it].text = expect_string(p, "the specialization value");
            ns++;
        } while (accept(p, ','));
        expect(p, ')');
    }
    int warps = 0;
    if (is_word_tok(&p->tok, "warps")) {
        next(p);
        expect(p, '(');
        warps = (int)expect_int(p, 1, 1024, "a warp count");
        expect(p, ')');
    }
    bool fast_math = false;
    if (is_word_tok(&p->tok, "math")) {
        next(p);
        expect(p, '(');
        if (!is_word_tok(&p->tok, "fast")) ERR(p, p->tok.loc, "math(...) takes 'fast'");
        next(p);
        expect(p, ')');
        fast_math = true;
    }
    SrcLoc loc = parse_loc(p);
    IrFunc *f = ir_func_new(p->m, symbol, source, loc);
    p->f = f;
    f->warps = warps;
    f->fast_math = fast_math;
    for (uint32_t i = 0; i < ns; i++) {
        const Item *it = &p->items[sbase + i];
        ir_func_add_spec(f, arena_strndup(&p->scratch, it->name.s, it->name.n), it->text);
    }
    for (uint32_t i = 0; i < np; i++) {
        const Item *it = &p->items[pbase + i];
        IrVal v = ir_func_add_param(f, arena_strndup(&p->scratch, it->name.s, it->name.n), it->ty);
        define(p, &it->name, v);
    }
    expect(p, '{');
    parse_layout_table(p);
    parse_ops(p, f->body);
    expect(p, '}');
    if (is_word_tok(&p->tok, "grid")) {
        next(p);
        IrBlk g = ir_func_make_grid(f);
        names_reset(p);
        for (uint32_t i = 0; i < np; i++) define(p, &p->items[pbase + i].name, f->blocks[g].args[i]);
        expect(p, '{');
        parse_ops(p, g);
        expect(p, '}');
    }
    if (is_word_tok(&p->tok, "requires")) {
        next(p);
        IrBlk q = ir_func_make_requires(f);
        expect(p, '(');
        if (!is_punct(&p->tok, ')')) {
            do ir_func_add_require(f, expect_string(p, "a requires message"));
            while (accept(p, ','));
        }
        expect(p, ')');
        names_reset(p);
        for (uint32_t i = 0; i < np; i++) define(p, &p->items[pbase + i].name, f->blocks[q].args[i]);
        expect(p, '{');
        parse_ops(p, q);
        expect(p, '}');
    }
    finish_layouts(p);
    p->nitems = pbase;
}

IrModule *ir_parse(const char *file, const char *text, size_t len, Diag *d)
{
    static const char header[] = "// tilec IR: file ";
    Parser *const p = tl_xcalloc(1, sizeof *p);
    p->cur = text;
    p->end = text + len;
    p->line = p->col = 1;
    p->d = d;
    arena_init(&p->scratch);
    IrModule *m = NULL;
    if (setjmp(p->fail) == 0) {
        const char *mfile = file;
        if (len >= sizeof header - 1 && memcmp(text, header, sizeof header - 1) == 0) {
            for (size_t i = 0; i < sizeof header - 1; i++) advance(p);
            Tok t;
            lex(p, &t);
            if (t.kind != T_STRING) ERR(p, t.loc, "expected the source file name (a string) in the header");
            mfile = t.str;
            while (p->cur < p->end && *p->cur != '\n') advance(p); /* the rest of the line is comment */
        }
        p->m = ir_module_new(mfile);
        next(p);
        while (p->tok.kind != T_EOF) parse_kernel(p);
        m = p->m;
    } else {
        ir_module_free(p->m);
    }
    free(p->names);
    free(p->items);
    free(p->ldefs);
    free(p->luses);
    arena_free(&p->scratch);
    free(p);
    return m;
}
