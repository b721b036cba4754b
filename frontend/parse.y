/* parse.y: the grammar of the tile language (a pure bison parser).
 *
 * It builds the AST of ast.h in the Ast's arena; lists grow in the arena
 * too (the discarded smaller copies are the arena's to free), so error
 * recovery never leaks.  Precedence is written as one rule per level, C's
 * order from loosest to tightest:
 *     ||   &&   |   ^   &   == !=   < <= > >=   << >>   + -   * / %
 *     `as`   unary - + ! ~   postfix call . [ ]
 * `x as T` binds tighter than every binary operator and looser than unary and
 * postfix ones: `a + b as f32` casts only b, `-x as f32` casts -x, and
 * `a as i32 as f32` chains left to right.
 *
 * Compile-time parameter defaults and a tensor's rank sit inside `<...>`, so
 * they are shift-level expressions (no `<`, `>`, `==`, `&`, ... unless
 * parenthesised): `kernel k<N: int = 1 << 10>(...)` works as written.
 * A trailing comma is accepted in parameter, argument, list, tuple and grid
 * lists; a lone `;` is an empty statement.
 *
 * Nesting: every expression value carries the depth of its tree; a depth
 * over PARSE_NEST_LIMIT is a fatal error (so is an `else if` chain that long,
 * or a flat `1 + 1 + ...` of more than 256 operators: its tree is that deep).
 * The lexer bounds brackets and runs of prefix operators the same way, and
 * bison's stack overflow reads as the same error.  Every later recursive
 * walk of the tree is therefore bounded.
 *
 * Errors: yyreport_syntax_error below words "expected X [after expression], found Z"
 * from the parser's expected tokens (LAC makes them exact); recovery resumes
 * at the next `;`, `{...}` block or closing `}` (the `error` rules of decl,
 * block and stmt).
 */

%define api.pure full
%define api.prefix {tlyy}
%define parse.error custom
%define parse.lac full
%locations
%param {void *scanner}
%parse-param {LexState *st}

%code requires {
#include "ast.h"

#define PARSE_NEST_LIMIT 256

/* A growable list of nodes in the arena; depth is the deepest item's. */
typedef struct NodeList {
    AstNode **items;
    const char **names;         /* call arguments only: the name of each or NULL */
    uint32_t n, cap, depth;
    bool warp_specialize;       /* opt_pipeline only: the loop hint `warp_specialize` */
} NodeList;

typedef struct ExprVal {
    AstNode *node;
    uint32_t depth;             /* 1 for a leaf; at most PARSE_NEST_LIMIT */
} ExprVal;

typedef struct TypeList { AstType **items; uint32_t n, cap; } TypeList;
typedef struct ParamList { AstParam *items; uint32_t n, cap; } ParamList;
typedef struct CParamList { AstCParam *items; uint32_t n, cap; } CParamList;
typedef struct NameList { const char **names; SrcLoc *locs; uint32_t n, cap; } NameList;

typedef struct Clauses {        /* kernel grid(...), warps(...), requires(...) and tune(...) */
    NodeList grid;
    NodeList reqs;              /* requires(cond, "message"): cond, message, cond, message... */
    NodeList tune;              /* tune(NAME = [v, ...], ...): one AST_LIST named NAME per item */
    bool has_grid, has_tune;
    AstNode *warps;
    bool fast_math, has_math;   /* math(fast) / math(exact) */
    SrcLoc grid_loc, warps_loc, tune_loc, math_loc;
} Clauses;

typedef struct LexBracket {
    char open;                  /* '(', '[', '{' or '<' (type arguments) */
    SrcLoc loc;
} LexBracket;

/* The scanner's state (flex's yyextra) and the parser's output. */
typedef struct LexState {
    Diag *diag;
    Arena *arena;               /* identifiers, strings, nodes */
    const char *src;            /* the source; src[pos] is the next byte to scan */
    size_t len, pos;
    uint32_t line, col;         /* position of src[pos] */
    SrcLoc match_loc;           /* start of the current flex match */
    size_t match_pos;
    SrcLoc comment_loc;         /* start of the open block comment */
    /* the last token returned (the parser's look-ahead when it reports) */
    SrcLoc tok_loc, tok_end;
    size_t tok_start, tok_len;  /* its bytes in src */
    SrcLoc prev_end;            /* where the token before it ended */
    LexBracket brackets[PARSE_NEST_LIMIT];
    uint32_t nbrackets;         /* <= PARSE_NEST_LIMIT; brackets[nbrackets-1] is innermost */
    uint32_t nbrackets_before;  /* nbrackets before the last token was scanned */
    uint32_t unary_run;         /* consecutive prefix-operator tokens */
    bool angle_next;            /* the next '<' opens a type-argument list */
    bool fatal;                 /* stop now: nesting limit or error limit */
    NodeList decls;             /* parser output, in source order */
} LexState;

/* lex.l: a scanner over st->src[0..st->len) with st as its state; false
 * (and nothing to close) if none could be made, e.g. for a source over 2 GiB.
 * The caller fills diag, arena, src and len of a zeroed LexState first. */
bool lex_open(LexState *st, void **scanner);
void lex_close(void *scanner);
}

%code provides {
/* A category for --emit=tokens: IDENT, TIDENT, TYPE, KEYWORD, INT, FLOAT, STRING, PUNCT. */
const char *parse_token_kind(int token);
}

%code {
#include <math.h>
#include <string.h>

int tlyylex(TLYYSTYPE *lval, TLYYLTYPE *lloc, void *scanner);
static void tlyyerror(TLYYLTYPE *loc, void *scanner, LexState *st, const char *msg);

static SrcLoc at(TLYYLTYPE l) { return (SrcLoc){(uint32_t)l.first_line, (uint32_t)l.first_column}; }

/* Grows an arena array of elsz-byte items so that it holds n + 1. */
static void *grow(Arena *a, void *items, uint32_t n, uint32_t *cap, size_t elsz)
{
    if (n < *cap) return items;
    if (n >= UINT32_MAX / 2) tl_fatal("parse", "list too long");
    uint32_t c = *cap ? *cap * 2 : 4;
    void *p = arena_alloc(a, c * elsz);
    if (n) memcpy(p, items, n * elsz);
    *cap = c;
    return p;
}
#define PUSH(list, field, v)                                                         \
    do {                                                                             \
        (list).field = grow(st->arena, (list).field, (list).n, &(list).cap, sizeof(*(list).field)); \
        (list).field[(list).n++] = (v);                                              \
    } while (0)

static void add(LexState *st, NodeList *l, ExprVal e)
{
    PUSH(*l, items, e.node);
    l->depth = TL_MAX(l->depth, e.depth);
}

/* Call arguments: names[] stays parallel to items[]. */
static void add_arg(LexState *st, NodeList *l, ExprVal e, const char *name)
{
    uint32_t cap = l->cap;
    l->items = grow(st->arena, l->items, l->n, &l->cap, sizeof *l->items);
    l->names = grow(st->arena, l->names, l->n, &cap, sizeof *l->names);
    l->items[l->n] = e.node;
    l->names[l->n++] = name;
    l->depth = TL_MAX(l->depth, e.depth);
}

static void add_name(LexState *st, NameList *l, const char *name, SrcLoc loc)
{
    uint32_t cap = l->cap;
    l->names = grow(st->arena, l->names, l->n, &l->cap, sizeof *l->names);
    l->locs = grow(st->arena, l->locs, l->n, &cap, sizeof *l->locs);
    l->names[l->n] = name;
    l->locs[l->n++] = loc;
}

static AstNode *node(LexState *st, AstKind kind, SrcLoc loc)
{
    AstNode *n = ARENA_NEW(st->arena, AstNode);
    n->kind = kind;
    n->loc = loc;
    return n;
}

static ExprVal leaf(LexState *st, AstKind kind, SrcLoc loc)
{
    return (ExprVal){node(st, kind, loc), 1};
}

static ExprVal binary(LexState *st, AstOp op, ExprVal a, ExprVal b, SrcLoc loc)
{
    AstNode *n = node(st, AST_BINARY, loc);
    n->op = (int)op;
    n->a = a.node;
    n->b = b.node;
    return (ExprVal){n, 1 + TL_MAX(a.depth, b.depth)};
}

static ExprVal unary(LexState *st, int op, ExprVal a, SrcLoc loc)
{
    AstNode *n = node(st, AST_UNARY, loc);
    n->op = op;
    n->a = a.node;
    return (ExprVal){n, 1 + a.depth};
}

static AstType *type(LexState *st, AstTypeKind kind, SrcLoc loc)
{
    AstType *t = ARENA_NEW(st->arena, AstType);
    t->kind = kind;
    t->loc = loc;
    return t;
}

static bool too_deep(LexState *st, uint32_t depth, SrcLoc loc)
{
    if (depth <= PARSE_NEST_LIMIT) return false;
    if (!st->fatal) diag_error(st->diag, loc, "nesting too deep (limit %d)", PARSE_NEST_LIMIT);
    st->fatal = true;
    return true;
}
/* Every rule that builds an expression checks its depth with this. */
#define CHECK_DEPTH(v, l)                                                            \
    do {                                                                             \
        if (too_deep(st, (v).depth, at(l))) YYABORT;                                 \
    } while (0)

static void expect_word(LexState *st, const char *got, const char *want, SrcLoc loc, const char *what)
{
    if (strcmp(got, want) != 0)
        diag_error(st->diag, loc, "expected '%s' %s, found '%s'", want, what, got);
}

/* `P: int` or `T: type`: 1 for int, 2 for type, 0 (reported) otherwise. */
static int cparam_kind(LexState *st, const char *kind, SrcLoc loc)
{
    if (strcmp(kind, "int") == 0) return 1;
    if (strcmp(kind, "type") == 0) return 2;
    diag_error(st->diag, loc, "expected 'int' or 'type' as the kind of a compile-time parameter, found '%s'", kind);
    return 0;
}

static AstCParam cparam(LexState *st, const char *name, SrcLoc loc, const char *kind, SrcLoc kind_loc,
                        AstNode *def_expr, AstType *def_type)
{
    AstCParam p = {.name = name, .loc = loc};
    int k = cparam_kind(st, kind, kind_loc);
    p.is_type = k == 2;
    if (k == 1 && def_type)
        diag_error(st->diag, def_type->loc, "the default of int parameter '%s' must be an integer expression, not a type",
                   name);
    else if (k == 1)
        p.def_expr = def_expr;
    if (k == 2 && def_expr && def_expr->kind == AST_NAME) {
        p.def_type = type(st, AT_NAME, def_expr->loc);
        p.def_type->name = def_expr->name;
    } else if (k == 2 && def_expr) {
        diag_error(st->diag, def_expr->loc, "the default of type parameter '%s' must be a type", name);
    } else if (k == 2) {
        p.def_type = def_type;
    }
    return p;
}

static AstNode *assign(LexState *st, ExprVal lhs, int op, ExprVal rhs)
{
    if (lhs.node->kind != AST_NAME) {
        /* infix and postfix nodes sit at their operator: the left operand starts the text */
        const AstNode *first = lhs.node;
        while (first->kind == AST_BINARY || first->kind == AST_INDEX || first->kind == AST_MEMBER ||
               first->kind == AST_CAST)
            first = first->a;
        diag_error(st->diag, first->loc, "cannot assign to this expression: only a 'var' variable can be assigned");
        return NULL;
    }
    AstNode *n = node(st, AST_ASSIGN, lhs.node->loc);
    n->name = lhs.node->name;
    n->op = op;
    n->a = rhs.node;
    return n;
}

/* tune(NAME = [v, ...], ...): each NAME a compile-time parameter of the kernel, once; each value
 * an integer literal (or its negation) for an int parameter, a name (a type) for a type one.
 * Only `tilec tune` reads the clause; compilation ignores it. */
static void check_tune(LexState *st, CParamList cps, NodeList items)
{
    for (uint32_t i = 0; i < items.n; i++) {
        AstNode *it = items.items[i];
        const AstCParam *cp = NULL;
        for (uint32_t k = 0; k < cps.n; k++)
            if (strcmp(cps.items[k].name, it->name) == 0) cp = &cps.items[k];
        if (!cp) {
            diag_error(st->diag, it->loc, "tune(...): '%s' is not a compile-time parameter of the kernel", it->name);
            continue;
        }
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(items.items[j]->name, it->name) == 0) {
                diag_error(st->diag, it->loc, "tune(...) lists '%s' twice", it->name);
                diag_note(st->diag, items.items[j]->loc, "the first is here");
                break;
            }
        for (uint32_t k = 0; k < it->nlist; k++) {
            const AstNode *v = it->list[k];
            bool num = v->kind == AST_INT || (v->kind == AST_UNARY && v->op == '-' && v->a->kind == AST_INT);
            if (cp->is_type ? v->kind != AST_NAME : !num)
                diag_error(st->diag, v->loc, "tune(...): a value of %s parameter '%s' must be %s", cp->is_type ? "type" : "int",
                           it->name, cp->is_type ? "a type name (bf16, f16, ...)" : "an integer literal");
        }
    }
}

static AstNode *kernel(LexState *st, const char *name, SrcLoc loc, CParamList cps, ParamList ps, Clauses cl,
                       NodeList body)
{
    AstNode *n = node(st, AST_KERNEL, loc);
    n->name = name;
    n->cparams = cps.items;
    n->ncparams = cps.n;
    n->params = ps.items;
    n->nparams = ps.n;
    for (uint32_t i = 0; i < ps.n; i++)
        if (!ps.items[i].type)
            diag_error(st->diag, ps.items[i].loc, "kernel parameter '%s' needs a type, e.g. '%s: ptr<f32>'",
                       ps.items[i].name, ps.items[i].name);
    n->list = cl.grid.items;
    n->nlist = cl.grid.n;
    n->has_grid = cl.has_grid;
    n->warps = cl.warps;
    n->fast_math = cl.fast_math;
    n->reqs = cl.reqs.items;
    n->nreqs = cl.reqs.n / 2;
    check_tune(st, cps, cl.tune);
    n->tune = cl.tune.items;
    n->ntune = cl.tune.n;
    n->body = body.items;
    n->nbody = body.n;
    return n;
}

static void clause(LexState *st, Clauses *cl, const char *name, SrcLoc loc, NodeList args)
{
    if (strcmp(name, "grid") == 0) {
        if (cl->has_grid) {
            diag_error(st->diag, loc, "duplicate 'grid' clause");
            diag_note(st->diag, cl->grid_loc, "the first 'grid' clause is here");
        } else if (args.n > 3) {
            diag_error(st->diag, args.items[3]->loc, "grid(...) takes at most 3 dimensions, got %u", args.n);
        }
        cl->grid = args;
        cl->has_grid = true;
        cl->grid_loc = loc;
    } else if (strcmp(name, "warps") == 0) {
        if (cl->warps) {
            diag_error(st->diag, loc, "duplicate 'warps' clause");
            diag_note(st->diag, cl->warps_loc, "the first 'warps' clause is here");
        } else if (args.n != 1) {
            diag_error(st->diag, loc, "warps(...) takes one argument, got %u", args.n);
        }
        cl->warps = args.items[0];
        cl->warps_loc = loc;
    } else if (strcmp(name, "math") == 0) {
        const AstNode *a = args.n == 1 ? args.items[0] : NULL;
        if (cl->has_math) {
            diag_error(st->diag, loc, "duplicate 'math' clause");
            diag_note(st->diag, cl->math_loc, "the first 'math' clause is here");
        } else if (!a || a->kind != AST_NAME || (strcmp(a->name, "fast") != 0 && strcmp(a->name, "exact") != 0)) {
            diag_error(st->diag, a ? a->loc : loc, "math(...) takes 'fast' or 'exact': math(fast)");
        } else {
            cl->fast_math = strcmp(a->name, "fast") == 0;
        }
        cl->has_math = true;
        cl->math_loc = loc;
    } else if (strcmp(name, "requires") == 0) {
        if (args.n != 2 || args.items[1]->kind != AST_STRING) {
            diag_error(st->diag, args.n == 2 ? args.items[1]->loc : loc,
                       "requires(...) takes a condition and a message string: requires(cond, \"message\")");
            return;
        }
        PUSH(cl->reqs, items, args.items[0]);
        PUSH(cl->reqs, items, args.items[1]);
    } else if (strcmp(name, "tune") == 0) {
        diag_error(st->diag, loc, "tune(...) takes NAME = [VALUE, ...] items: tune(BM = [64, 128], BN = [128, 256])");
    } else {
        diag_error(st->diag, loc, "unknown kernel clause '%s': expected 'grid(...)', 'warps(...)', 'math(...)', "
                   "'requires(...)', 'tune(...)' or '{'", name);
    }
}

/* tune(NAME = [v, ...], ...): the search space of `tilec tune` (tools/tune.c). */
static void tune_clause(LexState *st, Clauses *cl, const char *name, SrcLoc loc, NodeList items)
{
    if (strcmp(name, "tune") != 0) {
        diag_error(st->diag, loc, "only a tune(...) clause takes NAME = [VALUE, ...] items, not '%s(...)'", name);
        return;
    }
    if (cl->has_tune) {
        diag_error(st->diag, loc, "duplicate 'tune' clause");
        diag_note(st->diag, cl->tune_loc, "the first 'tune' clause is here");
        return;
    }
    cl->tune = items;
    cl->has_tune = true;
    cl->tune_loc = loc;
}
}

%union {
    const char *str;
    uint64_t u;
    double f;
    int op;
    ExprVal e;
    AstNode *n;
    AstType *t;
    NodeList l;
    TypeList tl;
    ParamList pl;
    AstParam p;
    CParamList cl;
    AstCParam cp;
    NameList nl;
    Clauses kc;
}

%token <str> IDENT "identifier"
%token <str> TIDENT "identifier with type arguments"
%token <u> INT "integer literal"
%token <f> FLOAT "float literal"
%token <str> STRING "string literal"
%token BAD "invalid token"          /* the lexer reported it; no rule accepts it */
/* ORDER: keywords are contiguous, KW_KERNEL first and KW_NONE last, and the
 * statement keywords run from KW_LET to KW_STATIC_ASSERT (range tests below). */
%token KW_KERNEL "kernel" KW_FN "fn" KW_CONST "const" KW_LET "let" KW_VAR "var" KW_IF "if"
%token KW_ELSE "else" KW_FOR "for" KW_IN "in" KW_WHILE "while" KW_RETURN "return"
%token KW_STATIC_ASSERT "static_assert" KW_AS "as" KW_TRUE "true" KW_FALSE "false"
%token KW_INF "inf" KW_NAN "nan" KW_NONE "None"
%token TY_PTR "ptr" TY_TENSOR "tensor" TY_TILE "tile"
%token ADD_ASSIGN "+=" SUB_ASSIGN "-=" MUL_ASSIGN "*=" DIV_ASSIGN "/=" MOD_ASSIGN "%="
%token AND_ASSIGN "&=" OR_ASSIGN "|=" XOR_ASSIGN "^=" SHL_ASSIGN "<<=" SHR_ASSIGN ">>="
%token EQ "==" NE "!=" LE "<=" GE ">=" SHL "<<" SHR ">>" LAND "&&" LOR "||"

%type <e> expr lor land bor bxor band eq rel shift add mul cast unary postfix primary index_item if_stmt
%type <n> decl stmt
%type <t> type type_ctor opt_type
%type <l> block stmts expr_list args arg_list index_items opt_pipeline tune_list
%type <n> tune_item
%type <tl> type_list
%type <pl> params param_list
%type <p> param
%type <cl> opt_cparams cparam_list
%type <cp> cparam
%type <nl> name_list
%type <kc> clauses
%type <op> assign_op
%type <str> kernel_name

%start file

%%

file
    : %empty
    | file decl                     { if ($2) PUSH(st->decls, items, $2); }
    ;

decl
    : KW_CONST IDENT '=' expr ';'   {
          $$ = node(st, AST_CONST, at(@1));
          $$->name = $2;
          $$->a = $4.node;
      }
    | KW_FN IDENT '(' params ')' block {
          $$ = node(st, AST_FN, at(@1));
          $$->name = $2;
          $$->params = $4.items;
          $$->nparams = $4.n;
          $$->body = $6.items;
          $$->nbody = $6.n;
      }
    | KW_KERNEL kernel_name opt_cparams '(' params ')' clauses block {
          $$ = kernel(st, $2, at(@1), $3, $5, $7, $8);
      }
    | error ';'                     { $$ = NULL; yyerrok; }
    | error block                   { $$ = NULL; yyerrok; }
    ;

/* `kernel k<T>(...)` scans `k` as TIDENT (see lex.l); both name a kernel. */
kernel_name: IDENT | TIDENT ;

opt_cparams
    : %empty                        { $$ = (CParamList){0}; }
    | '<' cparam_list opt_comma '>' { $$ = $2; }
    ;

cparam_list
    : cparam                        { $$ = (CParamList){0}; PUSH($$, items, $1); }
    | cparam_list ',' cparam        { $$ = $1; PUSH($$, items, $3); }
    ;

cparam
    : IDENT ':' IDENT               { $$ = cparam(st, $1, at(@1), $3, at(@3), NULL, NULL); }
    | IDENT ':' IDENT '=' shift     { $$ = cparam(st, $1, at(@1), $3, at(@3), $5.node, NULL); }
    | IDENT ':' IDENT '=' type_ctor { $$ = cparam(st, $1, at(@1), $3, at(@3), NULL, $5); }
    ;

params
    : %empty                        { $$ = (ParamList){0}; }
    | param_list opt_comma          { $$ = $1; }
    ;

/* A trailing comma is allowed where lists often span lines. */
opt_comma: %empty | ',' ;

param_list
    : param                         { $$ = (ParamList){0}; PUSH($$, items, $1); }
    | param_list ',' param          { $$ = $1; PUSH($$, items, $3); }
    ;

param
    : IDENT opt_type                { $$ = (AstParam){.name = $1, .type = $2, .loc = at(@1)}; }
    ;

clauses
    : %empty                        { $$ = (Clauses){0}; }
    | clauses IDENT '(' expr_list opt_comma ')' { $$ = $1; clause(st, &$$, $2, at(@2), $4); }
    | clauses IDENT '(' tune_list opt_comma ')' { $$ = $1; tune_clause(st, &$$, $2, at(@2), $4); }
    ;

tune_list
    : tune_item                     { $$ = (NodeList){0}; PUSH($$, items, $1); }
    | tune_list ',' tune_item       { $$ = $1; PUSH($$, items, $3); }
    ;

/* NAME = [v, ...]: an AST_LIST named NAME. */
tune_item
    : IDENT '=' '[' expr_list opt_comma ']' {
          $$ = node(st, AST_LIST, at(@1));
          $$->name = $1;
          $$->list = $4.items;
          $$->nlist = $4.n;
      }
    ;

block
    : '{' stmts '}'                 { $$ = $2; }
    | '{' stmts error '}'           { $$ = $2; }
    ;

stmts
    : %empty                        { $$ = (NodeList){0}; }
    | stmts stmt                    { $$ = $1; if ($2) add(st, &$$, (ExprVal){$2, 0}); }
    ;

stmt
    : KW_LET IDENT opt_type '=' expr ';' {
          $$ = node(st, AST_LET, at(@1));
          $$->name = $2;
          $$->type = $3;
          $$->a = $5.node;
      }
    | KW_LET '(' name_list ')' '=' expr ';' {
          $$ = node(st, AST_LET, at(@1));
          $$->names = $3.names;
          $$->name_locs = $3.locs;
          $$->nnames = $3.n;
          $$->a = $6.node;
      }
    | KW_VAR IDENT opt_type '=' expr ';' {
          $$ = node(st, AST_VAR, at(@1));
          $$->name = $2;
          $$->type = $3;
          $$->a = $5.node;
      }
    | expr assign_op expr ';'       { $$ = assign(st, $1, $2, $3); }
    | expr ';'                      {
          $$ = node(st, AST_EXPR_STMT, $1.node->loc);
          $$->a = $1.node;
      }
    | if_stmt                       { $$ = $1.node; }
    | KW_FOR IDENT KW_IN IDENT '(' expr_list ')' opt_pipeline block {
          expect_word(st, $4, "range", at(@4), "after 'in'");
          if ($6.n > 3)
              diag_error(st->diag, $6.items[3]->loc, "range(...) takes 1 to 3 arguments, got %u", $6.n);
          $$ = node(st, AST_FOR, at(@1));
          $$->name = $2;
          $$->list = $6.items;
          $$->nlist = $6.n;
          $$->b = $8.n ? $8.items[0] : NULL;
          $$->warp_specialize = $8.warp_specialize;
          $$->body = $9.items;
          $$->nbody = $9.n;
      }
    | KW_WHILE expr block           {
          $$ = node(st, AST_WHILE, at(@1));
          $$->a = $2.node;
          $$->body = $3.items;
          $$->nbody = $3.n;
      }
    | KW_RETURN ';'                 { $$ = node(st, AST_RETURN, at(@1)); }
    | KW_RETURN expr ';'            { $$ = node(st, AST_RETURN, at(@1)); $$->a = $2.node; }
    | KW_STATIC_ASSERT '(' expr ')' ';' {
          $$ = node(st, AST_STATIC_ASSERT, at(@1));
          $$->a = $3.node;
      }
    | KW_STATIC_ASSERT '(' expr ',' STRING ')' ';' {
          $$ = node(st, AST_STATIC_ASSERT, at(@1));
          $$->a = $3.node;
          $$->str = $5;
      }
    | block                         {
          $$ = node(st, AST_BLOCK, at(@1));
          $$->body = $1.items;
          $$->nbody = $1.n;
      }
    | ';'                           { $$ = NULL; }
    | error ';'                     { $$ = NULL; yyerrok; }
    | error block                   { $$ = NULL; yyerrok; }
    ;

/* `else if` nests the second if as the only statement of els; the chain's
 * length counts as depth. */
if_stmt
    : KW_IF expr block              {
          $$ = leaf(st, AST_IF, at(@1));
          $$.node->a = $2.node;
          $$.node->body = $3.items;
          $$.node->nbody = $3.n;
      }
    | KW_IF expr block KW_ELSE block {
          $$ = leaf(st, AST_IF, at(@1));
          $$.node->a = $2.node;
          $$.node->body = $3.items;
          $$.node->nbody = $3.n;
          $$.node->els = $5.items;
          $$.node->nels = $5.n;
          $$.node->has_else = true;
      }
    | KW_IF expr block KW_ELSE if_stmt {
          $$ = leaf(st, AST_IF, at(@1));
          $$.node->a = $2.node;
          $$.node->body = $3.items;
          $$.node->nbody = $3.n;
          $$.node->els = ARENA_ARRAY(st->arena, AstNode *, 1);
          $$.node->els[0] = $5.node;
          $$.node->nels = 1;
          $$.node->has_else = true;
          $$.depth = $5.depth + 1;
          CHECK_DEPTH($$, @1);
      }
    ;

opt_pipeline
    : %empty                        { $$ = (NodeList){0}; }
    | IDENT '(' expr ')'            {
          expect_word(st, $1, "pipeline", at(@1), "or '{' after the range of a for loop");
          $$ = (NodeList){0};
          add(st, &$$, $3);
      }
    | IDENT '(' expr ')' IDENT      {
          expect_word(st, $1, "pipeline", at(@1), "or '{' after the range of a for loop");
          expect_word(st, $5, "warp_specialize", at(@5), "or '{' after pipeline(...)");
          $$ = (NodeList){0};
          add(st, &$$, $3);
          $$.warp_specialize = true;
      }
    | IDENT                         {
          expect_word(st, $1, "warp_specialize", at(@1), "or pipeline(...) or '{' after the range of a for loop");
          $$ = (NodeList){0};
          $$.warp_specialize = true;
      }
    ;

name_list
    : IDENT ',' IDENT               {
          $$ = (NameList){0};
          add_name(st, &$$, $1, at(@1));
          add_name(st, &$$, $3, at(@3));
      }
    | name_list ',' IDENT           { $$ = $1; add_name(st, &$$, $3, at(@3)); }
    ;

assign_op
    : '='           { $$ = OP_ASSIGN; }
    | ADD_ASSIGN    { $$ = OP_ADD; }
    | SUB_ASSIGN    { $$ = OP_SUB; }
    | MUL_ASSIGN    { $$ = OP_MUL; }
    | DIV_ASSIGN    { $$ = OP_DIV; }
    | MOD_ASSIGN    { $$ = OP_MOD; }
    | AND_ASSIGN    { $$ = OP_AND; }
    | OR_ASSIGN     { $$ = OP_OR; }
    | XOR_ASSIGN    { $$ = OP_XOR; }
    | SHL_ASSIGN    { $$ = OP_SHL; }
    | SHR_ASSIGN    { $$ = OP_SHR; }
    ;

opt_type
    : %empty                        { $$ = NULL; }
    | ':' type                      { $$ = $2; }
    ;

type
    : IDENT                         { $$ = type(st, AT_NAME, at(@1)); $$->name = $1; }
    | type_ctor
    ;

type_ctor
    : TY_PTR '<' type '>'           { $$ = type(st, AT_PTR, at(@1)); $$->elem = $3; }
    | TY_TENSOR '<' type ',' shift '>' {
          $$ = type(st, AT_TENSOR, at(@1));
          $$->elem = $3;
          $$->rank = $5.node;
      }
    | TY_TILE '<' type '>' '[' expr_list ']' {
          $$ = type(st, AT_TILE, at(@1));
          $$->elem = $3;
          $$->dims = $6.items;
          $$->ndims = $6.n;
      }
    ;

type_list
    : type                          { $$ = (TypeList){0}; PUSH($$, items, $1); }
    | type_list ',' type            { $$ = $1; PUSH($$, items, $3); }
    ;

expr: lor ;

lor
    : land
    | lor LOR land                  { $$ = binary(st, OP_LOR, $1, $3, at(@2)); CHECK_DEPTH($$, @2); }
    ;
land
    : bor
    | land LAND bor                 { $$ = binary(st, OP_LAND, $1, $3, at(@2)); CHECK_DEPTH($$, @2); }
    ;
bor
    : bxor
    | bor '|' bxor                  { $$ = binary(st, OP_OR, $1, $3, at(@2)); CHECK_DEPTH($$, @2); }
    ;
bxor
    : band
    | bxor '^' band                 { $$ = binary(st, OP_XOR, $1, $3, at(@2)); CHECK_DEPTH($$, @2); }
    ;
band
    : eq
    | band '&' eq                   { $$ = binary(st, OP_AND, $1, $3, at(@2)); CHECK_DEPTH($$, @2); }
    ;
eq
    : rel
    | eq EQ rel                     { $$ = binary(st, OP_EQ, $1, $3, at(@2)); CHECK_DEPTH($$, @2); }
    | eq NE rel                     { $$ = binary(st, OP_NE, $1, $3, at(@2)); CHECK_DEPTH($$, @2); }
    ;
rel
    : shift
    | rel '<' shift                 { $$ = binary(st, OP_LT, $1, $3, at(@2)); CHECK_DEPTH($$, @2); }
    | rel LE shift                  { $$ = binary(st, OP_LE, $1, $3, at(@2)); CHECK_DEPTH($$, @2); }
    | rel '>' shift                 { $$ = binary(st, OP_GT, $1, $3, at(@2)); CHECK_DEPTH($$, @2); }
    | rel GE shift                  { $$ = binary(st, OP_GE, $1, $3, at(@2)); CHECK_DEPTH($$, @2); }
    ;
shift
    : add
    | shift SHL add                 { $$ = binary(st, OP_SHL, $1, $3, at(@2)); CHECK_DEPTH($$, @2); }
    | shift SHR add                 { $$ = binary(st, OP_SHR, $1, $3, at(@2)); CHECK_DEPTH($$, @2); }
    ;
add
    : mul
    | add '+' mul                   { $$ = binary(st, OP_ADD, $1, $3, at(@2)); CHECK_DEPTH($$, @2); }
    | add '-' mul                   { $$ = binary(st, OP_SUB, $1, $3, at(@2)); CHECK_DEPTH($$, @2); }
    ;
mul
    : cast
    | mul '*' cast                  { $$ = binary(st, OP_MUL, $1, $3, at(@2)); CHECK_DEPTH($$, @2); }
    | mul '/' cast                  { $$ = binary(st, OP_DIV, $1, $3, at(@2)); CHECK_DEPTH($$, @2); }
    | mul '%' cast                  { $$ = binary(st, OP_MOD, $1, $3, at(@2)); CHECK_DEPTH($$, @2); }
    ;
cast
    : unary
    | cast KW_AS type               {
          $$ = (ExprVal){node(st, AST_CAST, at(@2)), $1.depth + 1};
          $$.node->a = $1.node;
          $$.node->type = $3;
          CHECK_DEPTH($$, @2);
      }
    ;
unary
    : postfix
    | '-' unary                     { $$ = unary(st, '-', $2, at(@1)); CHECK_DEPTH($$, @1); }
    | '+' unary                     { $$ = unary(st, '+', $2, at(@1)); CHECK_DEPTH($$, @1); }
    | '!' unary                     { $$ = unary(st, '!', $2, at(@1)); CHECK_DEPTH($$, @1); }
    | '~' unary                     { $$ = unary(st, '~', $2, at(@1)); CHECK_DEPTH($$, @1); }
    ;
postfix
    : primary
    | postfix '.' IDENT             {
          $$ = (ExprVal){node(st, AST_MEMBER, at(@2)), $1.depth + 1};
          $$.node->a = $1.node;
          $$.node->name = $3;
          CHECK_DEPTH($$, @2);
      }
    | postfix '[' index_items ']'   {
          $$ = (ExprVal){node(st, AST_INDEX, at(@2)), 1 + TL_MAX($1.depth, $3.depth)};
          $$.node->a = $1.node;
          $$.node->list = $3.items;
          $$.node->nlist = $3.n;
          CHECK_DEPTH($$, @2);
      }
    ;
primary
    : INT                           {
          $$ = leaf(st, AST_INT, at(@1));
          $$.node->uval = $1;
          $$.node->ival = $1 > (uint64_t)INT64_MAX ? (int64_t)($1 - (uint64_t)INT64_MAX - 1) + INT64_MIN
                                                   : (int64_t)$1;
      }
    | FLOAT                         { $$ = leaf(st, AST_FLOAT, at(@1)); $$.node->fval = $1; }
    | KW_INF                        { $$ = leaf(st, AST_FLOAT, at(@1)); $$.node->fval = (double)INFINITY; }
    | KW_NAN                        { $$ = leaf(st, AST_FLOAT, at(@1)); $$.node->fval = (double)NAN; }
    | KW_TRUE                       { $$ = leaf(st, AST_BOOL, at(@1)); $$.node->ival = 1; }
    | KW_FALSE                      { $$ = leaf(st, AST_BOOL, at(@1)); }
    | STRING                        { $$ = leaf(st, AST_STRING, at(@1)); $$.node->str = $1; }
    | IDENT                         { $$ = leaf(st, AST_NAME, at(@1)); $$.node->name = $1; }
    | IDENT '(' args ')'            {
          $$ = (ExprVal){node(st, AST_CALL, at(@1)), $3.depth + 1};
          $$.node->name = $1;
          $$.node->list = $3.items;
          $$.node->argnames = $3.names;
          $$.node->nlist = $3.n;
          CHECK_DEPTH($$, @1);
      }
    | TIDENT '<' type_list '>' '(' args ')' {
          $$ = (ExprVal){node(st, AST_CALL, at(@1)), $6.depth + 1};
          $$.node->name = $1;
          $$.node->targs = $3.items;
          $$.node->ntargs = $3.n;
          $$.node->list = $6.items;
          $$.node->argnames = $6.names;
          $$.node->nlist = $6.n;
          CHECK_DEPTH($$, @1);
      }
    | '(' expr ')'                  { $$ = $2; }
    | '(' expr ',' expr_list opt_comma ')' {
          $$ = (ExprVal){node(st, AST_TUPLE, at(@1)), 0};
          NodeList items = {0};
          add(st, &items, $2);
          for (uint32_t i = 0; i < $4.n; i++) add(st, &items, (ExprVal){$4.items[i], 0});
          $$.node->list = items.items;
          $$.node->nlist = items.n;
          $$.depth = 1 + TL_MAX($2.depth, $4.depth);
          CHECK_DEPTH($$, @1);
      }
    | '[' ']'                       { $$ = leaf(st, AST_LIST, at(@1)); }
    | '[' expr_list opt_comma ']'   {
          $$ = (ExprVal){node(st, AST_LIST, at(@1)), $2.depth + 1};
          $$.node->list = $2.items;
          $$.node->nlist = $2.n;
          CHECK_DEPTH($$, @1);
      }
    ;

expr_list
    : expr                          { $$ = (NodeList){0}; add(st, &$$, $1); }
    | expr_list ',' expr            { $$ = $1; add(st, &$$, $3); }
    ;

args
    : %empty                        { $$ = (NodeList){0}; }
    | arg_list opt_comma            { $$ = $1; }
    ;

/* A named argument is `name: expr` (load(A, [0], [8], other: x)). */
arg_list
    : expr                          { $$ = (NodeList){0}; add_arg(st, &$$, $1, NULL); }
    | IDENT ':' expr                { $$ = (NodeList){0}; add_arg(st, &$$, $3, $1); }
    | arg_list ',' expr             { $$ = $1; add_arg(st, &$$, $3, NULL); }
    | arg_list ',' IDENT ':' expr   { $$ = $1; add_arg(st, &$$, $5, $3); }
    ;

index_items
    : index_item                    { $$ = (NodeList){0}; add(st, &$$, $1); }
    | index_items ',' index_item    { $$ = $1; add(st, &$$, $3); }
    ;

index_item
    : ':'                           { $$ = leaf(st, AST_SLICE, at(@1)); }
    | KW_NONE                       { $$ = leaf(st, AST_NONE_LIT, at(@1)); }
    | expr
    ;

%%

/* ---- messages -------------------------------------------------------------
 * A syntax error reads "expected WHAT [after expression], found TOKEN":
 * WHAT names the categories (declaration, statement, expression, type) whose
 * first tokens the parser would accept, then the remaining tokens.  When the
 * parser is after a complete operand, the tokens that would only continue it
 * (binary operators, `as`, calls, indexing, assignment) are left out. */

static bool has(const yysymbol_kind_t *set, int n, yysymbol_kind_t k)
{
    for (int i = 0; i < n; i++)
        if (set[i] == k) return true;
    return false;
}

/* Removes the tokens in drop[] from set; returns the new count. */
static int drop_all(yysymbol_kind_t *set, int n, const int *drop, size_t ndrop)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        bool keep = true;
        for (size_t j = 0; j < ndrop; j++)
            if (set[i] == YYTRANSLATE(drop[j])) keep = false;
        if (keep) set[m++] = set[i];
    }
    return m;
}

/* 'let' for keywords and punctuation, the description for the others. */
static void describe(StrBuf *b, yysymbol_kind_t k)
{
    const char *name = yysymbol_name(k);
    size_t len = strlen(name);
    if (k == YYSYMBOL_IDENT || k == YYSYMBOL_TIDENT || k == YYSYMBOL_INT || k == YYSYMBOL_FLOAT ||
        k == YYSYMBOL_STRING || k == YYSYMBOL_YYEOF) {
        sb_puts(b, k == YYSYMBOL_TIDENT ? "identifier" : name);
    } else if (len >= 2 && name[0] == '"') {
        sb_printf(b, "'%.*s'", (int)(len - 2), name + 1);
    } else if (name[0] == '\'') {
        sb_puts(b, name);
    } else {
        sb_printf(b, "'%s'", name);
    }
}

static bool is_closer(yysymbol_kind_t k)
{
    return k == YYTRANSLATE(')') || k == YYTRANSLATE(']') || k == YYTRANSLATE('}') || k == YYTRANSLATE('>');
}

/* The text of the look-ahead token, quoted, escaped and shortened. */
static void describe_found(StrBuf *b, LexState *st, yysymbol_kind_t k)
{
    if (k == YYSYMBOL_YYEOF) {
        sb_puts(b, "end of file");
        return;
    }
    const char *s = st->src + st->tok_start;
    size_t n = st->tok_len, shown = TL_MIN(n, (size_t)32);
    bool quoted = k != YYSYMBOL_STRING;   /* a string shows its own quotes */
    sb_puts(b, quoted ? "'" : "string ");
    for (size_t i = 0; i < shown; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 32 && c < 127) sb_putc(b, (char)c);
        else sb_printf(b, "\\x%02x", c);
    }
    if (n > shown) sb_puts(b, "...");
    if (quoted) sb_putc(b, '\'');
}

static int closer_of(char open)
{
    return open == '(' ? ')' : open == '[' ? ']' : open == '{' ? '}' : '>';
}

static int yyreport_syntax_error(const yypcontext_t *ctx, void *scanner, LexState *st)
{
    (void)scanner;
    if (st->fatal || yypcontext_token(ctx) == YYSYMBOL_BAD) return 0;
    yysymbol_kind_t exp[YYNTOKENS];
    int n = yypcontext_expected_tokens(ctx, exp, YYNTOKENS);
    if (n < 0) return n;
    yysymbol_kind_t found = yypcontext_token(ctx);
    bool at_eof = found == YYSYMBOL_YYEOF;
    bool name_expected = has(exp, n, YYTRANSLATE(IDENT));

    /* After a complete operand: drop the tokens that would extend it. */
    bool after_expr = has(exp, n, YYTRANSLATE('+')) && has(exp, n, YYTRANSLATE('*'));
    if (after_expr) {
        static const int extend[] = {'+', '-', '*', '/', '%', '&', '|', '^', SHL, SHR, LAND, LOR, EQ, NE,
                                     KW_AS, '(', '[', '.', ':', '=', ADD_ASSIGN, SUB_ASSIGN, MUL_ASSIGN,
                                     DIV_ASSIGN, MOD_ASSIGN, AND_ASSIGN, OR_ASSIGN, XOR_ASSIGN, SHL_ASSIGN,
                                     SHR_ASSIGN};
        static const int compare[] = {'<', '>', LE, GE};
        if (has(exp, n, YYTRANSLATE(EQ))) n = drop_all(exp, n, compare, TL_COUNTOF(compare));
        n = drop_all(exp, n, extend, TL_COUNTOF(extend));
    }
    /* Categories replace the tokens that start them. */
    const char *cats[4];
    int ncats = 0;
    bool decl_expected = has(exp, n, YYTRANSLATE(KW_KERNEL));
    if (decl_expected) {
        static const int decl[] = {KW_KERNEL, KW_FN, KW_CONST};
        cats[ncats++] = "declaration ('kernel', 'fn' or 'const')";
        n = drop_all(exp, n, decl, TL_COUNTOF(decl));
    }
    if (has(exp, n, YYTRANSLATE(KW_LET))) {
        static const int stmt[] = {KW_LET, KW_VAR, KW_IF, KW_FOR, KW_WHILE, KW_RETURN, KW_STATIC_ASSERT, '{', ';'};
        cats[ncats++] = "statement";
        n = drop_all(exp, n, stmt, TL_COUNTOF(stmt));
    }
    if (has(exp, n, YYTRANSLATE(INT))) {
        static const int start[] = {INT, FLOAT, STRING, IDENT, TIDENT, KW_TRUE, KW_FALSE, KW_INF, KW_NAN,
                                    '(', '[', '-', '+', '!', '~'};
        if (ncats == 0 || strcmp(cats[ncats - 1], "statement") != 0) cats[ncats++] = "expression";
        n = drop_all(exp, n, start, TL_COUNTOF(start));
    }
    if (has(exp, n, YYTRANSLATE(TY_PTR))) {
        static const int ty[] = {TY_PTR, TY_TENSOR, TY_TILE, IDENT};
        cats[ncats++] = "type";
        n = drop_all(exp, n, ty, TL_COUNTOF(ty));
    }

    /* The innermost bracket before the look-ahead (which may have pushed or
     * popped some; entries below nbrackets_before are still intact). */
    uint32_t depth = at_eof ? st->nbrackets : st->nbrackets_before;
    const LexBracket *open = depth ? &st->brackets[depth - 1] : NULL;
    bool closer_expected = open && has(exp, n, YYTRANSLATE(closer_of(open->open)));

    /* Closers read best last: "expected ',' or ')'". */
    for (int i = 0, m = n; i < m; i++)
        if (is_closer(exp[i])) {
            yysymbol_kind_t k = exp[i];
            memmove(&exp[i], &exp[i + 1], (size_t)(n - i - 1) * sizeof *exp);
            exp[n - 1] = k;
            i--;
            m--;
        }

    StrBuf b = {0};
    int items = ncats + n;
    if (items == 0 || items > 6) {
        sb_puts(&b, "unexpected ");
        describe_found(&b, st, found);
        if (after_expr) sb_puts(&b, " after expression");
    } else if (closer_expected && items == 1 && ncats == 0) {
        sb_printf(&b, "expected '%c' to close '%c' opened at %u:%u, found ", closer_of(open->open), open->open,
                  open->loc.line, open->loc.col);
        describe_found(&b, st, found);
        closer_expected = false;
    } else {
        sb_puts(&b, "expected ");
        for (int i = 0; i < items; i++) {
            if (i > 0) sb_puts(&b, i == items - 1 ? " or " : ", ");
            if (i < ncats) sb_puts(&b, cats[i]);
            else describe(&b, exp[i - ncats]);
        }
        if (after_expr) sb_puts(&b, " after expression");
        sb_puts(&b, ", found ");
        describe_found(&b, st, found);
    }

    /* What is missing at the end of a line (a ';', a closer, the rest of an
     * expression) belongs right after the previous token when the look-ahead
     * sits on a later line; end of file has no text of its own. */
    SrcLoc loc = st->tok_loc;
    bool only_ends = ncats == 0;
    for (int i = 0; i < n; i++)
        if (!is_closer(exp[i]) && exp[i] != YYTRANSLATE(';') && exp[i] != YYTRANSLATE(',')) only_ends = false;
    if (at_eof || ((after_expr || only_ends) && st->prev_end.line < loc.line))
        loc = at_eof ? st->tok_end : st->prev_end;
    diag_error(st->diag, loc, "%s", b.s);
    sb_free(&b);

    if (closer_expected) diag_note(st->diag, open->loc, "to match this '%c'", open->open);
    if (decl_expected && found >= YYSYMBOL_KW_LET && found <= YYSYMBOL_KW_STATIC_ASSERT &&
        found != YYSYMBOL_KW_ELSE && found != YYSYMBOL_KW_IN)
        diag_note(st->diag, st->tok_loc, "statements belong inside the body of a kernel or fn");
    if (found >= YYSYMBOL_KW_KERNEL && found <= YYSYMBOL_KW_NONE && name_expected)
        diag_note(st->diag, st->tok_loc, "'%.*s' is a keyword and cannot be used as a name", (int)st->tok_len,
                  st->src + st->tok_start);
    return 0;
}

/* Bison calls this only when its stacks are exhausted: input nested deeper
 * than any limit (the nesting checks usually fire first). */
static void tlyyerror(TLYYLTYPE *loc, void *scanner, LexState *st, const char *msg)
{
    (void)scanner;
    if (st->fatal) return;
    if (strcmp(msg, "memory exhausted") == 0)
        diag_error(st->diag, at(*loc), "nesting too deep (limit %d)", PARSE_NEST_LIMIT);
    else
        diag_error(st->diag, at(*loc), "%s", msg);
    st->fatal = true;
}

const char *parse_token_kind(int token)
{
    switch (token) {
    case IDENT: return "IDENT";
    case TIDENT: return "TIDENT";
    case INT: return "INT";
    case FLOAT: return "FLOAT";
    case STRING: return "STRING";
    case TY_PTR: case TY_TENSOR: case TY_TILE: return "TYPE";
    default: return token >= KW_KERNEL && token <= KW_NONE ? "KEYWORD" : "PUNCT";
    }
}
