/* ast.h: the syntax tree the parser builds.
 *
 * Nodes live in the compilation's arena (one Ast per file) and point at each
 * other.  Lists are arena arrays with a count.  Every node keeps the location of
 * its first token (and, for operators, `loc` is the operator's position).
 * The tree is untyped: types, shapes and compile-time values are the business
 * of lowering (lower.c), which walks it once per kernel specialization.
 */
#ifndef TILEC_AST_H
#define TILEC_AST_H

#include "../common/base.h"
#include "../common/diag.h"

typedef struct AstNode AstNode;
typedef struct AstType AstType;

typedef enum AstTypeKind {
    AT_NAME,    /* a scalar type (i32, bf16...) or a `type` parameter: name */
    AT_PTR,     /* ptr<elem> */
    AT_TENSOR,  /* tensor<elem, rank> */
    AT_TILE,    /* tile<elem>[dims...] */
} AstTypeKind;

struct AstType {
    AstTypeKind kind;
    SrcLoc loc;
    const char *name;   /* AT_NAME */
    AstType *elem;      /* AT_PTR, AT_TENSOR, AT_TILE */
    AstNode *rank;      /* AT_TENSOR: a constant expression */
    AstNode **dims;     /* AT_TILE: constant expressions */
    uint32_t ndims;
};

/* ORDER: ast.c's ast_kind_name[] follows this enum. */
typedef enum AstKind {
    /* expressions */
    AST_INT,        /* ival (literal, unsigned magnitude in uval) */
    AST_FLOAT,      /* fval; also `inf` and `nan` */
    AST_BOOL,       /* ival 0/1 */
    AST_STRING,     /* str (escapes resolved) */
    AST_NAME,       /* name */
    AST_UNARY,      /* op ('-', '!', '~', '+'), a */
    AST_BINARY,     /* op (AstOp), a, b */
    AST_CALL,       /* name, targs (explicit type/int args `zeros<f32>`), args, argnames */
    AST_INDEX,      /* a[ items ]: a = base, list = items (AST_SLICE, AST_NONE_LIT or expressions) */
    AST_SLICE,      /* `:` inside an index */
    AST_NONE_LIT,   /* `None` inside an index */
    AST_MEMBER,     /* a.name (A.ptr, A.shape, A.stride) */
    AST_CAST,       /* a as type */
    AST_LIST,       /* [ list ] (shapes and offsets) */
    AST_TUPLE,      /* ( list ) with two or more items: `return (a, b);` in fn */
    /* statements */
    AST_LET,        /* let name[: type] = a;   or  let (names...) = a; (names, nnames) */
    AST_VAR,        /* var name[: type] = a; */
    AST_ASSIGN,     /* name op= a; op is '=' or an AstOp for compound assignment */
    AST_IF,         /* if a { body } else { els } (els may be one AST_IF for `else if`) */
    AST_FOR,        /* for name in range(list...) [pipeline(b)] { body } */
    AST_WHILE,      /* while a { body } */
    AST_RETURN,     /* return [a]; */
    AST_STATIC_ASSERT, /* static_assert(a, str); */
    AST_EXPR_STMT,  /* a; (calls such as store, print, assert) */
    AST_BLOCK,      /* { body } */
    /* declarations */
    AST_CONST,      /* const name = a; */
    AST_FN,         /* fn name(params) { body } */
    AST_KERNEL,     /* kernel name<cparams>(params) [grid(list)] [warps(a)] [requires(c, "msg")]... [tune(...)] { body } */
    AST_KIND_COUNT
} AstKind;

/* Binary operators. ORDER: ast.c's ast_op_name[] follows this enum. */
typedef enum AstOp {
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD,
    OP_AND, OP_OR, OP_XOR, OP_SHL, OP_SHR,
    OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE,
    OP_LAND, OP_LOR,
    OP_ASSIGN,      /* plain `=` in AST_ASSIGN */
    OP_COUNT
} AstOp;

typedef struct AstParam {       /* a runtime parameter (kernel, fn) */
    const char *name;
    AstType *type;              /* NULL for fn parameters (generic) */
    SrcLoc loc;
} AstParam;

typedef struct AstCParam {      /* a compile-time parameter: P: int = 128 / T: type = bf16 */
    const char *name;
    bool is_type;
    AstNode *def_expr;          /* int default, or NULL */
    AstType *def_type;          /* type default, or NULL */
    SrcLoc loc;
} AstCParam;

struct AstNode {
    AstKind kind;
    SrcLoc loc;
    int op;                     /* AstOp or unary char */
    int64_t ival;
    uint64_t uval;
    double fval;
    const char *name;
    const char *str;
    AstNode *a, *b;             /* operands; AST_IF: a = cond; AST_FOR: b = pipeline stages or NULL */
    AstType *type;              /* AST_CAST, AST_LET/AST_VAR annotation */
    AstNode **list;             /* call args, index items, list items, for range args, grid exprs */
    uint32_t nlist;
    const char **argnames;      /* AST_CALL: name of each argument or NULL (named args: `other: x`) */
    AstType **targs;            /* AST_CALL explicit type arguments: zeros<f32>(...) */
    uint32_t ntargs;
    AstNode **body, **els;      /* statement lists */
    uint32_t nbody, nels;
    bool has_else;
    bool warp_specialize;       /* AST_FOR: the hint `warp_specialize` (after pipeline(b), or alone) */
    const char **names;         /* AST_LET tuple destructuring */
    SrcLoc *name_locs;
    uint32_t nnames;
    AstParam *params;           /* AST_FN, AST_KERNEL */
    uint32_t nparams;
    AstCParam *cparams;         /* AST_KERNEL */
    uint32_t ncparams;
    AstNode *warps;             /* AST_KERNEL: warps(expr) or NULL */
    bool fast_math;             /* AST_KERNEL: math(fast) */
    bool has_grid;              /* AST_KERNEL: grid(list...) */
    AstNode **reqs;             /* AST_KERNEL: requires(reqs[2i], reqs[2i+1]): condition, message (AST_STRING) */
    uint32_t nreqs;
    AstNode **tune;             /* AST_KERNEL: tune(NAME = [v, ...], ...): one AST_LIST named NAME each */
    uint32_t ntune;
};

typedef struct Ast {
    Arena arena;                /* owns every node */
    const char *file;
    AstNode **decls;            /* AST_CONST, AST_FN, AST_KERNEL in source order */
    uint32_t ndecls;
} Ast;

extern const char *const ast_kind_name[AST_KIND_COUNT];
extern const char *const ast_op_name[OP_COUNT];   /* "+", "-", ... "&&", "||", "=" */

/* parse.c (bison) + lex.l (flex): parses `src`; syntax errors go to d.
 * Returns the Ast (possibly partial) or NULL on an unrecoverable error;
 * d->nerrors > 0 tells whether the parse failed.  Reentrant: no globals. */
Ast *ast_parse(const char *file, const char *src, size_t len, Diag *d);
void ast_free(Ast *ast);
/* --emit=tokens: one token per line, "line:col KIND text" */
bool ast_dump_tokens(StrBuf *out, const char *file, const char *src, size_t len, Diag *d);
/* --emit=ast: an indented S-expression form, deterministic */
void ast_dump(StrBuf *out, const Ast *ast);

#endif
