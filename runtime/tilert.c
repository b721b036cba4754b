/* tilert.c: libtilert (see tilert.h for the API and the kernel ABI).
 *
 * Layers, bottom up:
 *   errors      a thread-local message per failure; every entry point returns a status
 *   driver      libcuda.so.1 opened once (pthread_once), entry points by dlsym; cuda.h gives
 *               only types and enums, nothing links against libcuda
 *   modules     image -> ELF checks (elf.c) -> metadata (meta.c) -> arch check -> cuModuleLoadData
 *   kernels     looked up by name; CUfunction and shared-memory attribute set once, under the
 *               module's lock
 *   launch      argument checks and grid (no driver), then context check and cuLaunchKernel
 *   TMA         for each TMA descriptor in the metadata, cuTensorMapEncodeTiled's arguments
 *               from the tensor argument (tma.c, no driver, every rule checked), then the
 *               driver call, cached per kernel and descriptor on all of its arguments; a
 *               tensor whose descriptors are optional gets zero maps where they cannot be built
 */
#include "tilert.h"

#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf.h"
#include "meta.h"
#include "tma.h"

/* tma.h and meta.h spell the driver's TMA enums without cuda.h: they must agree. */
_Static_assert(sizeof(CUtensorMap) == 128, "CUtensorMap is 128 bytes");
#define SAME(a, b) ((int)(a) == (int)(b))
_Static_assert(SAME(TILERT_CU_TMA_UINT8, CU_TENSOR_MAP_DATA_TYPE_UINT8) &&
               SAME(TILERT_CU_TMA_UINT16, CU_TENSOR_MAP_DATA_TYPE_UINT16) &&
               SAME(TILERT_CU_TMA_UINT32, CU_TENSOR_MAP_DATA_TYPE_UINT32) &&
               SAME(TILERT_CU_TMA_INT32, CU_TENSOR_MAP_DATA_TYPE_INT32) &&
               SAME(TILERT_CU_TMA_UINT64, CU_TENSOR_MAP_DATA_TYPE_UINT64) &&
               SAME(TILERT_CU_TMA_INT64, CU_TENSOR_MAP_DATA_TYPE_INT64) &&
               SAME(TILERT_CU_TMA_FLOAT16, CU_TENSOR_MAP_DATA_TYPE_FLOAT16) &&
               SAME(TILERT_CU_TMA_FLOAT32, CU_TENSOR_MAP_DATA_TYPE_FLOAT32) &&
               SAME(TILERT_CU_TMA_FLOAT64, CU_TENSOR_MAP_DATA_TYPE_FLOAT64) &&
               SAME(TILERT_CU_TMA_BFLOAT16, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16), "tensor-map data types");
_Static_assert(SAME(TILERT_TMA_SWIZZLE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE) && SAME(TILERT_TMA_SWIZZLE_32B, CU_TENSOR_MAP_SWIZZLE_32B) &&
               SAME(TILERT_TMA_SWIZZLE_64B, CU_TENSOR_MAP_SWIZZLE_64B) && SAME(TILERT_TMA_SWIZZLE_128B, CU_TENSOR_MAP_SWIZZLE_128B),
               "swizzle");
_Static_assert(SAME(TILERT_TMA_L2_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE) && SAME(TILERT_TMA_L2_64B, CU_TENSOR_MAP_L2_PROMOTION_L2_64B) &&
               SAME(TILERT_TMA_L2_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B) &&
               SAME(TILERT_TMA_L2_256B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B), "L2 promotion");
_Static_assert(SAME(TILERT_TMA_OOB_ZERO, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) &&
               SAME(TILERT_TMA_OOB_NAN, CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA), "out-of-bounds fill");
#undef SAME
_Static_assert(sizeof(tilert_tma_encode) == 4 * 2 + 8 * (1 + 5 + 4) + 4 * (5 + 5 + 4), "tilert_tma_encode has no padding");

/* ---- errors ------------------------------------------------------------------ */

static _Thread_local char last_error[1024];

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static tilert_status err(tilert_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return s;
}

const char *tilert_last_error(void) { return last_error; }

const char *tilert_status_string(tilert_status s)
{
    static const char *const names[TILERT_STATUS_COUNT] = {
        "TILERT_OK", "TILERT_ERROR_INVALID_VALUE", "TILERT_ERROR_OUT_OF_MEMORY", "TILERT_ERROR_IO",
        "TILERT_ERROR_NO_DRIVER", "TILERT_ERROR_NO_DEVICE", "TILERT_ERROR_INVALID_IMAGE",
        "TILERT_ERROR_ARCH_MISMATCH", "TILERT_ERROR_BAD_METADATA", "TILERT_ERROR_NOT_FOUND",
        "TILERT_ERROR_ARG_COUNT", "TILERT_ERROR_ARG_TYPE", "TILERT_ERROR_ARG_ALIGN", "TILERT_ERROR_ARG_VALUE",
        "TILERT_ERROR_GRID", "TILERT_ERROR_NO_GRID", "TILERT_ERROR_RESOURCES", "TILERT_ERROR_CONTEXT",
        "TILERT_ERROR_INSPECT_ONLY", "TILERT_ERROR_CUDA", "TILERT_ERROR_REQUIRES",
    };
    return (unsigned)s < TILERT_STATUS_COUNT ? names[s] : "TILERT_ERROR_(unknown)";
}

/* ---- dtypes, tensors, arguments ---------------------------------------------- */

/* tilert_dtype_name and tilert_dtype_size live in meta.c, which the metadata checks share. */

tilert_tensor tilert_tensor_nd(void *data, tilert_dtype dt, int32_t rank, const int64_t *shape, const int64_t *stride)
{
    tilert_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.dtype = dt;
    t.rank = rank;
    if (rank < 1 || rank > TILERT_MAX_RANK || !shape) return t; /* rejected when used */
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        t.shape[d] = shape[d];
        t.stride[d] = stride ? stride[d] : s;
        s *= shape[d];
    }
    return t;
}
tilert_tensor tilert_tensor1d(void *data, tilert_dtype dt, int64_t n) { return tilert_tensor_nd(data, dt, 1, &n, NULL); }
tilert_tensor tilert_tensor2d(void *data, tilert_dtype dt, int64_t rows, int64_t cols)
{
    int64_t shape[2] = {rows, cols};
    return tilert_tensor_nd(data, dt, 2, shape, NULL);
}

static tilert_arg mkarg(tilert_arg_kind kind, tilert_dtype dt)
{
    tilert_arg a;
    memset(&a, 0, sizeof a);
    a.kind = kind;
    a.dtype = dt;
    return a;
}
tilert_arg tilert_arg_tensor(tilert_tensor t)
{
    tilert_arg a = mkarg(TILERT_ARG_TENSOR, t.dtype);
    a.v.tensor = t;
    return a;
}
tilert_arg tilert_arg_ptr(void *p, tilert_dtype pointee)
{
    tilert_arg a = mkarg(TILERT_ARG_PTR, pointee);
    a.v.ptr = p;
    return a;
}
static tilert_arg int_arg(tilert_dtype dt, int64_t v)
{
    tilert_arg a = mkarg(TILERT_ARG_INT, dt);
    a.v.i = v;
    return a;
}
tilert_arg tilert_arg_i32(int32_t v) { return int_arg(TILERT_I32, v); }
tilert_arg tilert_arg_i64(int64_t v) { return int_arg(TILERT_I64, v); }
tilert_arg tilert_arg_u32(uint32_t v) { return int_arg(TILERT_U32, v); }
tilert_arg tilert_arg_u64(uint64_t v)
{
    tilert_arg a = mkarg(TILERT_ARG_INT, TILERT_U64);
    a.v.u = v;
    return a;
}
tilert_arg tilert_arg_bool(int v) { return int_arg(TILERT_I1, v != 0); }
tilert_arg tilert_arg_f32(float v)
{
    tilert_arg a = mkarg(TILERT_ARG_FLOAT, TILERT_F32);
    a.v.f = v;
    return a;
}
tilert_arg tilert_arg_f64(double v)
{
    tilert_arg a = mkarg(TILERT_ARG_FLOAT, TILERT_F64);
    a.v.f = v;
    return a;
}
tilert_arg tilert_arg_bits(tilert_dtype dt, uint64_t bits)
{
    tilert_arg a = mkarg(TILERT_ARG_BITS, dt);
    a.v.bits = bits;
    return a;
}

/* ---- the driver ------------------------------------------------------------------ */

/* Names through cuda.h's macros, so that versioned entry points (cuMemAlloc -> cuMemAlloc_v2) resolve. */
#define TL_STR2(x) #x
#define TL_STR(x) TL_STR2(x)
#define DRIVER_FUNCS(X)                                                                                   \
    X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGet)               \
    X(cuDeviceGetCount) X(cuDeviceGetAttribute) X(cuDeviceGetName) X(cuCtxGetCurrent) X(cuCtxSetCurrent) \
    X(cuCtxGetDevice) X(cuCtxPushCurrent) X(cuCtxPopCurrent) X(cuDevicePrimaryCtxRetain)                \
    X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncGetAttribute)                  \
    X(cuFuncSetAttribute) X(cuLaunchKernel) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH)  \
    X(cuMemsetD8) X(cuStreamSynchronize)

typedef struct Driver {
    void *lib;
    tilert_status status;   /* of opening and cuInit */
    char msg[512];
    int version;
#define X(f) __typeof__(&f) f;
    DRIVER_FUNCS(X)
#undef X
    /* CUDA 12 and later; NULL on an older driver, which then runs every kernel without TMA */
    __typeof__(&cuTensorMapEncodeTiled) cuTensorMapEncodeTiled;
} Driver;

static Driver drv;
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;

static const char *cu_errname(CUresult r)
{
    const char *s = NULL;
    if (drv.cuGetErrorName && drv.cuGetErrorName(r, &s) == CUDA_SUCCESS && s) return s;
    return "CUDA_ERROR_(unknown)";
}
static const char *cu_errstr(CUresult r)
{
    const char *s = NULL;
    if (drv.cuGetErrorString && drv.cuGetErrorString(r, &s) == CUDA_SUCCESS && s) return s;
    return "no description";
}

static void drv_open(void)
{
    const char *name = getenv("TILERT_CUDA_LIBRARY");
    if (!name || !*name) name = "libcuda.so.1";
    drv.lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!drv.lib) {
        const char *e = dlerror();
        drv.status = TILERT_ERROR_NO_DRIVER;
        snprintf(drv.msg, sizeof drv.msg, "no CUDA driver: cannot open %s (%s); a GPU and the NVIDIA driver are needed",
                 name, e ? e : "unknown reason");
        return;
    }
#define X(f)                                                                                              \
    drv.f = (__typeof__(&f))dlsym(drv.lib, TL_STR(f));                                                    \
    if (!drv.f) {                                                                                         \
        drv.status = TILERT_ERROR_NO_DRIVER;                                                              \
        snprintf(drv.msg, sizeof drv.msg, "no usable CUDA driver: %s lacks %s (driver too old?)", name,    \
                 TL_STR(f));                                                                              \
        return;                                                                                           \
    }
    DRIVER_FUNCS(X)
#undef X
    drv.cuTensorMapEncodeTiled = (__typeof__(&cuTensorMapEncodeTiled))dlsym(drv.lib, "cuTensorMapEncodeTiled");
    CUresult r = drv.cuInit(0);
    drv.cuDriverGetVersion(&drv.version);
    if (r == CUDA_ERROR_NO_DEVICE) {
        drv.status = TILERT_ERROR_NO_DEVICE;
        snprintf(drv.msg, sizeof drv.msg, "no CUDA device: the driver (%s) sees no GPU", name);
    } else if (r == CUDA_ERROR_STUB_LIBRARY) {
        drv.status = TILERT_ERROR_NO_DRIVER;
        snprintf(drv.msg, sizeof drv.msg, "no CUDA driver: %s is the CUDA toolkit's stub library, not a driver", name);
    } else if (r != CUDA_SUCCESS) {
        drv.status = (r == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH || r == CUDA_ERROR_SYSTEM_NOT_READY) ? TILERT_ERROR_NO_DRIVER : TILERT_ERROR_CUDA;
        snprintf(drv.msg, sizeof drv.msg, "cuInit failed: %s (%s)", cu_errname(r), cu_errstr(r));
    } else {
        drv.status = TILERT_OK;
    }
}

/* TILERT_OK once the driver is initialized; otherwise sets the error. */
static tilert_status drv_get(void)
{
    pthread_once(&drv_once, drv_open);
    if (drv.status != TILERT_OK) return err(drv.status, "%s", drv.msg);
    return TILERT_OK;
}

static tilert_status cuerr(CUresult r, const char *what)
{
    tilert_status s = r == CUDA_ERROR_OUT_OF_MEMORY ? TILERT_ERROR_OUT_OF_MEMORY : TILERT_ERROR_CUDA;
    return err(s, "%s failed: %s (%s)", what, cu_errname(r), cu_errstr(r));
}
#define CU(call, what)                                                                                    \
    do {                                                                                                  \
        CUresult r_ = (call);                                                                             \
        if (r_ != CUDA_SUCCESS) return cuerr(r_, what);                                                   \
    } while (0)

tilert_status tilert_init(void) { return drv_get(); }

tilert_status tilert_device_count(int *count)
{
    if (!count) return err(TILERT_ERROR_INVALID_VALUE, "tilert_device_count: count is NULL");
    *count = 0;
    tilert_status s = drv_get();
    if (s) return s;
    CU(drv.cuDeviceGetCount(count), "cuDeviceGetCount");
    return TILERT_OK;
}

/* The current context, or device 0's primary context made current (kept for the process's life:
 * releasing it would free memory the program may still use). */
static tilert_status current_ctx(CUcontext *ctx, CUdevice *dev)
{
    tilert_status s = drv_get();
    if (s) return s;
    CU(drv.cuCtxGetCurrent(ctx), "cuCtxGetCurrent");
    if (!*ctx) {
        int n = 0;
        CU(drv.cuDeviceGetCount(&n), "cuDeviceGetCount");
        if (n == 0) return err(TILERT_ERROR_NO_DEVICE, "no CUDA device");
        CU(drv.cuDeviceGet(dev, 0), "cuDeviceGet");
        CU(drv.cuDevicePrimaryCtxRetain(ctx, *dev), "cuDevicePrimaryCtxRetain");
        CU(drv.cuCtxSetCurrent(*ctx), "cuCtxSetCurrent");
        return TILERT_OK;
    }
    CU(drv.cuCtxGetDevice(dev), "cuCtxGetDevice");
    return TILERT_OK;
}

static tilert_status dev_attr(CUdevice dev, CUdevice_attribute a, int *v, const char *what)
{
    CU(drv.cuDeviceGetAttribute(v, a, dev), what);
    return TILERT_OK;
}

static tilert_status device_info(CUdevice dev, tilert_device_info *out)
{
    tilert_status s;
    memset(out, 0, sizeof *out);
    out->ordinal = (int)dev;
    if ((s = dev_attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &out->cc_major, "cuDeviceGetAttribute")) ||
        (s = dev_attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &out->cc_minor, "cuDeviceGetAttribute")) ||
        (s = dev_attr(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &out->sm_count, "cuDeviceGetAttribute")) ||
        (s = dev_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &out->max_smem_per_block_optin,
                      "cuDeviceGetAttribute")))
        return s;
    CU(drv.cuDeviceGetName(out->name, (int)sizeof out->name, dev), "cuDeviceGetName");
    return TILERT_OK;
}

tilert_status tilert_device_get_info(tilert_device_info *out)
{
    if (!out) return err(TILERT_ERROR_INVALID_VALUE, "tilert_device_get_info: out is NULL");
    CUcontext ctx;
    CUdevice dev;
    tilert_status s = current_ctx(&ctx, &dev);
    return s ? s : device_info(dev, out);
}

tilert_status tilert_malloc(void **dptr, size_t bytes)
{
    if (!dptr) return err(TILERT_ERROR_INVALID_VALUE, "tilert_malloc: dptr is NULL");
    *dptr = NULL;
    CUcontext ctx;
    CUdevice dev;
    tilert_status s = current_ctx(&ctx, &dev);
    if (s) return s;
    CUdeviceptr p = 0;
    CU(drv.cuMemAlloc(&p, bytes ? bytes : 1), "cuMemAlloc");
    *dptr = (void *)(uintptr_t)p;
    return TILERT_OK;
}
tilert_status tilert_free(void *dptr)
{
    CUcontext ctx;
    CUdevice dev;
    tilert_status s = current_ctx(&ctx, &dev);
    if (s || !dptr) return s;
    CU(drv.cuMemFree((CUdeviceptr)(uintptr_t)dptr), "cuMemFree");
    return TILERT_OK;
}
tilert_status tilert_memcpy_htod(void *dst, const void *src, size_t bytes)
{
    CUcontext ctx;
    CUdevice dev;
    tilert_status s = current_ctx(&ctx, &dev);
    if (s) return s;
    CU(drv.cuMemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, bytes), "cuMemcpyHtoD");
    return TILERT_OK;
}
tilert_status tilert_memcpy_dtoh(void *dst, const void *src, size_t bytes)
{
    CUcontext ctx;
    CUdevice dev;
    tilert_status s = current_ctx(&ctx, &dev);
    if (s) return s;
    CU(drv.cuMemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src, bytes), "cuMemcpyDtoH");
    return TILERT_OK;
}
tilert_status tilert_memset_d8(void *dst, unsigned char value, size_t bytes)
{
    CUcontext ctx;
    CUdevice dev;
    tilert_status s = current_ctx(&ctx, &dev);
    if (s) return s;
    CU(drv.cuMemsetD8((CUdeviceptr)(uintptr_t)dst, value, bytes), "cuMemsetD8");
    return TILERT_OK;
}
tilert_status tilert_stream_synchronize(void *stream)
{
    CUcontext ctx;
    CUdevice dev;
    tilert_status s = current_ctx(&ctx, &dev);
    if (s) return s;
    CU(drv.cuStreamSynchronize((CUstream)stream), "cuStreamSynchronize (an earlier launch may have failed)");
    return TILERT_OK;
}

/* ---- modules ------------------------------------------------------------------------ */

/* The last TMA_CACHE_WAYS tensor maps built for one TMA descriptor of a kernel, and what
 * each was built from.  Encoding is a pure function of its arguments, so a map whose
 * arguments compare equal (memcmp of tilert_tma_encode: address, dims, strides, box,
 * modes) is the same map.  Several ways serve ping-ponged buffers; replacement is
 * round robin. */
#define TMA_CACHE_WAYS 4
typedef struct TmaCache {
    struct {
        bool valid;
        tilert_tma_encode key;
        uint64_t map[16];
    } way[TMA_CACHE_WAYS];
    uint32_t next;   /* the way the next miss replaces */
} TmaCache;

struct tilert_kernel {
    tilert_module *mod;
    const tilert_meta_kernel *meta;
    CUfunction fn;          /* set once under mod->lock, before ready */
    atomic_bool ready;      /* release/acquire: a launch that sees it set sees fn */
    uint32_t ntma;          /* TMA descriptors of all its parameters */
    TmaCache *tma_cache;    /* ntma entries, in kernel-ABI order; under mod->tma_lock */
};

struct tilert_module {
    tilert_meta meta;
    tilert_kernel *kernels;
    char arch[16];          /* "sm_90a": every kernel's (they agree) */
    uint16_t sm;
    uint8_t arch_flags;
    bool inspect_only;
    CUmodule cumod;
    CUcontext ctx;
    CUdevice dev;
    tilert_device_info info;
    pthread_mutex_t lock;
    pthread_mutex_t tma_lock;   /* the kernels' TMA caches */
    TmaCache *tma_caches;       /* every kernel's, one allocation */
};

/* Checks and reads the image into a new module (no driver). */
static tilert_status open_image(const void *image, size_t size, const char *what, tilert_module **out)
{
    char e[512];
    tilert_elf_info ei;
    tilert_status s = tilert_elf_inspect(image, size, &ei, e, sizeof e);
    if (s) return err(s, "%s: %s", what, e);
    tilert_module *m = calloc(1, sizeof *m);
    if (!m) return err(TILERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", what);
    if (!tilert_meta_parse(ei.meta, ei.meta_len, &m->meta, e, sizeof e)) {
        free(m);
        return err(TILERT_ERROR_BAD_METADATA, "%s: %s", what, e);
    }
    const tilert_meta_kernel *k0 = &m->meta.kernels[0];
    m->sm = k0->sm;
    m->arch_flags = k0->arch_flags;
    tilert_meta_format_arch(m->sm, m->arch_flags, m->arch, sizeof m->arch);
    for (uint32_t i = 0; i < m->meta.nkernels; i++) {
        const tilert_meta_kernel *k = &m->meta.kernels[i];
        if (k->sm != m->sm || k->arch_flags != m->arch_flags || k->sm != ei.sm ||
            (ei.arch_specific && !(k->arch_flags & TILERT_META_ARCH_SPECIFIC))) {
            char ka[16];
            tilert_meta_format_arch(k->sm, k->arch_flags, ka, sizeof ka);
            s = err(TILERT_ERROR_ARCH_MISMATCH, "%s: kernel '%s' metadata says %s, but the cubin's code is for sm_%u%s",
                    what, k->symbol, ka, ei.sm, ei.arch_specific ? "a" : "");
            tilert_meta_free(&m->meta);
            free(m);
            return s;
        }
    }
    m->kernels = calloc(m->meta.nkernels, sizeof *m->kernels);
    if (!m->kernels) {
        tilert_meta_free(&m->meta);
        free(m);
        return err(TILERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", what);
    }
    uint32_t ntma_all = 0;
    for (uint32_t i = 0; i < m->meta.nkernels; i++) {
        const tilert_meta_kernel *mk = &m->meta.kernels[i];
        m->kernels[i].mod = m;
        m->kernels[i].meta = mk;
        m->kernels[i].fn = NULL;
        atomic_init(&m->kernels[i].ready, false);
        for (uint32_t p = 0; p < mk->nparams; p++) m->kernels[i].ntma += mk->params[p].ntma;
        ntma_all += m->kernels[i].ntma;
    }
    if (ntma_all) {
        m->tma_caches = calloc(ntma_all, sizeof *m->tma_caches);
        if (!m->tma_caches) {
            free(m->kernels);
            tilert_meta_free(&m->meta);
            free(m);
            return err(TILERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", what);
        }
        TmaCache *c = m->tma_caches;
        for (uint32_t i = 0; i < m->meta.nkernels; i++) {
            m->kernels[i].tma_cache = m->kernels[i].ntma ? c : NULL;
            c += m->kernels[i].ntma;
        }
    }
    pthread_mutex_init(&m->lock, NULL);
    pthread_mutex_init(&m->tma_lock, NULL);
    *out = m;
    return TILERT_OK;
}

static void free_module(tilert_module *m)
{
    pthread_mutex_destroy(&m->lock);
    pthread_mutex_destroy(&m->tma_lock);
    free(m->tma_caches);
    free(m->kernels);
    tilert_meta_free(&m->meta);
    free(m);
}

tilert_status tilert_module_check_arch(const tilert_module *m, int cc_major, int cc_minor)
{
    if (!m) return err(TILERT_ERROR_INVALID_VALUE, "tilert_module_check_arch: module is NULL");
    int major = m->sm / 10, minor = m->sm % 10;
    bool exact = (m->arch_flags & TILERT_META_ARCH_SPECIFIC) != 0;
    bool ok = major == cc_major && (exact ? minor == cc_minor : minor <= cc_minor);
    if (ok) return TILERT_OK;
    return err(TILERT_ERROR_ARCH_MISMATCH,
               "the cubin was built for %s and does not run on this GPU (compute capability %d.%d, sm_%d%d); "
               "rebuild with tilec --arch=sm_%d%d%s",
               m->arch, cc_major, cc_minor, cc_major, cc_minor, cc_major, cc_minor, exact ? "a" : "");
}

static tilert_status load(const void *image, size_t size, const char *what, bool inspect, tilert_module **out)
{
    if (!out) return err(TILERT_ERROR_INVALID_VALUE, "%s: out is NULL", what);
    *out = NULL;
    if (!image && size) return err(TILERT_ERROR_INVALID_VALUE, "%s: image is NULL", what);
    tilert_module *m = NULL;
    tilert_status s = open_image(image, size, what, &m);
    if (s) return s;
    m->inspect_only = inspect;
    if (!inspect) {
        if ((s = current_ctx(&m->ctx, &m->dev)) || (s = device_info(m->dev, &m->info))) {
            free_module(m);
            return s;
        }
        if ((s = tilert_module_check_arch(m, m->info.cc_major, m->info.cc_minor))) {
            char msg[sizeof last_error];
            snprintf(msg, sizeof msg, "%s", last_error);
            s = err(s, "%s: %s (device %d: %s)", what, msg, m->info.ordinal, m->info.name);
            free_module(m);
            return s;
        }
        CUresult r = drv.cuModuleLoadData(&m->cumod, image);
        if (r != CUDA_SUCCESS) {
            s = err(TILERT_ERROR_CUDA, "%s: cuModuleLoadData failed: %s (%s); driver version %d.%d", what,
                    cu_errname(r), cu_errstr(r), drv.version / 1000, drv.version % 1000 / 10);
            free_module(m);
            return s;
        }
    }
    *out = m;
    return TILERT_OK;
}

tilert_status tilert_module_load_data(const void *image, size_t size, tilert_module **out)
{
    return load(image, size, "tilert_module_load_data", false, out);
}
tilert_status tilert_module_inspect_data(const void *image, size_t size, tilert_module **out)
{
    return load(image, size, "tilert_module_inspect_data", true, out);
}

tilert_status tilert_module_load_best(const void *const *images, const size_t *sizes, int n, tilert_module **out,
                                      int *chosen)
{
    if (!out) return err(TILERT_ERROR_INVALID_VALUE, "tilert_module_load_best: out is NULL");
    *out = NULL;
    if (!images || !sizes || n <= 0)
        return err(TILERT_ERROR_INVALID_VALUE, "tilert_module_load_best: no images");
    tilert_device_info info;
    tilert_status s = tilert_device_get_info(&info);
    if (s) return s;
    int best = -1, best_score = -1;
    char archs[256] = "";
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        tilert_module *m = NULL;
        if ((s = tilert_module_inspect_data(images[i], sizes[i], &m))) {
            char msg[sizeof last_error];
            snprintf(msg, sizeof msg, "%s", last_error);
            return err(s, "tilert_module_load_best: image %d: %s", i, msg);
        }
        if (used < sizeof archs) {
            int w = snprintf(archs + used, sizeof archs - used, "%s%s", i ? ", " : "", m->arch);
            used = w < 0 ? sizeof archs : used + (size_t)w;
        }
        /* the newest that runs here; of two for one SM version, the arch-specific one (sm_90a) */
        int score = (int)m->sm * 2 + ((m->arch_flags & TILERT_META_ARCH_SPECIFIC) != 0);
        if (tilert_module_check_arch(m, info.cc_major, info.cc_minor) == TILERT_OK && score > best_score) {
            best = i;
            best_score = score;
        }
        tilert_module_unload(m);
    }
    if (best < 0)
        return err(TILERT_ERROR_ARCH_MISMATCH, "none of the cubins (%s) runs on this GPU (device %d: %s, compute "
                   "capability %d.%d); rebuild with tilec --arch=sm_%d%d%s", archs, info.ordinal, info.name,
                   info.cc_major, info.cc_minor, info.cc_major, info.cc_minor, info.cc_major >= 9 ? "a" : "");
    if ((s = tilert_module_load_data(images[best], sizes[best], out))) return s;
    if (chosen) *chosen = best;
    return TILERT_OK;
}

static tilert_status load_file(const char *path, bool inspect, tilert_module **out)
{
    if (!out) return err(TILERT_ERROR_INVALID_VALUE, "tilert_module_load_file: out is NULL");
    *out = NULL;
    if (!path) return err(TILERT_ERROR_INVALID_VALUE, "tilert_module_load_file: path is NULL");
    FILE *f = fopen(path, "rb");
    if (!f) {
        char eb[128];
        return err(TILERT_ERROR_IO, "%s: cannot open: %s", path, strerror_r(errno, eb, sizeof eb));
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 1 << 16;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return err(TILERT_ERROR_OUT_OF_MEMORY, "%s: out of memory reading the file", path);
            }
            buf = nb;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return err(TILERT_ERROR_IO, "%s: read error", path);
    }
    tilert_status s = load(buf, len, path, inspect, out);
    free(buf);
    return s;
}
tilert_status tilert_module_load_file(const char *path, tilert_module **out) { return load_file(path, false, out); }
tilert_status tilert_module_inspect_file(const char *path, tilert_module **out) { return load_file(path, true, out); }

tilert_status tilert_module_unload(tilert_module *m)
{
    if (!m) return TILERT_OK;
    tilert_status s = TILERT_OK;
    if (m->cumod) {
        /* cuModuleUnload acts on the module's context: make it current for the call */
        CUresult r = drv.cuCtxPushCurrent(m->ctx);
        if (r == CUDA_SUCCESS) {
            r = drv.cuModuleUnload(m->cumod);
            CUcontext popped;
            drv.cuCtxPopCurrent(&popped);
        }
        if (r != CUDA_SUCCESS) s = cuerr(r, "cuModuleUnload");
    }
    free_module(m);
    return s;
}

const char *tilert_module_arch(const tilert_module *m) { return m ? m->arch : ""; }
int tilert_module_kernel_count(const tilert_module *m) { return m ? (int)m->meta.nkernels : 0; }
tilert_kernel *tilert_module_kernel_at(tilert_module *m, int i)
{
    if (!m || i < 0 || (uint32_t)i >= m->meta.nkernels) {
        err(TILERT_ERROR_INVALID_VALUE, "tilert_module_kernel_at: index %d out of range (%d kernels)", i,
            tilert_module_kernel_count(m));
        return NULL;
    }
    return &m->kernels[i];
}

/* ---- kernels ------------------------------------------------------------------------ */

/* Resolves the CUfunction and raises the dynamic shared-memory limit, once. */
static tilert_status kernel_ready(tilert_kernel *k)
{
    tilert_module *m = k->mod;
    if (m->inspect_only)
        return err(TILERT_ERROR_INSPECT_ONLY, "kernel '%s': the module was opened for inspection only; load it with "
                   "tilert_module_load_file/data to launch", k->meta->symbol);
    pthread_mutex_lock(&m->lock);
    tilert_status s = TILERT_OK;
    if (!atomic_load_explicit(&k->ready, memory_order_relaxed)) {
        const tilert_meta_kernel *mk = k->meta;
        CUfunction fn;
        CUresult r = drv.cuModuleGetFunction(&fn, m->cumod, mk->symbol);
        int maxthreads = 0, static_smem = 0;
        if (r == CUDA_ERROR_NOT_FOUND) {
            s = err(TILERT_ERROR_BAD_METADATA, "kernel '%s' is in the metadata but not in the cubin", mk->symbol);
        } else if (r != CUDA_SUCCESS) {
            s = cuerr(r, "cuModuleGetFunction");
        } else if ((r = drv.cuFuncGetAttribute(&maxthreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn)) ||
                   (r = drv.cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn))) {
            s = cuerr(r, "cuFuncGetAttribute");
        } else if ((int)mk->warps * 32 > maxthreads) {
            s = err(TILERT_ERROR_RESOURCES, "kernel '%s' needs %d threads per block; with its registers the device "
                    "allows %d", mk->symbol, mk->warps * 32, maxthreads);
        } else if ((uint64_t)static_smem + mk->smem_dynamic > (uint64_t)m->info.max_smem_per_block_optin) {
            s = err(TILERT_ERROR_RESOURCES, "kernel '%s' needs %d + %u bytes of shared memory; %s allows %d per block",
                    mk->symbol, static_smem, mk->smem_dynamic, m->info.name, m->info.max_smem_per_block_optin);
        } else if (mk->smem_dynamic > 48 * 1024 &&
                   (r = drv.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                               (int)mk->smem_dynamic))) {
            s = cuerr(r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
        } else {
            k->fn = fn;
            atomic_store_explicit(&k->ready, true, memory_order_release);
        }
    }
    pthread_mutex_unlock(&m->lock);
    return s;
}

tilert_status tilert_kernel_get(tilert_module *m, const char *name, tilert_kernel **out)
{
    if (!m || !name || !out) return err(TILERT_ERROR_INVALID_VALUE, "tilert_kernel_get: NULL module, name or out");
    *out = NULL;
    tilert_kernel *k = NULL;
    for (uint32_t i = 0; i < m->meta.nkernels && !k; i++)
        if (strcmp(m->meta.kernels[i].symbol, name) == 0) k = &m->kernels[i];
    for (uint32_t i = 0; i < m->meta.nkernels && !k; i++)
        if (strcmp(m->meta.kernels[i].source_name, name) == 0) k = &m->kernels[i];
    if (!k) {
        char list[700];
        size_t n = 0;
        list[0] = 0;
        for (uint32_t i = 0; i < m->meta.nkernels && n < sizeof list - 8; i++) {
            int w = snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", m->meta.kernels[i].symbol);
            if (w < 0 || (size_t)w >= sizeof list - n) {
                snprintf(list + n, sizeof list - n, ", ...");
                break;
            }
            n += (size_t)w;
        }
        return err(TILERT_ERROR_NOT_FOUND, "no kernel '%s' in the module; it has: %s", name, list);
    }
    if (!m->inspect_only) {
        tilert_status s = kernel_ready(k);
        if (s) return s;
    }
    *out = k;
    return TILERT_OK;
}

tilert_status tilert_kernel_get_info(const tilert_kernel *k, tilert_kernel_info *out)
{
    if (!k || !out) return err(TILERT_ERROR_INVALID_VALUE, "tilert_kernel_get_info: NULL kernel or out");
    const tilert_meta_kernel *mk = k->meta;
    *out = (tilert_kernel_info){mk->symbol, mk->source_name, k->mod->arch, (int)mk->nparams, (int)mk->nspecs,
                                mk->warps, mk->smem_static, mk->smem_dynamic, mk->grid_rank};
    return TILERT_OK;
}

tilert_status tilert_kernel_param(const tilert_kernel *k, int i, tilert_param_info *out)
{
    if (!k || !out) return err(TILERT_ERROR_INVALID_VALUE, "tilert_kernel_param: NULL kernel or out");
    if (i < 0 || (uint32_t)i >= k->meta->nparams)
        return err(TILERT_ERROR_INVALID_VALUE, "tilert_kernel_param: index %d out of range (%u parameters)", i,
                   k->meta->nparams);
    const tilert_meta_param *p = &k->meta->params[i];
    *out = (tilert_param_info){p->name, (tilert_param_kind)p->kind, (tilert_dtype)p->dtype, p->rank, p->ntma,
                               (p->flags & TILERT_META_PARAM_TMA_OPTIONAL) != 0};
    return TILERT_OK;
}

tilert_status tilert_kernel_param_tma(const tilert_kernel *k, int i, int j, tilert_tma_info *out)
{
    if (!k || !out) return err(TILERT_ERROR_INVALID_VALUE, "tilert_kernel_param_tma: NULL kernel or out");
    if (i < 0 || (uint32_t)i >= k->meta->nparams)
        return err(TILERT_ERROR_INVALID_VALUE, "tilert_kernel_param_tma: parameter %d out of range (%u parameters)", i,
                   k->meta->nparams);
    const tilert_meta_param *p = &k->meta->params[i];
    if (j < 0 || j >= p->ntma)
        return err(TILERT_ERROR_INVALID_VALUE, "tilert_kernel_param_tma: descriptor %d out of range (parameter '%s' "
                   "has %u)", j, p->name, p->ntma);
    const tilert_meta_tma *t = &p->tma[j];
    memset(out, 0, sizeof *out);
    out->dtype = (tilert_dtype)t->dtype;
    out->rank = t->rank;
    for (int d = 0; d < t->rank; d++) {
        out->box[d] = t->box[t->rank - 1 - d];
        out->elem_stride[d] = t->elem_stride[t->rank - 1 - d];
    }
    out->swizzle_bytes = t->swizzle ? 16 << t->swizzle : 0;
    out->l2_promotion_bytes = t->l2_promotion ? 32 << t->l2_promotion : 0;
    out->oob_nan = t->oob_fill == TILERT_TMA_OOB_NAN;
    return TILERT_OK;
}

tilert_status tilert_kernel_spec(const tilert_kernel *k, int i, const char **name, const char **value)
{
    if (!k || !name || !value) return err(TILERT_ERROR_INVALID_VALUE, "tilert_kernel_spec: NULL argument");
    if (i < 0 || (uint32_t)i >= k->meta->nspecs)
        return err(TILERT_ERROR_INVALID_VALUE, "tilert_kernel_spec: index %d out of range (%u values)", i,
                   k->meta->nspecs);
    *name = k->meta->specs[i].name;
    *value = k->meta->specs[i].value;
    return TILERT_OK;
}

/* ---- argument checks (no driver) --------------------------------------------------- */

static void describe_param(char *b, size_t n, const tilert_meta_param *p)
{
    const char *dt = tilert_dtype_name((tilert_dtype)p->dtype);
    if (p->kind == TILERT_PARAM_TENSOR) snprintf(b, n, "tensor<%s, %u>", dt, p->rank);
    else if (p->kind == TILERT_PARAM_PTR) snprintf(b, n, "ptr<%s>", dt);
    else snprintf(b, n, "%s", dt);
}

static void describe_arg(char *b, size_t n, const tilert_arg *a)
{
    const char *dt = tilert_dtype_name(a->dtype);
    switch (a->kind) {
    case TILERT_ARG_TENSOR: snprintf(b, n, "a tensor<%s, %d>", tilert_dtype_name(a->v.tensor.dtype), a->v.tensor.rank); break;
    case TILERT_ARG_PTR: snprintf(b, n, "a ptr<%s>", dt); break;
    case TILERT_ARG_INT: snprintf(b, n, "an integer %s", dt); break;
    case TILERT_ARG_FLOAT: snprintf(b, n, "a float %s", dt); break;
    case TILERT_ARG_BITS: snprintf(b, n, "the bits of a %s", dt); break;
    default: snprintf(b, n, "an argument of unknown kind %d", (int)a->kind); break;
    }
}

static bool int_fits(int64_t v, bool v_unsigned64, tilert_dtype dt)
{
    unsigned bits = (unsigned)tilert_dtype_size(dt) * 8;
    if (dt == TILERT_I1) return !v_unsigned64 ? (v == 0 || v == 1) : ((uint64_t)v <= 1);
    if (v_unsigned64 && v < 0) return dt == TILERT_U64; /* a u64 above INT64_MAX */
    if (tilert_dtype_is_signed(dt)) return bits == 64 || (v >= -(INT64_C(1) << (bits - 1)) && v < (INT64_C(1) << (bits - 1)));
    return v >= 0 && (bits == 64 || v < (INT64_C(1) << bits));
}

/* The kernel's PTX parameters built from checked arguments: values in slots (tensor maps in
 * maps), pointers to them in ptrs.  map_slot[j] is the PTX parameter of TMA descriptor j. */
typedef struct KParams {
    uint32_t n, nmaps;
    uint64_t slots[TILERT_META_MAX_KPARAMS];
    void *ptrs[TILERT_META_MAX_KPARAMS];
    uint32_t map_slot[TILERT_META_MAX_TMA];
    CUtensorMap maps[TILERT_META_MAX_TMA];   /* 64-byte aligned, as the driver wants */
} KParams;

/* "Q [2, 16, 200, 128], K [2, 3, 300, 128]": the arguments that code reads, with their values. */
static void describe_reads(const tilert_meta_kernel *mk, const uint8_t *code, uint32_t len, const tilert_arg *args,
                           char *b, size_t n)
{
    bool seen[256] = {false};
    size_t at = 0;
    b[0] = 0;
    for (uint32_t pc = 0; pc < len;) {
        uint8_t op = code[pc];
        uint32_t step = op == TILERT_GOP_PUSH ? 9 : op == TILERT_GOP_ARG || op == TILERT_GOP_WRAP ? 2 :
                        op == TILERT_GOP_SHAPE || op == TILERT_GOP_STRIDE ? 3 : 1;
        if ((op == TILERT_GOP_ARG || op == TILERT_GOP_SHAPE || op == TILERT_GOP_STRIDE) && !seen[code[pc + 1]]) {
            uint8_t p = code[pc + 1];
            seen[p] = true;
            const tilert_arg *a = &args[p];
            int w = 0;
            if (at < n && op == TILERT_GOP_ARG) {
                w = snprintf(b + at, n - at, "%s%s = %lld", at ? ", " : "", mk->params[p].name,
                             (long long)tilert_meta_wrap((int64_t)a->v.u, (tilert_dtype)mk->params[p].dtype));
            } else if (at < n) {
                const char *what = op == TILERT_GOP_SHAPE ? "shape" : "stride";
                const int64_t *v = op == TILERT_GOP_SHAPE ? a->v.tensor.shape : a->v.tensor.stride;
                w = snprintf(b + at, n - at, "%s%s.%s [", at ? ", " : "", mk->params[p].name, what);
                for (int d = 0; d < a->v.tensor.rank && w >= 0 && at + (size_t)w < n; d++)
                    w += snprintf(b + at + (size_t)w, n - at - (size_t)w, "%s%lld", d ? ", " : "", (long long)v[d]);
                if (w >= 0 && at + (size_t)w < n) w += snprintf(b + at + (size_t)w, n - at - (size_t)w, "]");
            }
            at += w > 0 ? (size_t)w : 0;
        }
        pc += step;
    }
}

/* The kernel's requires(...) clauses over arguments that passed the type checks. */
static tilert_status check_requires(const tilert_kernel *k, const tilert_arg *args)
{
    const tilert_meta_kernel *mk = k->meta;
    if (!mk->nrequires) return TILERT_OK;
    char e[400];
    int failed;
    if (tilert_meta_eval_requires(mk, args, k->mod->info.sm_count, &failed, e, sizeof e)) return TILERT_OK;
    if (failed < 0) return err(TILERT_ERROR_REQUIRES, "kernel '%s': %s", mk->symbol, e);
    char reads[400];
    const tilert_meta_require *q = &mk->requires[failed];
    describe_reads(mk, q->code, q->code_len, args, reads, sizeof reads);
    return err(TILERT_ERROR_REQUIRES, "kernel '%s': requires(...) does not hold: %s%s%s%s", mk->symbol, q->message,
               reads[0] ? " (" : "", reads, reads[0] ? ")" : "");
}

static tilert_status check_args(const tilert_kernel *k, const tilert_arg *args, int nargs, KParams *kp)
{
    if (!k) return err(TILERT_ERROR_INVALID_VALUE, "kernel is NULL");
    const tilert_meta_kernel *mk = k->meta;
    if (nargs < 0 || (uint32_t)nargs != mk->nparams) {
        char sig[400];
        size_t n = 0;
        sig[0] = 0;
        for (uint32_t i = 0; i < mk->nparams && n < sizeof sig - 80; i++) {
            char d[48];
            describe_param(d, sizeof d, &mk->params[i]);
            n += (size_t)snprintf(sig + n, sizeof sig - n, "%s%s: %s", i ? ", " : "", mk->params[i].name, d);
        }
        return err(TILERT_ERROR_ARG_COUNT, "kernel '%s' takes %u arguments (%s), got %d", mk->symbol, mk->nparams, sig,
                   nargs);
    }
    if (mk->nparams && !args) return err(TILERT_ERROR_INVALID_VALUE, "kernel '%s': args is NULL", mk->symbol);
    if (kp) kp->n = kp->nmaps = 0;
    for (uint32_t i = 0; i < mk->nparams; i++) {
        const tilert_meta_param *p = &mk->params[i];
        const tilert_arg *a = &args[i];
        tilert_dtype pdt = (tilert_dtype)p->dtype;
        size_t esz = tilert_dtype_size(pdt);
        char want[48], got[64];
        describe_param(want, sizeof want, p);
        describe_arg(got, sizeof got, a);
#define BAD(code, ...)                                                                                    \
    do {                                                                                                  \
        char m_[400];                                                                                     \
        snprintf(m_, sizeof m_, __VA_ARGS__);                                                             \
        return err(code, "kernel '%s', argument %u ('%s'): %s", mk->symbol, i, p->name, m_);              \
    } while (0)
        uint64_t val = 0;
        if (p->kind == TILERT_PARAM_TENSOR) {
            if (a->kind != TILERT_ARG_TENSOR) BAD(TILERT_ERROR_ARG_TYPE, "expected %s, got %s", want, got);
            const tilert_tensor *t = &a->v.tensor;
            if (t->dtype != pdt || t->rank != p->rank) BAD(TILERT_ERROR_ARG_TYPE, "expected %s, got %s", want, got);
            uintptr_t addr = (uintptr_t)t->data;
            if (addr % 16 && p->ntma) /* TMA's rule, the same 16 */
                BAD(TILERT_ERROR_ARG_ALIGN, "TMA needs the base address 16-byte aligned, got 0x%llx",
                    (unsigned long long)addr);
            if (addr % 16) /* 16 is a multiple of every element size */
                BAD(TILERT_ERROR_ARG_ALIGN, "tensor data %p is not 16-byte aligned (tensors need 16 bytes)", t->data);
            for (int d = 0; d < t->rank; d++)
                if (t->shape[d] < 0) BAD(TILERT_ERROR_ARG_VALUE, "shape[%d] = %lld is negative", d, (long long)t->shape[d]);
            if (kp) {
                kp->slots[kp->n++] = (uint64_t)addr;
                for (int d = 0; d < t->rank; d++) kp->slots[kp->n++] = (uint64_t)t->shape[d];
                for (int d = 0; d < t->rank; d++) kp->slots[kp->n++] = (uint64_t)t->stride[d];
                for (unsigned j = 0; j < p->ntma; j++) kp->map_slot[kp->nmaps++] = kp->n++;
            }
            continue;
        }
        if (p->kind == TILERT_PARAM_PTR) {
            if (a->kind != TILERT_ARG_PTR || a->dtype != pdt) BAD(TILERT_ERROR_ARG_TYPE, "expected %s, got %s", want, got);
            uintptr_t addr = (uintptr_t)a->v.ptr;
            if (addr % esz)
                BAD(TILERT_ERROR_ARG_ALIGN, "pointer %p is not aligned to its element size (%zu bytes)", a->v.ptr, esz);
            val = (uint64_t)addr;
        } else if (a->kind == TILERT_ARG_INT && tilert_dtype_is_int(a->dtype) && tilert_dtype_is_int(pdt)) {
            if (!int_fits(a->v.i, a->dtype == TILERT_U64, pdt)) {
                if (a->dtype == TILERT_U64) BAD(TILERT_ERROR_ARG_VALUE, "%llu does not fit %s", (unsigned long long)a->v.u, want);
                BAD(TILERT_ERROR_ARG_VALUE, "%lld does not fit %s", (long long)a->v.i, want);
            }
            val = a->v.u;
        } else if (a->kind == TILERT_ARG_FLOAT && (a->dtype == TILERT_F32 || a->dtype == TILERT_F64) &&
                   (pdt == TILERT_F16 || pdt == TILERT_BF16 || pdt == TILERT_F32 || pdt == TILERT_F64)) {
            double x = a->v.f;
            if (pdt == TILERT_F64) memcpy(&val, &x, 8);
            else if (pdt == TILERT_F32) {
                float f = (float)x;
                uint32_t b;
                memcpy(&b, &f, 4);
                val = b;
            } else val = pdt == TILERT_F16 ? tilert_f64_to_f16_bits(x) : tilert_f64_to_bf16_bits(x);
        } else if (a->kind == TILERT_ARG_BITS && a->dtype == pdt) {
            if (esz < 8 && (a->v.bits >> (esz * 8)) != 0)
                BAD(TILERT_ERROR_ARG_VALUE, "bit pattern 0x%llx is wider than %s", (unsigned long long)a->v.bits, want);
            val = a->v.bits;
        } else {
            BAD(TILERT_ERROR_ARG_TYPE, "expected %s, got %s%s", want, got,
                pdt == TILERT_F8E4M3 || pdt == TILERT_F8E5M2 ? " (pass fp8 scalars with tilert_arg_bits)" : "");
        }
        if (kp) kp->slots[kp->n++] = val;
#undef BAD
    }
    return check_requires(k, args);
}

static tilert_status compute_grid(const tilert_kernel *k, const tilert_arg *args, uint32_t grid[3])
{
    const tilert_meta_kernel *mk = k->meta;
    if (mk->grid_rank == 0)
        return err(TILERT_ERROR_NO_GRID, "kernel '%s' has no grid(...) clause: launch it with tilert_launch_grid",
                   mk->symbol);
    int64_t g[3] = {1, 1, 1};
    char e[256];
    if (!tilert_meta_eval_grid(mk, args, k->mod->info.sm_count, g, e, sizeof e)) return err(TILERT_ERROR_GRID, "kernel '%s': %s", mk->symbol, e);
    static const int64_t lim[3] = {INT32_MAX, 65535, 65535};
    for (int d = 0; d < 3; d++) {
        if (g[d] < 0 || g[d] > lim[d])
            return err(TILERT_ERROR_GRID, "kernel '%s': grid %c = %lld is outside [0, %lld]", mk->symbol, "xyz"[d],
                       (long long)g[d], (long long)lim[d]);
        grid[d] = (uint32_t)g[d];
    }
    return TILERT_OK;
}

/* ---- TMA descriptors --------------------------------------------------------------- */

/* cuTensorMapEncodeTiled's arguments for every TMA descriptor of k (enc[j] in kernel-ABI order),
 * from arguments that passed check_args; the message names the argument and the broken rule.
 * A tensor whose descriptors are optional breaks no rule: where one of its descriptors
 * cannot be built, none[j] is set for all of them (the launch passes zeros there). */
static tilert_status tma_prepare_all(const tilert_kernel *k, const tilert_arg *args, tilert_tma_encode *enc,
                                     bool *none)
{
    const tilert_meta_kernel *mk = k->meta;
    uint32_t j = 0;
    for (uint32_t i = 0; i < mk->nparams; i++) {
        const tilert_meta_param *p = &mk->params[i];
        bool fail = false;
        for (unsigned d = 0; d < p->ntma && !fail; d++) {
            char e[400], desc[120];
            tilert_status s = tilert_tma_prepare(p, &p->tma[d], &args[i].v.tensor, &enc[j + d], e, sizeof e);
            if (s && !(p->flags & TILERT_META_PARAM_TMA_OPTIONAL)) {
                tilert_meta_describe_tma(&p->tma[d], desc, sizeof desc);
                return err(s, "kernel '%s', argument %u ('%s'), TMA descriptor %u (%s): %s", mk->symbol, i, p->name,
                           d, desc, e);
            }
            fail = s != TILERT_OK;
        }
        for (unsigned d = 0; d < p->ntma; d++) none[j++] = fail;
    }
    return TILERT_OK;
}

/* The tensor map of descriptor j, from the kernel's cache or the driver (the thin wrapper). */
static tilert_status tma_encode(tilert_kernel *k, uint32_t j, const tilert_tma_encode *e, CUtensorMap *out)
{
    tilert_module *m = k->mod;
    TmaCache *c = &k->tma_cache[j];
    bool hit = false;
    pthread_mutex_lock(&m->tma_lock);
    for (int w = 0; w < TMA_CACHE_WAYS && !hit; w++)
        if (c->way[w].valid && memcmp(&c->way[w].key, e, sizeof *e) == 0) {
            memcpy(out, c->way[w].map, sizeof *out);
            hit = true;
        }
    pthread_mutex_unlock(&m->tma_lock);
    if (hit) return TILERT_OK;
    if (!drv.cuTensorMapEncodeTiled)
        return err(TILERT_ERROR_NO_DRIVER, "kernel '%s' takes TMA descriptors, but the CUDA driver (version %d.%d) "
                   "lacks cuTensorMapEncodeTiled (CUDA 12 or later needed)", k->meta->symbol, drv.version / 1000,
                   drv.version % 1000 / 10);
    cuuint64_t dims[TILERT_TMA_MAX_RANK], strides[TILERT_TMA_MAX_RANK - 1];
    cuuint32_t box[TILERT_TMA_MAX_RANK], es[TILERT_TMA_MAX_RANK];
    for (uint32_t i = 0; i < TILERT_TMA_MAX_RANK; i++) {
        dims[i] = e->dims[i];
        box[i] = e->box[i];
        es[i] = e->elem_strides[i];
        if (i < TILERT_TMA_MAX_RANK - 1) strides[i] = e->strides[i];
    }
    CUresult r = drv.cuTensorMapEncodeTiled(out, (CUtensorMapDataType)e->data_type, e->rank,
                                            (void *)(uintptr_t)e->address, dims, strides, box, es,
                                            (CUtensorMapInterleave)e->interleave, (CUtensorMapSwizzle)e->swizzle,
                                            (CUtensorMapL2promotion)e->l2_promotion,
                                            (CUtensorMapFloatOOBfill)e->oob_fill);
    if (r != CUDA_SUCCESS) {
        /* which argument: descriptor j's parameter */
        const tilert_meta_kernel *mk = k->meta;
        uint32_t i = 0, first = 0;
        while (i < mk->nparams && first + mk->params[i].ntma <= j) first += mk->params[i++].ntma;
        char a[400];
        tilert_tma_format(e, a, sizeof a);
        return err(TILERT_ERROR_CUDA, "kernel '%s', argument %u ('%s'), TMA descriptor %u: cuTensorMapEncodeTiled "
                   "failed: %s (%s); it was given %s", mk->symbol, i, i < mk->nparams ? mk->params[i].name : "?",
                   j - first, cu_errname(r), cu_errstr(r), a);
    }
    pthread_mutex_lock(&m->tma_lock);
    uint32_t w = c->next;
    c->next = (w + 1) % TMA_CACHE_WAYS;
    c->way[w].key = *e;
    memcpy(c->way[w].map, out, sizeof c->way[w].map);
    c->way[w].valid = true;
    pthread_mutex_unlock(&m->tma_lock);
    return TILERT_OK;
}

/* The maps of every descriptor of k into kp->maps (kernel-ABI order), from enc; an optional
 * tensor gets zeros for all of its maps where none[] says so or the driver refuses one. */
static tilert_status tma_build_all(tilert_kernel *k, const tilert_tma_encode *enc, const bool *none, KParams *kp)
{
    const tilert_meta_kernel *mk = k->meta;
    uint32_t j = 0;
    for (uint32_t i = 0; i < mk->nparams; i++) {
        const tilert_meta_param *p = &mk->params[i];
        bool zero = p->ntma && none[j];
        for (unsigned d = 0; d < p->ntma && !zero; d++) {
            tilert_status s = tma_encode(k, j + d, &enc[j + d], &kp->maps[j + d]);
            if (s && !(p->flags & TILERT_META_PARAM_TMA_OPTIONAL)) return s;
            zero = s != TILERT_OK;
        }
        if (zero) memset(&kp->maps[j], 0, sizeof kp->maps[0] * p->ntma);
        j += p->ntma;
    }
    return TILERT_OK;
}

tilert_status tilert_kernel_check(const tilert_kernel *k, const tilert_arg *args, int nargs, uint32_t grid[3])
{
    tilert_status s = check_args(k, args, nargs, NULL);
    if (s) return s;
    if (grid && (s = compute_grid(k, args, grid))) return s;
    if (k->ntma && (!grid || (grid[0] && grid[1] && grid[2]))) {
        tilert_tma_encode enc[TILERT_META_MAX_TMA];
        bool none[TILERT_META_MAX_TMA];
        return tma_prepare_all(k, args, enc, none);
    }
    return TILERT_OK;
}

/* ---- choosing a specialization ---------------------------------------------------------- */

tilert_status tilert_kernel_select(tilert_kernel *const *ks, int n, const tilert_arg *args, int nargs, int *index)
{
    if (!ks || n <= 0 || !index) return err(TILERT_ERROR_INVALID_VALUE, "tilert_kernel_select: no kernels or no index");
    for (int i = 0; i < n; i++)
        if (!ks[i]) return err(TILERT_ERROR_INVALID_VALUE, "tilert_kernel_select: kernel %d is NULL", i);
    int found = -1, second = -1;
    tilert_status first_s = TILERT_OK;
    char why[sizeof last_error] = "";
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        tilert_status s = check_args(ks[i], args, nargs, NULL);
        if (s == TILERT_OK) {
            if (found < 0) found = i;
            else if (second < 0) second = i;
            continue;
        }
        if (first_s == TILERT_OK) first_s = s;
        /* "; SYMBOL: why" per refusal, as much as fits */
        if (used < sizeof why) {
            int w = snprintf(why + used, sizeof why - used, "%s%s", used ? "; " : "", last_error);
            used = w < 0 ? sizeof why : used + (size_t)w;
        }
    }
    if (found >= 0 && second < 0) {
        *index = found;
        last_error[0] = 0;
        return TILERT_OK;
    }
    if (found >= 0)
        return err(TILERT_ERROR_ARG_TYPE, "the arguments do not determine the specialization: '%s' and '%s' both "
                   "take them (launch one of them by name)", ks[found]->meta->symbol, ks[second]->meta->symbol);
    return err(first_s, "no specialization takes these arguments: %s", why);
}

/* ---- launch ---------------------------------------------------------------------------- */

static tilert_status launch(tilert_kernel *k, void *stream, const uint32_t *grid_in, const tilert_arg *args, int nargs)
{
    KParams kp;
    tilert_status s = check_args(k, args, nargs, &kp);
    if (s) return s;
    uint32_t grid[3];
    if (grid_in) {
        static const uint32_t lim[3] = {INT32_MAX, 65535, 65535};
        for (int d = 0; d < 3; d++) {
            if (grid_in[d] > lim[d])
                return err(TILERT_ERROR_GRID, "kernel '%s': grid %c = %u is above %u", k->meta->symbol, "xyz"[d],
                           grid_in[d], lim[d]);
            grid[d] = grid_in[d];
        }
    } else if ((s = compute_grid(k, args, grid))) {
        return s;
    }
    /* the TMA rules are argument checks too: before the driver is asked anything */
    bool empty = grid[0] == 0 || grid[1] == 0 || grid[2] == 0;
    tilert_tma_encode enc[TILERT_META_MAX_TMA];
    bool none[TILERT_META_MAX_TMA];
    if (k->ntma && !empty && (s = tma_prepare_all(k, args, enc, none))) return s;
    if (k->mod->inspect_only || !atomic_load_explicit(&k->ready, memory_order_acquire)) {
        if ((s = kernel_ready(k))) return s;
    }
    if (empty) return TILERT_OK;
    tilert_module *m = k->mod;
    CUcontext cur = NULL;
    CU(drv.cuCtxGetCurrent(&cur), "cuCtxGetCurrent");
    if (!cur) {
        CU(drv.cuCtxSetCurrent(m->ctx), "cuCtxSetCurrent");
    } else if (cur != m->ctx) {
        CUdevice d = -1;
        drv.cuCtxGetDevice(&d);
        return err(TILERT_ERROR_CONTEXT, "kernel '%s': its module was loaded in the context of device %d (%s), but "
                   "the current context is another one (device %d); load the module once per device",
                   k->meta->symbol, m->info.ordinal, m->info.name, (int)d);
    }
    if (k->ntma && (s = tma_build_all(k, enc, none, &kp))) return s;
    for (uint32_t i = 0; i < kp.n; i++) kp.ptrs[i] = &kp.slots[i];
    for (uint32_t j = 0; j < kp.nmaps; j++) kp.ptrs[kp.map_slot[j]] = &kp.maps[j];
    CUresult r = drv.cuLaunchKernel(k->fn, grid[0], grid[1], grid[2], 32u * k->meta->warps, 1, 1,
                                    k->meta->smem_dynamic, (CUstream)stream, kp.ptrs, NULL);
    if (r != CUDA_SUCCESS) {
        return err(r == CUDA_ERROR_OUT_OF_MEMORY ? TILERT_ERROR_OUT_OF_MEMORY : TILERT_ERROR_CUDA,
                   "kernel '%s': cuLaunchKernel (grid %u x %u x %u, %u threads, %u bytes dynamic shared) failed: %s (%s)",
                   k->meta->symbol, grid[0], grid[1], grid[2], 32u * k->meta->warps, k->meta->smem_dynamic,
                   cu_errname(r), cu_errstr(r));
    }
    return TILERT_OK;
}

tilert_status tilert_launch(tilert_kernel *k, void *stream, const tilert_arg *args, int nargs)
{
    return launch(k, stream, NULL, args, nargs);
}

tilert_status tilert_launch_grid(tilert_kernel *k, void *stream, const uint32_t grid[3], const tilert_arg *args,
                                 int nargs)
{
    if (!grid) return err(TILERT_ERROR_INVALID_VALUE, "tilert_launch_grid: grid is NULL");
    return launch(k, stream, grid, args, nargs);
}
