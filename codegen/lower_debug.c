/* lower_debug.c: PRINT and ASSERT.
 *
 * PRINT writes one line per program, as the interpreter does:
 *     pid (x, y, z) label: v0 v1 ...
 * with every element of every operand in row-major order, in the
 * interpreter's formats (f64 %.17g, f32 %.9g, f16 %.5g, bf16 %.4g, fp8 %.3g,
 * signed integers %lld, unsigned and i1 %llu, views "<view>").  Pointers, whose
 * buffer names only the interpreter knows, print as 0x-hex device addresses.
 *   1. Tile operands are gathered into shared memory at their row-major flat
 *      index: each element stored once, by its unique owner (barrier before
 *      and after).
 *   2. Thread 0 takes a module-wide spin lock (__tilec_print_lock in global
 *      memory) so that the pieces of its line are not interleaved with other
 *      programs' lines, then calls vprintf for the header, for each scalar, and
 *      for each tile in chunks of at most 32 values (CUDA's printf takes at most
 *      32 arguments per call), then "\n", then releases the lock.
 *   3. A barrier keeps the scratch area until thread 0 has read it.
 * The lock is taken by one thread per program and held over no barrier, so a
 * holder always makes progress.
 *
 * ASSERT exists only with CgTarget.debug (-g); without it nothing is emitted.
 * Each thread checks its registers of the condition; a thread that sees a
 * false one calls __assertfail(message, file, line, kernel, 1), which prints
 * the message with the block and thread, and then traps: the launch fails
 * with an assertion error.
 */
#include "lower_int.h"

#include <string.h>

static LLVMValueRef k32(Cg *cg, uint32_t v) { return LLVMConstInt(cg->i32, v, 0); }

/* A NUL-terminated constant string in global memory, as a generic pointer. */
static LLVMValueRef cstr(Cg *cg, const char *s)
{
    size_t n = strlen(s);
    LLVMValueRef init = LLVMConstStringInContext(cg->ctx, s, (unsigned)n, 0);
    LLVMValueRef g = LLVMAddGlobalInAddressSpace(cg->mod, LLVMTypeOf(init), "__tilec_str", 1);
    LLVMSetInitializer(g, init);
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMPrivateLinkage);
    LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
    return LLVMBuildAddrSpaceCast(cg->b, g, LLVMPointerTypeInContext(cg->ctx, 0), "");
}

static LLVMValueRef get_fn(Cg *cg, const char *name, LLVMTypeRef fty)
{
    LLVMValueRef fn = LLVMGetNamedFunction(cg->mod, name);
    if (!fn) fn = LLVMAddFunction(cg->mod, name, fty);
    return fn;
}

/* ---- PRINT ---------------------------------------------------------------------- */

static LLVMTypeRef vprintf_type(Cg *cg)
{
    LLVMTypeRef gp = LLVMPointerTypeInContext(cg->ctx, 0);
    LLVMTypeRef at[2] = {gp, gp};
    return LLVMFunctionType(cg->i32, at, 2, 0);
}

static void vprintf_call(Cg *cg, const char *fmt, LLVMValueRef args)
{
    LLVMTypeRef fty = vprintf_type(cg);
    LLVMValueRef a[2] = {cstr(cg, fmt), args ? args : LLVMConstNull(LLVMPointerTypeInContext(cg->ctx, 0))};
    LLVMBuildCall2(cg->b, fty, get_fn(cg, "vprintf", fty), a, 2, "");
}

/* The printf conversion of one element (each argument travels as 8 bytes). */
static const char *elem_format(IrType t)
{
    if (t.isptr) return "0x%llx";
    switch ((DType)t.dt) {
    case DT_F64: return "%.17g";
    case DT_F32: return "%.9g";
    case DT_F16: return "%.5g";
    case DT_BF16: return "%.4g";
    case DT_F8E4M3: case DT_F8E5M2: return "%.3g";
    default: return dt_is_signed((DType)t.dt) ? "%lld" : "%llu";
    }
}

/* One element as the 8-byte vprintf argument (double or 64-bit integer). */
static LLVMValueRef elem_arg(Cg *cg, IrType t, LLVMValueRef v)
{
    if (t.isptr) return LLVMBuildPtrToInt(cg->b, v, cg->i64, "");
    DType dt = (DType)t.dt;
    if (dt_is_float(dt)) {
        if (dt != DT_F64) v = cg_cast(cg, v, dt, false, DT_F32, false);
        return dt == DT_F64 ? v : LLVMBuildFPExt(cg->b, v, cg->f64, "");
    }
    if (dt == DT_I64 || dt == DT_U64) return v;
    return dt_is_signed(dt) ? LLVMBuildSExt(cg->b, v, cg->i64, "") : LLVMBuildZExt(cg->b, v, cg->i64, "");
}

static uint32_t elem_bytes(IrType t) { return t.isptr ? 8 : (uint32_t)dt_bytes((DType)t.dt); }
static LLVMTypeRef slot_type(Cg *cg, IrType t) { return t.dt == DT_I1 && !t.isptr ? cg->i8 : cg_elem_type(cg, t); }

/* Each thread stores the elements it uniquely owns at base + flat * esize. */
static void gather_tile(Cg *cg, IrVal v, LLVMValueRef base)
{
    IrType t = ir_vty(cg->f, v);
    const Layout *L = cg_layout(cg, v);
    LLVMTypeRef st = slot_type(cg, t);
    uint32_t rl = 0, rw = 0, rr = 0;
    for (int i = 0; i < L->nbits[LL_LANE]; i++) rl |= L->basis[LL_LANE][i] ? 0 : 1u << i;
    for (int i = 0; i < L->nbits[LL_WARP]; i++) rw |= L->basis[LL_WARP][i] ? 0 : 1u << i;
    for (int i = 0; i < L->nbits[LL_REG]; i++) rr |= L->basis[LL_REG][i] ? 0 : 1u << i;
    LLVMValueRef own = LLVMBuildAnd(cg->b,
        LLVMBuildICmp(cg->b, LLVMIntEQ, LLVMBuildAnd(cg->b, cg->lane, k32(cg, rl), ""), k32(cg, 0), ""),
        LLVMBuildICmp(cg->b, LLVMIntEQ, LLVMBuildAnd(cg->b, cg->warp, k32(cg, rw), ""), k32(cg, 0), ""), "");
    LLVMBasicBlockRef stb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "print.gather");
    LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "print.gathered");
    LLVMBuildCondBr(cg->b, own, stb, next);
    LLVMPositionBuilderAtEnd(cg->b, stb);
    LLVMValueRef toff = cg_thread_offset(cg, L);
    for (uint32_t r = 0; r < layout_nregs(L); r++) {
        if (r & rr) continue;
        LLVMValueRef flat = LLVMBuildXor(cg->b, toff, k32(cg, layout_apply(L, r, 0, 0)), "");
        LLVMValueRef x = cg_reg(cg, v, r);
        if (st != LLVMTypeOf(x)) x = LLVMBuildZExt(cg->b, x, st, "");
        LLVMBuildStore(cg->b, x, LLVMBuildGEP2(cg->b, st, base, &flat, 1, ""));
    }
    LLVMBuildBr(cg->b, next);
    LLVMPositionBuilderAtEnd(cg->b, next);
}

/* Thread 0: prints the tile of type t at base, in chunks of up to 32 values. */
static void print_tile(Cg *cg, IrType t, LLVMValueRef base, LLVMValueRef buf)
{
    uint32_t n = (uint32_t)ir_ty_numel(t), chunk = n < 32 ? n : 32, nchunks = n / chunk;
    LLVMTypeRef st = slot_type(cg, t);
    StrBuf fmt = {0};
    for (uint32_t i = 0; i < chunk; i++) sb_printf(&fmt, " %s", elem_format(t));
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(cg->b);
    LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "print.chunk");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "print.chunks");
    LLVMBuildBr(cg->b, loop);
    LLVMPositionBuilderAtEnd(cg->b, loop);
    LLVMValueRef c = LLVMBuildPhi(cg->b, cg->i32, "");
    LLVMValueRef zero = k32(cg, 0);
    LLVMAddIncoming(c, &zero, &pre, 1);
    for (uint32_t i = 0; i < chunk; i++) {
        LLVMValueRef idx = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, c, k32(cg, chunk), ""), k32(cg, i), "");
        LLVMValueRef x = LLVMBuildLoad2(cg->b, st, LLVMBuildGEP2(cg->b, st, base, &idx, 1, ""), "");
        if (t.dt == DT_I1 && !t.isptr) x = LLVMBuildTrunc(cg->b, x, cg->i1, "");
        LLVMValueRef slot = k32(cg, i);
        LLVMBuildStore(cg->b, elem_arg(cg, t, x), LLVMBuildGEP2(cg->b, cg->i64, buf, &slot, 1, ""));
    }
    vprintf_call(cg, fmt.s, buf);
    sb_free(&fmt);
    LLVMValueRef c1 = LLVMBuildAdd(cg->b, c, k32(cg, 1), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(cg->b);
    LLVMAddIncoming(c, &c1, &latch, 1);
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntULT, c1, k32(cg, nchunks), ""), loop, done);
    LLVMPositionBuilderAtEnd(cg->b, done);
}

/* 32 8-byte vprintf argument slots, allocated once in the entry block (a
 * print inside a loop must not grow the stack). */
static LLVMValueRef args_buffer(Cg *cg)
{
    LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(cg->fn);
    LLVMBuilderRef eb = LLVMCreateBuilderInContext(cg->ctx);
    LLVMValueRef first = LLVMGetFirstInstruction(entry);
    if (first) LLVMPositionBuilderBefore(eb, first);
    else LLVMPositionBuilderAtEnd(eb, entry);
    LLVMValueRef buf = LLVMBuildAlloca(eb, LLVMArrayType(cg->i64, 32), "print.args");
    LLVMSetAlignment(buf, 8);
    LLVMDisposeBuilder(eb);
    return buf;
}

static LLVMValueRef print_lock(Cg *cg)
{
    LLVMValueRef g = LLVMGetNamedGlobal(cg->mod, "__tilec_print_lock");
    if (!g) {
        g = LLVMAddGlobalInAddressSpace(cg->mod, cg->i32, "__tilec_print_lock", 1);
        LLVMSetInitializer(g, k32(cg, 0));
        LLVMSetLinkage(g, LLVMInternalLinkage);
        LLVMSetAlignment(g, 4);
    }
    return g;
}

void cg_lower_PRINT(Cg *cg, uint32_t opid, IrOp *op)
{
    IrFunc *f = cg->f;
    (void)opid;
    /* 1. gather the tiles */
    uint32_t *offs = ARENA_ARRAY(cg->scratch, uint32_t, op->nopnd ? op->nopnd : 1);
    uint64_t bytes = 0;
    bool tiles = false;
    for (uint32_t k = 0; k < op->nopnd; k++) {
        IrType t = ir_vty(f, ir_opnd(f, op, k));
        if (t.kind != TY_TILE || t.rank == 0) continue;
        tiles = true;
        bytes = (bytes + 7) & ~(uint64_t)7;
        offs[k] = (uint32_t)bytes;
        bytes += (uint64_t)ir_ty_numel(t) * elem_bytes(t);
    }
    if (bytes > cg->target->arch->smem_per_cta) {
        diag_error(cg->d, op->loc, "print of %llu bytes of tiles is too large to gather in shared memory (at most %u)",
                   (unsigned long long)bytes, cg->target->arch->smem_per_cta);
        cg->failed = true;
        return;
    }
    LLVMValueRef base = NULL;
    if (tiles) {
        base = cg_smem(cg, (uint32_t)bytes);
        cg_barrier(cg);
        for (uint32_t k = 0; k < op->nopnd; k++) {
            IrVal v = ir_opnd(f, op, k);
            IrType t = ir_vty(f, v);
            if (t.kind != TY_TILE || t.rank == 0) continue;
            LLVMValueRef off = k32(cg, offs[k]);
            gather_tile(cg, v, LLVMBuildGEP2(cg->b, cg->i8, base, &off, 1, ""));
        }
        cg_barrier(cg);
    }
    /* 2. thread 0 prints under the lock */
    LLVMBasicBlockRef pb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "print");
    LLVMBasicBlockRef spin = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "print.lock");
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "print.body");
    LLVMBasicBlockRef after = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "print.end");
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, cg->tid, k32(cg, 0), ""), pb, after);
    LLVMPositionBuilderAtEnd(cg->b, pb);
    LLVMValueRef buf = args_buffer(cg);
    LLVMBuildBr(cg->b, spin);
    LLVMPositionBuilderAtEnd(cg->b, spin);
    LLVMValueRef lock = print_lock(cg);
    LLVMValueRef cx = LLVMBuildAtomicCmpXchg(cg->b, lock, k32(cg, 0), k32(cg, 1), LLVMAtomicOrderingAcquire,
                                             LLVMAtomicOrderingMonotonic, 0);
    LLVMBuildCondBr(cg->b, LLVMBuildExtractValue(cg->b, cx, 1, ""), body, spin);
    LLVMPositionBuilderAtEnd(cg->b, body);
    /* header: pid (x, y, z) label: */
    static const char *const ctaid[3] = {"llvm.nvvm.read.ptx.sreg.ctaid.x", "llvm.nvvm.read.ptx.sreg.ctaid.y",
                                         "llvm.nvvm.read.ptx.sreg.ctaid.z"};
    for (int i = 0; i < 3; i++) {
        LLVMValueRef id = LLVMBuildZExt(cg->b, cg_call_intrinsic(cg, ctaid[i], cg->i32, NULL, 0), cg->i64, "");
        LLVMValueRef slot = k32(cg, (uint32_t)i);
        LLVMBuildStore(cg->b, id, LLVMBuildGEP2(cg->b, cg->i64, buf, &slot, 1, ""));
    }
    LLVMValueRef slot3 = k32(cg, 3);
    LLVMBuildStore(cg->b, cstr(cg, f->mod->strs[op->attr.str]), LLVMBuildGEP2(cg->b, cg->i64, buf, &slot3, 1, ""));
    vprintf_call(cg, "pid (%llu, %llu, %llu) %s:", buf);
    for (uint32_t k = 0; k < op->nopnd; k++) {
        IrVal v = ir_opnd(f, op, k);
        IrType t = ir_vty(f, v);
        if (t.kind == TY_VIEW) {
            vprintf_call(cg, " <view>", NULL);
        } else if (t.rank == 0) {
            StrBuf fmt = {0};
            sb_printf(&fmt, " %s", elem_format(t));
            LLVMBuildStore(cg->b, elem_arg(cg, t, cg_reg(cg, v, 0)), buf);
            vprintf_call(cg, fmt.s, buf);
            sb_free(&fmt);
        } else {
            LLVMValueRef off = k32(cg, offs[k]);
            print_tile(cg, t, LLVMBuildGEP2(cg->b, cg->i8, base, &off, 1, ""), buf);
        }
    }
    vprintf_call(cg, "\n", NULL);
    LLVMBuildAtomicRMW(cg->b, LLVMAtomicRMWBinOpXchg, lock, k32(cg, 0), LLVMAtomicOrderingRelease, 0);
    LLVMBuildBr(cg->b, after);
    LLVMPositionBuilderAtEnd(cg->b, after);
    /* 3. the scratch area is free again only when thread 0 has read it */
    if (tiles) cg_barrier(cg);
}

/* ---- ASSERT ------------------------------------------------------------------------ */

void cg_lower_ASSERT(Cg *cg, uint32_t opid, IrOp *op)
{
    (void)opid;
    if (!cg->target->debug) return;
    IrFunc *f = cg->f;
    IrVal c = ir_opnd(f, op, 0);
    const Layout *L = cg_layout(cg, c);
    uint32_t n = L ? layout_nregs(L) : 1;
    LLVMValueRef ok = NULL;
    for (uint32_t r = 0; r < n; r++) {
        LLVMValueRef x = cg_reg(cg, c, r);
        if (LLVMTypeOf(x) != cg->i1) x = LLVMBuildICmp(cg->b, LLVMIntNE, x, LLVMConstNull(LLVMTypeOf(x)), "");
        ok = ok ? LLVMBuildAnd(cg->b, ok, x, "") : x;
    }
    LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "assert.fail");
    LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "assert.ok");
    LLVMBuildCondBr(cg->b, ok, cont, fail);
    LLVMPositionBuilderAtEnd(cg->b, fail);
    LLVMTypeRef gp = LLVMPointerTypeInContext(cg->ctx, 0);
    LLVMTypeRef at[5] = {gp, gp, cg->i32, gp, cg->i64};
    LLVMTypeRef fty = LLVMFunctionType(cg->vd, at, 5, 0);
    const char *msg = f->mod->strs[op->attr.str];
    LLVMValueRef args[5] = {cstr(cg, msg && *msg ? msg : "assertion failed"), cstr(cg, f->mod->file ? f->mod->file : "?"),
                            k32(cg, op->loc.line), cstr(cg, f->name), LLVMConstInt(cg->i64, 1, 0)};
    LLVMBuildCall2(cg->b, fty, get_fn(cg, "__assertfail", fty), args, 5, "");
    cg_call_intrinsic(cg, "llvm.trap", cg->vd, NULL, 0);
    LLVMBuildUnreachable(cg->b);
    LLVMPositionBuilderAtEnd(cg->b, cont);
}
