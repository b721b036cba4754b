/* ast.c: parsing entry points and the AST printers.
 *
 * ast_parse() owns the scanner for one call: every path out of it destroys
 * the scanner, and the only memory that survives is the Ast and its arena
 * (freed by ast_free).  The printers are deterministic: the same source
 * gives the same text, byte for byte.
 */
#include "ast.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

/* lex.l (flex's generated header needs more than we use) */
int tlyylex(TLYYSTYPE *lval, TLYYLTYPE *lloc, void *scanner);

/* ORDER: AstKind */
const char *const ast_kind_name[AST_KIND_COUNT] = {
    "int", "float", "bool", "string", "name", "unary", "binary", "call", "index", "slice", "none",
    "member", "cast", "list", "tuple", "let", "var", "assign", "if", "for", "while", "return",
    "static_assert", "expr", "block", "const", "fn", "kernel",
};

/* ORDER: AstOp */
const char *const ast_op_name[OP_COUNT] = {
    "+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "=",
};

static void init_state(LexState *st, Arena *arena, const char *src, size_t len, Diag *d)
{
    memset(st, 0, sizeof *st);
    st->diag = d;
    st->arena = arena;
    st->src = src;
    st->len = len;
}

Ast *ast_parse(const char *file, const char *src, size_t len, Diag *d)
{
    Ast *ast = tl_xcalloc(1, sizeof *ast);
    arena_init(&ast->arena);
    ast->file = file;
    LexState *st = tl_xmalloc(sizeof *st);   /* large (the bracket stack): keep it off the C stack */
    init_state(st, &ast->arena, src, len, d);
    void *scanner = NULL;
    int errors_before = d->nerrors;
    int rc = 2;
    if (lex_open(st, &scanner)) {
        rc = tlyyparse(scanner, st);
        lex_close(scanner);
    }
    bool fatal = st->fatal || rc == 2 || (rc != 0 && d->nerrors == errors_before);
    if (rc != 0 && d->nerrors == errors_before)
        diag_error_noloc(d, "%s: could not parse the file", file ? file : "<input>");
    ast->decls = st->decls.items;
    ast->ndecls = st->decls.n;
    free(st);
    if (fatal) {
        ast_free(ast);
        return NULL;
    }
    return ast;
}

void ast_free(Ast *ast)
{
    if (!ast) return;
    arena_free(&ast->arena);
    free(ast);
}

static void put_escaped(StrBuf *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') sb_puts(out, "\\n");
        else if (c == '\t') sb_puts(out, "\\t");
        else if (c == '\\') sb_puts(out, "\\\\");
        else if (c == '"') sb_puts(out, "\\\"");
        else if (c < 32 || c >= 127) sb_printf(out, "\\x%02x", c);
        else sb_putc(out, (char)c);
    }
}

bool ast_dump_tokens(StrBuf *out, const char *file, const char *src, size_t len, Diag *d)
{
    (void)file;
    Arena arena;
    arena_init(&arena);
    LexState *st = tl_xmalloc(sizeof *st);
    init_state(st, &arena, src, len, d);
    int errors_before = d->nerrors;
    void *scanner = NULL;
    if (lex_open(st, &scanner)) {
        TLYYSTYPE val;
        TLYYLTYPE loc;
        int token;
        while ((token = tlyylex(&val, &loc, scanner)) != 0) {
            if (token == BAD) continue; /* already reported */
            sb_printf(out, "%u:%u %s '", st->tok_loc.line, st->tok_loc.col, parse_token_kind(token));
            for (size_t i = 0; i < st->tok_len; i++) {
                unsigned char c = (unsigned char)src[st->tok_start + i];
                if (c >= 32 && c < 127) sb_putc(out, (char)c);
                else sb_printf(out, "\\x%02x", c);
            }
            sb_puts(out, "'\n");
        }
        lex_close(scanner);
    }
    free(st);
    arena_free(&arena);
    return d->nerrors == errors_before;
}

/* ---- --emit=ast ----------------------------------------------------------
 * Declarations and statements start a line each, indented two spaces per
 * level; expressions and types stay on their statement's line. */

static void expr(StrBuf *b, const AstNode *n);

/* The shortest decimal that reads back as the same double. */
static void put_float(StrBuf *b, double v)
{
    if (isnan(v)) {
        sb_puts(b, "nan");
        return;
    }
    if (isinf(v)) {
        sb_puts(b, v < 0 ? "-inf" : "inf");
        return;
    }
    char buf[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    sb_puts(b, buf);
    if (!strpbrk(buf, ".e")) sb_puts(b, ".0");
}

static void type(StrBuf *b, const AstType *t)
{
    switch (t->kind) {
    case AT_NAME: sb_puts(b, t->name); return;
    case AT_PTR:
        sb_puts(b, "(ptr ");
        type(b, t->elem);
        break;
    case AT_TENSOR:
        sb_puts(b, "(tensor ");
        type(b, t->elem);
        sb_putc(b, ' ');
        expr(b, t->rank);
        break;
    case AT_TILE:
        sb_puts(b, "(tile ");
        type(b, t->elem);
        for (uint32_t i = 0; i < t->ndims; i++) {
            sb_putc(b, ' ');
            expr(b, t->dims[i]);
        }
        break;
    }
    sb_putc(b, ')');
}

static void exprs(StrBuf *b, AstNode *const *list, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        sb_putc(b, ' ');
        expr(b, list[i]);
    }
}

static void expr(StrBuf *b, const AstNode *n)
{
    switch (n->kind) {
    case AST_INT: sb_printf(b, "(int %llu)", (unsigned long long)n->uval); return;
    case AST_FLOAT:
        sb_puts(b, "(float ");
        put_float(b, n->fval);
        sb_putc(b, ')');
        return;
    case AST_BOOL: sb_puts(b, n->ival ? "(bool true)" : "(bool false)"); return;
    case AST_STRING:
        sb_puts(b, "(string \"");
        put_escaped(b, n->str, strlen(n->str));
        sb_puts(b, "\")");
        return;
    case AST_NAME: sb_puts(b, n->name); return;
    case AST_SLICE: sb_putc(b, ':'); return;
    case AST_NONE_LIT: sb_puts(b, "None"); return;
    case AST_UNARY:
        sb_printf(b, "(unary %c ", (char)n->op);
        expr(b, n->a);
        break;
    case AST_BINARY:
        sb_printf(b, "(binary %s ", ast_op_name[n->op]);
        expr(b, n->a);
        sb_putc(b, ' ');
        expr(b, n->b);
        break;
    case AST_CALL:
        sb_printf(b, "(call %s", n->name);
        if (n->ntargs) {
            sb_puts(b, " (targs");
            for (uint32_t i = 0; i < n->ntargs; i++) {
                sb_putc(b, ' ');
                type(b, n->targs[i]);
            }
            sb_putc(b, ')');
        }
        for (uint32_t i = 0; i < n->nlist; i++) {
            if (n->argnames && n->argnames[i]) {
                sb_printf(b, " (named %s ", n->argnames[i]);
                expr(b, n->list[i]);
                sb_putc(b, ')');
            } else {
                sb_putc(b, ' ');
                expr(b, n->list[i]);
            }
        }
        break;
    case AST_INDEX:
        sb_puts(b, "(index ");
        expr(b, n->a);
        exprs(b, n->list, n->nlist);
        break;
    case AST_MEMBER:
        sb_puts(b, "(member ");
        expr(b, n->a);
        sb_printf(b, " %s", n->name);
        break;
    case AST_CAST:
        sb_puts(b, "(cast ");
        expr(b, n->a);
        sb_putc(b, ' ');
        type(b, n->type);
        break;
    case AST_LIST:
    case AST_TUPLE:
        sb_printf(b, "(%s", ast_kind_name[n->kind]);
        exprs(b, n->list, n->nlist);
        break;
    default: tl_fatal("ast", "ast_dump: %s is not an expression", ast_kind_name[n->kind]);
    }
    sb_putc(b, ')');
}

static void newline(StrBuf *b, int indent)
{
    sb_putc(b, '\n');
    for (int i = 0; i < indent; i++) sb_puts(b, "  ");
}

static void stmt(StrBuf *b, const AstNode *n, int indent);

/* "(head" then each statement on its own line, then ")". */
static void stmts(StrBuf *b, const char *head, AstNode *const *list, uint32_t n, int indent)
{
    newline(b, indent);
    sb_printf(b, "(%s", head);
    for (uint32_t i = 0; i < n; i++) stmt(b, list[i], indent + 1);
    sb_putc(b, ')');
}

static void stmt(StrBuf *b, const AstNode *n, int indent)
{
    newline(b, indent);
    switch (n->kind) {
    case AST_LET:
    case AST_VAR:
        sb_printf(b, "(%s ", ast_kind_name[n->kind]);
        if (n->nnames) {
            sb_putc(b, '(');
            for (uint32_t i = 0; i < n->nnames; i++) sb_printf(b, i ? " %s" : "%s", n->names[i]);
            sb_putc(b, ')');
        } else {
            sb_puts(b, n->name);
        }
        if (n->type) {
            sb_puts(b, " : ");
            type(b, n->type);
        }
        sb_putc(b, ' ');
        expr(b, n->a);
        break;
    case AST_ASSIGN:
        sb_printf(b, "(assign %s%s %s ", n->op == OP_ASSIGN ? "" : ast_op_name[n->op], "=", n->name);
        expr(b, n->a);
        break;
    case AST_IF:
        sb_puts(b, "(if ");
        expr(b, n->a);
        stmts(b, "then", n->body, n->nbody, indent + 1);
        if (n->has_else) stmts(b, "else", n->els, n->nels, indent + 1);
        break;
    case AST_FOR:
        sb_printf(b, "(for %s (range", n->name);
        exprs(b, n->list, n->nlist);
        sb_putc(b, ')');
        if (n->b) {
            sb_puts(b, " (pipeline ");
            expr(b, n->b);
            sb_putc(b, ')');
        }
        if (n->warp_specialize) sb_puts(b, " warp_specialize");
        stmts(b, "body", n->body, n->nbody, indent + 1);
        break;
    case AST_WHILE:
        sb_puts(b, "(while ");
        expr(b, n->a);
        stmts(b, "body", n->body, n->nbody, indent + 1);
        break;
    case AST_RETURN:
        sb_puts(b, "(return");
        if (n->a) {
            sb_putc(b, ' ');
            expr(b, n->a);
        }
        break;
    case AST_STATIC_ASSERT:
        sb_puts(b, "(static_assert ");
        expr(b, n->a);
        if (n->str) {
            sb_puts(b, " \"");
            put_escaped(b, n->str, strlen(n->str));
            sb_putc(b, '"');
        }
        break;
    case AST_EXPR_STMT:
        sb_puts(b, "(expr ");
        expr(b, n->a);
        break;
    case AST_BLOCK:
        sb_puts(b, "(block");
        for (uint32_t i = 0; i < n->nbody; i++) stmt(b, n->body[i], indent + 1);
        break;
    default: tl_fatal("ast", "ast_dump: %s is not a statement", ast_kind_name[n->kind]);
    }
    sb_putc(b, ')');
}

static void params(StrBuf *b, const AstParam *ps, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        newline(b, 1);
        sb_printf(b, "(param %s", ps[i].name);
        if (ps[i].type) {
            sb_putc(b, ' ');
            type(b, ps[i].type);
        }
        sb_putc(b, ')');
    }
}

static void decl(StrBuf *b, const AstNode *n)
{
    switch (n->kind) {
    case AST_CONST:
        sb_printf(b, "(const %s ", n->name);
        expr(b, n->a);
        sb_puts(b, ")\n");
        return;
    case AST_FN:
        sb_printf(b, "(fn %s", n->name);
        params(b, n->params, n->nparams);
        break;
    case AST_KERNEL:
        sb_printf(b, "(kernel %s", n->name);
        for (uint32_t i = 0; i < n->ncparams; i++) {
            const AstCParam *p = &n->cparams[i];
            newline(b, 1);
            sb_printf(b, "(cparam %s %s", p->name, p->is_type ? "type" : "int");
            if (p->def_type) {
                sb_putc(b, ' ');
                type(b, p->def_type);
            } else if (p->def_expr) {
                sb_putc(b, ' ');
                expr(b, p->def_expr);
            }
            sb_putc(b, ')');
        }
        params(b, n->params, n->nparams);
        if (n->has_grid) {
            newline(b, 1);
            sb_puts(b, "(grid");
            exprs(b, n->list, n->nlist);
            sb_putc(b, ')');
        }
        if (n->warps) {
            newline(b, 1);
            sb_puts(b, "(warps ");
            expr(b, n->warps);
            sb_putc(b, ')');
        }
        if (n->fast_math) {
            newline(b, 1);
            sb_puts(b, "(math fast)");
        }
        for (uint32_t i = 0; i < n->nreqs; i++) {
            newline(b, 1);
            sb_puts(b, "(requires ");
            expr(b, n->reqs[2 * i]);
            sb_putc(b, ' ');
            expr(b, n->reqs[2 * i + 1]);
            sb_putc(b, ')');
        }
        for (uint32_t i = 0; i < n->ntune; i++) {
            newline(b, 1);
            sb_printf(b, "(tune %s", n->tune[i]->name);
            exprs(b, n->tune[i]->list, n->tune[i]->nlist);
            sb_putc(b, ')');
        }
        break;
    default: tl_fatal("ast", "ast_dump: %s is not a declaration", ast_kind_name[n->kind]);
    }
    stmts(b, "body", n->body, n->nbody, 1);
    sb_puts(b, ")\n");
}

void ast_dump(StrBuf *out, const Ast *ast)
{
    for (uint32_t i = 0; i < ast->ndecls; i++) decl(out, ast->decls[i]);
}
