/* occupancy.c: the CTAs per SM a kernel asks ptxas to make room for.
 *
 * A memory-bound kernel that keeps whole rows in registers (softmax, norms)
 * overlaps one CTA's loads with another's arithmetic and stores only when
 * several CTAs share an SM; left alone, ptxas spends registers on
 * instruction-level parallelism (128-234 per thread for rows of 32 f32
 * elements per thread: one or two CTAs per SM).  For kernels without DOT:
 *   1. Estimate the registers the kernel's tiles need per thread: the peak
 *      of the register-pressure model (passes/pressure.h, which the scheduler
 *      passes/schedule.c uses too): liveness over the structured IR, each
 *      tile weighing its registers per thread in its layout, free values and
 *      values used up before the next reduction weighing 0.
 *   2. R = pass_pressure_regs(peak) = max(peak + 24 + 4 * (tensor and
 *      pointer parameters), 2 * peak) (addresses, loop and reduction
 *      temporaries, and the widening and packing of 16-bit rows, which grow
 *      with the row), rounded up to 8, at least 40.
 *   3. CTAs = min(registers per SM / (threads * R), threads per SM /
 *      threads) (the target's, ir/target.def: 65536 and 2048 on sm_90a); with
 *      2 or more it is emitted as .minnctapersm, which caps ptxas at
 *      registers per SM / (CTAs * threads) registers.
 * Measured on the H200 (4096 rows, 2026-11-29): softmax f32 8k at 64
 * registers (4 CTAs) 3.79 TB/s against 2.36 at ptxas's 162; rmsnorm f32 8k at
 * 128 (2 CTAs) 3.79, but capped at 64 it spilled in the hot path (x and w
 * both live: 2.39) -- hence the liveness estimate rather than the largest
 * tile.  rmsnorm bf16 with its rows live as bf16 (passes/remat.c), 64 elements
 * per thread: peak 64, 128 registers, 3.5-3.7 TB/s at 8k-16k columns (2.5 when
 * ptxas took 255 registers and one CTA per SM).  Kernels with DOT keep ptxas's
 * choice.
 * TILEC_MIN_CTAS=N in the environment overrides the result (0: no hint), for
 * tuning experiments; TILEC_OCC_DEBUG=1 prints the estimated peak.
 */
#include "lower_int.h"

#include "../passes/pressure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cg_min_ctas(IrFunc *f, const IrTarget *tg, int warps, CgOccupancy *occ)
{
    memset(occ, 0, sizeof *occ);
    const char *env = getenv("TILEC_MIN_CTAS");
    if (env && *env) {
        occ->why = "TILEC_MIN_CTAS in the environment";
        return occ->min_ctas = atoi(env);
    }
    for (uint32_t i = 0; i < f->nops; i++)
        if (ir_op(f, i)->opc == IR_DOT) {
            occ->why = "the kernel has a dot: ptxas's choice";
            return 0;
        }
    int threads = 32 * warps;
    PassPressure pr;
    pass_pressure_init(&pr, f, threads);
    double p = pass_pressure_peak(&pr, f->body);
    pass_pressure_fini(&pr);
    /* a body the scheduler reordered keeps the hint of its original order: ptxas
     * hoists loads back (one warp, four rows of 64 f32 reduced one by one:
     * 56 bytes of spills at 255 registers, 528 at the 128 of the lower peak's
     * hint, 392 unscheduled) */
    if (f->peak_unscheduled > p) p = f->peak_unscheduled;
    if (getenv("TILEC_OCC_DEBUG")) fprintf(stderr, "occupancy: %s peak %.1f regs/thread\n", f->name, p);
    int64_t r = pass_pressure_regs(f, p);
    int64_t ctas = tg->regs_per_sm / ((int64_t)threads * r);
    if (ctas > tg->threads_per_sm / threads) ctas = tg->threads_per_sm / threads;
    occ->peak = p;
    occ->regs = (int)r;
    return occ->min_ctas = ctas < 1 ? 1 : (int)ctas;
}
