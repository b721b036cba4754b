/* lower_int.h: the state shared by the files of the lowering (frontend-internal).
 *
 * The lowering walks the AST once per kernel specialization and builds tile IR
 * directly; there is no separate typed AST.  What an expression evaluates to is
 * an LVal: an IR value of a known type, or a compile-time value that has not
 * become IR yet (weak integer/float literals, `const`s and `int` parameters,
 * types), a tuple (from topk or a fn), or a poison "error" value that silences
 * every later diagnostic about it.
 *
 * Files: lower.c (kernels, specializations, -D), sema_scope.c (bindings),
 * sema_types.c (promotion, broadcasting, type syntax), lower_conv.c (conversions
 * and operators), lower_expr.c (expressions, fn inlining), lower_builtin.c
 * (builtins), lower_stmt.c (statements and control flow), sema_define.c (-D text).
 */
#ifndef TILEC_LOWER_INT_H
#define TILEC_LOWER_INT_H

#include "frontend.h"

#define FE_MAX_NEST 256     /* expressions + blocks within one fn; also inlined calls */
#define FE_MAX_TOTAL 4096   /* expressions + blocks across every inlined fn: bounds the C stack */
#define FE_MAX_NUMEL (1 << 24)

typedef enum LvKind {
    LV_ERR,     /* poison: an error was reported already */
    LV_VOID,    /* no value (a store, a fn without return) */
    LV_VAL,     /* IR value v of type ty (tile, scalar, pointer or view) */
    LV_INT,     /* weak compile-time integer i (is_bool: from true/false/comparisons;
                   is_u64: the value is (uint64_t)i, above 2^63 - 1) */
    LV_FLOAT,   /* weak compile-time float f */
    LV_TYPE,    /* a type (from a `type` parameter): ty */
    LV_TUPLE,   /* items[0..nitems) */
} LvKind;

typedef struct LVal LVal;
struct LVal {
    uint8_t kind;
    bool is_bool;
    bool is_u64;
    IrVal v;
    IrType ty;
    int64_t i;
    double f;
    LVal *items;        /* lowering arena */
    uint32_t nitems;
    SrcLoc loc;         /* LV_INT/LV_FLOAT: where it was written; its CONST gets this location */
};

typedef enum BindKind {
    BIND_CONST,     /* global `const` */
    BIND_FN,        /* global `fn`: fn points at its declaration */
    BIND_KERNEL,    /* global `kernel` (only for redeclaration checks) */
    BIND_CPARAM,    /* compile-time parameter */
    BIND_PARAM,     /* kernel or fn parameter */
    BIND_LET,
    BIND_VAR,
    BIND_LOOP,      /* a for loop's induction variable */
} BindKind;

typedef struct Binding {
    const char *name;
    uint8_t kind;
    uint32_t scope;     /* scope id: redeclaration = same name, same scope */
    SrcLoc loc;
    LVal val;
    const AstNode *decl;
    SrcLoc assigned;    /* BIND_VAR: the last assignment lowered (line 0: none) */
} Binding;

typedef struct Lower {
    Diag *d;
    const Ast *ast;
    const FeOptions *opts;
    IrModule *mod;
    IrFunc *f;
    IrBuilder b;
    Arena arena;            /* LVal tuples and names; freed when fe_lower returns */
    /* Bindings form a stack.  binds[0..nglobal) are the globals (consts, fns,
     * kernels); binds[frame..nbinds) are visible locals (a kernel or the innermost
     * inlined fn).  Lookup searches the frame top-down, then the globals. */
    Binding *binds;
    uint32_t nbinds, bindcap;
    uint32_t nglobal, frame;
    uint32_t scope, next_scope;
    /* fns being inlined, innermost last: recursion check and depth */
    const AstNode **active;
    uint32_t nactive, activecap;
    int depth;              /* nesting of expressions, blocks and inlined calls */
    int frame_depth;        /* depth where the innermost inlined fn (or the kernel) starts */
    bool depth_reported;
} Lower;

/* sema_scope.c */
uint32_t sema_scope_push(Lower *L);                 /* returns the token for sema_scope_pop */
void sema_scope_pop(Lower *L, uint32_t token);
/* Declares name in the current scope; reports a redeclaration (with a note) and
 * returns UINT32_MAX then.  Returns the binding index. */
uint32_t sema_declare(Lower *L, const char *name, BindKind kind, SrcLoc loc, LVal val, const AstNode *decl);
uint32_t sema_lookup(Lower *L, const char *name);   /* UINT32_MAX: not visible */
/* Reports an undeclared name with a "did you mean" note over names in scope. */
void sema_undeclared(Lower *L, SrcLoc loc, const char *what, const char *name);
const char *sema_bind_kind_name(BindKind k);

/* sema_types.c */
/* Binary promotion of two element types (SEMANTICS.md "Types and promotion"). */
DType sema_promote(DType a, DType b);
bool sema_int_fits(int64_t v, DType dt);
bool sema_is_pow2(int64_t v);
/* Broadcasts shapes a and b (NumPy); false if they are incompatible. */
bool sema_broadcast_shape(IrType a, IrType b, IrType *out);
/* The type text for messages (arena-allocated). */
const char *sema_ty_str(Lower *L, IrType t);
const char *sema_lv_str(Lower *L, const LVal *v);
/* Resolves type syntax; reports errors and returns false. `what` names the
 * context in messages. */
bool sema_resolve_type(Lower *L, const AstType *t, IrType *out);
bool sema_resolve_dtype(Lower *L, const AstType *t, DType *out);
/* Checks a tile shape (powers of two, 2^24 elements, rank) and reports at loc. */
bool sema_check_shape(Lower *L, SrcLoc loc, const int64_t *dims, int rank);

/* sema_define.c: a -D value: a type name or an integer expression. */
typedef enum { DEF_BAD, DEF_INT, DEF_TYPE } DefKind;
DefKind sema_parse_define(const char *text, int64_t *ival, DType *dt);

/* lower_conv.c */
LVal fe_err(void);
LVal fe_void(void);
LVal fe_weak_int(int64_t i);
/* A weak integer of value u (is_u64 when above 2^63 - 1). */
LVal fe_weak_uint(uint64_t u);
/* Whether weak integer x fits dtype dt (any float type: yes). */
bool fe_weak_fits(const LVal *x, DType dt);
LVal fe_weak_bool(bool b);
LVal fe_weak_float(double f);
LVal fe_val(Lower *L, IrVal v);
IrVal fe_emit(Lower *L, IrOpcode opc, const IrVal *o, uint32_t n, IrType ty, const IrAttr *attr);
IrVal fe_emit_i(Lower *L, IrOpcode opc, const IrVal *o, uint32_t n, IrType ty, int64_t i);
/* A weak value made concrete: i32 (i64 when it does not fit), f32, i1. */
LVal fe_materialize(Lower *L, LVal x, SrcLoc loc);
/* Converts x (weak or strong, not a pointer) to element type dt: CAST or CONST. */
LVal fe_to_dtype(Lower *L, LVal x, DType dt, SrcLoc loc);
/* Broadcasts a strong x to shape `shape` (SPLAT, EXPAND_DIMS, BROADCAST);
 * reports at loc if it cannot. */
LVal fe_to_shape(Lower *L, LVal x, IrType shape, SrcLoc loc, const char *what);
/* Both: dtype and shape of target (used for var/annotation/other: conversions). */
LVal fe_to_type(Lower *L, LVal x, IrType target, SrcLoc loc, const char *what);
/* x as an i1 condition of the same shape (integers compared with 0). */
LVal fe_to_bool(Lower *L, LVal x, SrcLoc loc, const char *what);
/* Operators: op is an AstOp; unary takes '-', '!', '~', '+'. */
LVal fe_binary(Lower *L, int op, LVal x, LVal y, SrcLoc loc);
LVal fe_unary(Lower *L, int op, LVal x, SrcLoc loc);
/* Brings several values to one dtype and one shape (where, fma, maximum):
 * arith: fp8 is computed in f32. */
bool fe_unify(Lower *L, LVal *xs, int n, SrcLoc loc, const char *what, bool arith);
bool fe_is_strong(const LVal *x);
bool fe_is_ptr(const LVal *x);
bool fe_is_view(const LVal *x);

/* lower_expr.c */
LVal fe_expr(Lower *L, const AstNode *e);
/* A compile-time integer (axis, dims, k, stages); reports `what` if e is not one. */
bool fe_const_int(Lower *L, const AstNode *e, const char *what, int64_t *out);
/* A list of compile-time integers `[d0, d1]` forming a tile shape. */
bool fe_const_shape(Lower *L, const AstNode *e, const char *what, int64_t *dims, int *rank);
bool fe_nest_enter(Lower *L, SrcLoc loc);
void fe_nest_leave(Lower *L);
LVal fe_call_fn(Lower *L, const AstNode *fn, const AstNode *call);

/* lower_builtin.c */
LVal fe_builtin(Lower *L, const AstNode *call, bool *found);

/* lower_stmt.c */
void fe_stmts(Lower *L, AstNode *const *stmts, uint32_t n);
/* Lowers a fn body: every statement, with `return` allowed last only. */
LVal fe_fn_body(Lower *L, const AstNode *fn);

#endif
