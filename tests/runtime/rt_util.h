/* rt_util.h: helpers the runtime tests share (CPU tests and the GPU test):
 * synthetic cubin-shaped ELF images, PTX -> cubin through nvJitLink, and a
 * small test module (three hand-written PTX kernels following the kernel ABI
 * of runtime/tilert.h, with their metadata). */
#ifndef TILEC_RT_UTIL_H
#define TILEC_RT_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct RtElfOpts {
    uint8_t elf_class;      /* 2: ELF64 */
    uint8_t data;           /* 1: little-endian */
    uint8_t abi_version;    /* 8 (CUDA 13 ptxas) or 7 */
    uint16_t machine;       /* 190: EM_CUDA */
    uint32_t flags;         /* e_flags */
    const char *symbol;     /* the metadata symbol's name: "__tilec_meta" */
    bool nobits;            /* the metadata section holds no bytes */
    uint64_t sym_value;     /* st_value of the symbol (0) */
    uint64_t phdr_filesz;   /* nonzero: one program header (last in the file), a segment of this size at the data */
} RtElfOpts;

/* Default options for an sm_<sm> cubin of ELF ABI 8. */
RtElfOpts rt_elf_opts(unsigned sm);
/* A minimal ELF image holding `meta` in a section, named by a symbol; malloc'd. */
uint8_t *rt_make_elf(const uint8_t *meta, size_t meta_len, const RtElfOpts *o, size_t *len);

/* PTX -> cubin with nvJitLink (dlopen'ed); NULL with a reason in log when the
 * library is missing or the PTX fails.  `arch` like "sm_90a". */
uint8_t *rt_nvjitlink(const char *ptx, const char *arch, size_t *len, char *log, size_t loglen);

/* The test module: kernels
 *   vadd(x: ptr<f32>, y: ptr<f32>, out: ptr<f32>, n: i32)  grid((n + 255) / 256)  warps 8
 *   rowscale(A: tensor<f32, 2>, B: tensor<f32, 2>, alpha: f32)  grid(A.shape[0])  warps 4
 *       B[r, c] = alpha * A[r, c]
 *   smem_big(out: ptr<f32>, n: i32)  grid(cdiv(n, 128))  warps 4, 100000 bytes of dynamic
 *       shared memory: out[i] = 2 * (128 * block + 127 - tid), exchanged through shared memory
 * extra_smem: dynamic shared memory reported for smem_big instead of 100000 (0: default).
 * ghost: also list a kernel "ghost" in the metadata that the PTX lacks. */
uint8_t *rt_test_meta(const char *arch, uint32_t extra_smem, bool ghost, size_t *len);
/* PTX text of the test module with `meta` as __tilec_meta; malloc'd. */
char *rt_test_ptx(const char *arch, const uint8_t *meta, size_t len);
/* Both, then nvJitLink: the test module's cubin for arch (metadata says meta_arch). */
uint8_t *rt_test_cubin(const char *arch, const char *meta_arch, uint32_t extra_smem, bool ghost, size_t *len,
                       char *log, size_t loglen);

/* The TMA test module (sm_90 or later), two kernels:
 *   tma_tile(A: tensor<f32, 2>, out: ptr<f32>, which: i32)
 *       grid(cdiv(A.shape[1], 32), cdiv(A.shape[0], 16))  warps 4
 * A takes RT_TMA_NDESC descriptors (kernel ABI: four CUtensorMap parameters after
 * A's pointer, shape and strides), innermost first:
 *   0: box {32, 16}                    no swizzle, out of bounds zeros   2048 bytes
 *   1: box {32, 8}                     128B swizzle                      1024 bytes
 *   2: box {32, 16}, element strides {1, 2} (every other row)             1024 bytes
 *   3: box {32, 16}, NaN fill, L2 promotion 128B                          2048 bytes
 * Block (bx, by) loads the box at column 32 * bx, row 16 * by with descriptor
 * `which` (cp.async.bulk.tensor.2d, completing on an mbarrier; a bounded wait, so a
 * wrong byte count fails instead of hanging) and copies the raw shared-memory image
 * (rt_tma_bytes[which] bytes, 1024-byte aligned) to out + (by * gridDim.x + bx) * 2048 bytes.
 *   tma_ready(A: tensor<f32, 2>, out: ptr<i32>)  no grid, warps 1
 * A takes one optional descriptor (box {32, 16}): the launcher passes zeros where A
 * cannot be described; out[0] = 1 when any byte of the map is set (tilec's TMA_READY),
 * out[1] = 1. */
#define RT_TMA_NDESC 4
extern const unsigned rt_tma_bytes[RT_TMA_NDESC];
/* Metadata (a v2 blob) and PTX of the module; the cubin through nvJitLink. */
uint8_t *rt_tma_meta(const char *arch, size_t *len);
char *rt_tma_ptx(const char *arch, const uint8_t *meta, size_t len);
uint8_t *rt_tma_cubin(const char *arch, size_t *len, char *log, size_t loglen);

#endif
