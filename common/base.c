#include "base.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tl_fatal(const char *where, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "tilec: internal error in %s: ", where);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

void *tl_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) tl_fatal("alloc", "out of memory (%zu bytes)", n);
    return p;
}

void *tl_xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) tl_fatal("alloc", "out of memory (%zu x %zu bytes)", n, sz);
    return p;
}

void *tl_xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) tl_fatal("alloc", "out of memory (%zu bytes)", n);
    return p;
}

char *tl_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(tl_xmalloc(n), s, n);
}

void tl_vec_grow(void **p, uint32_t *cap, uint32_t need, size_t elsz)
{
    uint64_t c = *cap ? *cap : 8;
    while (c < need) c *= 2;
    if (c > UINT32_MAX || c * elsz > SIZE_MAX / 2) tl_fatal("alloc", "array too large (%u elements)", need);
    *p = tl_xrealloc(*p, (size_t)c * elsz);
    *cap = (uint32_t)c;
}

struct ArenaChunk {
    ArenaChunk *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
};

void arena_init(Arena *a) { a->head = NULL; a->used_total = 0; }

void arena_free(Arena *a)
{
    ArenaChunk *c = a->head, *n;
    for (; c; c = n) {
        n = c->next;
        free(c);
    }
    a->head = NULL;
    a->used_total = 0;
}

void *arena_alloc(Arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n == 0) n = 16;
    ArenaChunk *c = a->head;
    if (!c || c->size - c->used < n) {
        size_t sz = n > 65536 ? n : 65536;
        if (sz > SIZE_MAX - sizeof(ArenaChunk)) tl_fatal("arena", "allocation too large");
        c = tl_xmalloc(sizeof(ArenaChunk) + sz);
        c->size = sz;
        c->used = 0;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    a->used_total += n;
    memset(p, 0, n);
    return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *arena_strdup(Arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }

char *arena_printf(Arena *a, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    char *p = arena_alloc(a, (size_t)n + 1);
    vsnprintf(p, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return p;
}

void sb_printf(StrBuf *b, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    VEC_RESERVE(b->s, b->len, b->cap, b->len + (uint32_t)n + 1);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    b->len += (uint32_t)n;
}

void sb_puts(StrBuf *b, const char *s)
{
    uint32_t n = (uint32_t)strlen(s);
    VEC_RESERVE(b->s, b->len, b->cap, b->len + n + 1);
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
}

void sb_putc(StrBuf *b, char c)
{
    VEC_RESERVE(b->s, b->len, b->cap, b->len + 2);
    b->s[b->len++] = c;
    b->s[b->len] = 0;
}

void sb_free(StrBuf *b)
{
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

char *tl_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (cap - n < 65536) {
            cap = cap ? cap * 2 : 65536;
            buf = tl_xrealloc(buf, cap + 1);
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}
