/* tilert.h: libtilert, the runtime that loads and launches tilec kernels.
 *
 * A host program loads a cubin made by tilec (from a file or from memory),
 * looks a kernel up by name, and launches it with typed arguments:
 *
 *     tilert_module *m;  tilert_kernel *k;
 *     if (tilert_module_load_file("vadd.cubin", &m) != TILERT_OK ||
 *         tilert_kernel_get(m, "vadd", &k) != TILERT_OK) {
 *         fprintf(stderr, "%s\n", tilert_last_error());
 *         ...
 *     }
 *     tilert_arg args[] = {tilert_arg_ptr(dx, TILERT_F32), tilert_arg_ptr(dy, TILERT_F32),
 *                          tilert_arg_ptr(dout, TILERT_F32), tilert_arg_i32(n)};
 *     tilert_status s = tilert_launch(k, stream, args, 4);
 *
 * Every cubin made by tilec carries metadata (the global byte array
 * `__tilec_meta`, format in runtime/meta.h): for each kernel its parameters,
 * specialization values, warps, shared memory, arch and launch grid as a
 * small expression over the arguments.  The runtime reads it on the host, so
 * arguments are checked (count, kind, dtype, rank, alignment) and the grid is
 * computed before the driver is touched.
 *
 * The CUDA driver is opened with dlopen("libcuda.so.1") on first use (the
 * environment variable TILERT_CUDA_LIBRARY names another file); a program
 * linked with libtilert starts on a machine without a GPU and every entry
 * point that needs the driver returns TILERT_ERROR_NO_DRIVER (or
 * TILERT_ERROR_NO_DEVICE) with a message.
 *
 * Errors: every function returns a tilert_status; on failure the calling
 * thread's tilert_last_error() names the exact problem (the argument, the
 * file, the expected and actual values).  No function calls exit() or
 * prints.
 *
 * Threads: every function may be called from any thread at any time, with
 * these rules (tests/runtime/stress.c checks them under load: 8 threads
 * launching one kernel on 4 streams with argument errors mixed in, modules
 * loaded and unloaded beside them; CI runs it with a fake driver, the GPU
 * suite with the real one, ThreadSanitizer-clean):
 *   - A module and its kernels may be used by several threads at once
 *     (kernel lookups, checks, launches: the first launch of a kernel resolves
 *     it under the module's lock; the TMA map cache has a lock of its own).
 *   - tilert_module_unload must not run while another thread still uses the
 *     module or one of its kernels, and no launch of its kernels may still be
 *     running on the GPU (synchronize the streams first): the caller orders
 *     unload after every use, as with free().
 *   - tilert_last_error() is the calling thread's: a failure on one thread
 *     never changes another's message.
 *   - A thread with no current CUDA context launches in the module's context
 *     (it becomes current on that thread); a thread whose current context is
 *     another one gets TILERT_ERROR_CONTEXT.  Launches on one stream from
 *     several threads run in the order the driver received them.
 *
 * Devices: a module belongs to the CUDA context that was current on the
 * calling thread when it was loaded (the primary context of device 0 when
 * none was current, which then becomes current on that thread).  Launching a
 * kernel from a thread whose current context is another one is an error;
 * load the module once per device.
 *
 * KERNEL ABI (what tilec's code generator emits and tilert_launch passes):
 * the kernel's PTX parameters follow the source parameters in order:
 *   - scalar T:        one parameter of T's size, by value (i1: one byte, 0 or 1;
 *                      f16/bf16: the 16-bit pattern; fp8: the 8-bit pattern)
 *   - ptr<T>:          one 64-bit device address
 *   - tensor<T, N>:    1 + 2N parameters: the 64-bit base address, then shape[0..N)
 *                      as N i64, then stride[0..N) as N i64 (strides in elements),
 *                      then one CUtensorMap per TMA descriptor the metadata lists for
 *                      this parameter, in the metadata's order:
 *                          .param .align 64 .b8 NAME[128]
 *                      passed by value (the kernel marks it grid_constant and gives
 *                      cp.async.bulk.tensor its generic address, from cvta.param).
 * Threads per block = 32 * warps; dynamic shared memory = the metadata's
 * dynamic bytes (the limit is raised with cuFuncSetAttribute above 48 KiB).
 *
 * TMA: the launcher builds each CUtensorMap with cuTensorMapEncodeTiled from the
 * tensor argument: globalAddress = data, globalDim = shape innermost first,
 * globalStrides = stride * element size in bytes (dims 1.. innermost first),
 * boxDim, elementStrides, swizzle, L2 promotion and out-of-bounds fill from the
 * metadata, interleave none.  Every rule of the driver is checked first, and a
 * broken one is named with the argument: base address 16-byte aligned; each
 * dimension 1..2^32; the last dimension contiguous (stride 1, or extent 1);
 * other strides nonnegative, multiples of 16 bytes and below 2^40 bytes (the
 * stride of an extent-1 dimension is never used and is not checked); the box
 * rules are checked when the metadata is read.  An empty launch builds no map.
 * Maps are cached per kernel and descriptor (the last 4 built), keyed on every
 * input of the encoding (address, shape, strides), so repeated launches on the
 * same tensors, or on a few buffers in turn, do not call the driver again.
 * Optional descriptors: where the metadata marks a tensor's descriptors optional
 * (the kernel tests each map before it uses TMA and has a path without it), an
 * argument that breaks one of those rules, or that the driver refuses, does not
 * fail the launch: all of that argument's maps are passed as 128 zero bytes, which
 * the kernel reads as "no TMA for this tensor".  A driver without
 * cuTensorMapEncodeTiled gives zeros there too.
 */
#ifndef TILERT_H
#define TILERT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TILERT_API __attribute__((visibility("default")))
#else
#define TILERT_API
#endif

#define TILERT_VERSION_MAJOR 0
#define TILERT_VERSION_MINOR 1
#define TILERT_MAX_RANK 4     /* the highest tensor rank a kernel takes */

typedef enum tilert_status {
    TILERT_OK = 0,
    TILERT_ERROR_INVALID_VALUE,   /* API misuse: a NULL pointer, a bad dtype or rank in a tensor */
    TILERT_ERROR_OUT_OF_MEMORY,   /* host memory */
    TILERT_ERROR_IO,              /* a file could not be read */
    TILERT_ERROR_NO_DRIVER,       /* libcuda.so.1 missing, a stub, or too old */
    TILERT_ERROR_NO_DEVICE,       /* the driver is there but sees no GPU */
    TILERT_ERROR_INVALID_IMAGE,   /* not a CUDA ELF cubin: magic, class, machine, truncated */
    TILERT_ERROR_ARCH_MISMATCH,   /* the cubin was built for another GPU */
    TILERT_ERROR_BAD_METADATA,    /* __tilec_meta missing or malformed */
    TILERT_ERROR_NOT_FOUND,       /* no kernel of that name */
    TILERT_ERROR_ARG_COUNT,       /* wrong number of arguments */
    TILERT_ERROR_ARG_TYPE,        /* wrong kind, dtype or rank */
    TILERT_ERROR_ARG_ALIGN,       /* a misaligned device pointer */
    TILERT_ERROR_ARG_VALUE,       /* a value out of range: negative shape, scalar that does not fit */
    TILERT_ERROR_GRID,            /* the grid expression failed (division by zero) or is out of range */
    TILERT_ERROR_NO_GRID,         /* the kernel has no grid(...) clause: use tilert_launch_grid */
    TILERT_ERROR_RESOURCES,       /* the kernel needs more shared memory or threads than the device has */
    TILERT_ERROR_CONTEXT,         /* launched from another CUDA context than the module's */
    TILERT_ERROR_INSPECT_ONLY,    /* the module was opened for inspection, without a device */
    TILERT_ERROR_CUDA,            /* any other driver error; the message carries the driver's */
    TILERT_ERROR_REQUIRES,        /* the arguments break a requires(cond, "message") clause of the kernel */
    TILERT_STATUS_COUNT
} tilert_status;

/* ORDER: codes are part of the metadata format (runtime/meta.h); never renumber. 0 is invalid. */
typedef enum tilert_dtype {
    TILERT_DTYPE_INVALID = 0,
    TILERT_I1 = 1, TILERT_I8, TILERT_I16, TILERT_I32, TILERT_I64,
    TILERT_U8, TILERT_U16, TILERT_U32, TILERT_U64,
    TILERT_F8E4M3, TILERT_F8E5M2, TILERT_F16, TILERT_BF16, TILERT_F32, TILERT_F64,
    TILERT_DTYPE_COUNT
} tilert_dtype;

TILERT_API const char *tilert_status_string(tilert_status s);  /* "TILERT_ERROR_ARG_TYPE" */
/* The message of the last failure on the calling thread ("" if none yet). */
TILERT_API const char *tilert_last_error(void);
TILERT_API const char *tilert_dtype_name(tilert_dtype t);      /* "bf16"; "?" if invalid */
TILERT_API size_t tilert_dtype_size(tilert_dtype t);           /* bytes (i1: 1); 0 if invalid */

/* ---- tensors and arguments ---------------------------------------------- */

/* A strided view of device memory.  shape and stride in elements; dims >= rank are ignored. */
typedef struct tilert_tensor {
    void *data;                       /* device address */
    tilert_dtype dtype;
    int32_t rank;                     /* 1..TILERT_MAX_RANK */
    int64_t shape[TILERT_MAX_RANK];
    int64_t stride[TILERT_MAX_RANK];
} tilert_tensor;

/* Contiguous row-major views. */
TILERT_API tilert_tensor tilert_tensor1d(void *data, tilert_dtype dt, int64_t n);
TILERT_API tilert_tensor tilert_tensor2d(void *data, tilert_dtype dt, int64_t rows, int64_t cols);
/* Any rank; stride NULL means contiguous row-major. */
TILERT_API tilert_tensor tilert_tensor_nd(void *data, tilert_dtype dt, int32_t rank, const int64_t *shape,
                                          const int64_t *stride);

typedef enum tilert_arg_kind {
    TILERT_ARG_TENSOR = 1,  /* for a tensor<T, N> parameter */
    TILERT_ARG_PTR,         /* for a ptr<T> parameter; dtype = T */
    TILERT_ARG_INT,         /* an integer scalar of type dtype, value in .i (or .u for u64) */
    TILERT_ARG_FLOAT,       /* a float scalar of type dtype (f16, bf16, f32, f64), value in .f */
    TILERT_ARG_BITS         /* a scalar given by its bit pattern (fp8, f16, bf16...), in .bits */
} tilert_arg_kind;

/* One launch argument.  Scalars: an integer argument fits any integer
 * parameter whose range holds its value; a float argument converts to any
 * f16/bf16/f32/f64 parameter (rounding to nearest even); a BITS argument must
 * have the parameter's exact dtype.  Tensors and pointers must match dtype
 * exactly (and rank, for tensors). */
typedef struct tilert_arg {
    tilert_arg_kind kind;
    tilert_dtype dtype;
    union {
        tilert_tensor tensor;
        void *ptr;
        int64_t i;
        uint64_t u;
        double f;
        uint64_t bits;
    } v;
} tilert_arg;

TILERT_API tilert_arg tilert_arg_tensor(tilert_tensor t);
TILERT_API tilert_arg tilert_arg_ptr(void *p, tilert_dtype pointee);
TILERT_API tilert_arg tilert_arg_i32(int32_t v);
TILERT_API tilert_arg tilert_arg_i64(int64_t v);
TILERT_API tilert_arg tilert_arg_u32(uint32_t v);
TILERT_API tilert_arg tilert_arg_u64(uint64_t v);
TILERT_API tilert_arg tilert_arg_bool(int v);
TILERT_API tilert_arg tilert_arg_f32(float v);
TILERT_API tilert_arg tilert_arg_f64(double v);
TILERT_API tilert_arg tilert_arg_bits(tilert_dtype dt, uint64_t bits);

/* ---- the driver ----------------------------------------------------------- */

/* Opens the driver and initializes it.  TILERT_OK when a GPU is usable;
 * otherwise NO_DRIVER / NO_DEVICE / CUDA with a message.  Other entry points
 * call it themselves; a program may call it first to decide whether to skip. */
TILERT_API tilert_status tilert_init(void);
TILERT_API tilert_status tilert_device_count(int *count);
/* The device of the current context (or device 0): compute capability, name, SMs. */
typedef struct tilert_device_info {
    int ordinal;
    int cc_major, cc_minor;
    int sm_count;
    int max_smem_per_block_optin;  /* bytes */
    char name[96];
} tilert_device_info;
TILERT_API tilert_status tilert_device_get_info(tilert_device_info *out);

/* Small conveniences so host programs and tools need no CUDA runtime. */
TILERT_API tilert_status tilert_malloc(void **dptr, size_t bytes);
TILERT_API tilert_status tilert_free(void *dptr);
TILERT_API tilert_status tilert_memcpy_htod(void *dst, const void *src, size_t bytes);
TILERT_API tilert_status tilert_memcpy_dtoh(void *dst, const void *src, size_t bytes);
TILERT_API tilert_status tilert_memset_d8(void *dst, unsigned char value, size_t bytes);
TILERT_API tilert_status tilert_stream_synchronize(void *stream);  /* NULL: the default stream */

/* ---- modules and kernels -------------------------------------------------- */

typedef struct tilert_module tilert_module;
typedef struct tilert_kernel tilert_kernel;  /* owned by its module */

/* Checks the image (ELF64 for EM_CUDA, sizes, arch against the current
 * device, metadata) and loads it into the current context.  The image is
 * not kept: the caller may free it on return. */
TILERT_API tilert_status tilert_module_load_data(const void *image, size_t size, tilert_module **out);
TILERT_API tilert_status tilert_module_load_file(const char *path, tilert_module **out);
/* Of n images of one module compiled for several archs (sm_80, sm_89, sm_90a...), loads the
 * one for the current device (the device of the current context, else device 0): the newest
 * SM version that runs on it (tilert_module_check_arch), an arch-specific one (sm_90a) before
 * the plain one of its version.  *chosen (may be NULL) is its index.  None runs there:
 * TILERT_ERROR_ARCH_MISMATCH listing the archs there are. */
TILERT_API tilert_status tilert_module_load_best(const void *const *images, const size_t *sizes, int n,
                                                 tilert_module **out, int *chosen);
/* The same checks, no driver: the module can be listed, its kernels'
 * arguments checked and grids computed, but not launched. */
TILERT_API tilert_status tilert_module_inspect_data(const void *image, size_t size, tilert_module **out);
TILERT_API tilert_status tilert_module_inspect_file(const char *path, tilert_module **out);
/* Unloads (NULL is accepted).  Kernels of m are invalid afterwards. */
TILERT_API tilert_status tilert_module_unload(tilert_module *m);

/* Whether m runs on a device of compute capability major.minor: same major,
 * minor not above the device's; an arch-specific cubin (sm_90a) needs the exact one. */
TILERT_API tilert_status tilert_module_check_arch(const tilert_module *m, int cc_major, int cc_minor);
TILERT_API const char *tilert_module_arch(const tilert_module *m);   /* "sm_90a" */
TILERT_API int tilert_module_kernel_count(const tilert_module *m);
TILERT_API tilert_kernel *tilert_module_kernel_at(tilert_module *m, int i);

/* By symbol (gemm__T_bf16__BM_128) or, failing that, by source name (the
 * first specialization of that kernel).  An unknown name lists those there are. */
TILERT_API tilert_status tilert_kernel_get(tilert_module *m, const char *name, tilert_kernel **out);

typedef enum tilert_param_kind { TILERT_PARAM_SCALAR = 0, TILERT_PARAM_PTR = 1, TILERT_PARAM_TENSOR = 2 } tilert_param_kind;
typedef struct tilert_param_info {
    const char *name;
    tilert_param_kind kind;
    tilert_dtype dtype;     /* the scalar's type, the pointee, or the tensor's elements */
    int rank;               /* tensors only; 0 otherwise */
    int ntma;               /* tensors only: TMA descriptors (CUtensorMap parameters) it takes */
    int tma_optional;       /* 1: the kernel runs without them (zero maps) where they cannot be built */
} tilert_param_info;
/* TMA descriptor j of a tensor parameter, in the tensor's dimension order (outermost first). */
typedef struct tilert_tma_info {
    tilert_dtype dtype;     /* the elements as TMA moves them (the tensor's, or one of the same size) */
    int rank;
    uint32_t box[TILERT_MAX_RANK];          /* elements per dimension, box[rank-1] the innermost */
    uint32_t elem_stride[TILERT_MAX_RANK];  /* traversal step per dimension (1..8) */
    int swizzle_bytes;      /* 0 (none), 32, 64, 128 */
    int l2_promotion_bytes; /* 0 (none), 64, 128, 256 */
    int oob_nan;            /* 1: out-of-bounds elements read as NaN; 0: as zeros */
} tilert_tma_info;
typedef struct tilert_kernel_info {
    const char *symbol, *source_name;
    const char *arch;            /* "sm_90a" */
    int nparams, nspecs;
    int warps;                   /* threads per block = 32 * warps */
    uint32_t smem_static, smem_dynamic;  /* bytes */
    int grid_rank;               /* 1..3; 0: no grid(...) clause */
} tilert_kernel_info;
TILERT_API tilert_status tilert_kernel_get_info(const tilert_kernel *k, tilert_kernel_info *out);
TILERT_API tilert_status tilert_kernel_param(const tilert_kernel *k, int i, tilert_param_info *out);
TILERT_API tilert_status tilert_kernel_param_tma(const tilert_kernel *k, int i, int j, tilert_tma_info *out);
/* Specialization value i as text: name "BLOCK", value "1024". */
TILERT_API tilert_status tilert_kernel_spec(const tilert_kernel *k, int i, const char **name, const char **value);

/* Checks args against the metadata (types, then the kernel's requires(...)
 * clauses: TILERT_ERROR_REQUIRES with the clause's message) and computes the
 * grid from them (unused dims are 1), without the driver.  TILERT_OK with grid {0,..} means an empty
 * launch (some dimension is 0).  The TMA rules are checked too, unless the
 * launch is empty (with grid NULL, as for a launch that is not); a tensor whose
 * descriptors are optional passes whatever they say. */
TILERT_API tilert_status tilert_kernel_check(const tilert_kernel *k, const tilert_arg *args, int nargs,
                                             uint32_t grid[3]);

/* Of n kernels (specializations of one kernel, say), the one whose parameters
 * take args (the check of tilert_kernel_check, without grid and TMA): TILERT_OK
 * with *index when exactly one does.  When none does, the first refusal's
 * status, with every kernel's reason in the message; when several do,
 * TILERT_ERROR_ARG_TYPE naming two of them (the arguments do not determine it). */
TILERT_API tilert_status tilert_kernel_select(tilert_kernel *const *ks, int n, const tilert_arg *args, int nargs,
                                              int *index);

/* Checks the arguments (and the requires(...) clauses), computes the grid from the metadata and launches on
 * `stream` (a CUstream or cudaStream_t; NULL: the legacy default stream).
 * A grid with a zero dimension launches nothing and returns TILERT_OK. */
TILERT_API tilert_status tilert_launch(tilert_kernel *k, void *stream, const tilert_arg *args, int nargs);
/* The same with an explicit grid (for kernels without grid(...), or to override it). */
TILERT_API tilert_status tilert_launch_grid(tilert_kernel *k, void *stream, const uint32_t grid[3],
                                            const tilert_arg *args, int nargs);

#ifdef __cplusplus
}
#endif
#endif
