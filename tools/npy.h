/* npy.h: NumPy .npy files (format versions 1.0, 2.0 and 3.0), read and written.
 *
 * Only what a kernel argument can be: C-order arrays of the little-endian types
 *     <f2 <f4 <f8 |u1 |i1 <i2 <u2 <i4 <u4 <i8 <u8 |b1
 * each of which maps to one tile dtype (f16 f32 f64 u8 i8 i16 u16 i32 u32 i64
 * u64 i1).  Everything else (Fortran order with more than one non-trivial
 * dimension, big-endian or structured dtypes, a malformed or truncated file)
 * is refused with a message in `err`; no input crashes the reader, and a
 * header cannot make it allocate more than the file holds.
 */
#ifndef TILEC_NPY_H
#define TILEC_NPY_H

#include "../ir/ir.h"

#define NPY_MAXDIM 32           /* NumPy's own limit before 2.0 */
#define NPY_MAX_HEADER (1u << 20) /* longer headers are refused (NumPy's default limit is 10000) */

typedef struct NpyArray {
    DType dt;                   /* one of the twelve types above */
    uint32_t ndim;              /* 0 for a 0-d array (one element) */
    int64_t shape[NPY_MAXDIM];  /* shape[ndim..] are 0 */
    void *data;                 /* numel * dt_bytes(dt) bytes, C order, little endian; malloc'd */
    size_t bytes;
} NpyArray;

/* The .npy type code of dt ("<f4"), or NULL when dt has none (bf16, fp8). */
const char *npy_descr(DType dt);
/* Product of the dimensions (1 for 0-d). */
int64_t npy_numel(const NpyArray *a);

/* Parses the magic, version and header dictionary at the start of `buf` (which
 * must hold at least the whole header).  Fills dt, ndim, shape and bytes (not
 * data) and the offset of the data in *data_off. */
bool npy_parse_header(const void *buf, size_t len, NpyArray *a, size_t *data_off, char *err, size_t errlen);
/* A whole file image: the data must follow the header exactly (no less, no more). */
bool npy_parse(const void *buf, size_t len, NpyArray *a, char *err, size_t errlen);
/* Reads PATH; on failure *a is left empty and err says why (without the path). */
bool npy_read(const char *path, NpyArray *a, char *err, size_t errlen);

/* Appends the header for an array of dtype dt and this shape (ndim <= NPY_MAXDIM):
 * format 1.0, padded so that the data starts at a multiple of 64 bytes. */
void npy_header(StrBuf *b, DType dt, uint32_t ndim, const int64_t *shape);
/* Writes a->data as PATH (a->bytes must match the shape). */
bool npy_write(const char *path, const NpyArray *a, char *err, size_t errlen);

void npy_free(NpyArray *a);

#endif
