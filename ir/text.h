/* text.h: what the printer (print.c) and the parser (parse.c) of the textual IR
 * must agree on, kept in one place: which named attributes each op carries
 * and how they are spelled (its own, then the schedule annotations every op
 * may carry), and which characters a bare @symbol may use.
 * The grammar itself is ir/FORMAT.md.  Private to ir/.
 */
#ifndef TILEC_IR_TEXT_H
#define TILEC_IR_TEXT_H

#include "ir.h"

typedef enum IrTextAttrKind {
    TA_AXIS,        /* attr.i, always printed as an integer */
    TA_J,           /* attr.j, always printed as an integer (TOPK's k) */
    TA_I_NONZERO,   /* attr.i, printed only when nonzero (FOR's stages, DOT's pending) */
    TA_J_FLAG,      /* bit `bit` of attr.j (0: the whole of attr.j) as true/false, printed only when
                       true (SORT's descending, FOR's flags) */
    TA_PERM,        /* attr.shape[0..nshape) as [a, b, ...] */
    TA_STR,         /* attr.str as a quoted string */
} IrTextAttrKind;

typedef struct IrTextAttr {
    const char *name;
    IrTextAttrKind kind;
    int64_t bit;    /* TA_J_FLAG: the flag's bit of attr.j; 0: attr.j is the flag */
} IrTextAttr;

/* The most named attributes one op has. */
#define IR_TEXT_MAX_ATTRS 3

/* Fills out[] with the op's named attributes in printing order; returns how many.
 * CONST's value and CMP's predicate are positional, not named, and not listed. */
static inline int ir_text_attrs(IrOpcode opc, IrTextAttr out[IR_TEXT_MAX_ATTRS])
{
    switch (opc) {
    case IR_EXPAND_DIMS: case IR_PROGRAM_ID: case IR_NUM_PROGRAMS:
    case IR_REDUCE_SUM: case IR_REDUCE_MAX: case IR_REDUCE_MIN:
    case IR_ARGMAX: case IR_ARGMIN: case IR_CUMSUM:
        out[0] = (IrTextAttr){"axis", TA_AXIS, 0};
        return 1;
    case IR_VIEW_SHAPE: case IR_VIEW_STRIDE:
        out[0] = (IrTextAttr){"dim", TA_AXIS, 0};
        return 1;
    case IR_SORT:
        out[0] = (IrTextAttr){"axis", TA_AXIS, 0};
        out[1] = (IrTextAttr){"descending", TA_J_FLAG, 0};
        return 2;
    case IR_TOPK:
        out[0] = (IrTextAttr){"axis", TA_AXIS, 0};
        out[1] = (IrTextAttr){"k", TA_J, 0};
        return 2;
    case IR_TRANS: out[0] = (IrTextAttr){"perm", TA_PERM, 0}; return 1;
    case IR_FOR:
        out[0] = (IrTextAttr){"stages", TA_I_NONZERO, 0};
        out[1] = (IrTextAttr){"no_staging", TA_J_FLAG, IR_FOR_NO_STAGING};
        out[2] = (IrTextAttr){"warp_specialize", TA_J_FLAG, IR_FOR_WARP_SPECIALIZE};
        return 3;
    case IR_DOT: out[0] = (IrTextAttr){"pending", TA_I_NONZERO, 0}; return 1;
    case IR_ASYNC_LOAD: out[0] = (IrTextAttr){"gap", TA_I_NONZERO, 0}; return 1;
    case IR_PRINT: out[0] = (IrTextAttr){"label", TA_STR, 0}; return 1;
    case IR_ASSERT: out[0] = (IrTextAttr){"msg", TA_STR, 0}; return 1;
    default: return 0;
    }
}

/* The schedule annotations of the pipelining passes (IrOp.latency, IrOp.stage),
 * which any op may carry: printed after the op's own attributes, inside the
 * same braces, only when set: `latency = L` (IrOp.latency) and `stage = S`
 * (IrOp.stage - 1; IrOp.stage 0 means unset). */
#define IR_TEXT_LATENCY "latency"
#define IR_TEXT_STAGE "stage"

/* A kernel symbol prints bare (@gemm__T_bf16) when every character passes
 * this test, and quoted (@"...") otherwise. */
static inline bool ir_text_symchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '$';
}

#endif
