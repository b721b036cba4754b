/* fake_cuda.c: a stand-in for libcuda.so.1 (loaded through TILERT_CUDA_LIBRARY)
 * so that the launcher's driver side runs here, without a GPU: one device of
 * compute capability 9.0, modules that load, and two entry points that record
 * what they were given:
 *   cuLaunchKernel           copies each kernel parameter (sizes set by the test
 *                            with fake_set_param_sizes) into fake_params
 *   cuTensorMapEncodeTiled   counts its calls and writes a map that spells its
 *                            inputs: map[0] address, [1..2] dims, [3] strides[0],
 *                            [4] box[0] | box[1] << 32, [5] elementStrides[1] |
 *                            swizzle << 8 | l2 << 16 | oob << 24 | type << 32,
 *                            [6] the call's serial number; a stride of 0 bytes is
 *                            refused with CUDA_ERROR_INVALID_VALUE, as a driver might.
 * For the stress test (stress.c, several threads at once): the current context is per
 * thread, as the driver's; launches are counted atomically, per stream too
 * (fake_stream_launches[s] for the streams (CUstream)1..8); fake_modules_live counts modules
 * loaded and not unloaded; with fake_stress_set(slots, n, p) every launch adds 1 to
 * slots[tag] (atomically; tag = the i32 kernel parameter p, when below n) and records no
 * parameters or grid (fake_params and fake_grid are for one thread).
 * Used by test_runtime_fakedrv and test_runtime_stress. */
#include <cuda.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define FAKE_API __attribute__((visibility("default")))

FAKE_API int fake_encodes, fake_launches;
FAKE_API uint8_t fake_params[4096];
FAKE_API uint32_t fake_grid[3];
FAKE_API uint32_t fake_stream_launches[9];
FAKE_API int fake_modules_live;
static uint32_t *stress_slots;
static uint32_t stress_nslots;
static int stress_param;

FAKE_API void fake_stress_set(uint32_t *slots, uint32_t n, int param)
{
    stress_slots = slots;
    stress_nslots = n;
    stress_param = param;
}
static uint32_t param_sizes[64];
static int nparam_sizes;

FAKE_API void fake_set_param_sizes(const uint32_t *sizes, int n)
{
    nparam_sizes = n < 64 ? n : 64;
    memcpy(param_sizes, sizes, sizeof *sizes * (size_t)nparam_sizes);
}

static int ctx_token;
static _Thread_local CUcontext current; /* per thread, as the driver's */

FAKE_API CUresult cuInit(unsigned flags) { return CUDA_SUCCESS; }
FAKE_API CUresult cuDriverGetVersion(int *v)
{
    *v = 13000;
    return CUDA_SUCCESS;
}
FAKE_API CUresult cuGetErrorName(CUresult r, const char **s)
{
    *s = r == CUDA_ERROR_INVALID_VALUE ? "CUDA_ERROR_INVALID_VALUE" : "CUDA_ERROR_FAKE";
    return CUDA_SUCCESS;
}
FAKE_API CUresult cuGetErrorString(CUresult r, const char **s)
{
    *s = r == CUDA_ERROR_INVALID_VALUE ? "invalid argument" : "fake error";
    return CUDA_SUCCESS;
}
FAKE_API CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    *d = ordinal;
    return CUDA_SUCCESS;
}
FAKE_API CUresult cuDeviceGetCount(int *n)
{
    *n = 1;
    return CUDA_SUCCESS;
}
FAKE_API CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
    default: *v = 0; break;
    }
    return CUDA_SUCCESS;
}
FAKE_API CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
    strncpy(name, "Fake H200", (size_t)len);
    return CUDA_SUCCESS;
}
FAKE_API CUresult cuCtxGetCurrent(CUcontext *c)
{
    *c = current;
    return CUDA_SUCCESS;
}
FAKE_API CUresult cuCtxSetCurrent(CUcontext c)
{
    current = c;
    return CUDA_SUCCESS;
}
FAKE_API CUresult cuCtxGetDevice(CUdevice *d)
{
    *d = 0;
    return CUDA_SUCCESS;
}
FAKE_API CUresult cuCtxPushCurrent(CUcontext c) { return CUDA_SUCCESS; }
FAKE_API CUresult cuCtxPopCurrent(CUcontext *c)
{
    *c = current;
    return CUDA_SUCCESS;
}
FAKE_API CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
    *c = (CUcontext)&ctx_token;
    return CUDA_SUCCESS;
}
FAKE_API CUresult cuModuleLoadData(CUmodule *m, const void *image)
{
    *m = (CUmodule)&ctx_token;
    __atomic_fetch_add(&fake_modules_live, 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}
FAKE_API CUresult cuModuleUnload(CUmodule m)
{
    __atomic_fetch_sub(&fake_modules_live, 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}
FAKE_API CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
    /* as slow as a driver's lookup, so that threads launching a kernel for the first time
     * overlap in the runtime's one-time setup (the stress test's first launches race) */
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
    *f = (CUfunction)&ctx_token;
    return CUDA_SUCCESS;
}
FAKE_API CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f)
{
    *v = a == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024 : 0;
    return CUDA_SUCCESS;
}
FAKE_API CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) { return CUDA_SUCCESS; }
FAKE_API CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned smem, CUstream s, void **params, void **extra)
{
    uintptr_t si = (uintptr_t)s;
    if (si >= 1 && si <= 8) __atomic_fetch_add(&fake_stream_launches[si], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&fake_launches, 1, __ATOMIC_RELAXED);
    if (stress_slots) {
        int32_t tag;
        memcpy(&tag, params[stress_param], sizeof tag);
        if (tag >= 0 && (uint32_t)tag < stress_nslots) __atomic_fetch_add(&stress_slots[tag], 1, __ATOMIC_RELAXED);
        return CUDA_SUCCESS;
    }
    size_t off = 0;
    for (int i = 0; i < nparam_sizes && off + param_sizes[i] <= sizeof fake_params; i++) {
        memcpy(fake_params + off, params[i], param_sizes[i]);
        off += param_sizes[i];
    }
    fake_grid[0] = gx, fake_grid[1] = gy, fake_grid[2] = gz;
    return CUDA_SUCCESS;
}
FAKE_API CUresult cuMemAlloc(CUdeviceptr *p, size_t n)
{
    *p = 0x100000;
    return CUDA_SUCCESS;
}
FAKE_API CUresult cuMemFree(CUdeviceptr p) { return CUDA_SUCCESS; }
FAKE_API CUresult cuMemcpyHtoD(CUdeviceptr d, const void *s, size_t n) { return CUDA_SUCCESS; }
FAKE_API CUresult cuMemcpyDtoH(void *d, CUdeviceptr s, size_t n) { return CUDA_SUCCESS; }
FAKE_API CUresult cuMemsetD8(CUdeviceptr d, unsigned char v, size_t n) { return CUDA_SUCCESS; }
FAKE_API CUresult cuStreamSynchronize(CUstream s) { return CUDA_SUCCESS; }

FAKE_API CUresult cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank, void *addr,
                                         const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
                                         const cuuint32_t *es, CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                                         CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
    if (((uintptr_t)map & 63) != 0 || rank != 2) return CUDA_ERROR_INVALID_VALUE;
    if (strides[0] == 0) return CUDA_ERROR_INVALID_VALUE;
    memset(map, 0, sizeof *map);
    map->opaque[0] = (uint64_t)(uintptr_t)addr;
    map->opaque[1] = dims[0];
    map->opaque[2] = dims[1];
    map->opaque[3] = strides[0];
    map->opaque[4] = box[0] | (uint64_t)box[1] << 32;
    map->opaque[5] = es[1] | (uint64_t)sw << 8 | (uint64_t)l2 << 16 | (uint64_t)oob << 24 | (uint64_t)type << 32;
    map->opaque[6] = (uint64_t)++fake_encodes;
    return CUDA_SUCCESS;
}
