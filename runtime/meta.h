/* meta.h: the kernel-metadata format that travels inside every tilec cubin,
 * with its reader, writer and grid evaluator.  No CUDA here: codegen
 * (codegen/meta_emit.c) writes the format, libtilert reads it.
 *
 * The blob is the contents of the PTX global `__tilec_meta` (one per module),
 * found on the host through the cubin's ELF symbol table (elf.c).
 *
 * FORMAT, version 1.  Little-endian; no padding; `str` is a u16 byte length,
 * the bytes, then a NUL (not counted in the length, checked by readers).
 *
 *   header (16 bytes)
 *     0  u8[4]  magic "TLMD"
 *     4  u16    version (TILERT_META_VERSION)
 *     6  u16    nkernels (>= 1)
 *     8  u32    size: the whole blob, header included
 *    12  u32    crc32 (IEEE 802.3, as zlib's) of bytes [16, size)
 *   nkernels kernel records, each:
 *     u32  record size, this field included
 *     str  symbol                   e.g. gemm__T_bf16__BM_128 (unique in the module)
 *     str  source name              e.g. gemm
 *     u16  sm                       80, 89, 90, 100...: compute capability * 10
 *     u8   arch flags               bit 0: arch-specific ("a": sm_90a); others 0
 *     u8   grid rank                0 (no grid clause) or 1..3
 *     u16  warps                    1..32
 *     u16  nparams
 *     u16  nspecs
 *     u16  grid code length in bytes
 *     u32  static shared memory bytes
 *     u32  dynamic shared memory bytes
 *     nparams x { str name; u8 kind (tilert_param_kind); u8 dtype (tilert_dtype);
 *                 u8 rank (tensors 1..TILERT_MAX_RANK, else 0); u8 flags (0) }
 *     nspecs  x { str name; str value }        compile-time values as text
 *     u8[code length]  grid code
 *   A reader of version 1 rejects any other version, a record whose size
 *   disagrees with its fields, and bytes left after the last record.
 *
 * GRID CODE: a stack machine over int64 values (two's complement, wrapping),
 * run once per launch.  It must leave exactly `grid rank` values: grid x, y, z.
 *   PUSH      i64          push a constant (8 bytes follow)
 *   ARG       u8 p         push scalar parameter p (an integer: sign- or zero-extended)
 *   SHAPE     u8 p, u8 d   push tensor parameter p's shape[d]
 *   STRIDE    u8 p, u8 d   push tensor parameter p's stride[d]
 *   ADD SUB MUL            pop b, pop a, push a op b (wrapping)
 *   DIV REM                signed, truncating toward zero; division by zero fails the launch
 *   MIN MAX                signed
 *   CDIV                   signed ceiling division: ceil(a / b)
 *   DIVU REMU MINU MAXU    the same on the unsigned 64-bit interpretation
 *   WRAP      u8 dtype     reduce to an integer dtype: truncate to its width, then
 *                          sign- (i*) or zero- (u*) extend; i1 gives a != 0
 * Codegen emits WRAP after every op whose IR type is narrower than 64 bits,
 * and the unsigned variants for unsigned types, so the result equals the IR's.
 * Readers check the code once (operands in range, parameter kinds, stack depth
 * <= TILERT_META_MAX_STACK, final depth == grid rank); evaluation then fails
 * only on division by zero.
 */
#ifndef TILERT_META_H
#define TILERT_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tilert.h"

#define TILERT_META_SYMBOL "__tilec_meta"
#define TILERT_META_MAGIC "TLMD"
#define TILERT_META_VERSION 1
#define TILERT_META_HEADER_SIZE 16
#define TILERT_META_MAX_STACK 32
#define TILERT_META_MAX_WARPS 32
/* A kernel's PTX parameter count after expanding tensors (1 + 2 * rank each). */
#define TILERT_META_MAX_KPARAMS 512

/* ORDER: part of the format; never renumber. */
typedef enum tilert_grid_op {
    TILERT_GOP_PUSH = 1,
    TILERT_GOP_ARG,
    TILERT_GOP_SHAPE,
    TILERT_GOP_STRIDE,
    TILERT_GOP_ADD = 16,
    TILERT_GOP_SUB,
    TILERT_GOP_MUL,
    TILERT_GOP_DIV,
    TILERT_GOP_REM,
    TILERT_GOP_MIN,
    TILERT_GOP_MAX,
    TILERT_GOP_CDIV,
    TILERT_GOP_DIVU,
    TILERT_GOP_REMU,
    TILERT_GOP_MINU,
    TILERT_GOP_MAXU,
    TILERT_GOP_WRAP = 32,
} tilert_grid_op;

typedef struct tilert_meta_param {
    const char *name;
    uint8_t kind;    /* tilert_param_kind */
    uint8_t dtype;   /* tilert_dtype */
    uint8_t rank;
} tilert_meta_param;

typedef struct tilert_meta_spec {
    const char *name, *value;
} tilert_meta_spec;

typedef struct tilert_meta_kernel {
    const char *symbol, *source_name;
    uint16_t sm;
    uint8_t arch_flags;          /* TILERT_META_ARCH_SPECIFIC */
    uint8_t grid_rank;
    uint16_t warps;
    uint32_t smem_static, smem_dynamic;
    uint32_t nparams, nspecs, code_len;
    const tilert_meta_param *params;
    const tilert_meta_spec *specs;
    const uint8_t *code;
} tilert_meta_kernel;
#define TILERT_META_ARCH_SPECIFIC 1u

/* A parsed blob.  `store` owns every string and array the kernels point at. */
typedef struct tilert_meta {
    uint32_t nkernels;
    tilert_meta_kernel *kernels;
    void *store;
} tilert_meta;

/* Parses and checks a blob; on failure writes a message to err (errlen bytes). */
bool tilert_meta_parse(const void *blob, size_t len, tilert_meta *out, char *err, size_t errlen);
void tilert_meta_free(tilert_meta *m);

/* Serializes kernels (checking them as a reader would); *out is malloc'd. */
bool tilert_meta_write(const tilert_meta_kernel *kernels, uint32_t n, uint8_t **out, size_t *len, char *err,
                       size_t errlen);

/* Checks a kernel's grid code against its parameters (see FORMAT). */
bool tilert_meta_check_code(const tilert_meta_kernel *k, char *err, size_t errlen);

/* Runs checked code over arguments already checked against k's parameters
 * (tilert_kernel_check): ARG reads args[p] (.v.u, reduced to the parameter's
 * dtype), SHAPE/STRIDE read args[p].v.tensor.  Writes out[0..grid_rank).
 * Fails (message in err) only on division by zero. */
bool tilert_meta_eval_grid(const tilert_meta_kernel *k, const tilert_arg *args, int64_t out[3], char *err,
                           size_t errlen);

/* Applies WRAP's conversion. */
int64_t tilert_meta_wrap(int64_t v, tilert_dtype dt);
bool tilert_dtype_is_int(tilert_dtype t);
bool tilert_dtype_is_signed(tilert_dtype t);

/* "sm_90a" <-> (90, ARCH_SPECIFIC).  Accepts sm_<digits>[a]. */
bool tilert_meta_parse_arch(const char *s, uint16_t *sm, uint8_t *flags);
void tilert_meta_format_arch(uint16_t sm, uint8_t flags, char *buf, size_t len);

/* Scalar arguments for f16/bf16 parameters: round to nearest even; overflow gives inf, NaN stays NaN. */
uint16_t tilert_f64_to_f16_bits(double x);
uint16_t tilert_f64_to_bf16_bits(double x);

uint32_t tilert_crc32(const void *data, size_t len);

#endif
