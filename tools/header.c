/* header.c: `tilec --emit=header`: a C header with a typed launch function per
 * kernel (see header.h for what it declares).
 *
 * 1. Name every kernel: its source name, or its symbol where two kernels of
 *    the module share a source name; made C identifiers.
 * 2. Map every parameter to a C type and a tilert_arg constructor:
 *      tensor<T, N>  tilert_tensor                  tilert_arg_tensor
 *      ptr<T>        T* (void* for f16, bf16, fp8)  tilert_arg_ptr(p, TILERT_T)
 *      iN / uN       intN_t / uintN_t               tilert_arg_i64 / tilert_arg_u64
 *      i1            bool                           tilert_arg_bool
 *      f32 / f64     float / double                 tilert_arg_f32 / tilert_arg_f64
 *      f16 / bf16    float (rounded to nearest even by libtilert)
 *      f8e4m3/e5m2   uint8_t, the bits              tilert_arg_bits
 *    and rename parameters that would collide with C or C++ keywords or with
 *    the names the launch functions use.
 * 3. Write: a comment listing the kernels, include guards, extern "C", the
 *    module state (one per translation unit: module and kernels, published
 *    with atomic compare-and-swap, so concurrent first launches load once and
 *    keep the winner), the loader (embedded bytes or a file), then per kernel
 *    its lookup, _launch (with a grid clause) and _launch_grid.
 * Every function is `static inline`: nothing to link but libtilert, and no
 * warning for the ones a program does not call.
 */
#include "header.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- names ------------------------------------------------------------------------ */

/* C11 and C++20 keywords and the names the generated functions use for their own
 * parameters and locals. */
static const char *const reserved[] = {
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
    "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr",
    "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete",
    "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
    "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
    "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast",
    "requires", "restrict", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast",
    "struct", "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid",
    "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
    "_Alignas", "_Alignof", "_Atomic", "_Bool", "_Complex", "_Generic", "_Imaginary", "_Noreturn",
    "_Static_assert", "_Thread_local", "stream", "grid", "NULL",
};

static bool is_reserved(const char *s)
{
    for (size_t i = 0; i < TL_COUNTOF(reserved); i++)
        if (strcmp(s, reserved[i]) == 0) return true;
    /* the generated code's own locals and every libtilert name */
    return strncmp(s, "tilec_", 6) == 0 || strncmp(s, "tilert_", 7) == 0 || strncmp(s, "TILERT_", 7) == 0;
}

/* s as a C identifier: other characters become '_', a leading digit gains one. */
static char *c_ident(const char *s)
{
    size_t n = strlen(s);
    char *out = tl_xmalloc(n + 2), *p = out;
    if (n == 0 || (s[0] >= '0' && s[0] <= '9')) *p++ = '_';
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        *p++ = ok ? c : '_';
    }
    *p = 0;
    return out;
}

/* The names of f's parameters in C: unique, none reserved. */
static char **param_names(const IrFunc *f, const char *kname)
{
    char getter[600];
    snprintf(getter, sizeof getter, "%s_kernel", kname); /* the launch functions call it */
    char **names = tl_xcalloc(f->nparams + 1, sizeof *names);
    for (uint32_t i = 0; i < f->nparams; i++) {
        char *n = c_ident(f->params[i].name);
        for (;;) {
            bool clash = is_reserved(n) || strcmp(n, getter) == 0;
            for (uint32_t j = 0; j < i && !clash; j++) clash = strcmp(names[j], n) == 0;
            for (uint32_t j = i + 1; j < f->nparams && !clash; j++) clash = strcmp(f->params[j].name, n) == 0;
            if (!clash) break;
            size_t len = strlen(n);
            n = tl_xrealloc(n, len + 2);
            n[len] = '_';
            n[len + 1] = 0;
        }
        names[i] = n;
    }
    return names;
}

static void free_names(char **names, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

/* ---- types ------------------------------------------------------------------------- */

/* "TILERT_F32" for DT_F32: the runtime's dtypes are the IR's, in the same order. */
static void rt_dtype_name(StrBuf *b, DType dt)
{
    sb_puts(b, "TILERT_");
    for (const char *p = dt_name[dt]; *p; p++) sb_putc(b, (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p));
}

/* The C type of a scalar of dtype dt, as a parameter. */
static const char *scalar_ctype(DType dt)
{
    switch (dt) {
    case DT_I1: return "bool";
    case DT_I8: return "int8_t";
    case DT_I16: return "int16_t";
    case DT_I32: return "int32_t";
    case DT_I64: return "int64_t";
    case DT_U8: return "uint8_t";
    case DT_U16: return "uint16_t";
    case DT_U32: return "uint32_t";
    case DT_U64: return "uint64_t";
    case DT_F8E4M3:
    case DT_F8E5M2: return "uint8_t";
    case DT_F16:
    case DT_BF16:
    case DT_F32: return "float";
    case DT_F64: return "double";
    default: return NULL;
    }
}

/* The C element type a ptr<T> parameter points to. */
static const char *pointee_ctype(DType dt)
{
    switch (dt) {
    case DT_I1: return "uint8_t";
    case DT_F8E4M3:
    case DT_F8E5M2:
    case DT_F16:
    case DT_BF16: return "void";
    default: return scalar_ctype(dt);
    }
}

static void tile_type(StrBuf *b, IrType t)
{
    ir_ty_print(b, t);
}

/* "float *x" */
static bool param_decl(StrBuf *b, const IrParam *p, const char *name)
{
    IrType t = p->ty;
    if (t.kind == TY_VIEW) sb_printf(b, "tilert_tensor %s", name);
    else if (t.kind == TY_TILE && t.rank == 0 && t.isptr) sb_printf(b, "%s *%s", pointee_ctype((DType)t.dt), name);
    else if (ir_ty_is_scalar(t) && scalar_ctype((DType)t.dt)) sb_printf(b, "%s %s", scalar_ctype((DType)t.dt), name);
    else return false;
    return true;
}

/* The tilert_arg for parameter p named `name`. */
static void param_arg(StrBuf *b, const IrParam *p, const char *name)
{
    IrType t = p->ty;
    DType dt = (DType)t.dt;
    if (t.kind == TY_VIEW) {
        sb_printf(b, "tilert_arg_tensor(%s)", name);
    } else if (t.isptr) {
        sb_printf(b, "tilert_arg_ptr((void *)%s, ", name);
        rt_dtype_name(b, dt);
        sb_putc(b, ')');
    } else if (dt == DT_I1) {
        sb_printf(b, "tilert_arg_bool(%s ? 1 : 0)", name);
    } else if (dt_is_signed(dt)) {
        sb_printf(b, "tilert_arg_i64((int64_t)%s)", name);
    } else if (dt_is_unsigned(dt)) {
        sb_printf(b, "tilert_arg_u64((uint64_t)%s)", name);
    } else if (dt == DT_F8E4M3 || dt == DT_F8E5M2) {
        sb_puts(b, "tilert_arg_bits(");
        rt_dtype_name(b, dt);
        sb_printf(b, ", (uint64_t)%s)", name);
    } else if (dt == DT_F64) {
        sb_printf(b, "tilert_arg_f64(%s)", name);
    } else {
        sb_printf(b, "tilert_arg_f32(%s)", name);
    }
}

/* ---- text -------------------------------------------------------------------------- */

/* s as the contents of a C string literal. */
static void c_string(StrBuf *b, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') sb_printf(b, "\\%c", *p);
        else if (*p == '\n') sb_puts(b, "\\n");
        else if (*p < 0x20 || *p >= 0x7f) sb_printf(b, "\\%03o", *p);
        else if (*p == '?' && p[1] == '?') sb_puts(b, "?\\"); /* no trigraphs */
        else sb_putc(b, (char)*p);
    }
}

/* s inside a comment: no comment terminator can appear. */
static void comment_text(StrBuf *b, const char *s)
{
    for (const char *p = s; *p; p++) {
        if (*p == '*' && p[1] == '/') sb_puts(b, "* ");
        else if (*p == '\n') sb_putc(b, ' ');
        else sb_putc(b, *p);
    }
}

/* The launch function's head, wrapped at 110 columns. */
static void signature(StrBuf *b, const IrFunc *f, char **names, const char *fn, bool with_grid)
{
    StrBuf line = {0};
    sb_printf(&line, "static inline tilert_status %s(struct CUstream_st *stream", fn);
    if (with_grid) sb_puts(&line, ", const uint32_t grid[3]");
    for (uint32_t i = 0; i < f->nparams; i++) {
        StrBuf p = {0};
        param_decl(&p, &f->params[i], names[i]);
        sb_putc(&line, ',');
        if (line.len + 1 + p.len + 1 > 110) {
            sb_puts(b, line.s);
            sb_putc(b, '\n');
            line.len = 0;
            sb_puts(&line, "   ");
        }
        sb_printf(&line, " %s", p.s);
        sb_free(&p);
    }
    sb_puts(b, line.s);
    sb_putc(b, ')');
    sb_free(&line);
}

typedef struct Kern {
    const IrFunc *f;
    char *name;         /* the C prefix of its functions */
    char **params;      /* C parameter names */
} Kern;

/* A specialization value as part of a C name: "128", "bf16", "m5" for -5. */
static void spec_value_ident(StrBuf *b, const char *v)
{
    if (*v == '-') {
        sb_putc(b, 'm');
        v++;
    }
    char *id = c_ident(v);
    sb_puts(b, id[0] == '_' && v[0] >= '0' && v[0] <= '9' ? id + 1 : id);
    free(id);
}

static const char *spec_of(const IrFunc *f, const char *name)
{
    for (uint32_t i = 0; i < f->nspecs; i++)
        if (strcmp(f->specs[i].name, name) == 0) return f->specs[i].value;
    return NULL;
}

/* Whether spec i of f has another value (or none) in some other kernel of its source name. */
static bool spec_differs(const IrModule *m, const IrFunc *f, uint32_t i)
{
    for (uint32_t j = 0; j < m->nfuncs; j++) {
        const IrFunc *g = m->funcs[j];
        if (g == f || strcmp(g->source_name, f->source_name) != 0) continue;
        const char *v = spec_of(g, f->specs[i].name);
        if (!v || strcmp(v, f->specs[i].value) != 0) return true;
    }
    return false;
}

static bool is_dtype_name(const char *v)
{
    for (int t = 0; t < DT_COUNT; t++)
        if (strcmp(dt_name[t], v) == 0) return true;
    return false;
}

/* The C prefix of f: its source name, with __P_V for each compile-time parameter whose value
 * differs among the specializations of that source name (the symbol if that names nothing apart). */
static char *kernel_cname(const IrModule *m, const IrFunc *f)
{
    bool shared = false;
    for (uint32_t j = 0; j < m->nfuncs; j++)
        if (m->funcs[j] != f && strcmp(m->funcs[j]->source_name, f->source_name) == 0) shared = true;
    if (!shared) return c_ident(f->source_name);
    StrBuf b = {0};
    char *base = c_ident(f->source_name);
    sb_puts(&b, base);
    free(base);
    bool any = false;
    for (uint32_t i = 0; i < f->nspecs; i++) {
        if (!spec_differs(m, f, i)) continue;
        char *pn = c_ident(f->specs[i].name);
        sb_printf(&b, "__%s_", pn);
        free(pn);
        spec_value_ident(&b, f->specs[i].value);
        any = true;
    }
    if (!any) {
        sb_free(&b);
        return c_ident(f->name);
    }
    return b.s;
}

static void write_intro(StrBuf *b, const HeaderOpts *h, const Kern *ks, uint32_t n, const char *guard)
{
    sb_puts(b, "/* ");
    comment_text(b, h->module_name);
    sb_puts(b, ": launch functions for the kernels of ");
    comment_text(b, h->source);
    sb_printf(b, ".\n * Generated by tilec %s --emit=header", h->tilec_version);
    if (h->cubin) sb_printf(b, " --embed --arch=%s -O%d%s", h->arch, h->opt_level, h->debug ? " -g" : "");
    sb_puts(b, "; do not edit.\n *\n");
    if (h->cubin && h->nimages > 1) {
        sb_puts(b, " * The cubins (");
        for (uint32_t i = 0; i < h->nimages; i++)
            sb_printf(b, "%s%s: %zu bytes", i ? ", " : "", h->images[i].arch, h->images[i].len);
        sb_puts(b, ") are ");
        if (h->embed_c_out) {
            sb_puts(b, "in ");
            comment_text(b, h->embed_c);
            sb_puts(b, " (compile and link it once)");
        } else {
            sb_puts(b, "inside this header");
        }
        sb_puts(b, ";\n * the first launch loads the one for the device (tilert_module_load_best: the newest\n"
                   " * that runs on it).\n");
    } else if (h->cubin && h->embed_c_out) {
        sb_printf(b, " * The cubin (%zu bytes, %s) is in ", h->cubin_len, h->arch);
        comment_text(b, h->embed_c);
        sb_puts(b, ", which the program compiles and links once;\n * it is loaded on the first launch.\n");
    } else if (h->cubin) {
        sb_printf(b, " * The cubin (%zu bytes, %s) is inside this header; it is loaded on the first launch.\n",
                  h->cubin_len, h->arch);
    } else {
        sb_printf(b, " * The first launch loads the cubin from \"");
        comment_text(b, h->cubin_path);
        sb_printf(b, "\" (relative to the working folder),\n * or from the path given to %s_set_cubin_path() "
                     "before it.  Make that cubin with\n * tilec --emit=cubin from the same source and -D values.\n",
                  h->module_name);
    }
    sb_puts(b, " *\n * Link with libtilert (pkg-config tilert, or CMake's tilec::tilert).  Every function returns\n"
               " * TILERT_OK or an error whose message tilert_last_error() gives.  A module is loaded into\n"
               " * the CUDA context current at its first use, once per translation unit; use tilert\n"
               " * directly to run on several devices.  `stream` is a CUstream or cudaStream_t (NULL: the\n"
               " * default stream).\n *\n * Kernels:\n");
    for (uint32_t k = 0; k < n; k++) {
        const IrFunc *f = ks[k].f;
        sb_puts(b, " *   ");
        comment_text(b, ks[k].name);
        sb_puts(b, "(");
        for (uint32_t i = 0; i < f->nparams; i++) {
            StrBuf t = {0};
            tile_type(&t, f->params[i].ty);
            sb_printf(b, "%s%s: ", i ? ", " : "", ks[k].params[i]);
            comment_text(b, t.s ? t.s : "?");
            sb_free(&t);
        }
        sb_puts(b, ")\n *       symbol ");
        comment_text(b, f->name);
        for (uint32_t i = 0; i < f->nspecs; i++) {
            sb_puts(b, i ? ", " : "; ");
            comment_text(b, f->specs[i].name);
            sb_putc(b, '=');
            comment_text(b, f->specs[i].value);
        }
        bool ws = false; /* warp_specialize: the launch has a producer warpgroup more */
        for (uint32_t i = 0; i < f->nops; i++) ws |= !f->ops[i].dead && f->ops[i].opc == IR_PRODUCER_WARP;
        if (f->warps) sb_printf(b, "; %d warps%s", f->warps + (ws ? 4 : 0), ws ? " (4 of them the producer's)" : "");
        sb_puts(b, f->grid != IR_NONE ? "; grid from its grid(...) clause\n" : "; no grid(...): use _launch_grid\n");
    }
    sb_printf(b, " */\n#ifndef %s\n#define %s\n\n", guard, guard);
    sb_puts(b, "#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n");
    if (!h->cubin) sb_puts(b, "#include <string.h>\n");
    sb_puts(b, "\n#include <tilert.h>\n\n"
               "#if !defined(__GNUC__)\n#error \"this header needs GCC or Clang (__atomic builtins)\"\n#endif\n\n"
               "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
               "struct CUstream_st; /* CUstream and cudaStream_t point to it */\n\n");
}

/* The bytes, decimal, 24 a line (about 3.6 characters a byte), each line indented by `indent`. */
static void image_bytes(StrBuf *b, const unsigned char *p, size_t len, const char *indent)
{
    for (size_t i = 0; i < len; i++) {
        if (i % 24 == 0) sb_puts(b, indent);
        sb_printf(b, "%u,", p[i]);
        if (i % 24 == 23 || i + 1 == len) sb_putc(b, '\n');
    }
}

/* The images the header carries: h->images (several archs), else the one cubin. */
static uint32_t image_list(const HeaderOpts *h, HeaderImage *one, const HeaderImage **list)
{
    if (h->nimages > 1) {
        *list = h->images;
        return h->nimages;
    }
    *one = (HeaderImage){h->arch, h->cubin, h->cubin_len};
    *list = one;
    return 1;
}

/* "" for one image, "_sm_90a" for each of several: the suffix of its names. */
static void image_suffix(char *out, size_t n, const HeaderOpts *h, const HeaderImage *im)
{
    if (h->nimages > 1) snprintf(out, n, "_%s", im->arch);
    else out[0] = 0;
}

static void write_image(StrBuf *b, const HeaderOpts *h)
{
    const char *m = h->module_name;
    HeaderImage one;
    const HeaderImage *ims;
    uint32_t n = image_list(h, &one, &ims);
    if (h->embed_c_out) {
        /* --embed-c: the bytes are in that .c; the header declares them */
        StrBuf *c = h->embed_c_out;
        sb_puts(c, "/* ");
        comment_text(c, h->embed_c);
        sb_printf(c, ": the cubin%s (", n > 1 ? "s" : "");
        for (uint32_t i = 0; i < n; i++) sb_printf(c, "%s%zu bytes, %s", i ? "; " : "", ims[i].len, ims[i].arch);
        sb_puts(c, ") of ");
        comment_text(c, h->source);
        sb_printf(c, " for the header of module %s.\n * Generated by tilec %s --emit=header --embed-c; do not edit.  "
                     "Compile and link it once.\n */\n#include <stddef.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n",
                  m, h->tilec_version);
        for (uint32_t i = 0; i < n; i++) {
            char sfx[32];
            image_suffix(sfx, sizeof sfx, h, &ims[i]);
            sb_printf(c, "\nextern const unsigned char %s_tilec_cubin%s[];\nextern const size_t %s_tilec_cubin%s_size;\n"
                         "__attribute__((aligned(16))) const unsigned char %s_tilec_cubin%s[%zu] = {\n",
                      m, sfx, m, sfx, m, sfx, ims[i].len);
            image_bytes(c, ims[i].cubin, ims[i].len, "    ");
            sb_printf(c, "};\nconst size_t %s_tilec_cubin%s_size = sizeof %s_tilec_cubin%s;\n", m, sfx, m, sfx);
        }
        sb_puts(c, "#ifdef __cplusplus\n}\n#endif\n");
        for (uint32_t i = 0; i < n; i++) {
            char sfx[32];
            image_suffix(sfx, sizeof sfx, h, &ims[i]);
            sb_printf(b, "/* The cubin for %s, in ", ims[i].arch);
            comment_text(b, h->embed_c);
            sb_printf(b, " (compile and link it once). */\n"
                         "extern const unsigned char %s_tilec_cubin%s[];\nextern const size_t %s_tilec_cubin%s_size;\n\n"
                         "static inline const void *%s_tilec_image%s(size_t *size)\n{\n"
                         "    *size = %s_tilec_cubin%s_size;\n    return %s_tilec_cubin%s;\n}\n\n",
                      m, sfx, m, sfx, m, sfx, m, sfx, m, sfx);
        }
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        char sfx[32];
        image_suffix(sfx, sizeof sfx, h, &ims[i]);
        sb_printf(b, "/* The cubin for %s. */\nstatic inline const void *%s_tilec_image%s(size_t *size)\n{\n"
                     "    static const unsigned char image[%zu] __attribute__((aligned(16))) = {\n",
                  ims[i].arch, m, sfx, ims[i].len);
        image_bytes(b, ims[i].cubin, ims[i].len, "        ");
        sb_puts(b, "    };\n    *size = sizeof image;\n    return image;\n}\n\n");
    }
}

static void write_module(StrBuf *b, const HeaderOpts *h, uint32_t nkernels)
{
    const char *m = h->module_name;
    sb_printf(b, "/* The module and its kernels, published once (compare-and-swap). */\n"
                 "static struct {\n    tilert_module *module;\n    tilert_kernel *kernels[%u];\n} %s_tilec_state;\n\n",
              nkernels, m);
    if (h->cubin) {
        write_image(b, h);
    } else {
        sb_printf(b, "static char %s_tilec_path[4096] = \"", m);
        c_string(b, h->cubin_path);
        sb_printf(b, "\";\n\n"
                     "/* Sets the cubin the first launch loads (call it before, from one thread).\n"
                     " * TILERT_ERROR_INVALID_VALUE if path is NULL or longer than 4095 bytes. */\n"
                     "static inline tilert_status %s_set_cubin_path(const char *path)\n{\n"
                     "    size_t n = path ? strlen(path) : sizeof %s_tilec_path;\n"
                     "    if (n >= sizeof %s_tilec_path) return TILERT_ERROR_INVALID_VALUE;\n"
                     "    memcpy(%s_tilec_path, path, n + 1);\n    return TILERT_OK;\n}\n\n",
                  m, m, m, m);
    }
    sb_printf(b, "/* The module, loaded on first use (thread-safe). */\n"
                 "static inline tilert_status %s_module(tilert_module **out)\n{\n"
                 "    tilert_module *tilec_m = __atomic_load_n(&%s_tilec_state.module, __ATOMIC_ACQUIRE);\n"
                 "    if (!tilec_m) {\n",
              m, m);
    if (h->cubin && h->nimages > 1) {
        /* several archs: the one for the device, chosen when the module loads */
        sb_printf(b, "        const void *tilec_images[%u];\n        size_t tilec_sizes[%u];\n", h->nimages, h->nimages);
        for (uint32_t i = 0; i < h->nimages; i++)
            sb_printf(b, "        tilec_images[%u] = %s_tilec_image_%s(&tilec_sizes[%u]);\n", i, m, h->images[i].arch, i);
        sb_printf(b, "        tilert_status tilec_s = tilert_module_load_best(tilec_images, tilec_sizes, %u, &tilec_m, "
                     "NULL);\n", h->nimages);
    } else if (h->cubin)
        sb_printf(b, "        size_t tilec_size = 0;\n        const void *tilec_image = %s_tilec_image(&tilec_size);\n"
                     "        tilert_status tilec_s = tilert_module_load_data(tilec_image, tilec_size, &tilec_m);\n",
                  m);
    else
        sb_printf(b, "        tilert_status tilec_s = tilert_module_load_file(%s_tilec_path, &tilec_m);\n", m);
    sb_printf(b, "        if (tilec_s != TILERT_OK) return tilec_s;\n"
                 "        tilert_module *tilec_none = NULL;\n"
                 "        if (!__atomic_compare_exchange_n(&%s_tilec_state.module, &tilec_none, tilec_m, false,\n"
                 "                                         __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {\n"
                 "            tilert_module_unload(tilec_m); /* another thread was first */\n"
                 "            tilec_m = tilec_none;\n        }\n    }\n"
                 "    *out = tilec_m;\n    return TILERT_OK;\n}\n\n",
              m);
    sb_printf(b, "/* Unloads the module; the next launch loads it again.  No launch may be in flight. */\n"
                 "static inline tilert_status %s_unload(void)\n{\n"
                 "    for (size_t i = 0; i < sizeof %s_tilec_state.kernels / sizeof %s_tilec_state.kernels[0]; i++)\n"
                 "        __atomic_store_n(&%s_tilec_state.kernels[i], (tilert_kernel *)NULL, __ATOMIC_RELEASE);\n"
                 "    tilert_module *tilec_m = __atomic_exchange_n(&%s_tilec_state.module, (tilert_module *)NULL,\n"
                 "                                                 __ATOMIC_ACQ_REL);\n"
                 "    return tilert_module_unload(tilec_m);\n}\n\n",
              m, m, m, m, m);
}

static void write_kernel(StrBuf *b, const HeaderOpts *h, const Kern *k, uint32_t index)
{
    const char *m = h->module_name;
    const IrFunc *f = k->f;
    sb_printf(b, "/* ---- %s */\n\n", k->name);
    sb_printf(b, "static inline tilert_status %s_kernel(tilert_kernel **out)\n{\n"
                 "    tilert_kernel *tilec_k = __atomic_load_n(&%s_tilec_state.kernels[%u], __ATOMIC_ACQUIRE);\n"
                 "    if (!tilec_k) {\n"
                 "        tilert_module *tilec_m;\n"
                 "        tilert_status tilec_s = %s_module(&tilec_m);\n"
                 "        if (tilec_s == TILERT_OK) tilec_s = tilert_kernel_get(tilec_m, \"",
              k->name, m, index, m);
    c_string(b, f->name);
    sb_printf(b, "\", &tilec_k);\n"
                 "        if (tilec_s != TILERT_OK) return tilec_s;\n"
                 "        __atomic_store_n(&%s_tilec_state.kernels[%u], tilec_k, __ATOMIC_RELEASE);\n"
                 "    }\n    *out = tilec_k;\n    return TILERT_OK;\n}\n\n",
              m, index);

    uint32_t nargs = f->nparams ? f->nparams : 1;
    for (int with_grid = f->grid != IR_NONE ? 0 : 1; with_grid <= 1; with_grid++) {
        char fn[512];
        snprintf(fn, sizeof fn, "%s_%s", k->name, with_grid ? "launch_grid" : "launch");
        if (with_grid) sb_puts(b, "/* Launches with an explicit grid (x, y, z). */\n");
        else sb_puts(b, "/* Launches with the grid of the kernel's grid(...) clause. */\n");
        if (f->nreq) { /* the launch checks them: TILERT_ERROR_REQUIRES names the one that fails */
            sb_puts(b, "/* TILERT_ERROR_REQUIRES unless the arguments satisfy its requires(...) clauses:");
            for (uint32_t i = 0; i < f->nreq; i++) {
                sb_puts(b, "\n *   - ");
                comment_text(b, f->mod->strs[f->req_msg[i]]);
            }
            sb_puts(b, " */\n");
        }
        signature(b, f, k->params, fn, with_grid);
        sb_printf(b, "\n{\n    tilert_kernel *tilec_k;\n    tilert_status tilec_s = %s_kernel(&tilec_k);\n"
                     "    if (tilec_s != TILERT_OK) return tilec_s;\n    tilert_arg tilec_args[%u];\n",
                  k->name, nargs);
        for (uint32_t i = 0; i < f->nparams; i++) {
            sb_printf(b, "    tilec_args[%u] = ", i);
            param_arg(b, &f->params[i], k->params[i]);
            sb_puts(b, ";\n");
        }
        if (f->nparams == 0) sb_puts(b, "    tilec_args[0] = tilert_arg_i32(0); /* unused */\n");
        if (with_grid)
            sb_printf(b, "    return tilert_launch_grid(tilec_k, (void *)stream, grid, tilec_args, %u);\n}\n\n",
                      f->nparams);
        else sb_printf(b, "    return tilert_launch(tilec_k, (void *)stream, tilec_args, %u);\n}\n\n", f->nparams);
    }
}

/* The parameter list and the tilert_arg of parameter i of k, spelled with the names `names`. */
static void param_texts(const Kern *k, char **names, StrBuf *decls, StrBuf *args)
{
    for (uint32_t i = 0; i < k->f->nparams; i++) {
        param_decl(decls, &k->f->params[i], names[i]);
        sb_putc(decls, ';');
        param_arg(args, &k->f->params[i], names[i]);
        sb_putc(args, ';');
    }
}

/* Where ks[k] leads a group of specializations of one source kernel that differ only in type
 * parameters and share one C signature: SRC_launch (with a grid clause in all) and
 * SRC_launch_grid, which launch the specialization that takes the arguments. */
static void write_chooser(StrBuf *b, const HeaderOpts *h, const IrModule *m, const Kern *ks, uint32_t k)
{
    const Kern *lead = &ks[k];
    const IrFunc *f = lead->f;
    if (h->tune && strcmp(h->tune->kernel, f->source_name) == 0) return;   /* write_tuned's */
    for (uint32_t j = 0; j < k; j++)
        if (strcmp(ks[j].f->source_name, f->source_name) == 0) return;   /* not the first */
    uint32_t n = 0;
    bool grid = true, ok = true;
    StrBuf d0 = {0}, a0 = {0};
    param_texts(lead, lead->params, &d0, &a0);
    for (uint32_t j = k; j < m->nfuncs && ok; j++) {
        const IrFunc *g = ks[j].f;
        if (strcmp(g->source_name, f->source_name) != 0) continue;
        n++;
        grid = grid && g->grid != IR_NONE;
        for (uint32_t i = 0; i < g->nspecs && ok; i++)
            if (spec_differs(m, g, i) && !is_dtype_name(g->specs[i].value)) ok = false;
        if (g->nparams != f->nparams) {
            ok = false;
            break;
        }
        StrBuf d1 = {0}, a1 = {0};
        param_texts(&ks[j], lead->params, &d1, &a1);
        if (f->nparams && (strcmp(d0.s, d1.s) != 0 || strcmp(a0.s, a1.s) != 0)) ok = false;
        sb_free(&d1);
        sb_free(&a1);
    }
    sb_free(&d0);
    sb_free(&a0);
    char *name = c_ident(f->source_name);
    for (uint32_t j = 0; j < m->nfuncs && ok; j++)
        if (strcmp(ks[j].name, name) == 0) ok = false;
    if (n < 2 || !ok) {
        free(name);
        return;
    }
    sb_printf(b, "/* ---- %s: the specialization that takes the arguments (by their dtypes) */\n\n", name);
    uint32_t nargs = f->nparams ? f->nparams : 1;
    for (int with_grid = grid ? 0 : 1; with_grid <= 1; with_grid++) {
        char fn[512];
        snprintf(fn, sizeof fn, "%s_%s", name, with_grid ? "launch_grid" : "launch");
        sb_printf(b, "/* Launches whichever of the %u specializations of %s takes these arguments%s. */\n", n,
                  name, with_grid ? ", with an explicit grid" : "");
        signature(b, f, lead->params, fn, with_grid);
        sb_printf(b, "\n{\n    tilert_kernel *tilec_ks[%u];\n    tilert_status tilec_s;\n", n);
        uint32_t at = 0;
        for (uint32_t j = k; j < m->nfuncs; j++) {
            if (strcmp(ks[j].f->source_name, f->source_name) != 0) continue;
            sb_printf(b, "    if ((tilec_s = %s_kernel(&tilec_ks[%u])) != TILERT_OK) return tilec_s;\n", ks[j].name,
                      at++);
        }
        sb_printf(b, "    tilert_arg tilec_args[%u];\n", nargs);
        for (uint32_t i = 0; i < f->nparams; i++) {
            sb_printf(b, "    tilec_args[%u] = ", i);
            param_arg(b, &f->params[i], lead->params[i]);
            sb_puts(b, ";\n");
        }
        if (f->nparams == 0) sb_puts(b, "    tilec_args[0] = tilert_arg_i32(0); /* unused */\n");
        sb_printf(b, "    int tilec_i = 0;\n"
                     "    tilec_s = tilert_kernel_select(tilec_ks, %u, tilec_args, %u, &tilec_i);\n"
                     "    if (tilec_s != TILERT_OK) return tilec_s;\n", n, f->nparams);
        if (with_grid)
            sb_printf(b, "    return tilert_launch_grid(tilec_ks[tilec_i], (void *)stream, grid, tilec_args, %u);\n}\n\n",
                      f->nparams);
        else
            sb_printf(b, "    return tilert_launch(tilec_ks[tilec_i], (void *)stream, tilec_args, %u);\n}\n\n",
                      f->nparams);
    }
    free(name);
}

/* The arguments of f, by name, as a call passes them on: ", a, b". */
static void call_args(StrBuf *b, const IrFunc *f, char **names)
{
    for (uint32_t i = 0; i < f->nparams; i++) sb_printf(b, ", %s", names[i]);
}

/* --tune-table: K_tune_entry, and K_launch / K_launch_grid choosing by it (HeaderTune).  False
 * (after an error) when the chosen specializations do not share one C signature. */
static bool write_tuned(StrBuf *b, const HeaderOpts *h, const Kern *ks, Diag *d)
{
    const HeaderTune *t = h->tune;
    const Kern *lead = NULL;
    bool several = false;
    for (uint32_t e = 0; e < t->nentries; e++) {
        const Kern *k = &ks[t->entry_func[e]];
        if (!lead) lead = k;
        several = several || k != lead;
    }
    if (!lead || !several) return true;   /* one specialization: its K_launch is the plain one */
    const IrFunc *f = lead->f;
    StrBuf d0 = {0}, a0 = {0};
    param_texts(lead, lead->params, &d0, &a0);
    bool grid = true, same = true;
    for (uint32_t e = 0; e < t->nentries && same; e++) {
        const Kern *k = &ks[t->entry_func[e]];
        StrBuf d1 = {0}, a1 = {0};
        param_texts(k, lead->params, &d1, &a1);
        same = k->f->nparams == f->nparams && (!f->nparams || (strcmp(d0.s, d1.s) == 0 && strcmp(a0.s, a1.s) == 0));
        grid = grid && k->f->grid != IR_NONE;
        sb_free(&d1);
        sb_free(&a1);
    }
    sb_free(&d0);
    sb_free(&a0);
    if (!same) {
        diag_error_noloc(d, "tuning table '%s': the specializations it chose for '%s' take different C arguments "
                         "(tune type parameters in separate tables)", t->table, t->kernel);
        return false;
    }
    const char *mod = h->module_name;
    char *name = c_ident(f->source_name);
    sb_printf(b, "/* ---- %s: the specialization the tuning table ", name);
    comment_text(b, t->table);
    sb_puts(b, " chose for\n * the arguments' shape (tuned on: ");
    comment_text(b, t->tuned_on);
    sb_puts(b, ").  The key of a call is\n * (");
    for (uint32_t i = 0; i < t->nkey; i++) {
        sb_printf(b, i ? ", %s" : "%s", lead->params[t->key_param[i]]);
        if (t->key_dim[i] >= 0) sb_printf(b, ".shape[%d]", t->key_dim[i]);
    }
    sb_puts(b, "); a call takes the entry whose key is nearest: the least sum of\n"
               " * |lg(x) - lg(entry)|, lg the piecewise-linear log2, the first on a tie.\n * Entries:\n");
    for (uint32_t e = 0; e < t->nentries; e++) {
        sb_printf(b, " *   %u: ", e);
        comment_text(b, t->shapes[e]);
        sb_puts(b, "\n *      -> ");
        comment_text(b, ks[t->entry_func[e]].name);
        sb_putc(b, '\n');
    }
    sb_puts(b, " */\n\n");
    sb_printf(b, "/* log2(x), linear between powers of two; x - 1 below 1. */\n"
                 "static inline double %s_tilec_lg_%s(int64_t x)\n{\n"
                 "    if (x < 1) return (double)x - 1.0;\n"
                 "    int e = 63 - __builtin_clzll((unsigned long long)x);\n"
                 "    return (double)e + (double)x / (double)(1ull << e) - 1.0;\n}\n\n",
              mod, name);
    /* K_tune_entry */
    sb_printf(b, "/* The entry of the tuning table (0..%u) nearest to these arguments. */\n", t->nentries - 1);
    StrBuf line = {0};
    sb_printf(&line, "static inline int %s_tune_entry(", name);
    for (uint32_t i = 0; i < f->nparams; i++) {
        StrBuf p = {0};
        param_decl(&p, &f->params[i], lead->params[i]);
        if (i) sb_putc(&line, ',');
        if (line.len + 1 + p.len + 1 > 110) {
            sb_puts(b, line.s);
            sb_putc(b, '\n');
            line.len = 0;
            sb_puts(&line, "   ");
        }
        sb_printf(&line, i ? " %s" : "%s", p.s);
        sb_free(&p);
    }
    if (!f->nparams) sb_puts(&line, "void");
    sb_puts(b, line.s);
    sb_free(&line);
    sb_puts(b, ")\n{\n");
    for (uint32_t i = 0; i < f->nparams; i++) {
        bool used = false;
        for (uint32_t j = 0; j < t->nkey; j++) used = used || t->key_param[j] == i;
        if (!used) sb_printf(b, "    (void)%s;\n", lead->params[i]);
    }
    uint32_t nk = t->nkey ? t->nkey : 1;
    sb_printf(b, "    static const int64_t tilec_keys[%u][%u] = {\n", t->nentries, nk);
    for (uint32_t e = 0; e < t->nentries; e++) {
        sb_puts(b, "        {");
        for (uint32_t i = 0; i < t->nkey; i++) sb_printf(b, i ? ", %lld" : "%lld", (long long)t->keys[e * t->nkey + i]);
        if (!t->nkey) sb_putc(b, '0');
        sb_puts(b, "},\n");
    }
    sb_printf(b, "    };\n    const int64_t tilec_key[%u] = {", nk);
    for (uint32_t i = 0; i < t->nkey; i++) {
        const char *pn = lead->params[t->key_param[i]];
        if (t->key_dim[i] >= 0) sb_printf(b, i ? ", %s.shape[%d]" : "%s.shape[%d]", pn, t->key_dim[i]);
        else sb_printf(b, i ? ", (int64_t)%s" : "(int64_t)%s", pn);
    }
    if (!t->nkey) sb_putc(b, '0');
    sb_printf(b, "};\n    int tilec_best = 0;\n    double tilec_best_d = 0;\n"
                 "    for (int tilec_e = 0; tilec_e < %u; tilec_e++) {\n        double tilec_d = 0;\n"
                 "        for (int tilec_i = 0; tilec_i < %u; tilec_i++) {\n"
                 "            double tilec_x = %s_tilec_lg_%s(tilec_key[tilec_i]) -\n"
                 "                             %s_tilec_lg_%s(tilec_keys[tilec_e][tilec_i]);\n"
                 "            tilec_d += tilec_x < 0 ? -tilec_x : tilec_x;\n        }\n"
                 "        if (tilec_e == 0 || tilec_d < tilec_best_d) {\n"
                 "            tilec_best = tilec_e;\n            tilec_best_d = tilec_d;\n        }\n    }\n"
                 "    return tilec_best;\n}\n\n",
              t->nentries, nk, mod, name, mod, name);
    /* K_launch, K_launch_grid */
    for (int with_grid = grid ? 0 : 1; with_grid <= 1; with_grid++) {
        char fn[512];
        snprintf(fn, sizeof fn, "%s_%s", name, with_grid ? "launch_grid" : "launch");
        sb_printf(b, "/* Launches the specialization the tuning table chose for the arguments' shape%s. */\n",
                  with_grid ? ", with an explicit grid" : "");
        signature(b, f, lead->params, fn, with_grid);
        sb_printf(b, "\n{\n    switch (%s_tune_entry(", name);
        for (uint32_t i = 0; i < f->nparams; i++) sb_printf(b, i ? ", %s" : "%s", lead->params[i]);
        sb_puts(b, ")) {\n");
        /* one return per specialization, after the case labels of its entries; the last is the default */
        uint32_t last = t->entry_func[t->nentries - 1];
        for (uint32_t e = 0; e < t->nentries; e++) {
            uint32_t fi = t->entry_func[e];
            bool first = true;
            for (uint32_t j = 0; j < e; j++) first = first && t->entry_func[j] != fi;
            if (!first) continue;
            sb_puts(b, "   ");
            if (fi == last) sb_puts(b, " default:");
            else
                for (uint32_t j = e; j < t->nentries; j++)
                    if (t->entry_func[j] == fi) sb_printf(b, " case %u:", j);
            sb_printf(b, "\n        return %s_%s(stream%s", ks[fi].name, with_grid ? "launch_grid" : "launch",
                      with_grid ? ", grid" : "");
            call_args(b, f, lead->params);
            sb_puts(b, ");\n");
        }
        sb_puts(b, "    }\n}\n\n");
    }
    free(name);
    return true;
}

bool header_write(StrBuf *out, const IrModule *m, const HeaderOpts *h0, Diag *d)
{
    HeaderOpts h = *h0;
    char *modname = c_ident(h0->module_name);
    h.module_name = modname;
    Kern *ks = tl_xcalloc(m->nfuncs + 1, sizeof *ks);
    bool ok = true;
    for (uint32_t k = 0; k < m->nfuncs; k++) {
        const IrFunc *f = m->funcs[k];
        ks[k].f = f;
        ks[k].name = kernel_cname(m, f);
        for (uint32_t j = 0; j < k; j++)   /* a name made of spec values met another kernel's */
            if (strcmp(ks[j].name, ks[k].name) == 0) {
                free(ks[k].name);
                ks[k].name = c_ident(f->name);
                break;
            }
        ks[k].params = param_names(f, ks[k].name);
        for (uint32_t i = 0; i < f->nparams; i++) {
            StrBuf probe = {0};
            if (!param_decl(&probe, &f->params[i], "x")) {
                StrBuf t = {0};
                tile_type(&t, f->params[i].ty);
                diag_error(d, f->loc, "kernel '%s': parameter '%s' of type %s cannot be passed from C", f->name,
                           f->params[i].name, t.s ? t.s : "?");
                sb_free(&t);
                ok = false;
            }
            sb_free(&probe);
        }
    }
    if (ok) {
        StrBuf guard = {0};
        sb_puts(&guard, "TILEC_");
        for (const char *p = modname; *p; p++) sb_putc(&guard, (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p));
        sb_puts(&guard, "_H");
        write_intro(out, &h, ks, m->nfuncs, guard.s);
        write_module(out, &h, m->nfuncs ? m->nfuncs : 1);
        for (uint32_t k = 0; k < m->nfuncs; k++) write_kernel(out, &h, &ks[k], k);
        for (uint32_t k = 0; k < m->nfuncs; k++) write_chooser(out, &h, m, ks, k);
        if (h.tune) ok = write_tuned(out, &h, ks, d);
        sb_printf(out, "#ifdef __cplusplus\n} /* extern \"C\" */\n#endif\n\n#endif /* %s */\n", guard.s);
        sb_free(&guard);
    }
    for (uint32_t k = 0; k < m->nfuncs; k++) {
        free(ks[k].name);
        free_names(ks[k].params, ks[k].f->nparams);
    }
    free(ks);
    free(modname);
    return ok;
}
