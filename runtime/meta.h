/* meta.h: the kernel-metadata format that travels inside every tilec cubin,
 * with its reader, writer and grid evaluator.  No CUDA here: codegen
 * (codegen/meta_emit.c) writes the format, libtilert reads it.
 *
 * The blob is the contents of the PTX global `__tilec_meta` (one per module),
 * found on the host through the cubin's ELF symbol table (elf.c).
 *
 * FORMAT, version 4.  Little-endian; no padding; `str` is a u16 byte length,
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
 *                 u8 rank (tensors 1..TILERT_MAX_RANK, else 0);
 *                 u8 flags (TILERT_META_PARAM_*; 0 before version 3);
 *                 version 2 and later:  u8 ntma (0 unless a tensor), then ntma TMA records }
 *   Parameter flags (version 3):
 *     TILERT_META_PARAM_TMA_OPTIONAL  (a tensor with TMA records only) the kernel tests
 *       its CUtensorMaps before using them (tilec's TMA_READY: a map of 128 zero bytes
 *       is "none") and has another path without them; where the argument breaks a rule
 *       of cuTensorMapEncodeTiled, or the driver refuses it, the launcher passes zeros
 *       for all of this parameter's maps instead of failing the launch.
 *     nspecs  x { str name; str value }        compile-time values as text
 *     u8[code length]  grid code
 *     version 4 and later:
 *     u16  nrequires
 *     nrequires x { str message; u16 code length; u8[code length] code }
 *   Requirements (version 4): the kernel's requires(cond, "message") clauses, in source
 *   order.  Each code is grid code (below) that leaves exactly one value: nonzero when
 *   the arguments satisfy the clause.  The runtime runs every one after checking the
 *   arguments and before computing the grid; the first that gives 0 fails the launch
 *   with TILERT_ERROR_REQUIRES and its message.
 *   TMA record (version 2): one CUtensorMap the kernel takes for this tensor
 *   parameter (kernel ABI: tilert.h), built by the runtime at launch with
 *   cuTensorMapEncodeTiled from the argument's address, shape and strides:
 *     u8  dtype         tilert_dtype of the elements as TMA sees them: the tensor's, or
 *                       another of the same size (u16 for bf16 bits...)
 *     u8  rank          = the tensor's rank
 *     u8  swizzle       TILERT_TMA_SWIZZLE_*  (none, 32B, 64B, 128B)
 *     u8  l2 promotion  TILERT_TMA_L2_*       (none, 64B, 128B, 256B)
 *     u8  oob fill      TILERT_TMA_OOB_*      (zeros; NaN for float dtypes only)
 *     u8  interleave    0 (none): the only layout accepted
 *     u16 box[rank]          elements per dimension, INNERMOST FIRST (the driver's and
 *                            PTX's coordinate order): box[0] runs along tensor dim rank-1
 *     u8  elem_stride[rank]  traversal step per dimension, innermost first; [0] is 1
 *   Every record obeys the rules of cuTensorMapEncodeTiled that do not depend on
 *   the argument (tilert_meta_check_tma): box entries 1..256, box[0] * element size a
 *   multiple of 16 bytes and, when swizzled, at most the swizzle span (32/64/128
 *   bytes), element strides 1..8; a kernel with TMA records is for TILERT_META_TMA_MIN_SM or later and
 *   has at most TILERT_META_MAX_TMA of them.
 *   Readers accept versions TILERT_META_MIN_VERSION..TILERT_META_VERSION (version 1 is
 *   version 2 without TMA records, version 2 is version 3 without parameter flags) and
 *   reject any other, unknown flags, a record whose size disagrees with its fields, and
 *   bytes left after the last record.  The writer writes version 4 when a kernel has
 *   requirements and version 3 otherwise (so cubins without requires() still load with
 *   a libtilert that reads version 3), or an older one on request, for kernels that
 *   need nothing newer.
 *
 * GRID CODE: a stack machine over int64 values (two's complement, wrapping),
 * run once per launch.  It must leave exactly `grid rank` values: grid x, y, z.
 *   PUSH      i64          push a constant (8 bytes follow)
 *   ARG       u8 p         push scalar parameter p (an integer: sign- or zero-extended)
 *   SHAPE     u8 p, u8 d   push tensor parameter p's shape[d]
 *   STRIDE    u8 p, u8 d   push tensor parameter p's stride[d]
 *   NUM_SMS                push the launching device's multiprocessor count (version 3)
 *   ADD SUB MUL            pop b, pop a, push a op b (wrapping)
 *   DIV REM                signed, truncating toward zero; division by zero fails the launch
 *   MIN MAX                signed
 *   CDIV                   signed ceiling division: ceil(a / b)
 *   DIVU REMU MINU MAXU    the same on the unsigned 64-bit interpretation
 *   EQ NE LT LE GT GE      pop b, pop a, push 1 if a op b else 0 (signed)    (version 4)
 *   LTU LEU GTU GEU        the same on the unsigned interpretation           (version 4)
 *   AND OR XOR             bitwise                                           (version 4)
 *   SELECT                 pop b, pop a, pop c, push c != 0 ? a : b          (version 4)
 *   WRAP      u8 dtype     reduce to an integer dtype: truncate to its width, then
 *                          sign- (i*) or zero- (u*) extend; i1 gives a != 0
 * Codegen emits WRAP after every op whose IR type is narrower than 64 bits,
 * and the unsigned variants for unsigned types, so the result equals the IR's.
 * Readers check the code once (operands in range, parameter kinds, stack depth
 * <= TILERT_META_MAX_STACK, final depth == grid rank, 1 for a requirement; the
 * version 4 opcodes only in version 4 blobs); evaluation then fails only on
 * division by zero.
 */
#ifndef TILERT_META_H
#define TILERT_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tilert.h"

#define TILERT_META_SYMBOL "__tilec_meta"
#define TILERT_META_MAGIC "TLMD"
#define TILERT_META_VERSION 4       /* the newest the writer writes */
#define TILERT_META_MIN_VERSION 1   /* the oldest the reader reads */
#define TILERT_META_HEADER_SIZE 16
#define TILERT_META_MAX_STACK 32
#define TILERT_META_MAX_WARPS 32
/* A kernel's PTX parameter count after expanding tensors (1 + 2 * rank + ntma each). */
#define TILERT_META_MAX_KPARAMS 512
/* TMA descriptors per kernel (128 bytes of kernel parameters each) and their rank. */
#define TILERT_META_MAX_TMA 16
/* The first SM version with TMA: the rule a blob's TMA records obey (the compiler's
 * target table, ir/target.def, gives IR_TGT_TMA to exactly the rows from it on;
 * tests/unit/test_target.c checks that they agree). */
#define TILERT_META_TMA_MIN_SM 90
#define TILERT_TMA_MAX_RANK 5

/* Parameter flags (version 3; see FORMAT). */
#define TILERT_META_PARAM_TMA_OPTIONAL 1u

/* ORDER: part of the format, and equal to the CUDA driver's enum values (tilert.c checks). */
enum { TILERT_TMA_SWIZZLE_NONE = 0, TILERT_TMA_SWIZZLE_32B, TILERT_TMA_SWIZZLE_64B, TILERT_TMA_SWIZZLE_128B };
enum { TILERT_TMA_L2_NONE = 0, TILERT_TMA_L2_64B, TILERT_TMA_L2_128B, TILERT_TMA_L2_256B };
enum { TILERT_TMA_OOB_ZERO = 0, TILERT_TMA_OOB_NAN };

/* ORDER: part of the format; never renumber. */
typedef enum tilert_grid_op {
    TILERT_GOP_PUSH = 1,
    TILERT_GOP_ARG,
    TILERT_GOP_SHAPE,
    TILERT_GOP_STRIDE,
    TILERT_GOP_NUM_SMS,     /* pushes the device's multiprocessor count (version 3) */
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
    TILERT_GOP_EQ = 40,     /* comparisons, logic and select: version 4 */
    TILERT_GOP_NE,
    TILERT_GOP_LT,
    TILERT_GOP_LE,
    TILERT_GOP_GT,
    TILERT_GOP_GE,
    TILERT_GOP_LTU,
    TILERT_GOP_LEU,
    TILERT_GOP_GTU,
    TILERT_GOP_GEU,
    TILERT_GOP_AND,
    TILERT_GOP_OR,
    TILERT_GOP_XOR,
    TILERT_GOP_SELECT = 56, /* ternary */
} tilert_grid_op;
/* Requirements per kernel (version 4). */
#define TILERT_META_MAX_REQUIRES 255

/* One TMA descriptor a kernel takes for a tensor parameter (see FORMAT). */
typedef struct tilert_meta_tma {
    uint8_t dtype;         /* tilert_dtype; the same size as the tensor's */
    uint8_t rank;          /* the tensor's rank */
    uint8_t swizzle;       /* TILERT_TMA_SWIZZLE_* */
    uint8_t l2_promotion;  /* TILERT_TMA_L2_* */
    uint8_t oob_fill;      /* TILERT_TMA_OOB_* */
    uint8_t interleave;    /* 0 */
    uint16_t box[TILERT_TMA_MAX_RANK];        /* innermost first */
    uint8_t elem_stride[TILERT_TMA_MAX_RANK]; /* innermost first */
} tilert_meta_tma;

typedef struct tilert_meta_param {
    const char *name;
    uint8_t kind;    /* tilert_param_kind */
    uint8_t dtype;   /* tilert_dtype */
    uint8_t rank;
    uint8_t ntma;                 /* TMA descriptors (tensors only), in kernel-ABI order */
    const tilert_meta_tma *tma;
    uint8_t flags;                /* TILERT_META_PARAM_* */
} tilert_meta_param;

typedef struct tilert_meta_spec {
    const char *name, *value;
} tilert_meta_spec;

/* One requires(cond, "message") clause (version 4). */
typedef struct tilert_meta_require {
    const char *message;
    const uint8_t *code;   /* grid code leaving one value: nonzero when it holds */
    uint32_t code_len;
} tilert_meta_require;

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
    uint32_t nrequires;                    /* version 4; 0 before */
    const tilert_meta_require *requires;
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

/* Serializes kernels (checking them as a reader would) in format TILERT_META_VERSION; *out is malloc'd. */
bool tilert_meta_write(const tilert_meta_kernel *kernels, uint32_t n, uint8_t **out, size_t *len, char *err,
                       size_t errlen);
/* The same in an older format version (1: no TMA records, 2: no parameter flags; a kernel
 * that needs them is refused). */
bool tilert_meta_write_version(const tilert_meta_kernel *kernels, uint32_t n, uint16_t version, uint8_t **out,
                               size_t *len, char *err, size_t errlen);

/* Checks TMA descriptor t of tensor parameter p against the rules of
 * cuTensorMapEncodeTiled that hold whatever the argument (see FORMAT). */
bool tilert_meta_check_tma(const tilert_meta_tma *t, const tilert_meta_param *p, char *err, size_t errlen);
/* "box [16, 32] of f32, swizzle 128B": the box outermost first, as the tensor's dims go. */
void tilert_meta_describe_tma(const tilert_meta_tma *t, char *buf, size_t len);

/* Checks a kernel's grid code and requirement codes against its parameters (see FORMAT). */
bool tilert_meta_check_code(const tilert_meta_kernel *k, char *err, size_t errlen);

/* Runs checked code over arguments already checked against k's parameters
 * (tilert_kernel_check): ARG reads args[p] (.v.u, reduced to the parameter's
 * dtype), SHAPE/STRIDE read args[p].v.tensor, NUM_SMS pushes num_sms.  Writes
 * out[0..grid_rank).  Fails (message in err) on division by zero, and on
 * NUM_SMS when num_sms is 0 (no device to ask). */
bool tilert_meta_eval_grid(const tilert_meta_kernel *k, const tilert_arg *args, int64_t num_sms, int64_t out[3],
                           char *err, size_t errlen);

/* Runs k's requirements over checked arguments, in order.  Returns true when all
 * hold; otherwise false with *failed the index of the first that does not (or -1
 * when the code itself failed: division by zero, num_sms without a device; the
 * reason in err). */
bool tilert_meta_eval_requires(const tilert_meta_kernel *k, const tilert_arg *args, int64_t num_sms, int *failed,
                               char *err, size_t errlen);

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
