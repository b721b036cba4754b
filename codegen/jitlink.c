/* jitlink.c: PTX -> cubin in process through nvJitLink, opened with dlopen.
 *
 * 1. Find libnvJitLink (the toolkit's lib64 first, then the loader's path);
 *    resolve each entry point by its plain name, else by its versioned name.
 * 2. Create a handle with -arch, -O, -lineinfo and -verbose (for -v), add the
 *    PTX, complete, and copy the cubin out.
 * 3. Return the info log (ptxas's registers, spills and shared memory per
 *    kernel) and turn the error log into a diagnostic.
 */
#include "cg.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvJitLink.h>

typedef nvJitLinkResult (*CreateFn)(nvJitLinkHandle *, uint32_t, const char **);
typedef nvJitLinkResult (*DestroyFn)(nvJitLinkHandle *);
typedef nvJitLinkResult (*AddDataFn)(nvJitLinkHandle, nvJitLinkInputType, const void *, size_t, const char *);
typedef nvJitLinkResult (*CompleteFn)(nvJitLinkHandle);
typedef nvJitLinkResult (*SizeFn)(nvJitLinkHandle, size_t *);
typedef nvJitLinkResult (*CubinFn)(nvJitLinkHandle, void *);
typedef nvJitLinkResult (*LogFn)(nvJitLinkHandle, char *);

static struct {
    void *lib;
    CreateFn create;
    DestroyFn destroy;
    AddDataFn add_data;
    CompleteFn complete;
    SizeFn cubin_size, error_size, info_size;
    CubinFn cubin;
    LogFn error_log, info_log;
    char why[512];
} jl;
static pthread_once_t jl_once = PTHREAD_ONCE_INIT;

static void *sym(const char *name)
{
    void *p = dlsym(jl.lib, name);
    static const char *const vers[] = {"_13_0", "_12_0"};
    for (size_t i = 0; !p && i < TL_COUNTOF(vers); i++) {
        char buf[128];
        snprintf(buf, sizeof buf, "__%s%s", name, vers[i]);
        p = dlsym(jl.lib, buf);
    }
    if (!p && !jl.why[0]) snprintf(jl.why, sizeof jl.why, "libnvJitLink has no entry point %s", name);
    return p;
}

static void open_jitlink(void)
{
    const char *env = getenv("CUDA_HOME");
    char path[1024];
    const char *cands[6];
    size_t n = 0;
    static char envpath[1024];
    if (env) {
        snprintf(envpath, sizeof envpath, "%s/lib64/libnvJitLink.so", env);
        cands[n++] = envpath;
    }
    snprintf(path, sizeof path, "%s/libnvJitLink.so", TILEC_CUDA_LIB64);
    cands[n++] = path;
    cands[n++] = "libnvJitLink.so.13";
    cands[n++] = "libnvJitLink.so.12";
    cands[n++] = "libnvJitLink.so";
    for (size_t i = 0; i < n && !jl.lib; i++) jl.lib = dlopen(cands[i], RTLD_NOW | RTLD_LOCAL);
    if (!jl.lib) {
        snprintf(jl.why, sizeof jl.why,
                 "cannot load nvJitLink (libnvJitLink.so from the CUDA toolkit): %s; install the CUDA "
                 "toolkit or set CUDA_HOME", dlerror());
        return;
    }
    jl.create = (CreateFn)sym("nvJitLinkCreate");
    jl.destroy = (DestroyFn)sym("nvJitLinkDestroy");
    jl.add_data = (AddDataFn)sym("nvJitLinkAddData");
    jl.complete = (CompleteFn)sym("nvJitLinkComplete");
    jl.cubin_size = (SizeFn)sym("nvJitLinkGetLinkedCubinSize");
    jl.cubin = (CubinFn)sym("nvJitLinkGetLinkedCubin");
    jl.error_size = (SizeFn)sym("nvJitLinkGetErrorLogSize");
    jl.error_log = (LogFn)sym("nvJitLinkGetErrorLog");
    jl.info_size = (SizeFn)sym("nvJitLinkGetInfoLogSize");
    jl.info_log = (LogFn)sym("nvJitLinkGetInfoLog");
    if (jl.why[0]) jl.lib = NULL;
}

static char *get_log(nvJitLinkHandle h, SizeFn size, LogFn get)
{
    size_t n = 0;
    if (size(h, &n) != NVJITLINK_SUCCESS || n == 0) return NULL;
    char *s = tl_xmalloc(n + 1);
    if (get(h, s) != NVJITLINK_SUCCESS) {
        free(s);
        return NULL;
    }
    s[n] = 0;
    return s;
}

bool cg_ptx_to_cubin(const char *ptx, size_t ptx_len, const CgTarget *t, void **cubin, size_t *cubin_len,
                     StrBuf *info, Diag *d)
{
    pthread_once(&jl_once, open_jitlink);
    *cubin = NULL;
    *cubin_len = 0;
    if (!jl.lib) {
        diag_error_noloc(d, "%s", jl.why);
        return false;
    }
    char arch[32], opt[24];
    snprintf(arch, sizeof arch, "-arch=%s", t->arch->name);
    /* nvJitLink takes only -O0 and -O3 itself; ptxas's -O1/-O2 go through -Xptxas */
    int lvl = t->opt_level < 0 ? 0 : t->opt_level > 3 ? 3 : t->opt_level;
    snprintf(opt, sizeof opt, lvl == 1 || lvl == 2 ? "-Xptxas=-O%d" : "-O%d", lvl);
    /* One ptxas run over the whole module, in this thread: nvJitLink's
     * -split-compile leaves PTX input to one thread, and ptxas's own
     * (-Xptxas=--split-compile) changes the cubin's bytes (.nv.info order) with
     * the thread count, so -j does not reach here. */
    const char *opts[4] = {arch, opt};
    uint32_t nopt = 2;
    if (t->lineinfo) opts[nopt++] = "-lineinfo";
    if (t->verbose || info) opts[nopt++] = "-verbose";
    nvJitLinkHandle h;
    if (jl.create(&h, nopt, opts) != NVJITLINK_SUCCESS) {
        diag_error_noloc(d, "nvJitLink: cannot create a link for %s", t->arch->name);
        return false;
    }
    bool ok = false;
    nvJitLinkResult r = jl.add_data(h, NVJITLINK_INPUT_PTX, ptx, ptx_len, "tilec.ptx");
    if (r == NVJITLINK_SUCCESS) r = jl.complete(h);
    if (r != NVJITLINK_SUCCESS) {
        char *log = get_log(h, jl.error_size, jl.error_log);
        diag_error_noloc(d, "nvJitLink rejected the PTX (error %d):\n%s", (int)r, log ? log : "(no log)");
        free(log);
        goto out;
    }
    size_t n = 0;
    if (jl.cubin_size(h, &n) != NVJITLINK_SUCCESS || n == 0) {
        diag_error_noloc(d, "nvJitLink produced no cubin");
        goto out;
    }
    *cubin = tl_xmalloc(n);
    if (jl.cubin(h, *cubin) != NVJITLINK_SUCCESS) {
        free(*cubin);
        *cubin = NULL;
        diag_error_noloc(d, "nvJitLink: cannot read the cubin back");
        goto out;
    }
    *cubin_len = n;
    if (info) {
        char *log = get_log(h, jl.info_size, jl.info_log);
        if (log) sb_puts(info, log);
        free(log);
    }
    ok = true;
out:
    jl.destroy(&h);
    return ok;
}
