/* tma.c: cuTensorMapEncodeTiled's arguments from a descriptor and a tensor (tma.h). */
#include "tma.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

uint32_t tilert_tma_data_type(tilert_dtype dt)
{
    switch (dt) {
    case TILERT_I16:
    case TILERT_U16: return TILERT_CU_TMA_UINT16;
    case TILERT_I32: return TILERT_CU_TMA_INT32;
    case TILERT_U32: return TILERT_CU_TMA_UINT32;
    case TILERT_I64: return TILERT_CU_TMA_INT64;
    case TILERT_U64: return TILERT_CU_TMA_UINT64;
    case TILERT_F16: return TILERT_CU_TMA_FLOAT16;
    case TILERT_BF16: return TILERT_CU_TMA_BFLOAT16;
    case TILERT_F32: return TILERT_CU_TMA_FLOAT32;
    case TILERT_F64: return TILERT_CU_TMA_FLOAT64;
    default: return TILERT_CU_TMA_UINT8; /* i1, i8, u8, fp8: bytes */
    }
}

#define TMA_MAX_DIM (UINT64_C(1) << 32)
#define TMA_MAX_STRIDE (UINT64_C(1) << 40)

tilert_status tilert_tma_prepare(const tilert_meta_param *p, const tilert_meta_tma *d, const tilert_tensor *t,
                                 tilert_tma_encode *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    char e[300];
    if (!tilert_meta_check_tma(d, p, e, sizeof e)) {
        fail(err, errlen, "%s", e);
        return TILERT_ERROR_BAD_METADATA;
    }
    if (t->rank != d->rank || tilert_dtype_size(t->dtype) != tilert_dtype_size((tilert_dtype)d->dtype)) {
        fail(err, errlen, "the tensor (rank %d, %s) does not fit the descriptor (rank %u, %s)", (int)t->rank,
             tilert_dtype_name(t->dtype), d->rank, tilert_dtype_name((tilert_dtype)d->dtype));
        return TILERT_ERROR_ARG_TYPE;
    }
    const int rank = d->rank;
    const uint64_t esz = tilert_dtype_size((tilert_dtype)d->dtype);
    uint64_t addr = (uint64_t)(uintptr_t)t->data;
    if (addr % 16) {
        fail(err, errlen, "TMA needs the base address 16-byte aligned, got 0x%llx", (unsigned long long)addr);
        return TILERT_ERROR_ARG_ALIGN;
    }
    for (int dim = 0; dim < rank; dim++) {
        int64_t n = t->shape[dim];
        if (n <= 0) {
            fail(err, errlen, "shape[%d] = %lld: TMA cannot describe an empty dimension (globalDim must be nonzero)",
                 dim, (long long)n);
            return TILERT_ERROR_ARG_VALUE;
        }
        if ((uint64_t)n > TMA_MAX_DIM) {
            fail(err, errlen, "shape[%d] = %lld is above TMA's limit of 2^32 elements", dim, (long long)n);
            return TILERT_ERROR_ARG_VALUE;
        }
    }
    int inner = rank - 1;
    if (t->shape[inner] > 1 && t->stride[inner] != 1) {
        fail(err, errlen, "TMA needs the innermost dimension contiguous: stride[%d] = %lld elements, must be 1 "
             "(TMA has no stride along its first dimension)", inner, (long long)t->stride[inner]);
        return TILERT_ERROR_ARG_VALUE;
    }
    out->data_type = tilert_tma_data_type((tilert_dtype)d->dtype);
    out->rank = (uint32_t)rank;
    out->address = addr;
    for (int i = 0; i < rank; i++) {
        out->dims[i] = (uint64_t)t->shape[rank - 1 - i];
        out->box[i] = d->box[i];
        out->elem_strides[i] = d->elem_stride[i];
    }
    /* TMA dimension i >= 1 is tensor dimension rank-1-i; its byte stride goes to strides[i - 1] */
    for (int i = 1; i < rank; i++) {
        int dim = rank - 1 - i;
        int64_t s = t->stride[dim];
        bool usable = s >= 0 && (uint64_t)s < TMA_MAX_STRIDE / esz && ((uint64_t)s * esz) % 16 == 0;
        if (!usable && t->shape[dim] == 1) {
            /* only coordinate 0 is in bounds: the stride is never applied, so give the packed one */
            uint64_t packed = i == 1 ? out->dims[0] * esz : out->strides[i - 2] * out->dims[i - 1];
            packed = (packed + 15) / 16 * 16;
            out->strides[i - 1] = packed < TMA_MAX_STRIDE ? packed : 16;
            continue;
        }
        if (s < 0) {
            fail(err, errlen, "stride[%d] = %lld elements is negative: TMA strides are unsigned", dim, (long long)s);
            return TILERT_ERROR_ARG_VALUE;
        }
        if ((uint64_t)s >= TMA_MAX_STRIDE / esz) {
            fail(err, errlen, "stride[%d] = %lld elements of %llu bytes is not below TMA's limit of 2^40 bytes", dim,
                 (long long)s, (unsigned long long)esz);
            return TILERT_ERROR_ARG_VALUE;
        }
        uint64_t bytes = (uint64_t)s * esz;
        if (bytes % 16) {
            fail(err, errlen, "stride[%d] = %lld elements = %llu bytes is not a multiple of 16 (TMA needs every "
                 "stride but the innermost a multiple of 16 bytes)", dim, (long long)s, (unsigned long long)bytes);
            return TILERT_ERROR_ARG_VALUE;
        }
        out->strides[i - 1] = bytes;
    }
    out->interleave = d->interleave;
    out->swizzle = d->swizzle;
    out->l2_promotion = d->l2_promotion;
    out->oob_fill = d->oob_fill;
    return TILERT_OK;
}

static size_t list_u64(char *buf, size_t len, const char *name, const uint64_t *v, uint32_t n)
{
    size_t k = 0;
    int w = snprintf(buf, len, "%s {", name);
    k = w > 0 ? (size_t)w : 0;
    for (uint32_t i = 0; i < n && k < len; i++) {
        w = snprintf(buf + k, len - k, "%s%llu", i ? ", " : "", (unsigned long long)v[i]);
        k += w > 0 ? (size_t)w : 0;
    }
    if (k < len) {
        w = snprintf(buf + k, len - k, "} ");
        k += w > 0 ? (size_t)w : 0;
    }
    return k < len ? k : len;
}

void tilert_tma_format(const tilert_tma_encode *e, char *buf, size_t len)
{
    if (!len) return;
    buf[0] = 0;
    uint64_t box[TILERT_TMA_MAX_RANK], es[TILERT_TMA_MAX_RANK];
    uint32_t rank = e->rank <= TILERT_TMA_MAX_RANK ? e->rank : TILERT_TMA_MAX_RANK;
    for (uint32_t i = 0; i < rank; i++) box[i] = e->box[i], es[i] = e->elem_strides[i];
    size_t k = list_u64(buf, len, "globalDim", e->dims, rank);
    k += list_u64(buf + k, len - k, "globalStrides", e->strides, rank ? rank - 1 : 0);
    k += list_u64(buf + k, len - k, "boxDim", box, rank);
    k += list_u64(buf + k, len - k, "elementStrides", es, rank);
    if (k < len)
        snprintf(buf + k, len - k, "dataType %u address 0x%llx swizzle %u l2Promotion %u oobFill %u", e->data_type,
                 (unsigned long long)e->address, e->swizzle, e->l2_promotion, e->oob_fill);
}
