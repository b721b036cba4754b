/* pressure.h: the register-pressure model -- how many 32-bit registers per
 * thread a kernel's tile values keep live.
 *
 * One model for every client: the occupancy hint (codegen/occupancy.c) sizes
 * the CTAs per SM from it, and the scheduler (passes/schedule.c) orders each
 * block to keep it under the kernel's budget and predicts spills from it, so
 * the two always agree on what a block needs.
 *
 * The model, in the words of pressure.c:
 *   - A tile weighs its registers per thread in its layout (its layout's
 *     registers less the replicated ones; without layouts, its elements over
 *     the threads), times 1/2 for 16-bit elements, 1/4 for 8-bit ones and 2
 *     for 64-bit elements and pointers.  A broadcast weighs what its source
 *     does (codegen maps the registers, nothing is copied).  A tile of at most
 *     one element per thread (a reduction's result) and scalars weigh 0.
 *   - Free values (ir_free_values: codegen recomputes them where used) weigh
 *     0, and so do streamed values: pure elementwise tiles used only in their
 *     own block, not stored, with no cross-thread reduction between their
 *     definition and any use (LLVM and ptxas compute them element by element
 *     where consumed); what a streamed value is computed from stays live
 *     until the streamed value's last use.  Streamed depends on the order of the ops:
 *     pass_pressure_update recomputes it after a pass moves ops.  Stage
 *     reads (smem_read, or a transpose of one) that only dots of their block
 *     use weigh 0 too: wgmma reads them in place from shared memory.
 *   - In a block, a value is live from its definition to its last use there
 *     (a use inside a nested region counts at the op holding the region).  The
 *     pressure at an op is its results plus what its block has live across it
 *     (operands used last there die into its results); for an op with
 *     regions, the operands it uses stay live, and the peak inside its regions
 *     adds to it: in a kernel without dots a loop's results count on top of
 *     its body's peak (the occupancy hint is calibrated on that, pressure.c);
 *     in a kernel with dots they come after its regions, whose peak has the
 *     carried accumulators once.  A block's peak is its largest pressure.
 *   - ptxas needs about max(peak + 24 + 4 * (tensor and pointer parameters),
 *     2 * peak) registers, rounded up to 8 and at least 40
 *     (pass_pressure_regs): addresses, loop and reduction temporaries, and the
 *     widening and packing of 16-bit rows; in a kernel with a dot (whose
 *     tiles are accumulators and operands) peak + 112 (descriptors, stage
 *     addresses, mbarrier phases), peak + 48 in a warp-specialized one (its
 *     consumers issue no loads).
 *   - A loop's initial values used inside another op's region (a pipelined
 *     loop inside its TMA branch) are counted once, as the loop body's
 *     arguments; an op with several regions costs its largest region's peak
 *     plus what that region alone uses of the enclosing block.
 */
#ifndef TILEC_PRESSURE_H
#define TILEC_PRESSURE_H

#include "../ir/ir.h"

typedef struct PassPressure {
    IrFunc *f;
    int threads;        /* 32 * warps: what a tile without a layout is spread over */
    bool dot;           /* f has a dot: a loop's results share its body's registers (pressure.c) */
    uint8_t *free_;     /* per value: free (ir_free_values), weighs 0 */
    uint8_t *streamed;  /* per value: used up before the next reduction, weighs 0 (for the current order) */
    uint8_t *in_smem;   /* per value: a stage read only dots of its block use, in place: weighs 0 */
    uint32_t *last;     /* scratch of pass_pressure_peak: per value, its last use in its own block */
} PassPressure;

/* Builds the model of f (its values may not change while it is in use;
 * moving ops is fine, then pass_pressure_update). */
void pass_pressure_init(PassPressure *p, IrFunc *f, int threads);
void pass_pressure_fini(PassPressure *p);
/* Recomputes what depends on the order of the ops (streamed). */
void pass_pressure_update(PassPressure *p);
/* Registers per thread of value v. */
double pass_pressure_weight(const PassPressure *p, IrVal v);
/* The same as if v were not streamed: what it takes while held across other
 * ops (a scheduler moving ops between its definition and its uses). */
double pass_pressure_held(const PassPressure *p, IrVal v);
/* Peak registers per thread inside block b (its regions included), in its current order. */
double pass_pressure_peak(PassPressure *p, IrBlk b);
/* The same, and across[i] for each op i of b: what b has live across it (neither
 * its results nor the peak of its regions counted). */
double pass_pressure_profile(PassPressure *p, IrBlk b, double *across);
/* Tensor and pointer parameters of f (each costs ptxas a 64-bit base and index arithmetic). */
int pass_pressure_nmem(const IrFunc *f);
/* The registers per thread ptxas needs for tiles that peak at `peak`. */
int pass_pressure_regs(const IrFunc *f, double peak);
/* The registers per thread f's threads may have at one CTA per SM: min(255,
 * registers per SM / threads) (tg NULL: 65536 registers per SM). */
int pass_pressure_cap(const IrFunc *f, const IrTarget *tg);
/* The same for a launch of `threads` threads. */
int pass_pressure_cap_threads(const IrTarget *tg, int threads);
/* Whether f is warp-specialized (has a PRODUCER_WARP branch: passes/warp_specialize.c). */
bool pass_pressure_specialized(const IrFunc *f);
/* The registers per thread the code holding f's tiles runs at: pass_pressure_cap, or in a
 * warp-specialized kernel the consumers' after setmaxnreg (ir_ws_registers). */
int pass_pressure_kernel_cap(const IrFunc *f, const IrTarget *tg);
/* The largest tile peak for which pass_pressure_regs stays within `cap` registers per thread. */
double pass_pressure_tile_budget(const IrFunc *f, int cap);

#endif
