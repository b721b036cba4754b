/* rt_util.c: see rt_util.h. */
#include "rt_util.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta.h"

/* ---- synthetic ELF ----------------------------------------------------------- */

RtElfOpts rt_elf_opts(unsigned sm)
{
    RtElfOpts o = {2, 1, 8, 190, 0x6000004u | (sm & 0xFFu) << 8, TILERT_META_SYMBOL, false, 0, 0};
    return o;
}

typedef struct Buf {
    uint8_t *p;
    size_t len, cap;
} Buf;

static void bput(Buf *b, const void *src, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    if (src) memcpy(b->p + b->len, src, n);
    else memset(b->p + b->len, 0, n);
    b->len += n;
}
static void balign(Buf *b, size_t a)
{
    while (b->len % a) bput(b, NULL, 1);
}
static void le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void shdr(Buf *b, uint32_t name, uint32_t type, uint64_t off, uint64_t size, uint32_t link, uint32_t info,
                 uint64_t entsize)
{
    uint8_t s[64] = {0};
    le(s, name, 4);
    le(s + 4, type, 4);
    le(s + 24, off, 8);
    le(s + 32, size, 8);
    le(s + 40, link, 4);
    le(s + 44, info, 4);
    le(s + 48, 8, 8);
    le(s + 56, entsize, 8);
    bput(b, s, 64);
}

uint8_t *rt_make_elf(const uint8_t *meta, size_t meta_len, const RtElfOpts *o, size_t *len)
{
    Buf b = {0};
    bput(&b, NULL, 64);
    static const char shstr[] = "\0.shstrtab\0.strtab\0.symtab\0.nv.global.init";
    size_t shstr_off = b.len;
    bput(&b, shstr, sizeof shstr);
    size_t str_off = b.len;
    bput(&b, "", 1);
    bput(&b, o->symbol, strlen(o->symbol) + 1);
    size_t strsz = b.len - str_off;
    balign(&b, 8);
    size_t sym_off = b.len;
    uint8_t sym[48] = {0};
    le(sym + 24, 1, 4);         /* st_name */
    sym[24 + 4] = 0x11;         /* GLOBAL OBJECT */
    le(sym + 24 + 6, 4, 2);     /* st_shndx: the data section */
    le(sym + 24 + 8, o->sym_value, 8);
    le(sym + 24 + 16, meta_len, 8);
    bput(&b, sym, sizeof sym);
    balign(&b, 8);
    size_t data_off = b.len;
    if (!o->nobits) bput(&b, meta, meta_len);
    balign(&b, 8);
    size_t sh_off = b.len;
    shdr(&b, 0, 0, 0, 0, 0, 0, 0);
    shdr(&b, 1, 3, shstr_off, sizeof shstr, 0, 0, 0);
    shdr(&b, 11, 3, str_off, strsz, 0, 0, 0);
    shdr(&b, 19, 2, sym_off, 48, 2, 1, 24);
    shdr(&b, 27, o->nobits ? 8 : 1, data_off, meta_len, 0, 0, 0);
    size_t ph_off = b.len;
    if (o->phdr_filesz) {
        uint8_t ph[56] = {0};
        le(ph, 1, 4); /* PT_LOAD */
        le(ph + 8, data_off, 8);
        le(ph + 32, o->phdr_filesz, 8);
        le(ph + 40, o->phdr_filesz, 8);
        bput(&b, ph, sizeof ph);
    }
    uint8_t *h = b.p;
    memcpy(h, "\x7f" "ELF", 4);
    h[4] = o->elf_class;
    h[5] = o->data;
    h[6] = 1;
    h[7] = 0x41;
    h[8] = o->abi_version;
    le(h + 16, 2, 2); /* ET_EXEC */
    le(h + 18, o->machine, 2);
    le(h + 20, 1, 4);
    le(h + 40, sh_off, 8);
    if (o->phdr_filesz) {
        le(h + 32, ph_off, 8);
        le(h + 54, 56, 2);
        le(h + 56, 1, 2);
    }
    le(h + 48, o->flags, 4);
    le(h + 52, 64, 2);
    le(h + 58, 64, 2);
    le(h + 60, 5, 2);
    le(h + 62, 1, 2);
    *len = b.len;
    return b.p;
}

/* ---- nvJitLink ----------------------------------------------------------------- */

typedef int (*JlCreate)(void **, uint32_t, const char **);
typedef int (*JlDestroy)(void **);
typedef int (*JlAddData)(void *, int, const void *, size_t, const char *);
typedef int (*JlComplete)(void *);
typedef int (*JlSize)(void *, size_t *);
typedef int (*JlGet)(void *, void *);

uint8_t *rt_nvjitlink(const char *ptx, const char *arch, size_t *len, char *log, size_t loglen)
{
    static const char *const names[] = {"libnvJitLink.so.13", "/usr/local/cuda/lib64/libnvJitLink.so.13",
#ifdef TILEC_CUDA_HOME
                                        TILEC_CUDA_HOME "/lib64/libnvJitLink.so.13",
#endif
    };
    void *lib = NULL;
    const char *home = getenv("CUDA_HOME");
    if (home && *home) {
        char path[512];
        snprintf(path, sizeof path, "%s/lib64/libnvJitLink.so.13", home);
        lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(log, loglen, "nvJitLink not found (libnvJitLink.so.13): %s", dlerror());
        return NULL;
    }
    JlCreate create = (JlCreate)dlsym(lib, "__nvJitLinkCreate_13_0");
    JlDestroy destroy = (JlDestroy)dlsym(lib, "__nvJitLinkDestroy_13_0");
    JlAddData add = (JlAddData)dlsym(lib, "__nvJitLinkAddData_13_0");
    JlComplete complete = (JlComplete)dlsym(lib, "__nvJitLinkComplete_13_0");
    JlSize cubin_size = (JlSize)dlsym(lib, "__nvJitLinkGetLinkedCubinSize_13_0");
    JlGet cubin = (JlGet)dlsym(lib, "__nvJitLinkGetLinkedCubin_13_0");
    JlSize errlog_size = (JlSize)dlsym(lib, "__nvJitLinkGetErrorLogSize_13_0");
    JlGet errlog = (JlGet)dlsym(lib, "__nvJitLinkGetErrorLog_13_0");
    if (!create || !destroy || !add || !complete || !cubin_size || !cubin || !errlog_size || !errlog) {
        snprintf(log, loglen, "nvJitLink lacks the 13.0 entry points");
        return NULL;
    }
    char archopt[32];
    snprintf(archopt, sizeof archopt, "-arch=%s", arch);
    const char *opts[] = {archopt, "-O3"};
    void *h = NULL;
    uint8_t *out = NULL;
    if (create(&h, 2, opts) != 0) {
        snprintf(log, loglen, "nvJitLinkCreate failed");
        return NULL;
    }
    if (add(h, 2 /* NVJITLINK_INPUT_PTX */, ptx, strlen(ptx), "test.ptx") != 0 || complete(h) != 0) {
        size_t n = 0;
        errlog_size(h, &n);
        char *e = calloc(1, n + 1);
        if (e) errlog(h, e);
        snprintf(log, loglen, "nvJitLink failed: %s", e ? e : "");
        free(e);
    } else if (cubin_size(h, len) == 0 && (out = malloc(*len)) != NULL) {
        if (cubin(h, out) != 0) {
            free(out);
            out = NULL;
            snprintf(log, loglen, "nvJitLinkGetLinkedCubin failed");
        }
    }
    destroy(&h);
    return out;
}

/* ---- the test module -------------------------------------------------------------- */

static const uint8_t vadd_code[] = {
    TILERT_GOP_ARG, 3, TILERT_GOP_PUSH, 255, 0, 0, 0, 0, 0, 0, 0, TILERT_GOP_ADD, TILERT_GOP_WRAP, TILERT_I32,
    TILERT_GOP_PUSH, 0, 1, 0, 0, 0, 0, 0, 0, TILERT_GOP_DIV, TILERT_GOP_WRAP, TILERT_I32,
};
static const uint8_t rowscale_code[] = {TILERT_GOP_SHAPE, 0, 0};
static const uint8_t smem_code[] = {TILERT_GOP_ARG, 1, TILERT_GOP_PUSH, 128, 0, 0, 0, 0, 0, 0, 0, TILERT_GOP_CDIV};

uint8_t *rt_test_meta(const char *arch, uint32_t extra_smem, bool ghost, size_t *len)
{
    uint16_t sm;
    uint8_t fl;
    if (!tilert_meta_parse_arch(arch, &sm, &fl)) return NULL;
    static const tilert_meta_param vadd_p[] = {
        {"x", TILERT_PARAM_PTR, TILERT_F32, 0, 0, NULL, 0}, {"y", TILERT_PARAM_PTR, TILERT_F32, 0, 0, NULL, 0},
        {"out", TILERT_PARAM_PTR, TILERT_F32, 0, 0, NULL, 0}, {"n", TILERT_PARAM_SCALAR, TILERT_I32, 0, 0, NULL, 0}};
    static const tilert_meta_spec vadd_s[] = {{"BLOCK", "256"}};
    static const tilert_meta_param rs_p[] = {{"A", TILERT_PARAM_TENSOR, TILERT_F32, 2, 0, NULL, 0},
                                             {"B", TILERT_PARAM_TENSOR, TILERT_F32, 2, 0, NULL, 0},
                                             {"alpha", TILERT_PARAM_SCALAR, TILERT_F32, 0, 0, NULL, 0}};
    static const tilert_meta_param sm_p[] = {{"out", TILERT_PARAM_PTR, TILERT_F32, 0, 0, NULL, 0},
                                             {"n", TILERT_PARAM_SCALAR, TILERT_I32, 0, 0, NULL, 0}};
    tilert_meta_kernel k[4] = {
        {"vadd", "vadd", sm, fl, 1, 8, 0, 0, 4, 1, sizeof vadd_code, vadd_p, vadd_s, vadd_code, 0, NULL},
        {"rowscale", "rowscale", sm, fl, 1, 4, 0, 0, 3, 0, sizeof rowscale_code, rs_p, NULL, rowscale_code, 0, NULL},
        {"smem_big", "smem_big", sm, fl, 1, 4, 0, extra_smem ? extra_smem : 100000, 2, 0, sizeof smem_code, sm_p,
         NULL, smem_code, 0, NULL},
        {"ghost", "ghost", sm, fl, 0, 1, 0, 0, 0, 0, 0, NULL, NULL, NULL, 0, NULL},
    };
    uint8_t *out;
    char err[200];
    if (!tilert_meta_write(k, ghost ? 4 : 3, &out, len, err, sizeof err)) {
        fprintf(stderr, "rt_test_meta: %s\n", err);
        return NULL;
    }
    return out;
}

static const char test_ptx_body[] =
    ".visible .entry vadd(.param .u64 x, .param .u64 y, .param .u64 out, .param .u32 n)\n"
    "{\n"
    "    .reg .b32 %r<6>;\n    .reg .b64 %rd<8>;\n    .reg .f32 %f<4>;\n    .reg .pred %p;\n"
    "    ld.param.u64 %rd1, [x];\n    ld.param.u64 %rd2, [y];\n    ld.param.u64 %rd3, [out];\n"
    "    ld.param.u32 %r1, [n];\n"
    "    mov.u32 %r2, %ctaid.x;\n    mov.u32 %r3, %ntid.x;\n    mov.u32 %r4, %tid.x;\n"
    "    mad.lo.s32 %r5, %r2, %r3, %r4;\n"
    "    setp.ge.s32 %p, %r5, %r1;\n    @%p bra DONE;\n"
    "    cvta.to.global.u64 %rd1, %rd1;\n    cvta.to.global.u64 %rd2, %rd2;\n    cvta.to.global.u64 %rd3, %rd3;\n"
    "    mul.wide.s32 %rd4, %r5, 4;\n"
    "    add.s64 %rd5, %rd1, %rd4;\n    add.s64 %rd6, %rd2, %rd4;\n    add.s64 %rd7, %rd3, %rd4;\n"
    "    ld.global.f32 %f1, [%rd5];\n    ld.global.f32 %f2, [%rd6];\n"
    "    add.f32 %f3, %f1, %f2;\n    st.global.f32 [%rd7], %f3;\n"
    "DONE:\n    ret;\n}\n\n"
    /* the tensor ABI: pointer, shape[2], stride[2] for each view, then the scalar */
    ".visible .entry rowscale(.param .u64 a, .param .u64 a_n0, .param .u64 a_n1, .param .u64 a_s0,\n"
    "    .param .u64 a_s1, .param .u64 b, .param .u64 b_n0, .param .u64 b_n1, .param .u64 b_s0,\n"
    "    .param .u64 b_s1, .param .f32 alpha)\n"
    "{\n"
    "    .reg .b32 %r<4>;\n    .reg .b64 %rd<20>;\n    .reg .f32 %f<4>;\n    .reg .pred %p;\n"
    "    ld.param.u64 %rd1, [a];\n    ld.param.u64 %rd2, [a_n1];\n    ld.param.u64 %rd3, [a_s0];\n"
    "    ld.param.u64 %rd4, [a_s1];\n    ld.param.u64 %rd5, [b];\n    ld.param.u64 %rd6, [b_s0];\n"
    "    ld.param.u64 %rd7, [b_s1];\n    ld.param.f32 %f1, [alpha];\n"
    "    mov.u32 %r1, %ctaid.x;\n    cvt.u64.u32 %rd8, %r1;\n"
    "    mov.u32 %r2, %tid.x;\n    cvt.u64.u32 %rd9, %r2;\n"
    "    mov.u32 %r3, %ntid.x;\n    cvt.u64.u32 %rd16, %r3;\n"
    "    cvta.to.global.u64 %rd1, %rd1;\n    cvta.to.global.u64 %rd5, %rd5;\n"
    "    mul.lo.s64 %rd10, %rd8, %rd3;\n    mul.lo.s64 %rd11, %rd8, %rd6;\n"
    "LOOP:\n"
    "    setp.ge.s64 %p, %rd9, %rd2;\n    @%p bra FIN;\n"
    "    mad.lo.s64 %rd12, %rd9, %rd4, %rd10;\n    shl.b64 %rd12, %rd12, 2;\n    add.s64 %rd13, %rd1, %rd12;\n"
    "    ld.global.f32 %f2, [%rd13];\n    mul.f32 %f3, %f2, %f1;\n"
    "    mad.lo.s64 %rd14, %rd9, %rd7, %rd11;\n    shl.b64 %rd14, %rd14, 2;\n    add.s64 %rd15, %rd5, %rd14;\n"
    "    st.global.f32 [%rd15], %f3;\n"
    "    add.s64 %rd9, %rd9, %rd16;\n    bra LOOP;\n"
    "FIN:\n    ret;\n}\n\n"
    ".extern .shared .align 16 .b8 dsmem[];\n\n"
    ".visible .entry smem_big(.param .u64 out, .param .u32 n)\n"
    "{\n"
    "    .reg .b32 %r<12>;\n    .reg .b64 %rd<4>;\n    .reg .f32 %f<3>;\n    .reg .pred %p;\n"
    "    ld.param.u64 %rd1, [out];\n    ld.param.u32 %r1, [n];\n"
    "    mov.u32 %r2, %ctaid.x;\n    mov.u32 %r4, %tid.x;\n"
    "    shl.b32 %r3, %r2, 7;\n    add.s32 %r5, %r3, %r4;\n"
    "    cvt.rn.f32.s32 %f1, %r5;\n    add.f32 %f1, %f1, %f1;\n"
    "    mov.u32 %r6, dsmem;\n"
    "    mov.u32 %r8, 24999;\n    sub.s32 %r7, %r8, %r4;\n    shl.b32 %r7, %r7, 2;\n    add.s32 %r9, %r6, %r7;\n"
    "    st.shared.f32 [%r9], %f1;\n"
    "    bar.sync 0;\n"
    "    add.s32 %r10, %r4, 24872;\n    shl.b32 %r10, %r10, 2;\n    add.s32 %r10, %r6, %r10;\n"
    "    ld.shared.f32 %f2, [%r10];\n"
    "    setp.ge.s32 %p, %r5, %r1;\n    @%p bra END;\n"
    "    cvta.to.global.u64 %rd1, %rd1;\n    mul.wide.s32 %rd2, %r5, 4;\n    add.s64 %rd3, %rd1, %rd2;\n"
    "    st.global.f32 [%rd3], %f2;\n"
    "END:\n    ret;\n}\n";

char *rt_test_ptx(const char *arch, const uint8_t *meta, size_t len)
{
    size_t cap = sizeof test_ptx_body + 256 + len * 5;
    char *s = malloc(cap);
    if (!s) return NULL;
    uint16_t sm = 90;
    uint8_t fl;
    tilert_meta_parse_arch(arch, &sm, &fl);
    /* PTX 8.0 reaches sm_90a; later targets need a later ISA */
    int n = snprintf(s, cap, ".version %s\n.target %s\n.address_size 64\n\n", sm >= 100 ? "9.0" : "8.0", arch);
    n += snprintf(s + n, cap - (size_t)n, "%s\n.visible .global .align 8 .b8 %s[%zu] = {", test_ptx_body,
                  TILERT_META_SYMBOL, len);
    for (size_t i = 0; i < len; i++) n += snprintf(s + n, cap - (size_t)n, "%s%u", i ? ", " : "", meta[i]);
    snprintf(s + n, cap - (size_t)n, "};\n");
    return s;
}

uint8_t *rt_test_cubin(const char *arch, const char *meta_arch, uint32_t extra_smem, bool ghost, size_t *len,
                       char *log, size_t loglen)
{
    size_t mlen;
    uint8_t *meta = rt_test_meta(meta_arch, extra_smem, ghost, &mlen);
    if (!meta) {
        snprintf(log, loglen, "cannot build the test metadata for %s", meta_arch);
        return NULL;
    }
    char *ptx = rt_test_ptx(arch, meta, mlen);
    free(meta);
    if (!ptx) {
        snprintf(log, loglen, "out of memory");
        return NULL;
    }
    uint8_t *c = rt_nvjitlink(ptx, arch, len, log, loglen);
    free(ptx);
    return c;
}

/* ---- the TMA test module ------------------------------------------------------------ */

const unsigned rt_tma_bytes[RT_TMA_NDESC] = {2048, 1024, 1024, 2048};

uint8_t *rt_tma_meta(const char *arch, size_t *len)
{
    uint16_t sm;
    uint8_t fl;
    if (!tilert_meta_parse_arch(arch, &sm, &fl)) return NULL;
    static const tilert_meta_tma descs[RT_TMA_NDESC] = {
        {TILERT_F32, 2, TILERT_TMA_SWIZZLE_NONE, TILERT_TMA_L2_NONE, TILERT_TMA_OOB_ZERO, 0, {32, 16, 0, 0, 0}, {1, 1, 0, 0, 0}},
        {TILERT_F32, 2, TILERT_TMA_SWIZZLE_128B, TILERT_TMA_L2_NONE, TILERT_TMA_OOB_ZERO, 0, {32, 8, 0, 0, 0}, {1, 1, 0, 0, 0}},
        {TILERT_F32, 2, TILERT_TMA_SWIZZLE_NONE, TILERT_TMA_L2_NONE, TILERT_TMA_OOB_ZERO, 0, {32, 16, 0, 0, 0}, {1, 2, 0, 0, 0}},
        {TILERT_F32, 2, TILERT_TMA_SWIZZLE_NONE, TILERT_TMA_L2_128B, TILERT_TMA_OOB_NAN, 0, {32, 16, 0, 0, 0}, {1, 1, 0, 0, 0}},
    };
    static const tilert_meta_param ps[] = {{"A", TILERT_PARAM_TENSOR, TILERT_F32, 2, RT_TMA_NDESC, descs, 0},
                                           {"out", TILERT_PARAM_PTR, TILERT_F32, 0, 0, NULL, 0},
                                           {"which", TILERT_PARAM_SCALAR, TILERT_I32, 0, 0, NULL, 0}};
    static const uint8_t code[] = {TILERT_GOP_SHAPE, 0, 1, TILERT_GOP_PUSH, 32, 0, 0, 0, 0, 0, 0, 0, TILERT_GOP_CDIV,
                                   TILERT_GOP_SHAPE, 0, 0, TILERT_GOP_PUSH, 16, 0, 0, 0, 0, 0, 0, 0, TILERT_GOP_CDIV};
    static const tilert_meta_param rps[] = {{"A", TILERT_PARAM_TENSOR, TILERT_F32, 2, 1, descs,
                                             TILERT_META_PARAM_TMA_OPTIONAL},
                                            {"out", TILERT_PARAM_PTR, TILERT_I32, 0, 0, NULL, 0}};
    tilert_meta_kernel k[2] = {{"tma_tile", "tma_tile", sm, fl, 2, 4, 0, 0, 3, 0, sizeof code, ps, NULL, code, 0, NULL},
                               {"tma_ready", "tma_ready", sm, fl, 0, 1, 0, 0, 2, 0, 0, rps, NULL, NULL, 0, NULL}};
    uint8_t *out;
    char err[400];
    if (!tilert_meta_write(k, 2, &out, len, err, sizeof err)) {
        fprintf(stderr, "rt_tma_meta: %s\n", err);
        return NULL;
    }
    return out;
}

static const char tma_ptx_body[] =
    ".shared .align 1024 .b8 tma_buf[2048];\n"
    ".shared .align 8 .b64 tma_bar;\n\n"
    ".visible .entry tma_tile(.param .u64 a, .param .u64 a_n0, .param .u64 a_n1, .param .u64 a_s0,\n"
    "    .param .u64 a_s1, .param .align 64 .b8 a_tma0[128], .param .align 64 .b8 a_tma1[128],\n"
    "    .param .align 64 .b8 a_tma2[128], .param .align 64 .b8 a_tma3[128], .param .u64 out,\n"
    "    .param .u32 which)\n"
    ".maxntid 128, 1, 1\n"
    "{\n"
    "    .reg .b32 %r<24>;\n    .reg .b64 %rd<16>;\n    .reg .pred %p<10>;\n"
    "    ld.param.u64 %rd1, [out];\n    ld.param.u32 %r1, [which];\n"
    "    mov.u32 %r2, %tid.x;\n    mov.u32 %r3, %ctaid.x;\n    mov.u32 %r4, %ctaid.y;\n"
    "    mov.u32 %r5, %nctaid.x;\n    mov.u32 %r6, tma_buf;\n    mov.u32 %r7, tma_bar;\n"
    "    setp.eq.u32 %p1, %r2, 0;\n"
    "    @!%p1 bra INIT_DONE;\n"
    "    mbarrier.init.shared::cta.b64 [%r7], 1;\n"
    "    fence.mbarrier_init.release.cluster;\n"
    "    fence.proxy.async.shared::cta;\n"
    "INIT_DONE:\n"
    "    bar.sync 0;\n"
    /* the generic addresses of the grid-constant tensor maps; pick descriptor `which` */
    "    mov.u64 %rd2, a_tma0;\n    cvta.param.u64 %rd2, %rd2;\n"
    "    mov.u64 %rd3, a_tma1;\n    cvta.param.u64 %rd3, %rd3;\n"
    "    mov.u64 %rd4, a_tma2;\n    cvta.param.u64 %rd4, %rd4;\n"
    "    mov.u64 %rd5, a_tma3;\n    cvta.param.u64 %rd5, %rd5;\n"
    "    setp.eq.u32 %p2, %r1, 1;\n    selp.b64 %rd6, %rd3, %rd2, %p2;\n"
    "    setp.eq.u32 %p3, %r1, 2;\n    selp.b64 %rd6, %rd4, %rd6, %p3;\n"
    "    setp.eq.u32 %p4, %r1, 3;\n    selp.b64 %rd6, %rd5, %rd6, %p4;\n"
    "    or.pred %p5, %p2, %p3;\n    selp.u32 %r8, 1024, 2048, %p5;\n"
    "    shl.b32 %r9, %r3, 5;\n    shl.b32 %r10, %r4, 4;\n"
    "    @!%p1 bra WAIT;\n"
    "    mbarrier.arrive.expect_tx.shared::cta.b64 %rd7, [%r7], %r8;\n"
    "    cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r6], [%rd6, {%r9, %r10}], [%r7];\n"
    "WAIT:\n"
    "    mov.u32 %r17, 0;\n"
    "SPIN:\n"
    "    mbarrier.try_wait.parity.shared::cta.b64 %p6, [%r7], 0;\n"
    "    @%p6 bra LOADED;\n"
    "    add.u32 %r17, %r17, 1;\n"
    "    setp.lt.u32 %p7, %r17, 1000000;\n"
    "    @%p7 bra SPIN;\n"
    "    bra END;\n" /* the transfer never completed: leave the output poisoned */
    "LOADED:\n"
    "    shr.u32 %r11, %r8, 2;\n"
    "    mad.lo.u32 %r12, %r4, %r5, %r3;\n"
    "    mul.wide.u32 %rd8, %r12, 2048;\n"
    "    cvta.to.global.u64 %rd1, %rd1;\n"
    "    add.s64 %rd9, %rd1, %rd8;\n"
    "    mov.u32 %r13, %r2;\n"
    "COPY:\n"
    "    setp.ge.u32 %p8, %r13, %r11;\n    @%p8 bra END;\n"
    "    shl.b32 %r14, %r13, 2;\n    add.s32 %r15, %r6, %r14;\n"
    "    ld.shared.b32 %r16, [%r15];\n"
    "    cvt.u64.u32 %rd10, %r14;\n    add.s64 %rd11, %rd9, %rd10;\n"
    "    st.global.b32 [%rd11], %r16;\n"
    "    add.u32 %r13, %r13, 128;\n    bra COPY;\n"
    "END:\n    ret;\n}\n\n"
    /* out[0] = whether any of the map's 128 bytes is set (tilec's TMA_READY), out[1] = 1 */
    ".visible .entry tma_ready(.param .u64 r_a, .param .u64 r_a_n0, .param .u64 r_a_n1, .param .u64 r_a_s0,\n"
    "    .param .u64 r_a_s1, .param .align 64 .b8 r_tma[128], .param .u64 r_out)\n"
    ".maxntid 32, 1, 1\n"
    "{\n"
    "    .reg .b32 %r<3>;\n    .reg .b64 %rd<20>;\n    .reg .pred %p;\n"
    "    ld.param.v2.u64 {%rd1, %rd2}, [r_tma];\n    ld.param.v2.u64 {%rd3, %rd4}, [r_tma+16];\n"
    "    ld.param.v2.u64 {%rd5, %rd6}, [r_tma+32];\n    ld.param.v2.u64 {%rd7, %rd8}, [r_tma+48];\n"
    "    ld.param.v2.u64 {%rd9, %rd10}, [r_tma+64];\n    ld.param.v2.u64 {%rd11, %rd12}, [r_tma+80];\n"
    "    ld.param.v2.u64 {%rd13, %rd14}, [r_tma+96];\n    ld.param.v2.u64 {%rd15, %rd16}, [r_tma+112];\n"
    "    or.b64 %rd1, %rd1, %rd2;\n    or.b64 %rd3, %rd3, %rd4;\n    or.b64 %rd5, %rd5, %rd6;\n"
    "    or.b64 %rd7, %rd7, %rd8;\n    or.b64 %rd9, %rd9, %rd10;\n    or.b64 %rd11, %rd11, %rd12;\n"
    "    or.b64 %rd13, %rd13, %rd14;\n    or.b64 %rd15, %rd15, %rd16;\n"
    "    or.b64 %rd1, %rd1, %rd3;\n    or.b64 %rd5, %rd5, %rd7;\n    or.b64 %rd9, %rd9, %rd11;\n"
    "    or.b64 %rd13, %rd13, %rd15;\n    or.b64 %rd1, %rd1, %rd5;\n    or.b64 %rd9, %rd9, %rd13;\n"
    "    or.b64 %rd1, %rd1, %rd9;\n"
    "    setp.ne.u64 %p, %rd1, 0;\n    selp.u32 %r1, 1, 0, %p;\n    mov.u32 %r2, 1;\n"
    "    ld.param.u64 %rd17, [r_out];\n    cvta.to.global.u64 %rd17, %rd17;\n"
    "    st.global.v2.u32 [%rd17], {%r1, %r2};\n"
    "    ret;\n}\n";

char *rt_tma_ptx(const char *arch, const uint8_t *meta, size_t len)
{
    size_t cap = sizeof tma_ptx_body + 256 + len * 5;
    char *s = malloc(cap);
    if (!s) return NULL;
    uint16_t sm = 90;
    uint8_t fl;
    tilert_meta_parse_arch(arch, &sm, &fl);
    int n = snprintf(s, cap, ".version %s\n.target %s\n.address_size 64\n\n", sm >= 100 ? "9.0" : "8.0", arch);
    n += snprintf(s + n, cap - (size_t)n, "%s\n.visible .global .align 8 .b8 %s[%zu] = {", tma_ptx_body,
                  TILERT_META_SYMBOL, len);
    for (size_t i = 0; i < len; i++) n += snprintf(s + n, cap - (size_t)n, "%s%u", i ? ", " : "", meta[i]);
    snprintf(s + n, cap - (size_t)n, "};\n");
    return s;
}

uint8_t *rt_tma_cubin(const char *arch, size_t *len, char *log, size_t loglen)
{
    size_t mlen;
    uint8_t *meta = rt_tma_meta(arch, &mlen);
    if (!meta) {
        snprintf(log, loglen, "cannot build the TMA test metadata for %s", arch);
        return NULL;
    }
    char *ptx = rt_tma_ptx(arch, meta, mlen);
    free(meta);
    if (!ptx) {
        snprintf(log, loglen, "out of memory");
        return NULL;
    }
    uint8_t *c = rt_nvjitlink(ptx, arch, len, log, loglen);
    free(ptx);
    return c;
}
