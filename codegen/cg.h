/* cg.h: the GPU backend.
 *
 *   layout-annotated tile IR --lower.c--> LLVM module --target.c--> PTX --jitlink.c--> cubin
 *   (a module holding setmaxnreg: PTX --ptxas.c, the toolkit's ptxas as a whole program--> cubin)
 *
 * LLVM-C objects are created and disposed inside one call of cg_compile_*;
 * nothing LLVM escapes this layer.  nvJitLink is opened with dlopen, so tilec
 * runs (and reports a clear error) where the CUDA toolkit is missing.
 */
#ifndef TILEC_CG_H
#define TILEC_CG_H

#include "../common/base.h"
#include "../common/diag.h"
#include "../ir/target.h"

typedef struct CgTarget {
    const IrTarget *arch; /* a row of ir/target.def; never NULL */
    int opt_level;      /* 0..3 */
    bool lineinfo;      /* .loc and -lineinfo: on by default */
    bool verbose;       /* -v: registers, shared memory, spills per kernel */
    bool debug;         /* -g: keep assert() in the kernels (dropped otherwise) */
    bool fast_math;     /* --fast-math: approximate math and f32 division (see lower_math.c) */
    bool keep_llvm;     /* --save-temps: CgResult.llvm holds the LLVM IR also when compiling further */
    int jobs;           /* -j: threads for the kernels' LLVM work and for ptxas; 0 or 1: this thread alone.
                         * The output does not depend on it. */
} CgTarget;

/* CPU seconds one kernel took in its thread (-v): lowering to LLVM IR, LLVM's
 * optimisation pipeline, and the NVPTX backend to PTX. */
typedef struct CgTimes {
    double lower, opt, ptx;
} CgTimes;

/* target.c: runs LLVM's optimisation pipeline at opt_level on the module (an
 * LLVMModuleRef passed as void* to keep LLVM out of this header) and writes
 * its PTX to `ptx`.  The module is consumed. */
bool cg_emit_ptx(void *llvm_module, const CgTarget *t, StrBuf *ptx, Diag *d);
/* The same, with the CPU time of the pipeline and of the backend in times->opt and ->ptx. */
bool cg_emit_ptx_timed(void *llvm_module, const CgTarget *t, StrBuf *ptx, CgTimes *times, Diag *d);

/* jitlink.c: PTX -> cubin in process through nvJitLink.  *cubin is malloc'd.
 * `info` receives nvJitLink's info log (ptxas's per-kernel resource usage). */
bool cg_ptx_to_cubin(const char *ptx, size_t ptx_len, const CgTarget *t, void **cubin, size_t *cubin_len,
                     StrBuf *info, Diag *d);

/* ptxas.c: PTX -> cubin through the toolkit's ptxas as a whole program, which honours setmaxnreg
 * (nvJitLink compiles relocatable code and drops it).  cg_ptxas_wanted: the PTX uses setmaxnreg;
 * cg_ptxas_available: a ptxas was found (an error where TILEC_PTXAS names none) ($TILEC_PTXAS, "none" to refuse; $CUDA_HOME/bin; the
 * build's toolkit; $PATH).  *child_cpu: the CPU seconds of the ptxas process. */
bool cg_ptxas_wanted(const char *ptx, size_t ptx_len);
bool cg_ptxas_available(Diag *d, bool *err); /* *err: TILEC_PTXAS names no executable (reported) */
bool cg_ptxas_to_cubin(const char *ptx, size_t ptx_len, const CgTarget *t, void **cubin, size_t *cubin_len,
                       StrBuf *info, double *child_cpu, Diag *d);

typedef enum CgEmit { CG_EMIT_LLVM, CG_EMIT_PTX, CG_EMIT_CUBIN } CgEmit;

/* What code generation decided for one kernel (also meta_emit.h's input). */
struct CgKernelFacts;

typedef struct CgResult {
    StrBuf llvm;                    /* CG_EMIT_LLVM: the module's text */
    StrBuf ptx;                     /* CG_EMIT_PTX and later: PTX with the metadata array */
    void *cubin;                    /* CG_EMIT_CUBIN */
    size_t cubin_len;
    StrBuf info;                    /* nvJitLink's info log: registers, spills, shared memory */
    struct CgKernelFacts *facts;    /* one per kernel, in module order (their TMA descriptors owned here) */
    uint32_t nfacts;
    CgTimes *times;                 /* one per kernel, in module order */
    double ptxas_cpu;               /* CPU seconds in nvJitLink (all its threads), or of the ptxas process */
    bool whole_program;             /* the cubin came from ptxas as a whole program (ptxas.c), not nvJitLink */
} CgResult;

struct IrModule;
/* Compiles every kernel of m (the layout pass must have run) up to `upto`,
 * the kernels in up to t->jobs threads; the same output for any t->jobs. */
bool cg_compile_module(struct IrModule *m, const CgTarget *t, CgEmit upto, CgResult *out, Diag *d);
void cg_result_free(CgResult *r);

/* What ptxas reported for kernel `name` in an info log (CgResult.info):
 * registers per thread and spill bytes.  False when the log has no such block. */
bool cg_ptxas_usage(const char *log, const char *name, int *regs, int *spill_stores, int *spill_loads);

#endif
