/* ir.h: the tile IR.
 *
 * A module holds kernels (IrFunc).  Inside a function everything is an index:
 *   IrVal  -> f->vals[]    SSA values (op results and block arguments); 0 is "none"
 *   IrBlk  -> f->blocks[]  blocks; 0 is "none"; each holds an ordered array of op ids
 *   op ids -> f->ops[]     ops; an op's operands are f->opnds[op.opnd .. op.opnd+nopnd)
 * Results of one op are consecutive values op.res, op.res+1, ...
 * Control flow is structured: FOR/IF/WHILE own regions (blocks) that end in a
 * terminator; there are no branches.  The kernel body is f->body, whose block
 * arguments are the kernel parameters, and which ends in RETURN.  The optional
 * launch-grid computation is f->grid: a block whose arguments mirror the
 * parameters and which ends in YIELD of 1-3 integer scalars.  The optional
 * launch contracts (requires clauses) are f->requires: a block like the grid's
 * that ends in YIELD of one i1 scalar per clause, clause i's message being
 * f->mod->strs[f->req_msg[i]].
 *
 * Ops removed by a pass are unlinked from their block (block.ops) and marked
 * dead; their ids stay valid until the function is compacted (ir_func_compact).
 */
#ifndef TILEC_IR_H
#define TILEC_IR_H

#include "../common/base.h"
#include "../common/diag.h"
#include "target.h"

/* ---- element types ---------------------------------------------------- */
typedef enum DType {
#define DT(id, name, bits, kind) DT_##id,
#include "dtype.def"
#undef DT
    DT_COUNT
} DType;

extern const char *const dt_name[DT_COUNT];
extern const uint8_t dt_bits[DT_COUNT];
extern const char dt_kind[DT_COUNT]; /* 'b', 'i', 'u', 'f' */
static inline bool dt_is_float(DType t) { return dt_kind[t] == 'f'; }
static inline bool dt_is_int(DType t) { return dt_kind[t] != 'f'; } /* i1 counts as an integer */
static inline bool dt_is_signed(DType t) { return dt_kind[t] == 'i'; }
static inline bool dt_is_unsigned(DType t) { return dt_kind[t] == 'u' || dt_kind[t] == 'b'; }
int dt_bytes(DType t);              /* storage size: i1 takes 1 byte */
bool dt_from_name(const char *s, size_t n, DType *out);

/* ---- value types ------------------------------------------------------ */
#define IR_MAXRANK 4

typedef enum { TY_NONE, TY_TILE, TY_VIEW, TY_SMEM } TyKind;

/* A value's type, passed by value.  TY_TILE of rank 0 is a scalar; `isptr`
 * makes the elements pointers to `dt` (ptr<f32> is a rank-0 pointer tile).
 * TY_VIEW is tensor<dt, rank>.  TY_SMEM is a staged shared-memory buffer
 * smem<dt>[S, d0, ...] (SMEM_ALLOC): dims[0] = stages, then the tile's dims
 * (rank counts the stage dim).  Unused dims are 0 so memcmp compares types. */
typedef struct IrType {
    uint8_t kind;  /* TyKind */
    uint8_t dt;    /* DType of the elements (pointee for pointers) */
    uint8_t isptr;
    uint8_t rank;
    int32_t dims[IR_MAXRANK]; /* TY_TILE only; each a power of two */
} IrType;

IrType ir_ty_scalar(DType dt);
IrType ir_ty_ptr(DType pointee);
IrType ir_ty_tile(DType dt, bool isptr, int rank, const int32_t *dims);
IrType ir_ty_view(DType dt, int rank);
IrType ir_ty_smem(DType dt, int stages, int tile_rank, const int32_t *tile_dims);
/* The tile type one stage of an smem buffer holds. */
IrType ir_ty_smem_tile(IrType smem);
/* The block of a view of rank `view_rank` that an ASYNC_LOAD copies into a stage holding
 * `tile` (ops.def): the tile's dims, preceded by extents 1 (gap 0), or (gap > 0, a 2-d
 * tile) its rows along view dim view_rank - 2 - gap and its columns along the last, every
 * other extent 1 (a page's rows of one head: load(Kc, [page, 0, h, 0], [1, P, 1, D])). */
IrType ir_async_block(IrType tile, int view_rank, int64_t gap);
IrType ir_ty_with_dt(IrType t, DType dt, bool isptr); /* same shape, other elements */
bool ir_ty_eq(IrType a, IrType b);
int64_t ir_ty_numel(IrType t);                         /* 1 for scalars */
static inline bool ir_ty_is_scalar(IrType t) { return t.kind == TY_TILE && t.rank == 0; }
/* Appends the textual form: i32, ptr<f32>, tensor<bf16, 2>, tile<f32>[128, 64], tile<ptr<f32>>[1024] */
void ir_ty_print(StrBuf *b, IrType t);

/* ---- ops -------------------------------------------------------------- */
typedef enum IrOpcode {
#define OP(id, name, mino, maxo, nres, nreg, flags, layout) IR_##id,
#include "ops.def"
#undef OP
    IR_NUM_OPS
} IrOpcode;

enum { IR_PURE = 1, IR_ELEM = 2, IR_COMM = 4, IR_TERM = 8, IR_MEM = 16, IR_CF = 32, IR_REMAT = 64 };

/* How the layout pass lays out an op's results (the layout column of ops.def). */
typedef enum IrLayoutRule {
    IR_LAYOUT_NONE, IR_LAYOUT_ELEM, IR_LAYOUT_ANCHOR, IR_LAYOUT_SLICE, IR_LAYOUT_LIKE0, IR_LAYOUT_CUSTOM
} IrLayoutRule;

typedef struct IrOpInfo {
    const char *name;
    int8_t min_opnd, max_opnd; /* max -1: any */
    int8_t nres;               /* -1: any */
    uint8_t nregion;
    uint16_t flags;
    uint8_t layout;            /* IrLayoutRule */
} IrOpInfo;
extern const IrOpInfo ir_opinfo[IR_NUM_OPS];
bool ir_opcode_from_name(const char *s, size_t n, IrOpcode *out);

/* ORDER: CMP predicate names in ir.c follow this enum. Signedness comes from the operand dtype. */
typedef enum IrCmp { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_COUNT } IrCmp;
extern const char *const ir_cmp_name[CMP_COUNT];

/* FOR's attr.j: flags (ops.def). */
typedef enum IrForFlag {
    IR_FOR_NO_STAGING = 1,        /* pipeline-expand stages no loop-invariant dot operand */
    IR_FOR_WARP_SPECIALIZE = 2,   /* warp_specialize: a producer warpgroup feeds the pipelined loop */
} IrForFlag;

/* DOT's attr.i (pending) that leaves the dot's whole wgmma group in flight: a DOT_WAIT later in
 * the dot's block completes it (passes/dot_async.c).  The largest pending the verifier allows. */
#define IR_DOT_ASYNC 8

typedef uint32_t IrVal;
typedef uint32_t IrBlk;
#define IR_NONE 0u

typedef struct IrAttr {
    int64_t i, j;           /* see ops.def for each op's meaning */
    double f;               /* CONST of a float type */
    int32_t shape[IR_MAXRANK];
    uint8_t nshape;         /* TRANS: permutation length */
    uint32_t str;           /* PRINT/ASSERT: index into module strings (0: none) */
} IrAttr;

typedef struct IrOp {
    uint16_t opc;      /* IrOpcode */
    uint8_t nregion;
    uint8_t dead;
    uint32_t nopnd, opnd;  /* operands: f->opnds[opnd .. opnd+nopnd) */
    uint32_t nres;
    IrVal res;             /* first result */
    IrBlk region[2];
    IrBlk parent;          /* block holding this op */
    uint8_t latency;       /* pipeline-latency: iterations ahead to issue this load (0: none) */
    uint8_t stage;         /* pipeline-schedule: the op's stage + 1 (0: none) */
    IrAttr attr;
    SrcLoc loc;
} IrOp;

typedef struct IrValue {
    IrType ty;
    uint32_t def;    /* defining op id, or block id for a block argument */
    uint32_t idx;    /* result or argument index */
    uint8_t is_arg;
} IrValue;

typedef struct IrBlock {
    uint32_t *ops;   /* op ids in order; the last is a terminator once built */
    uint32_t nops, opcap;
    IrVal *args;
    uint32_t nargs, argcap;
    uint32_t parent_op; /* op owning this region; UINT32_MAX for body and grid */
} IrBlock;

typedef struct IrParam {
    char *name;
    IrType ty;
} IrParam;

typedef struct IrSpec {     /* one compile-time parameter of this specialization */
    char *name;
    char *value;            /* as text: "128", "bf16" */
} IrSpec;

typedef struct IrModule IrModule;

typedef struct IrFunc {
    IrModule *mod;
    char *name;             /* symbol: unique per specialization, e.g. gemm__T_bf16__BM_128 */
    char *source_name;      /* the kernel's name in the source */
    SrcLoc loc;
    IrParam *params;
    uint32_t nparams, paramcap;
    IrSpec *specs;
    uint32_t nspecs, speccap;
    int warps;              /* 0: compiler's choice */
    bool fast_math;         /* math(fast): the GPU's approximate math, as --fast-math (lang/REFERENCE.md) */
    IrBlk body, grid;       /* grid may be IR_NONE */
    IrBlk requires;         /* IR_NONE, or a block yielding nreq i1 scalars (host code, like grid) */
    uint32_t *req_msg;      /* nreq module string ids: the message of each requires clause */
    uint32_t nreq, reqcap;

    IrOp *ops;      uint32_t nops, opcap;
    IrValue *vals;  uint32_t nvals, valcap;    /* vals[0] unused */
    IrBlock *blocks; uint32_t nblocks, blkcap; /* blocks[0] unused */
    IrVal *opnds;   uint32_t nopnds, opndcap;

    /* Set by the layout pass (passes/layout.c); NULL before it runs.
     * val_layout[v] indexes layouts[] for tile values of rank >= 1 and is 0
     * for scalars and views; layouts[0] is unused. */
    uint32_t *val_layout;
    uint32_t nval_layout, val_layout_cap;   /* entries of val_layout (>= nvals once set) */
    struct Layout *layouts;
    uint32_t nlayouts, layoutcap;
    /* Set by the scheduler (passes/schedule.c) when it reordered the body: its
     * predicted peak before (0: not reordered).  The occupancy hint sizes from
     * the larger of the two, since ptxas may hoist loads back. */
    double peak_unscheduled;
} IrFunc;

struct IrModule {
    Arena arena;            /* names and strings */
    char *file;             /* source file name, for locations */
    IrFunc **funcs;
    uint32_t nfuncs, funccap;
    char **strs;            /* strs[0] = "" */
    uint32_t nstrs, strcap;
    const IrTarget *target; /* what the backend passes and num_sms() see (target.def); NULL: none named */
};

IrModule *ir_module_new(const char *file);
void ir_module_free(IrModule *m);
uint32_t ir_module_str(IrModule *m, const char *s, size_t n); /* interns a string */
IrFunc *ir_func_new(IrModule *m, const char *name, const char *source_name, SrcLoc loc);
IrFunc *ir_module_find(IrModule *m, const char *name); /* by symbol, then by source name (first) */
void ir_func_add_spec(IrFunc *f, const char *name, const char *value);
/* Adds a parameter: an argument of f->body (and of f->grid if it exists). */
IrVal ir_func_add_param(IrFunc *f, const char *name, IrType ty);
/* Layout annotations (see IrFunc.val_layout): reset gives a fresh all-zero
 * value map (the layouts[] table is kept); drop removes map and table
 * (canonicalisation invalidates them). */
void ir_func_reset_layouts(IrFunc *f);
void ir_func_drop_layouts(IrFunc *f);
/* Creates f->grid with arguments mirroring the parameters; returns it. */
IrBlk ir_func_make_grid(IrFunc *f);
/* Creates f->requires the same way (its messages are added with ir_func_add_require). */
IrBlk ir_func_make_requires(IrFunc *f);
/* Appends the message of the next requires clause (its condition is the next operand
 * of f->requires' YIELD). */
void ir_func_add_require(IrFunc *f, const char *message);

IrBlk ir_block_new(IrFunc *f);
IrVal ir_block_add_arg(IrFunc *f, IrBlk b, IrType ty);

static inline IrOp *ir_op(IrFunc *f, uint32_t op) { return &f->ops[op]; }
static inline IrBlock *ir_blk(IrFunc *f, IrBlk b) { return &f->blocks[b]; }
static inline IrType ir_vty(IrFunc *f, IrVal v) { return f->vals[v].ty; }
static inline IrVal ir_opnd(IrFunc *f, const IrOp *op, uint32_t i) { return f->opnds[op->opnd + i]; }
static inline IrVal ir_res(const IrOp *op, uint32_t i) { return op->res + i; }
/* The last op of block B (its terminator, in a verified function), or NULL when B is empty. */
static inline IrOp *ir_block_last(IrFunc *f, const IrBlock *B) { return B->nops ? &f->ops[B->ops[B->nops - 1]] : NULL; }
/* A FOR's operands: lower bound, upper bound, step (IR_FOR_NBOUNDS of them), then the initial
 * values of its carried values, one per result and per body argument after the induction variable. */
enum { IR_FOR_NBOUNDS = 3 };
static inline uint32_t ir_for_ncarried(const IrOp *op) { return op->nopnd - IR_FOR_NBOUNDS; }
static inline IrVal ir_for_init(IrFunc *f, const IrOp *op, uint32_t k) { return ir_opnd(f, op, IR_FOR_NBOUNDS + k); }
/* The op defining v, or UINT32_MAX for a block argument. */
static inline uint32_t ir_def(IrFunc *f, IrVal v) { return f->vals[v].is_arg ? UINT32_MAX : f->vals[v].def; }

/* ---- builder ---------------------------------------------------------- */
typedef struct IrBuilder {
    IrFunc *f;
    IrBlk blk;
    uint32_t pos;   /* insert before blocks[blk].ops[pos]; UINT32_MAX: append */
    SrcLoc loc;     /* given to every op built */
} IrBuilder;

void ir_builder_at_end(IrBuilder *b, IrFunc *f, IrBlk blk);
/* Creates an op with `nres` results of types rtys and `nregion` fresh empty
 * region blocks; returns the op id.  `attr` may be NULL. */
uint32_t ir_build(IrBuilder *b, IrOpcode opc, const IrVal *opnds, uint32_t nopnd, const IrType *rtys,
                  uint32_t nres, const IrAttr *attr);
/* Shorthand for ops with one result. */
IrVal ir_build1(IrBuilder *b, IrOpcode opc, const IrVal *opnds, uint32_t nopnd, IrType rty,
                const IrAttr *attr);
IrVal ir_const_int(IrBuilder *b, DType dt, int64_t v);
IrVal ir_const_float(IrBuilder *b, DType dt, double v);
IrVal ir_unary(IrBuilder *b, IrOpcode opc, IrVal x);              /* result type = x's */
IrVal ir_binary(IrBuilder *b, IrOpcode opc, IrVal x, IrVal y);    /* result type = x's (CMP: i1) */
IrVal ir_cmp(IrBuilder *b, IrCmp pred, IrVal x, IrVal y);

/* ---- editing ---------------------------------------------------------- */
void ir_replace_all_uses(IrFunc *f, IrVal from, IrVal to);
void ir_op_erase(IrFunc *f, uint32_t op);   /* unlink from its block, mark dead (and its regions' ops) */
/* Moves op (with its regions) from its block to the end of block b. */
void ir_op_move_to_end(IrFunc *f, uint32_t op, IrBlk b);
void ir_set_opnd(IrFunc *f, uint32_t op, uint32_t i, IrVal v);
/* Number of uses of each value by live ops: an array of f->nvals counts (malloc'd). */
uint32_t *ir_use_counts(IrFunc *f);
/* Whether op is a cross-thread reduction (reduce_*, argmax/argmin, cumsum, sort,
 * topk: lowered through shuffles and barriers) or holds one in its regions. */
bool ir_op_holds_reduction(IrFunc *f, const IrOp *op);
/* Free values: tiles (rank >= 1) that codegen recomputes in whatever layout a
 * user needs, at no cost and without moving data between threads.  A value is
 * free when its op is IR_REMAT (ops.def) and every operand is a scalar or a
 * free tile: arange, splat, and elementwise and shape ops (broadcast,
 * expand_dims, reshape) of such values.  Block arguments are never free.
 * ir_op_free: whether op's result is free given what `free_` says of its
 * operands (for a caller that walks values in its own order);
 * ir_free_values: out[v] for every value of f (f->nvals entries), walking
 * the blocks in program order.  The layout pass, codegen (lower.c) and the
 * occupancy estimate all ask these. */
bool ir_op_free(IrFunc *f, const IrOp *op, const uint8_t *free_);
void ir_free_values(IrFunc *f, uint8_t *out);

/* ---- whole-function services (each in its own file) --------------------- */
/* print.c: deterministic text.  Values are renumbered in order of definition;
 * parameters print by name.  Locations print as loc(line:col). */
void ir_print_module(StrBuf *b, const IrModule *m);
void ir_print_func(StrBuf *b, const IrFunc *f);
/* parse.c: reads what ir_print_module writes; errors go to d with locations in the .tir text. */
IrModule *ir_parse(const char *file, const char *text, size_t len, Diag *d);
/* verify.c: types, shapes, operand counts, dominance, region and terminator rules.
 * Returns true if f is valid; otherwise reports to d (naming `after`, the last pass run). */
bool ir_verify(IrFunc *f, Diag *d, const char *after);
bool ir_verify_module(IrModule *m, Diag *d, const char *after);

#endif
