/* target.c: LLVM's NVPTX target: the optimisation pipeline and PTX emission.
 *
 * 1. Initialise the NVPTX target once per process (pthread_once: LLVM's
 *    registries are global).  The rest is per call, on the caller's module
 *    and context: threads compiling different modules do not meet here.
 * 2. Make a target machine for nvptx64-nvidia-cuda with the arch as the CPU
 *    and its PTX ISA version (ir/target.def) as the feature.
 * 3. Run the new pass manager's default<On> pipeline.
 * 4. Emit assembly (PTX) to memory and copy it out.
 */
#include "cg.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_nvptx(void)
{
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bool cg_emit_ptx(void *llvm_module, const CgTarget *t, StrBuf *ptx, Diag *d)
{
    return cg_emit_ptx_timed(llvm_module, t, ptx, NULL, d);
}

bool cg_emit_ptx_timed(void *llvm_module, const CgTarget *t, StrBuf *ptx, CgTimes *times, Diag *d)
{
    double t0 = cpu_now();
    LLVMModuleRef mod = llvm_module;
    char *err = NULL;
    bool ok = false;
    pthread_once(&init_once, init_nvptx);
    const char *triple = "nvptx64-nvidia-cuda";
    LLVMSetTarget(mod, triple);
    LLVMTargetRef target;
    if (LLVMGetTargetFromTriple(triple, &target, &err)) {
        diag_error_noloc(d, "LLVM has no NVPTX target: %s", err ? err : "?");
        LLVMDisposeMessage(err);
        LLVMDisposeModule(mod);
        return false;
    }
    char features[16];
    snprintf(features, sizeof features, "+ptx%u", (unsigned)t->arch->ptx_isa);
    LLVMCodeGenOptLevel lvl = t->opt_level <= 0 ? LLVMCodeGenLevelNone
                              : t->opt_level == 1 ? LLVMCodeGenLevelLess
                              : t->opt_level == 2 ? LLVMCodeGenLevelDefault
                                                  : LLVMCodeGenLevelAggressive;
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, t->arch->name, features, lvl,
                                                      LLVMRelocDefault, LLVMCodeModelDefault);
    LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(mod, dl);
    LLVMDisposeTargetData(dl);
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &err)) {
        /* our own lowering produced bad LLVM IR: a compiler bug */
        tl_fatal("codegen", "LLVM module verification failed:\n%s", err);
    }
    LLVMDisposeMessage(err);
    err = NULL;
    char pipeline[32];
    snprintf(pipeline, sizeof pipeline, "default<O%d>", t->opt_level < 0 ? 0 : t->opt_level > 3 ? 3 : t->opt_level);
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMErrorRef e = LLVMRunPasses(mod, pipeline, tm, po);
    LLVMDisposePassBuilderOptions(po);
    double t1 = cpu_now();
    if (times) times->opt = t1 - t0;
    if (e) {
        char *msg = LLVMGetErrorMessage(e);
        diag_error_noloc(d, "LLVM optimisation pipeline failed: %s", msg);
        LLVMDisposeErrorMessage(msg);
        goto out;
    }
    LLVMMemoryBufferRef buf;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &err, &buf)) {
        diag_error_noloc(d, "PTX emission failed: %s", err ? err : "?");
        LLVMDisposeMessage(err);
        goto out;
    }
    size_t n = LLVMGetBufferSize(buf);
    const char *s = LLVMGetBufferStart(buf);
    VEC_RESERVE(ptx->s, ptx->len, ptx->cap, ptx->len + (uint32_t)n + 1);
    memcpy(ptx->s + ptx->len, s, n);
    ptx->len += (uint32_t)n;
    ptx->s[ptx->len] = 0;
    LLVMDisposeMemoryBuffer(buf);
    if (times) times->ptx = cpu_now() - t1;
    ok = true;
out:
    LLVMDisposeTargetMachine(tm);
    LLVMDisposeModule(mod);
    return ok;
}
