/* base.h: the few things every layer of tilec shares.
 *
 * Memory: long-lived data goes in an Arena (freed all at once); growable arrays
 * use VEC_PUSH/vec_grow, the single overflow-checked growth helper.  Library
 * code never calls exit(): out-of-memory and compiler bugs go through
 * tl_fatal(), which prints and aborts (it is an internal error, not a user one).
 */
#ifndef TILEC_BASE_H
#define TILEC_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TL_COUNTOF(a) (sizeof(a) / sizeof((a)[0]))
#define TL_MIN(a, b) ((a) < (b) ? (a) : (b))
#define TL_MAX(a, b) ((a) > (b) ? (a) : (b))

#if defined(__GNUC__)
#define TL_NORETURN __attribute__((noreturn))
#define TL_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TL_NORETURN
#define TL_PRINTF(f, a)
#endif

/* Internal compiler error: names the layer ("ir", "pass:cse", ...), then aborts. */
TL_NORETURN void tl_fatal(const char *where, const char *fmt, ...) TL_PRINTF(2, 3);
#define TL_ASSERT(c, where)                                                    \
    do {                                                                       \
        if (!(c)) tl_fatal(where, "assertion failed: %s (%s:%d)", #c, __FILE__, __LINE__); \
    } while (0)

void *tl_xmalloc(size_t n);
void *tl_xcalloc(size_t n, size_t sz);
void *tl_xrealloc(void *p, size_t n);
char *tl_xstrdup(const char *s);

/* Grow *p (elements of size elsz, capacity *cap) so that it holds at least need
 * elements.  Overflow-checked; doubles the capacity. */
void tl_vec_grow(void **p, uint32_t *cap, uint32_t need, size_t elsz);
#define VEC_RESERVE(p, n, cap, need)                                           \
    do {                                                                       \
        if ((need) > (cap)) tl_vec_grow((void **)&(p), &(cap), (need), sizeof(*(p))); \
    } while (0)
#define VEC_PUSH(p, n, cap, v)                                                 \
    do {                                                                       \
        VEC_RESERVE(p, n, cap, (n) + 1);                                       \
        (p)[(n)++] = (v);                                                      \
    } while (0)

/* Arena: bump allocator made of chunks.  Memory is zeroed. */
typedef struct ArenaChunk ArenaChunk;
typedef struct Arena {
    ArenaChunk *head;
    size_t used_total;
} Arena;
void arena_init(Arena *a);
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t n);           /* zeroed, 16-byte aligned */
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_printf(Arena *a, const char *fmt, ...) TL_PRINTF(2, 3);
#define ARENA_NEW(a, T) ((T *)arena_alloc((a), sizeof(T)))
#define ARENA_ARRAY(a, T, n) ((T *)arena_alloc((a), sizeof(T) * (size_t)(n)))

/* A growable string buffer (for printers). */
typedef struct StrBuf {
    char *s;
    uint32_t len, cap;
} StrBuf;
void sb_printf(StrBuf *b, const char *fmt, ...) TL_PRINTF(2, 3);
void sb_puts(StrBuf *b, const char *s);
void sb_putc(StrBuf *b, char c);
void sb_free(StrBuf *b);

/* Reads a whole file; NULL (errno set) on failure.  *len excludes the NUL added. */
char *tl_read_file(const char *path, size_t *len);

#endif
