/* print.c: the textual IR (grammar: ir/FORMAT.md).
 *
 * 1. Name every value before printing anything: parameters (the body's and the
 *    grid's arguments) by their source names, made unique and well formed;
 *    every other value by a number, counting from 0 in the order its
 *    definition appears in the text (an op's results, then each region's
 *    arguments and ops).  Naming first means that even a broken function
 *    (a use before its definition) prints each value under one name.
 * 2. After the layout pass, number the layouts the printed values use (#L1,
 *    #L2, ... in the order of the first value using each) and print them as a
 *    table at the top of the body; each value's layout follows its type.
 * 3. Print the ops in block order, regions nested and indented by two spaces.
 *    Dead ops are not in any block and are not printed.
 * The output depends on nothing but the IR: no addresses, no hash order.
 * ir_parse() reads it back, and printing the result again gives the same bytes.
 */
#include "ir.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "scalar.h"
#include "text.h"

#define UNNAMED UINT32_MAX

typedef struct Printer {
    StrBuf *b;
    const IrFunc *f;
    uint32_t *num;      /* num[v]: v's number; UNNAMED for parameters and unprinted values */
    const char **pname; /* pname[v]: the printed name of a parameter argument, else NULL */
    char **owned;       /* disambiguated parameter names (malloc'd), one per parameter */
    uint32_t next;      /* the next number to give */
    uint32_t *lnum;     /* lnum[i]: the printed number of f->layouts[i] (#L1, #L2, ...); 0: not printed */
    uint32_t *lorder;   /* lorder[k-1]: the layout index printed as #Lk */
    uint32_t nlnum;     /* layouts in the table */
} Printer;

/* ---- naming ------------------------------------------------------------ */

static bool is_ident(const char *s)
{
    if (!s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

/* Parameter i prints as its source name when that is an identifier not taken
 * by an earlier parameter; otherwise as NAME_1, NAME_2, ... (NAME = "arg" when
 * the source name is not an identifier), the first one not taken. */
static void name_params(Printer *p)
{
    const IrFunc *f = p->f;
    p->owned = tl_xcalloc(f->nparams, sizeof(char *));
    for (uint32_t i = 0; i < f->nparams; i++) {
        const char *base = is_ident(f->params[i].name) ? f->params[i].name : "arg";
        char *cand = tl_xstrdup(base);
        for (uint32_t k = 1;; k++) {
            bool taken = false;
            for (uint32_t j = 0; j < i && !taken; j++) taken = strcmp(p->owned[j], cand) == 0;
            if (!taken) break;
            free(cand);
            size_t n = strlen(base) + 24;
            cand = tl_xmalloc(n);
            snprintf(cand, n, "%s_%u", base, k);
        }
        p->owned[i] = cand;
    }
    const IrBlk holders[3] = {f->body, f->grid, f->requires};
    for (int h = 0; h < 3; h++) {
        if (!holders[h]) continue;
        const IrBlock *blk = &f->blocks[holders[h]];
        for (uint32_t i = 0; i < blk->nargs && i < f->nparams; i++) p->pname[blk->args[i]] = p->owned[i];
    }
}

static void give(Printer *p, IrVal v)
{
    if (v && v < p->f->nvals && !p->pname[v] && p->num[v] == UNNAMED) p->num[v] = p->next++;
}

static void number_block(Printer *p, IrBlk b)
{
    const IrFunc *f = p->f;
    const IrBlock *blk = &f->blocks[b];
    for (uint32_t i = 0; i < blk->nargs; i++) give(p, blk->args[i]);
    for (uint32_t k = 0; k < blk->nops; k++) {
        const IrOp *op = &f->ops[blk->ops[k]];
        for (uint32_t r = 0; r < op->nres; r++) give(p, op->res + r);
        for (uint32_t r = 0; r < op->nregion; r++) number_block(p, op->region[r]);
    }
}

/* The layout of value v as an index into f->layouts, 0 for none.  An index
 * out of range (only in broken IR) is returned as is; put_layout shows it. */
static uint32_t layout_of(const IrFunc *f, IrVal v)
{
    return f->val_layout && v && v < f->nvals ? f->val_layout[v] : 0;
}

/* Numbers the layouts that printed values use, #L1 first, in the order of
 * the first value (by value number) that uses each; unused table entries are
 * not printed.  The numbering depends only on the printed text, so print ->
 * parse -> print gives the same table. */
static void number_layouts(Printer *p)
{
    const IrFunc *f = p->f;
    if (!f->val_layout || f->nlayouts < 2) return;
    IrVal *byname = tl_xcalloc(p->next + 1, sizeof(IrVal));
    for (IrVal v = 1; v < f->nvals; v++)
        if (p->num[v] != UNNAMED) byname[p->num[v]] = v;
    p->lnum = tl_xcalloc(f->nlayouts, sizeof(uint32_t));
    p->lorder = tl_xcalloc(f->nlayouts, sizeof(uint32_t));
    for (uint32_t k = 0; k < p->next; k++) {
        uint32_t li = layout_of(f, byname[k]);
        if (li && li < f->nlayouts && !p->lnum[li]) {
            p->lorder[p->nlnum] = li;
            p->lnum[li] = ++p->nlnum;
        }
    }
    free(byname);
}

/* ---- pieces ------------------------------------------------------------ */

static void indent(Printer *p, int depth)
{
    for (int i = 0; i < depth; i++) sb_puts(p->b, "  ");
}

static void put_val(Printer *p, IrVal v)
{
    if (v && v < p->f->nvals && p->pname[v]) sb_printf(p->b, "%%%s", p->pname[v]);
    else if (v && v < p->f->nvals && p->num[v] != UNNAMED) sb_printf(p->b, "%%%u", p->num[v]);
    else sb_printf(p->b, "%%?%u", v); /* not defined by any printed op: only in broken IR */
}

static IrVal opnd_at(const IrFunc *f, const IrOp *op, uint32_t i)
{
    return i < op->nopnd ? f->opnds[op->opnd + i] : IR_NONE;
}

static IrType val_ty(const IrFunc *f, IrVal v)
{
    IrType none;
    memset(&none, 0, sizeof none);
    return v && v < f->nvals ? f->vals[v].ty : none;
}

/* " #Ln" after a value's type when it has a layout; "#L?i" for an index
 * outside f->layouts (only in broken IR; the parser refuses it). */
static void put_layout(Printer *p, IrVal v)
{
    uint32_t li = layout_of(p->f, v);
    if (!li) return;
    if (p->lnum && li < p->f->nlayouts && p->lnum[li]) sb_printf(p->b, " #L%u", p->lnum[li]);
    else sb_printf(p->b, " #L?%u", li);
}

static void put_loc(Printer *p, SrcLoc loc)
{
    if (loc.line) sb_printf(p->b, " loc(%u:%u)", loc.line, loc.col);
}

/* Bytes outside printable ASCII, quotes and backslashes are escaped, so a
 * string always fits on its line. */
static void put_str(StrBuf *b, const char *s)
{
    sb_putc(b, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '"': sb_puts(b, "\\\""); break;
        case '\\': sb_puts(b, "\\\\"); break;
        case '\n': sb_puts(b, "\\n"); break;
        case '\t': sb_puts(b, "\\t"); break;
        case '\r': sb_puts(b, "\\r"); break;
        default:
            if (c < 0x20 || c >= 0x7f) sb_printf(b, "\\x%02x", c);
            else sb_putc(b, (char)c);
        }
    }
    sb_putc(b, '"');
}

/* A float constant of dtype dt: the shortest %.Ng (N <= 17) that reads back
 * as exactly x; inf, -inf spelled out; -0 keeps its sign.  A NaN is `nan` when
 * it is the NaN that `nan` reads as (positive, quiet, no payload), and
 * otherwise its bits in dt as 0x and 2 * dt_bytes(dt) hex digits, so that its
 * sign and payload survive the text. */
static void put_float(StrBuf *b, DType dt, double x)
{
    if (isnan(x)) {
        uint64_t bits = ir_scalar_bits(dt, (IrScalar){.f = x});
        if (bits == ir_scalar_bits(dt, ir_scalar_canon(dt, (IrScalar){.f = NAN}))) sb_puts(b, "nan");
        else sb_printf(b, "0x%0*llx", 2 * dt_bytes(dt), (unsigned long long)bits);
        return;
    }
    if (isinf(x)) {
        sb_puts(b, x < 0 ? "-inf" : "inf");
        return;
    }
    char buf[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, x);
        if (strtod(buf, NULL) == x) break;
    }
    sb_puts(b, buf);
}

static void put_types(Printer *p, const IrOp *op)
{
    for (uint32_t r = 0; r < op->nres; r++) {
        sb_puts(p->b, r ? ", " : " : ");
        ir_ty_print(p->b, val_ty(p->f, op->res + r));
        put_layout(p, op->res + r);
    }
}

/* The op's own attributes, then its schedule annotations, in one `{...}`. */
static void put_attrs(Printer *p, const IrOp *op)
{
    IrTextAttr at[IR_TEXT_MAX_ATTRS];
    int n = ir_text_attrs((IrOpcode)op->opc, at);
    bool open = false;
    for (int k = 0; k < n; k++) {
        if (at[k].kind == TA_I_NONZERO && op->attr.i == 0) continue;
        if (at[k].kind == TA_J_FLAG && (op->attr.j & (at[k].bit ? at[k].bit : ~(int64_t)0)) == 0) continue;
        sb_puts(p->b, open ? ", " : " {");
        open = true;
        sb_printf(p->b, "%s = ", at[k].name);
        switch (at[k].kind) {
        case TA_AXIS: case TA_I_NONZERO: sb_printf(p->b, "%" PRId64, op->attr.i); break;
        case TA_J: sb_printf(p->b, "%" PRId64, op->attr.j); break;
        case TA_J_FLAG: sb_puts(p->b, "true"); break;
        case TA_PERM:
            sb_putc(p->b, '[');
            for (uint32_t d = 0; d < op->attr.nshape && d < IR_MAXRANK; d++)
                sb_printf(p->b, d ? ", %d" : "%d", op->attr.shape[d]);
            sb_putc(p->b, ']');
            break;
        case TA_STR: {
            const IrModule *m = p->f->mod;
            put_str(p->b, op->attr.str < m->nstrs ? m->strs[op->attr.str] : "");
            break;
        }
        }
    }
    if (op->latency) {
        sb_printf(p->b, "%s%s = %u", open ? ", " : " {", IR_TEXT_LATENCY, op->latency);
        open = true;
    }
    if (op->stage) {
        sb_printf(p->b, "%s%s = %u", open ? ", " : " {", IR_TEXT_STAGE, op->stage - 1u);
        open = true;
    }
    if (open) sb_putc(p->b, '}');
}

/* A region argument shows its type only when it differs from the type of the
 * operand that initializes it, which is what the parser assumes otherwise;
 * then its layout, if it has one. */
static void put_arg(Printer *p, IrVal arg, IrVal init)
{
    put_val(p, arg);
    IrType t = val_ty(p->f, arg);
    if (!ir_ty_eq(t, val_ty(p->f, init))) {
        sb_puts(p->b, ": ");
        ir_ty_print(p->b, t);
    }
    put_layout(p, arg);
}

static IrVal arg_at(const IrFunc *f, IrBlk b, uint32_t i)
{
    return i < f->blocks[b].nargs ? f->blocks[b].args[i] : IR_NONE;
}

static void print_block(Printer *p, IrBlk b, int depth);

/* ---- ops --------------------------------------------------------------- */

static void print_op(Printer *p, uint32_t id, int depth)
{
    const IrFunc *f = p->f;
    const IrOp *op = &f->ops[id];
    IrOpcode opc = (IrOpcode)op->opc;
    indent(p, depth);
    if (op->nres) {
        put_val(p, op->res);
        if (op->nres > 1) sb_printf(p->b, ":%u", op->nres);
        sb_puts(p->b, " = ");
    }
    sb_puts(p->b, opc < IR_NUM_OPS ? ir_opinfo[opc].name : "?");

    if (opc == IR_FOR) {
        IrBlk body = op->nregion ? op->region[0] : IR_NONE;
        sb_putc(p->b, ' ');
        put_arg(p, arg_at(f, body, 0), opnd_at(f, op, 0));
        sb_puts(p->b, " = ");
        put_val(p, opnd_at(f, op, 0));
        sb_puts(p->b, " to ");
        put_val(p, opnd_at(f, op, 1));
        sb_puts(p->b, " step ");
        put_val(p, opnd_at(f, op, 2));
        for (uint32_t k = 3; k < op->nopnd; k++) {
            sb_puts(p->b, k == 3 ? " iter(" : ", ");
            put_arg(p, arg_at(f, body, k - 2), opnd_at(f, op, k));
            sb_puts(p->b, " = ");
            put_val(p, opnd_at(f, op, k));
            if (k + 1 == op->nopnd) sb_putc(p->b, ')');
        }
    } else if (opc == IR_WHILE) {
        IrBlk before = op->nregion ? op->region[0] : IR_NONE;
        sb_puts(p->b, " (");
        for (uint32_t k = 0; k < op->nopnd; k++) {
            if (k) sb_puts(p->b, ", ");
            put_arg(p, arg_at(f, before, k), opnd_at(f, op, k));
            sb_puts(p->b, " = ");
            put_val(p, opnd_at(f, op, k));
        }
        sb_putc(p->b, ')');
    } else {
        if (opc == IR_CONST) {
            sb_putc(p->b, ' ');
            if (op->nres && dt_is_float((DType)val_ty(f, op->res).dt)) put_float(p->b, (DType)val_ty(f, op->res).dt, op->attr.f);
            else sb_printf(p->b, "%" PRId64, op->attr.i);
        } else if (opc == IR_CMP) {
            if (op->attr.i >= 0 && op->attr.i < CMP_COUNT) sb_printf(p->b, " %s", ir_cmp_name[op->attr.i]);
            else sb_printf(p->b, " ?%" PRId64, op->attr.i);
        }
        for (uint32_t k = 0; k < op->nopnd; k++) {
            sb_puts(p->b, k ? ", " : " ");
            put_val(p, opnd_at(f, op, k));
        }
    }
    put_attrs(p, op);
    put_types(p, op);
    put_loc(p, op->loc);
    if (op->nregion == 0) {
        sb_putc(p->b, '\n');
        return;
    }
    sb_puts(p->b, " {\n");
    print_block(p, op->region[0], depth + 1);
    for (uint32_t r = 1; r < op->nregion; r++) {
        indent(p, depth);
        if (opc == IR_WHILE) {
            const IrBlock *after = &f->blocks[op->region[r]];
            sb_puts(p->b, "} do (");
            for (uint32_t i = 0; i < after->nargs; i++) {
                if (i) sb_puts(p->b, ", ");
                put_val(p, after->args[i]);
                sb_puts(p->b, ": ");
                ir_ty_print(p->b, val_ty(f, after->args[i]));
                put_layout(p, after->args[i]);
            }
            sb_puts(p->b, ") {\n");
        } else {
            sb_puts(p->b, "} else {\n");
        }
        print_block(p, op->region[r], depth + 1);
    }
    indent(p, depth);
    sb_puts(p->b, "}\n");
}

static void print_block(Printer *p, IrBlk b, int depth)
{
    const IrBlock *blk = &p->f->blocks[b];
    for (uint32_t k = 0; k < blk->nops; k++) print_op(p, blk->ops[k], depth);
}

/* ---- functions and modules ------------------------------------------------ */

void ir_print_func(StrBuf *b, const IrFunc *f)
{
    Printer p = {0};
    p.b = b;
    p.f = f;
    p.num = tl_xmalloc(sizeof(uint32_t) * f->nvals);
    for (uint32_t v = 0; v < f->nvals; v++) p.num[v] = UNNAMED;
    p.pname = tl_xcalloc(f->nvals, sizeof(char *));
    name_params(&p);
    number_block(&p, f->body);
    if (f->grid) number_block(&p, f->grid);
    if (f->requires) number_block(&p, f->requires);
    number_layouts(&p);

    sb_puts(b, "kernel @");
    bool bare = f->name[0] != 0;
    for (const char *s = f->name; *s; s++) bare = bare && ir_text_symchar(*s);
    if (bare) sb_puts(b, f->name);
    else put_str(b, f->name);
    sb_putc(b, ' ');
    put_str(b, f->source_name);
    sb_putc(b, '(');
    for (uint32_t i = 0; i < f->nparams; i++) {
        sb_printf(b, "%s%%%s: ", i ? ", " : "", p.owned[i]);
        ir_ty_print(b, f->params[i].ty);
    }
    sb_putc(b, ')');
    for (uint32_t i = 0; i < f->nspecs; i++) {
        sb_printf(b, "%s%s = ", i ? ", " : " spec(", f->specs[i].name);
        put_str(b, f->specs[i].value);
        if (i + 1 == f->nspecs) sb_putc(b, ')');
    }
    if (f->warps) sb_printf(b, " warps(%d)", f->warps);
    if (f->fast_math) sb_puts(b, " math(fast)");
    put_loc(&p, f->loc);
    sb_puts(b, " {\n");
    for (uint32_t k = 0; k < p.nlnum; k++) {
        sb_printf(b, "  #L%u = ", k + 1);
        layout_print(b, &f->layouts[p.lorder[k]]);
        sb_putc(b, '\n');
    }
    print_block(&p, f->body, 1);
    if (f->grid) {
        sb_puts(b, "} grid {\n");
        print_block(&p, f->grid, 1);
    }
    if (f->requires) {
        sb_puts(b, "} requires(");
        for (uint32_t i = 0; i < f->nreq; i++) {
            if (i) sb_puts(b, ", ");
            put_str(b, f->req_msg[i] < f->mod->nstrs ? f->mod->strs[f->req_msg[i]] : "");
        }
        sb_puts(b, ") {\n");
        print_block(&p, f->requires, 1);
    }
    sb_puts(b, "}\n");

    for (uint32_t i = 0; i < f->nparams; i++) free(p.owned[i]);
    free(p.owned);
    free(p.lnum);
    free(p.lorder);
    free(p.pname);
    free(p.num);
}

void ir_print_module(StrBuf *b, const IrModule *m)
{
    sb_puts(b, "// tilec IR: file ");
    put_str(b, m->file ? m->file : "");
    sb_putc(b, '\n');
    for (uint32_t i = 0; i < m->nfuncs; i++) {
        sb_putc(b, '\n');
        ir_print_func(b, m->funcs[i]);
    }
}
