/* target.h: the GPU targets, one table (target.def) that the driver, the
 * passes, code generation and the interpreter all read.
 *
 * The arch travels as a pointer to a row (const IrTarget *): IrModule.target
 * for the passes and the interpreter, CgTarget.arch for code generation.
 * Nothing outside ir/target.c compares arch names or knows a per-GPU number;
 * a message that lists archs formats them with ir_target_list.
 */
#ifndef TILEC_IR_TARGET_H
#define TILEC_IR_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Optional instructions and paths, target.def's features column. */
enum {
    IR_TGT_MMA_SYNC = 1u << 0,  /* mma.sync.aligned.m16n8k16 (f16/bf16 tensor cores) */
    IR_TGT_CP_ASYNC = 1u << 1,  /* cp.async global -> shared copies */
    IR_TGT_FP8_CVT = 1u << 2,   /* cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 and cvt.rn.f16x2.{e4m3x2,e5m2x2}:
                                 * fp8 conversions in hardware (codegen/convert.c; integer
                                 * arithmetic on targets without them) */
    IR_TGT_TMA = 1u << 3,       /* cp.async.bulk.tensor and mbarrier transaction counts (async_load) */
    IR_TGT_TMA_STORE = 1u << 4, /* BLOCK_STOREs staged in shared memory and written by TMA
                                 * (lower_async.c store_plan): the hardware has them with
                                 * IR_TGT_TMA, they are chosen where measured (sm_90a) */
    IR_TGT_WGMMA = 1u << 5,     /* wgmma.mma_async (warpgroup MMA from shared memory); with it the
                                 * layout pass gives DOT the wgmma accumulator and loops pipeline */
};

typedef enum IrTargetId {
#define TARGET(id, ...) IR_TARGET_##id,
#include "target.def"
#undef TARGET
    IR_TARGET_COUNT
} IrTargetId;

/* What tilec compiles for without --arch. */
#define IR_TARGET_DEFAULT IR_TARGET_SM_90A

/* One row of target.def (see there for each column). */
typedef struct IrTarget {
    const char *name;           /* "sm_90a" */
    uint16_t sm;                /* 90: compute capability sm / 10 . sm % 10 */
    bool specific;              /* "a": runs only on exactly that compute capability */
    uint32_t features;          /* IR_TGT_* */
    uint32_t smem_per_cta;      /* bytes of shared memory one CTA may have (opt-in maximum) */
    uint32_t num_sms;           /* SMs of the part the row stands for */
    uint32_t regs_per_sm;       /* 32-bit registers per SM */
    uint32_t threads_per_sm;    /* resident threads per SM */
    uint16_t ptx_isa;           /* PTX ISA version emitted, major * 10 + minor */
} IrTarget;

extern const IrTarget ir_targets[IR_TARGET_COUNT];

/* The row named `name` (exactly, "sm_90a"); NULL when there is none or name is NULL. */
const IrTarget *ir_target_find(const char *name);
const IrTarget *ir_target_default(void);
/* The best target for a device of compute capability major.minor: among the
 * rows of the same major and a minor not above the device's (an arch-specific
 * row only on its exact capability), the highest SM version, arch-specific
 * before portable.  NULL when none runs there. */
const IrTarget *ir_target_for_cc(int major, int minor);

/* Whether t has every feature in `features` (false for a NULL t: no target named). */
static inline bool ir_target_has(const IrTarget *t, uint32_t features)
{
    return t && (t->features & features) == features;
}

/* The setmaxnreg split of a warp-specialized kernel with `warps` consumer warps and a producer
 * warpgroup (codegen/lower_int.h, cg_ws_registers, says how): the producer's and the
 * consumers' registers per thread, both 0 where nothing changes hands.  Here so that the
 * scheduler's register budget (passes/schedule.c) and code generation agree. */
static inline void ir_ws_registers(int warps, int *producer, int *consumer)
{
    int threads = 32 * (warps + 4);
    int r0 = (65536 / threads) & ~7;
    if (r0 > 248) r0 = 248;
    int inc = ((threads * r0 - 128 * 24) / (32 * warps)) & ~7;
    if (inc > 248) inc = 248;
    *producer = inc > r0 ? 24 : 0;
    *consumer = inc > r0 ? inc : 0;
}

/* The names of the rows that have every feature in `need` (0: all rows), in
 * table order, joined by `sep` with `last` before the final one:
 * (", ", " or ") gives "sm_80, sm_86, sm_89, sm_90 or sm_90a", ("|", "|")
 * "sm_80|sm_86|sm_89|sm_90|sm_90a".  Returns out->s. */
typedef struct IrTargetList {
    char s[256];
} IrTargetList;
const char *ir_target_list(IrTargetList *out, uint32_t need, const char *sep, const char *last);

#endif
