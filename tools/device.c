/* device.c: the GPU side of `tilec run --device` and `tilec bench` (device.h).
 *
 * Everything goes through libtilert, so a machine without a GPU gets its
 * "no CUDA driver" / "no CUDA device" message and the command exits 1.  The
 * one exception is timing: libtilert has no events, so dev_event_* open the
 * driver library libtilert opens (dlopen returns the same handle) and use
 * cuEvent* in the context libtilert made current.
 */
#include "device.h"

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/fpconv.h"

_Static_assert((int)TILERT_I1 == (int)DT_I1 + 1 && (int)TILERT_F64 == (int)DT_F64 + 1 &&
                   (int)TILERT_DTYPE_COUNT == (int)DT_COUNT + 1,
               "tilert_dtype and DType list the same types in the same order");

tilert_dtype dev_rt_dtype(DType dt)
{
    /* ORDER: runtime/tilert.h's tilert_dtype lists ir/dtype.def's types in the same order, from 1. */
    return (tilert_dtype)((int)dt + 1);
}

static bool rt_fail(Diag *d, const char *what)
{
    diag_error_noloc(d, "%s: %s", what, tilert_last_error());
    return false;
}

bool dev_open(DevSession *ds, Diag *d)
{
    memset(ds, 0, sizeof *ds);
    if (tilert_init() != TILERT_OK) return rt_fail(d, "cannot run on the GPU");
    if (tilert_device_get_info(&ds->info) != TILERT_OK) return rt_fail(d, "cannot run on the GPU");
    ds->arch = ir_target_for_cc(ds->info.cc_major, ds->info.cc_minor);
    if (!ds->arch) {
        IrTargetList l;
        diag_error_noloc(d, "the GPU (%s, compute capability %d.%d) is not one tilec compiles for (%s)", ds->info.name,
                         ds->info.cc_major, ds->info.cc_minor, ir_target_list(&l, 0, ", ", ", "));
        return false;
    }
    return true;
}

bool dev_load(DevSession *ds, const void *cubin, size_t len, const char *symbol, Diag *d)
{
    if (tilert_module_load_data(cubin, len, &ds->mod) != TILERT_OK) return rt_fail(d, "cannot load the cubin");
    if (tilert_kernel_get(ds->mod, symbol, &ds->kernel) != TILERT_OK) return rt_fail(d, "cannot load the kernel");
    return true;
}

/* The launch argument of scalar parameter p, bound to a. */
static tilert_arg scalar_arg(DType dt, const InterpArg *a)
{
    if (dt == DT_I1) return tilert_arg_bool(a->i != 0);
    if (dt_is_signed(dt)) return tilert_arg_i64(a->i);
    if (dt_is_unsigned(dt)) return tilert_arg_u64((uint64_t)a->i);
    if (dt == DT_F8E4M3) return tilert_arg_bits(TILERT_F8E4M3, fp_to_f8e4m3(a->f));
    if (dt == DT_F8E5M2) return tilert_arg_bits(TILERT_F8E5M2, fp_to_f8e5m2(a->f));
    return tilert_arg_f64(a->f); /* libtilert rounds to f16/bf16/f32 to nearest even */
}

bool dev_upload(DevSession *ds, const KernelArgs *ka, Diag *d)
{
    const IrFunc *f = ka->f;
    ds->nparams = f->nparams;
    ds->args = tl_xcalloc(f->nparams + 1, sizeof *ds->args);
    ds->dbufs = tl_xcalloc(f->nparams + 1, sizeof *ds->dbufs);
    for (uint32_t i = 0; i < f->nparams; i++) {
        const IrParam *p = &f->params[i];
        const InterpArg *a = &ka->args[i];
        if (!run_is_buffer_param(p->ty)) {
            ds->args[i] = scalar_arg((DType)p->ty.dt, a);
            continue;
        }
        const NpyArray *arr = &ka->binds[i].arr;
        char what[300];
        snprintf(what, sizeof what, "argument '%s': cannot copy %zu bytes to the GPU", p->name, arr->bytes);
        if (tilert_malloc(&ds->dbufs[i], arr->bytes) != TILERT_OK) return rt_fail(d, what);
        if (arr->bytes && tilert_memcpy_htod(ds->dbufs[i], arr->data, arr->bytes) != TILERT_OK) return rt_fail(d, what);
        tilert_dtype dt = dev_rt_dtype((DType)p->ty.dt);
        if (p->ty.kind == TY_VIEW)
            ds->args[i] = tilert_arg_tensor(tilert_tensor_nd(ds->dbufs[i], dt, p->ty.rank, a->shape, a->stride));
        else ds->args[i] = tilert_arg_ptr(ds->dbufs[i], dt);
    }
    return true;
}

bool dev_launch(DevSession *ds, const uint32_t *grid, Diag *d)
{
    tilert_status s = grid ? tilert_launch_grid(ds->kernel, NULL, grid, ds->args, (int)ds->nparams)
                           : tilert_launch(ds->kernel, NULL, ds->args, (int)ds->nparams);
    return s == TILERT_OK || rt_fail(d, "cannot launch the kernel");
}

bool dev_download(DevSession *ds, const KernelArgs *ka, Diag *d)
{
    if (tilert_stream_synchronize(NULL) != TILERT_OK) return rt_fail(d, "the kernel failed");
    for (uint32_t i = 0; i < ds->nparams; i++) {
        const NpyArray *arr = &ka->binds[i].arr;
        if (!ds->dbufs[i] || !arr->bytes) continue;
        if (tilert_memcpy_dtoh(arr->data, ds->dbufs[i], arr->bytes) != TILERT_OK) {
            char what[300];
            snprintf(what, sizeof what, "argument '%s': cannot copy it back from the GPU", ka->f->params[i].name);
            return rt_fail(d, what);
        }
    }
    return true;
}

void dev_close(DevSession *ds)
{
    for (uint32_t i = 0; i < ds->nparams; i++)
        if (ds->dbufs && ds->dbufs[i]) tilert_free(ds->dbufs[i]);
    free(ds->dbufs);
    free(ds->args);
    tilert_module_unload(ds->mod);
    ds->dbufs = NULL;
    ds->args = NULL;
    ds->mod = NULL;
    ds->kernel = NULL;
    ds->nparams = 0;
}

/* ---- events ------------------------------------------------------------------------ */

typedef CUresult (*EventCreateFn)(CUevent *, unsigned);
typedef CUresult (*EventRecordFn)(CUevent, CUstream);
typedef CUresult (*EventSyncFn)(CUevent);
typedef CUresult (*EventElapsedFn)(float *, CUevent, CUevent);
typedef CUresult (*EventDestroyFn)(CUevent);
typedef CUresult (*ErrorNameFn)(CUresult, const char **);

static struct {
    void *lib;
    EventCreateFn create;
    EventRecordFn record;
    EventSyncFn sync;
    EventElapsedFn elapsed;
    EventDestroyFn destroy;
    ErrorNameFn errname;
    char why[512];
} ev;
static pthread_once_t ev_once = PTHREAD_ONCE_INIT;

/* The first of the names that the library exports. */
static void *sym2(const char *a, const char *b)
{
    void *p = dlsym(ev.lib, a);
    if (!p && b) p = dlsym(ev.lib, b);
    if (!p && !ev.why[0]) snprintf(ev.why, sizeof ev.why, "the CUDA driver has no %s", a);
    return p;
}

static void ev_open(void)
{
    const char *name = getenv("TILERT_CUDA_LIBRARY");
    if (!name || !*name) name = "libcuda.so.1";
    ev.lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!ev.lib) {
        snprintf(ev.why, sizeof ev.why, "no CUDA driver: cannot open %s", name);
        return;
    }
    ev.create = (EventCreateFn)sym2("cuEventCreate", NULL);
    ev.record = (EventRecordFn)sym2("cuEventRecord", NULL);
    ev.sync = (EventSyncFn)sym2("cuEventSynchronize", NULL);
    ev.elapsed = (EventElapsedFn)sym2("cuEventElapsedTime_v2", "cuEventElapsedTime");
    ev.destroy = (EventDestroyFn)sym2("cuEventDestroy_v2", "cuEventDestroy");
    ev.errname = (ErrorNameFn)sym2("cuGetErrorName", NULL);
    if (ev.why[0]) ev.lib = NULL;
}

struct DevEvent {
    CUevent e;
};

static bool cu_fail(CUresult r, const char *what, Diag *d)
{
    const char *name = NULL;
    if (ev.errname) ev.errname(r, &name);
    diag_error_noloc(d, "%s failed: %s", what, name ? name : "unknown CUDA error");
    return false;
}

bool dev_event_create(DevEvent **out, Diag *d)
{
    *out = NULL;
    pthread_once(&ev_once, ev_open);
    if (!ev.lib) {
        diag_error_noloc(d, "cannot time on the GPU: %s", ev.why);
        return false;
    }
    DevEvent *e = tl_xcalloc(1, sizeof *e);
    CUresult r = ev.create(&e->e, CU_EVENT_DEFAULT);
    if (r != CUDA_SUCCESS) {
        free(e);
        return cu_fail(r, "cuEventCreate", d);
    }
    *out = e;
    return true;
}

bool dev_event_record(DevEvent *e, Diag *d)
{
    CUresult r = ev.record(e->e, NULL);
    return r == CUDA_SUCCESS || cu_fail(r, "cuEventRecord", d);
}

bool dev_event_elapsed(DevEvent *start, DevEvent *end, float *ms, Diag *d)
{
    CUresult r = ev.sync(end->e);
    if (r != CUDA_SUCCESS) return cu_fail(r, "cuEventSynchronize (the kernel may have failed)", d);
    r = ev.elapsed(ms, start->e, end->e);
    return r == CUDA_SUCCESS || cu_fail(r, "cuEventElapsedTime", d);
}

void dev_event_destroy(DevEvent *e)
{
    if (!e) return;
    ev.destroy(e->e);
    free(e);
}
