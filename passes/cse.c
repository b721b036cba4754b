/* cse.c: common subexpression elimination of pure ops.
 *
 * Algorithm:
 *   1. Walk the body, the grid and the requires blocks in order, each with an empty table;
 *      the table is a hash table with chained entries kept on one stack, so
 *      that leaving a region pops exactly what the region added.
 *   2. Only ops flagged IR_PURE and without regions take part (never the
 *      pipelining ops that touch shared memory or wait, which are IR_MEM).
 *      Their key is the opcode, the operands (for IR_COMM ops with two
 *      operands, the lower value id first), every attribute field (floats
 *      compared by bits), the schedule annotations (ops the pipeline
 *      scheduler put in different stages stay apart) and the result types;
 *      the source location is not part of it.
 *   3. An op whose key is in the table is a duplicate of the entry's op, which
 *      dominates it: its results map to the entry's (repl[]) and it is marked
 *      dead.  Otherwise the op is pushed.  Every op's operands are rewritten
 *      through repl[] when the walk reaches it (uses come after definitions in
 *      walk order), and each block drops its dead ops once, at its end: the
 *      pass is linear in the number of ops, whatever the duplicates.
 *   4. The regions of an op are walked with the table as it is at that op
 *      (outer values are visible inside), and on leaving each region the
 *      table is popped back, so that a value defined in a region is reused
 *      only within that region and the regions nested in it.
 */
#include <stdlib.h>
#include <string.h>

#include "pass.h"

typedef struct Entry {
    uint32_t op;
    uint32_t hash;
    uint32_t next;      /* previous head of the bucket (entry index + 1; 0: end) */
} Entry;

typedef struct Table {
    IrFunc *f;
    IrVal *repl;        /* per value: the value replacing it, or IR_NONE */
    Entry *ents;
    uint32_t nents, entcap;
    uint32_t *heads;    /* entry index + 1 per bucket; 0: empty */
    uint32_t nbuckets;  /* a power of two */
    bool changed;
} Table;

static uint32_t mix(uint32_t h, uint64_t v)
{
    h ^= (uint32_t)v + 0x9e3779b9u + (h << 6) + (h >> 2);
    h ^= (uint32_t)(v >> 32) + 0x9e3779b9u + (h << 6) + (h >> 2);
    return h;
}

/* Operand k of op in key order (commutative pairs sorted by value id). */
static IrVal key_opnd(IrFunc *f, const IrOp *op, uint32_t k)
{
    if ((ir_opinfo[op->opc].flags & IR_COMM) && op->nopnd == 2) {
        IrVal a = ir_opnd(f, op, 0), b = ir_opnd(f, op, 1);
        IrVal lo = a < b ? a : b, hi = a < b ? b : a;
        return k == 0 ? lo : hi;
    }
    return ir_opnd(f, op, k);
}

static uint64_t fbits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static uint32_t hash(IrFunc *f, const IrOp *op)
{
    uint32_t h = mix(op->opc, op->nopnd);
    for (uint32_t k = 0; k < op->nopnd; k++) h = mix(h, key_opnd(f, op, k));
    h = mix(h, (uint64_t)op->attr.i);
    h = mix(h, (uint64_t)op->attr.j);
    h = mix(h, fbits(op->attr.f));
    for (int k = 0; k < IR_MAXRANK; k++) h = mix(h, (uint32_t)op->attr.shape[k]);
    h = mix(h, ((uint64_t)op->attr.nshape << 32) | op->attr.str);
    h = mix(h, ((uint32_t)op->latency << 8) | op->stage);
    for (uint32_t k = 0; k < op->nres; k++) {
        IrType t = ir_vty(f, op->res + k);
        h = mix(h, ((uint64_t)t.kind << 24) | ((uint64_t)t.dt << 16) | ((uint64_t)t.isptr << 8) | t.rank);
        for (int d = 0; d < t.rank; d++) h = mix(h, (uint32_t)t.dims[d]);
    }
    return h;
}

static bool same(IrFunc *f, const IrOp *a, const IrOp *b)
{
    if (a->opc != b->opc || a->nopnd != b->nopnd || a->nres != b->nres) return false;
    if (a->latency != b->latency || a->stage != b->stage) return false;
    for (uint32_t k = 0; k < a->nopnd; k++)
        if (key_opnd(f, a, k) != key_opnd(f, b, k)) return false;
    const IrAttr *x = &a->attr, *y = &b->attr;
    if (x->i != y->i || x->j != y->j || fbits(x->f) != fbits(y->f) || x->nshape != y->nshape || x->str != y->str)
        return false;
    if (memcmp(x->shape, y->shape, sizeof x->shape) != 0) return false;
    for (uint32_t k = 0; k < a->nres; k++)
        if (!ir_ty_eq(ir_vty(f, a->res + k), ir_vty(f, b->res + k))) return false;
    return true;
}

static uint32_t find(Table *t, const IrOp *op, uint32_t h)
{
    for (uint32_t e = t->heads[h & (t->nbuckets - 1)]; e; e = t->ents[e - 1].next)
        if (t->ents[e - 1].hash == h && same(t->f, ir_op(t->f, t->ents[e - 1].op), op)) return t->ents[e - 1].op;
    return UINT32_MAX;
}

static void push(Table *t, uint32_t op, uint32_t h)
{
    uint32_t b = h & (t->nbuckets - 1);
    Entry e = {op, h, t->heads[b]};
    VEC_PUSH(t->ents, t->nents, t->entcap, e);
    t->heads[b] = t->nents;
}

/* Pops entries back to `mark`, restoring bucket heads (entries are LIFO per bucket). */
static void pop(Table *t, uint32_t mark)
{
    while (t->nents > mark) {
        Entry *e = &t->ents[--t->nents];
        t->heads[e->hash & (t->nbuckets - 1)] = e->next;
    }
}

static void remap(Table *t, uint32_t id)
{
    IrFunc *f = t->f;
    const IrOp *op = ir_op(f, id);
    for (uint32_t k = 0; k < op->nopnd; k++) {
        IrVal v = f->opnds[op->opnd + k];
        if (t->repl[v]) f->opnds[op->opnd + k] = t->repl[v];
    }
}

static void walk(Table *t, IrBlk blk)
{
    IrFunc *f = t->f;
    bool erased = false;
    for (uint32_t k = 0; k < ir_blk(f, blk)->nops; k++) {
        uint32_t id = ir_blk(f, blk)->ops[k];
        remap(t, id);
        const IrOp *op = ir_op(f, id);
        if (op->nregion) {
            for (uint32_t r = 0; r < op->nregion; r++) {
                uint32_t mark = t->nents;
                walk(t, ir_op(f, id)->region[r]);
                pop(t, mark);
            }
            continue;
        }
        if (!(ir_opinfo[op->opc].flags & IR_PURE)) continue;
        uint32_t h = hash(f, op);
        uint32_t prev = find(t, op, h);
        if (prev == UINT32_MAX) {
            push(t, id, h);
            continue;
        }
        for (uint32_t r = 0; r < op->nres; r++) t->repl[op->res + r] = ir_op(f, prev)->res + r;
        ir_op(f, id)->dead = 1;
        erased = true;
        t->changed = true;
    }
    if (!erased) return;
    IrBlock *B = ir_blk(f, blk);
    uint32_t n = 0;
    for (uint32_t k = 0; k < B->nops; k++)
        if (!ir_op(f, B->ops[k])->dead) B->ops[n++] = B->ops[k];
    B->nops = n;
}

void pass_cse(IrFunc *f, PassCtx *cx)
{
    Table t;
    memset(&t, 0, sizeof t);
    t.f = f;
    t.nbuckets = 64;
    while (t.nbuckets < f->nops) t.nbuckets *= 2;
    t.heads = tl_xcalloc(t.nbuckets, sizeof *t.heads);
    t.repl = tl_xcalloc(f->nvals, sizeof *t.repl);
    walk(&t, f->body);
    pop(&t, 0);
    if (f->grid) walk(&t, f->grid);
    pop(&t, 0);
    if (f->requires) walk(&t, f->requires);
    if (t.changed) cx->changed = true;
    free(t.heads);
    free(t.ents);
    free(t.repl);
}
