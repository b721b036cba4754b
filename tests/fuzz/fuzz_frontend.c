/* fuzz_frontend.c: a libFuzzer target over the whole frontend.
 *
 * For one input it runs, in order:
 *   1. ast_dump_tokens, ast_parse, ast_dump (also on a partial tree);
 *   2. for every kernel declared in the file (at most MAX_KERNELS), fe_lower of
 *      that kernel alone with its default parameters;
 *   3. on each module that lowered: ir_verify_module, then the text round trip
 *      print -> ir_parse -> print, which must give the same text;
 *   4. the default pass pipeline (pass_run_pipeline), then the same verify and
 *      round trip on the result.
 * An input that starts with "// tilec IR" is textual IR instead (what
 * `tilec FILE.tir` reads): ir_parse, and when that succeeds ir_verify_module;
 * on valid IR, steps 3 and 4 as above.
 * A user error anywhere is fine (the input is malformed).  What is not fine,
 * and stops the fuzzer with __builtin_trap: IR from a successful lowering or
 * pass that does not verify, printed IR that does not parse back, or a round
 * trip that changes the text.  Crashes, sanitizer reports, leaks and hangs are
 * caught by libFuzzer itself.  Diagnostics go nowhere (Diag.out = NULL, no
 * capture) so that the fuzzer runs quietly and fast.
 *
 * Built with -DTILEC_FUZZ_STANDALONE (no libFuzzer: gcc builds), the file also
 * provides a main() that replays files and folders given on the command line,
 * so the seed corpus is replayed by every build, sanitized or not.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/ast.h"
#include "frontend/frontend.h"
#include "ir/ir.h"
#include "passes/pass.h"

enum {
    MAX_INPUT = 1 << 16,  /* longer inputs are ignored: they only slow the search */
    MAX_KERNELS = 16,     /* kernels lowered per input */
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void quiet_diag(Diag *d, const char *file, const char *src, size_t len)
{
    diag_init(d, file, src, len, NULL, DIAG_COLOR_NEVER);
    d->capture = false;
}

/* The module's verified text, in *text (caller frees); traps if m is invalid. */
static void verified_text(IrModule *m, const char *stage, StrBuf *text)
{
    Diag d;
    quiet_diag(&d, "fuzz.tir", NULL, 0);
    if (!ir_verify_module(m, &d, stage)) __builtin_trap();
    diag_free(&d);
    ir_print_module(text, m);
}

/* print -> parse -> print must be the identity on printed text. */
static void round_trip(const StrBuf *text)
{
    const char *s = text->s ? text->s : "";
    size_t n = text->len;
    Diag d;
    quiet_diag(&d, "fuzz.tir", s, n);
    IrModule *back = ir_parse("fuzz.tir", s, n, &d);
    if (!back || d.nerrors) __builtin_trap();
    diag_free(&d);
    quiet_diag(&d, "fuzz.tir", s, n);
    if (!ir_verify_module(back, &d, "ir_parse")) __builtin_trap();
    diag_free(&d);
    StrBuf again = {0};
    ir_print_module(&again, back);
    if (again.len != n || (n && memcmp(again.s, s, n) != 0)) __builtin_trap();
    sb_free(&again);
    ir_module_free(back);
}

/* Steps 3 and 4 on a module known to be valid; frees it. */
static void check_module(IrModule *m, const char *stage, const char *src, size_t len)
{
    StrBuf text = {0};
    verified_text(m, stage, &text);
    round_trip(&text);
    sb_free(&text);

    Diag d;
    PassDump dump = {.after = NULL, .nafter = 0, .dir = NULL, .out = NULL};
    quiet_diag(&d, "fuzz.tile", src, len);
    (void)pass_run_pipeline(m, NULL, 0, &dump, &d); /* false only on a dump I/O error: no dumps here */
    diag_free(&d);

    verified_text(m, "pipeline", &text);
    round_trip(&text);
    sb_free(&text);
    ir_module_free(m);
}

static void lower_one(const Ast *ast, const char *kernel, const char *src, size_t len)
{
    Diag d;
    quiet_diag(&d, "fuzz.tile", src, len);
    FeOptions opts = {.defines = NULL, .ndefines = 0, .kernel = kernel};
    IrModule *m = fe_lower(ast, &opts, &d);
    if (m && d.nerrors) __builtin_trap(); /* fe_lower returns NULL whenever it reported an error */
    diag_free(&d);
    if (m) check_module(m, "frontend", src, len);
}

/* Textual IR, as `tilec FILE.tir` reads it: parse, verify, then as a lowered module. */
static void ir_input(const char *src, size_t len)
{
    Diag d;
    quiet_diag(&d, "fuzz.tir", src, len);
    IrModule *m = ir_parse("fuzz.tir", src, len, &d);
    bool parsed = m && d.nerrors == 0;
    diag_free(&d);
    if (!parsed) {
        if (m) ir_module_free(m);
        return;
    }
    quiet_diag(&d, "fuzz.tir", src, len);
    bool valid = ir_verify_module(m, &d, "ir_parse");
    diag_free(&d);
    if (valid)
        check_module(m, "ir_parse", src, len);
    else
        ir_module_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT) return 0;
    char *src = malloc(size + 1);
    if (!src) return 0;
    if (size) memcpy(src, data, size);
    src[size] = '\0';

    static const char tir_magic[] = "// tilec IR";
    if (size >= sizeof tir_magic - 1 && memcmp(src, tir_magic, sizeof tir_magic - 1) == 0) {
        ir_input(src, size);
        free(src);
        return 0;
    }

    Diag d;
    StrBuf out = {0};
    quiet_diag(&d, "fuzz.tile", src, size);
    (void)ast_dump_tokens(&out, "fuzz.tile", src, size, &d);
    diag_free(&d);
    sb_free(&out);

    quiet_diag(&d, "fuzz.tile", src, size);
    Ast *ast = ast_parse("fuzz.tile", src, size, &d);
    bool parsed = ast && d.nerrors == 0;
    diag_free(&d);
    if (ast) {
        ast_dump(&out, ast);
        sb_free(&out);
    }
    if (parsed) {
        uint32_t nk = 0;
        for (uint32_t i = 0; i < ast->ndecls && nk < MAX_KERNELS; i++) {
            const AstNode *k = ast->decls[i];
            if (k->kind != AST_KERNEL) continue;
            nk++;
            lower_one(ast, k->name, src, size);
        }
    }
    ast_free(ast);
    free(src);
    return 0;
}

#ifdef TILEC_FUZZ_STANDALONE
/* Replays inputs without libFuzzer: each argument is a file or a folder of files. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

static int replay_file(const char *path, unsigned *count)
{
    size_t len;
    char *buf = tl_read_file(path, &len);
    if (!buf) {
        fprintf(stderr, "fuzz_frontend: cannot read %s: %s\n", path, strerror(errno));
        return 1;
    }
    LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
    free(buf);
    (*count)++;
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_path(const char *path, unsigned *count)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "fuzz_frontend: %s: %s\n", path, strerror(errno));
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) return replay_file(path, count);
    DIR *dir = opendir(path);
    if (!dir) {
        fprintf(stderr, "fuzz_frontend: cannot open %s: %s\n", path, strerror(errno));
        return 1;
    }
    char **names = NULL;
    uint32_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.') continue;
        VEC_PUSH(names, n, cap, tl_xstrdup(e->d_name));
    }
    closedir(dir);
    if (n) qsort(names, n, sizeof *names, cmp_names); /* deterministic order */
    int bad = 0;
    for (uint32_t i = 0; i < n; i++) {
        size_t plen = strlen(path) + strlen(names[i]) + 2;
        char *full = tl_xmalloc(plen);
        snprintf(full, plen, "%s/%s", path, names[i]);
        bad |= replay_path(full, count);
        free(full);
        free(names[i]);
    }
    free(names);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...  (replays each input once)\n", argv[0]);
        return 2;
    }
    unsigned count = 0;
    int bad = 0;
    for (int i = 1; i < argc; i++) bad |= replay_path(argv[i], &count);
    printf("fuzz_frontend: replayed %u inputs\n", count);
    if (count == 0) fprintf(stderr, "fuzz_frontend: no inputs found\n");
    return bad || count == 0 ? 1 : 0;
}
#endif
