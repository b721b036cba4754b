/* device.h: the GPU side of `tilec run --device` and `tilec bench`, through
 * libtilert (which opens the CUDA driver with dlopen, so tilec starts and
 * reports a clear error on a machine without one).
 *
 *   DevSession ds;
 *   dev_open(&ds, ...)          driver, device, the arch to compile for
 *   dev_load(&ds, cubin, ...)   the cubin into the device's context, the kernel looked up
 *   dev_upload(&ds, ka, ...)    buffers to device memory, tilert_args built
 *   dev_launch(&ds, ...)        one launch, checked by the runtime
 *   dev_download(&ds, ka, ...)  buffers back into ka's host arrays
 *   dev_close(&ds)
 */
#ifndef TILEC_DEVICE_H
#define TILEC_DEVICE_H

#include "../runtime/tilert.h"
#include "run.h"

typedef struct DevSession {
    tilert_device_info info;
    const IrTarget *arch;       /* the device's own (ir_target_for_cc): sm_90a for cc 9.0, sm_86 ... */
    tilert_module *mod;
    tilert_kernel *kernel;
    tilert_arg *args;           /* [nparams], pointing at dbufs */
    void **dbufs;               /* [nparams]: device copy of each buffer parameter (NULL: none) */
    uint32_t nparams;
} DevSession;

/* The runtime dtype of an IR dtype. */
tilert_dtype dev_rt_dtype(DType dt);

/* Opens the driver and the current device (device 0 unless a context is
 * current); fills ds->info and ds->arch.  False after an error ("no CUDA
 * driver", "no CUDA device") reported to d. */
bool dev_open(DevSession *ds, Diag *d);
/* Loads a cubin and looks kernel `symbol` up. */
bool dev_load(DevSession *ds, const void *cubin, size_t len, const char *symbol, Diag *d);
/* Copies every buffer argument of ka to new device memory and builds the launch arguments. */
bool dev_upload(DevSession *ds, const KernelArgs *ka, Diag *d);
/* Launches once on the default stream: with `grid` when non-NULL, else the metadata's grid. */
bool dev_launch(DevSession *ds, const uint32_t *grid, Diag *d);
/* Waits for the device, then copies every buffer argument back into ka's arrays. */
bool dev_download(DevSession *ds, const KernelArgs *ka, Diag *d);
/* Frees device memory and unloads the module (the driver stays open). */
void dev_close(DevSession *ds);

/* run.c: opens the GPU, compiles m (one kernel) for it (--arch, else the
 * GPU's arch, written back to ro) and loads the cubin. */
bool run_device_prepare(RunOpts *ro, Source *s, IrModule *m, DevSession *ds);

/* bench.c: ro->warmup launches, then ro->runs timed ones (each after an L2 flush unless
 * !ro->flush); times[r] gets each in ms.  `tilec tune` times its candidates with it. */
bool bench_time_runs(const RunOpts *ro, DevSession *ds, const uint32_t *grid, float *times, Diag *d);

/* CUDA events, for timing.  libtilert has no event API (yet), so these open
 * the same driver library it does (TILERT_CUDA_LIBRARY or libcuda.so.1) and
 * act in the context libtilert made current; call them after dev_open. */
typedef struct DevEvent DevEvent;
bool dev_event_create(DevEvent **e, Diag *d);
bool dev_event_record(DevEvent *e, Diag *d);          /* on the default stream */
/* Milliseconds between two recorded events (waits for `end`). */
bool dev_event_elapsed(DevEvent *start, DevEvent *end, float *ms, Diag *d);
void dev_event_destroy(DevEvent *e);

#endif
