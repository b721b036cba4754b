/* test_parse.c: the lexer, the parser and the AST printers.
 *
 * Shapes are checked through ast_dump's S-expressions (substrings), errors
 * through the messages a capturing Diag collects.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frontend/ast.h"

typedef struct Parsed {
    Diag diag;
    Ast *ast;
    StrBuf dump;    /* ast_dump of ast, "" if none */
} Parsed;

static void parse_n(Parsed *p, const char *src, size_t len)
{
    memset(p, 0, sizeof *p);
    diag_init(&p->diag, "t.tile", src, len, NULL, DIAG_COLOR_NEVER);
    p->diag.capture = true;
    p->ast = ast_parse("t.tile", src, len, &p->diag);
    sb_puts(&p->dump, "");
    if (p->ast) ast_dump(&p->dump, p->ast);
}

static void parse(Parsed *p, const char *src) { parse_n(p, src, strlen(src)); }

static void release(Parsed *p)
{
    ast_free(p->ast);
    sb_free(&p->dump);
    diag_free(&p->diag);
}

static const char *messages(const Parsed *p) { return p->diag.buf.s ? p->diag.buf.s : ""; }

#define assert_has(text, needle)                                                     \
    do {                                                                             \
        if (!strstr((text), (needle))) fail_msg("missing \"%s\" in:\n%s", (needle), (text)); \
    } while (0)

/* Parses src, which must be free of errors, and checks each needle in the dump. */
static void expect_ast(const char *src, const char *const *needles, size_t n)
{
    Parsed p;
    parse(&p, src);
    if (p.diag.nerrors) fail_msg("unexpected errors:\n%s", messages(&p));
    assert_non_null(p.ast);
    for (size_t i = 0; i < n; i++) assert_has(p.dump.s, needles[i]);
    release(&p);
}
#define EXPECT_AST(src, ...)                                                         \
    do {                                                                             \
        static const char *const needles_[] = {__VA_ARGS__};                         \
        expect_ast((src), needles_, TL_COUNTOF(needles_));                           \
    } while (0)

/* Parses src, which must have errors, and checks each needle in the messages. */
static int expect_errors(const char *src, const char *const *needles, size_t n)
{
    Parsed p;
    parse(&p, src);
    if (p.diag.nerrors == 0) fail_msg("no error for:\n%s", src);
    for (size_t i = 0; i < n; i++) assert_has(messages(&p), needles[i]);
    int count = p.diag.nerrors;
    release(&p);
    return count;
}
#define EXPECT_ERRORS(src, ...)                                                      \
    do {                                                                             \
        static const char *const needles_[] = {__VA_ARGS__};                         \
        expect_errors((src), needles_, TL_COUNTOF(needles_));                        \
    } while (0)

/* The examples of the language brief, as written there. */
static const char vadd_src[] =
    "kernel vadd<BLOCK: int = 1024>(x: ptr<f32>, y: ptr<f32>, out: ptr<f32>, n: i32)\n"
    "    grid((n + BLOCK - 1) / BLOCK)\n"
    "{\n"
    "    let offs = program_id(0) * BLOCK + arange(BLOCK);\n"
    "    let m = offs < n;\n"
    "    store(out + offs, load(x + offs, m) + load(y + offs, m), m);\n"
    "}\n";
static const char softmax_src[] =
    "kernel softmax<BLOCK: int = 1024>(x: tensor<f32, 2>, y: tensor<f32, 2>) grid(x.shape[0])\n"
    "{\n"
    "    let row = program_id(0);\n"
    "    let cols = arange(BLOCK);\n"
    "    let m = cols < x.shape[1];\n"
    "    let v = load(x.ptr + row * x.stride[0] + cols, m, -inf);\n"
    "    let e = exp(v - max(v, 0));\n"
    "    store(y.ptr + row * y.stride[0] + cols, e / sum(e, 0), m);\n"
    "}\n";
static const char gemm_src[] =
    "kernel gemm<T: type = bf16, BM: int = 128, BN: int = 128, BK: int = 64>(\n"
    "    A: tensor<T, 2>, B: tensor<T, 2>, C: tensor<bf16, 2>)\n"
    "    grid((C.shape[0] + BM - 1) / BM, (C.shape[1] + BN - 1) / BN)\n"
    "{\n"
    "    let m0 = program_id(0) * BM;\n"
    "    let n0 = program_id(1) * BN;\n"
    "    var acc = zeros<f32>([BM, BN]);\n"
    "    for k in range(0, A.shape[1], BK) pipeline(4) {\n"
    "        acc = dot(load(A, [m0, k], [BM, BK]), load(B, [k, n0], [BK, BN]), acc);\n"
    "    }\n"
    "    store(C, [m0, n0], acc as bf16);\n"
    "}\n";

static void test_vadd(void **state)
{
    (void)state;
    EXPECT_AST(vadd_src, "(kernel vadd\n", "(cparam BLOCK int (int 1024))", "(param x (ptr f32))",
               "(param n i32)", "(grid (binary / (binary - (binary + n BLOCK) (int 1)) BLOCK))",
               "(let offs (binary + (binary * (call program_id (int 0)) BLOCK) (call arange BLOCK)))",
               "(let m (binary < offs n))",
               "(expr (call store (binary + out offs) (binary + (call load (binary + x offs) m) "
               "(call load (binary + y offs) m)) m))");
}

static void test_softmax(void **state)
{
    (void)state;
    EXPECT_AST(softmax_src, "(param x (tensor f32 (int 2)))", "(grid (index (member x shape) (int 0)))",
               "(let m (binary < cols (index (member x shape) (int 1))))",
               "(call load (binary + (binary + (member x ptr) (binary * row (index (member x stride) (int 0)))) cols)"
               " m (unary - (float inf)))",
               "(let e (call exp (binary - v (call max v (int 0)))))");
}

static void test_gemm(void **state)
{
    (void)state;
    EXPECT_AST(gemm_src, "(cparam T type bf16)", "(cparam BK int (int 64))", "(param A (tensor T (int 2)))",
               "(param C (tensor bf16 (int 2)))", "(var acc (call zeros (targs f32) (list BM BN)))",
               "(for k (range (int 0) (index (member A shape) (int 1)) BK) (pipeline (int 4))",
               "(assign = acc (call dot (call load A (list m0 k) (list BM BK))",
               "(expr (call store C (list m0 n0) (cast acc bf16)))");
    /* two grid dimensions */
    EXPECT_AST(gemm_src, "(grid (binary / (binary - (binary + (index (member C shape) (int 0)) BM) (int 1)) BM) "
                         "(binary / (binary - (binary + (index (member C shape) (int 1)) BN) (int 1)) BN))");
}

static void test_precedence(void **state)
{
    (void)state;
    EXPECT_AST("const A = a + b * c - d / e % f;",
               "(binary - (binary + a (binary * b c)) (binary % (binary / d e) f))");
    EXPECT_AST("const A = a || b && c | d ^ e & f == g < h << i + j * k;",
               "(binary || a (binary && b (binary | c (binary ^ d (binary & e (binary == f (binary < g "
               "(binary << h (binary + i (binary * j k)))))))))");
    EXPECT_AST("const A = a - b - c;", "(binary - (binary - a b) c)");
    EXPECT_AST("const A = a < b == c > d;", "(binary == (binary < a b) (binary > c d))");
    EXPECT_AST("const A = a >> 2 >= b;", "(binary >= (binary >> a (int 2)) b)");
    EXPECT_AST("const A = -!~+x * y;", "(binary * (unary - (unary ! (unary ~ (unary + x)))) y)");
    EXPECT_AST("const A = (a + b) * c;", "(binary * (binary + a b) c)");
    EXPECT_AST("const A = a.b[1].c;", "(member (index (member a b) (int 1)) c)");
}

static void test_cast(void **state)
{
    (void)state;
    EXPECT_AST("const A = a + b as f32;", "(binary + a (cast b f32))");
    EXPECT_AST("const A = -x as f32;", "(cast (unary - x) f32)");
    EXPECT_AST("const A = a as i32 as f32 * b;", "(binary * (cast (cast a i32) f32) b)");
    EXPECT_AST("const A = x[0] as f8e4m3 < y;", "(binary < (cast (index x (int 0)) f8e4m3) y)");
    EXPECT_AST("const A = p as ptr<f16>;", "(cast p (ptr f16))");
}

static void test_type_arguments(void **state)
{
    (void)state;
    EXPECT_AST("const A = zeros<f32>([4, 8]) + full<T>([n], 0) + bitcast<i32>(x);",
               "(call zeros (targs f32) (list (int 4) (int 8)))", "(call full (targs T) (list n) (int 0))",
               "(call bitcast (targs i32) x)");
    /* nested closers need no blank; types of every kind */
    EXPECT_AST("const A = f<ptr<f32>>(x) + g<tile<f32>[4, 8], tensor<f16, 2>>(y);",
               "(call f (targs (ptr f32)) x)", "(call g (targs (tile f32 (int 4) (int 8)) (tensor f16 (int 2))) y)");
    /* a blank after the name, or no '(' after '>', makes them comparisons */
    EXPECT_AST("const A = a <b> (c);", "(binary > (binary < a b) c)");
    EXPECT_AST("const A = a<b && c>(d);", "(binary && (binary < a b) (binary > c d))");
    EXPECT_AST("const A = a<b>c;", "(binary > (binary < a b) c)");
    /* `ptr` and `tile` not glued to '<' are ordinary names */
    EXPECT_AST("const A = ptr + tile;", "(binary + ptr tile)");
    EXPECT_AST("const A = tile < n;", "(binary < tile n)");
}

static void test_named_arguments_and_index(void **state)
{
    (void)state;
    EXPECT_AST("const A = load(A, [0, k], [8, 8], other: 1.5) + sort(x, 0, descending: true);",
               "(call load A (list (int 0) k) (list (int 8) (int 8)) (named other (float 1.5)))",
               "(call sort x (int 0) (named descending (bool true)))");
    EXPECT_AST("const A = x[:, None] + x[None, :] + f();", "(index x : None)", "(index x None :)", "(call f)");
    EXPECT_AST("const A = [];", "(const A (list))");
}

static void test_tuples_and_statements(void **state)
{
    (void)state;
    EXPECT_AST("fn f(a, b: i32) {\n"
               "    let (v, i) = topk(a, 4, 0);\n"
               "    let t: tile<f32>[BM, BN] = zeros<f32>([BM, BN]);\n"
               "    var q = 1; q += 2; q <<= 1; q = q;\n"
               "    if a < b { q -= 1; } else if b { q |= 1; } else { static_assert(N == 32, \"n\\t\\\"\\\\\"); }\n"
               "    while q > 0 { { q -= 1; } }\n"
               "    static_assert(true);\n"
               "    print(\"x\", q);\n"
               "    return ((a), b, c);\n"
               "}\n",
               "(fn f\n  (param a)\n  (param b i32)\n", "(let (v i) (call topk a (int 4) (int 0)))",
               "(let t : (tile f32 BM BN) (call zeros (targs f32) (list BM BN)))", "(var q (int 1))",
               "(assign += q (int 2))", "(assign <<= q (int 1))", "(assign = q q)",
               "(if (binary < a b)\n      (then\n        (assign -= q (int 1)))\n      (else\n        (if b",
               "(static_assert (binary == N (int 32)) \"n\\t\\\"\\\\\")", "(while (binary > q (int 0))",
               "(block\n", "(static_assert (bool true))", "(expr (call print (string \"x\") q))",
               "(return (tuple a b c))");
    EXPECT_AST("fn g() { return; }", "(return)");
    EXPECT_AST("kernel k<N: int = 1 << 10, T: type = ptr<f32>, M: int>(x: T) warps(4) grid(1, 2) { }",
               "(cparam N int (binary << (int 1) (int 10)))", "(cparam T type (ptr f32))", "(cparam M int)",
               "(grid (int 1) (int 2))", "(warps (int 4))");
}

static void test_trailing_commas(void **state)
{
    (void)state;
    EXPECT_AST("kernel k<T: type = f32,>(\n    x: ptr<T>,\n    n: i32,\n) grid(n,) {\n"
               "    let a = f(1, 2,) + [1, 2,];\n    let b = (1, 2,);\n}\n",
               "(cparam T type f32)\n  (param x (ptr T))\n  (param n i32)\n  (grid n)",
               "(let a (binary + (call f (int 1) (int 2)) (list (int 1) (int 2))))", "(let b (tuple (int 1) (int 2)))");
    EXPECT_ERRORS("fn f(,) { }", "expected identifier or ')', found ','");
}

static void test_literals_and_comments(void **state)
{
    (void)state;
    EXPECT_AST("// line comment\nconst A = 0x1F + 0b101 + 18446744073709551615; /* block\n comment */\n"
               "const B = 1.0 + 1e-5 + .5 + 1. + 2.5e3 + nan + inf + true + false;",
               "(int 31)", "(int 5)", "(int 18446744073709551615)", "(float 1.0)", "(float 1e-05)",
               "(float 0.5)", "(float 2.5e+03)", "(float nan)", "(float inf)", "(bool true)", "(bool false)");
}

static void test_tokens(void **state)
{
    (void)state;
    const char *src = "let x = zeros<f32>([4]) >> 1; // c\n  \"s\\n\" <<= ptr<i8> 1.5";
    Diag d;
    diag_init(&d, "t.tile", src, strlen(src), NULL, DIAG_COLOR_NEVER);
    StrBuf out = {0};
    assert_true(ast_dump_tokens(&out, "t.tile", src, strlen(src), &d));
    assert_has(out.s, "1:1 KEYWORD 'let'\n1:5 IDENT 'x'\n1:7 PUNCT '='\n1:9 TIDENT 'zeros'\n1:14 PUNCT '<'\n"
                      "1:15 IDENT 'f32'\n1:18 PUNCT '>'\n1:19 PUNCT '('\n1:20 PUNCT '['\n1:21 INT '4'\n");
    assert_has(out.s, "1:25 PUNCT '>>'\n1:28 INT '1'\n1:29 PUNCT ';'\n2:3 STRING '\"s\\n\"'\n2:9 PUNCT '<<='\n"
                      "2:13 TYPE 'ptr'\n2:16 PUNCT '<'\n2:17 IDENT 'i8'\n2:19 PUNCT '>'\n2:21 FLOAT '1.5'\n");
    sb_free(&out);
    diag_free(&d);
}

static void test_syntax_errors(void **state)
{
    (void)state;
    EXPECT_ERRORS("kernel k(x: i32) {\n    let a = 1\n    let b = 2;\n}\n",
                  "t.tile:2:14: error: expected ';' after expression, found 'let'\n");
    EXPECT_ERRORS("const A = f(1, 2;", "1:17: error: expected ',' or ')' after expression, found ';'",
                  "1:12: note: to match this '('");
    EXPECT_ERRORS("fn f() { static_assert(c, \"m\"; }",
                  "1:30: error: expected ')' to close '(' opened at 1:23, found ';'");
    EXPECT_ERRORS("fn f() { let in = 4; }", "expected identifier or '(', found 'in'",
                  "note: 'in' is a keyword and cannot be used as a name");
    EXPECT_ERRORS("const A = ;", "1:11: error: expected expression, found ';'");
    EXPECT_ERRORS("let z = 1;", "expected declaration ('kernel', 'fn' or 'const') or end of file, found 'let'",
                  "note: statements belong inside the body of a kernel or fn");
    EXPECT_ERRORS("fn f() { print(\"a\" \"b\"); }", "expected ',' or ')' after expression, found string \"b\"");
    EXPECT_ERRORS("fn f() { x[0] = 1; }", "cannot assign to this expression");
    EXPECT_ERRORS("kernel k(x) { }", "kernel parameter 'x' needs a type");
    EXPECT_ERRORS("kernel k<N: integer = 4>(x: i32) { }", "expected 'int' or 'type'");
    EXPECT_ERRORS("kernel k(x: i32) grid(1) grod(2) { }", "unknown kernel clause 'grod'");
    EXPECT_ERRORS("fn f() { for i in rnge(4) { } }", "expected 'range' after 'in', found 'rnge'");
    EXPECT_ERRORS("fn f() {", "1:9: error: expected statement or '}', found end of file");
}

static void test_lexical_errors(void **state)
{
    (void)state;
    EXPECT_ERRORS("const A = 1 @ 2;", "1:13: error: invalid character '@'");
    EXPECT_ERRORS("const A = 1 \x01;", "invalid character '\\x01'");
    EXPECT_ERRORS("const A = \"abc\n;", "1:11: error: unterminated string literal");
    EXPECT_ERRORS("const A = \"a\\qb\";", "1:13: error: unknown escape sequence '\\q' in string literal");
    EXPECT_ERRORS("const A = 1; /* open", "1:14: error: unterminated comment");
    EXPECT_ERRORS("const A = 18446744073709551616;", "integer literal '18446744073709551616' does not fit in 64 bits");
    EXPECT_ERRORS("const A = 0x1FFFFFFFFFFFFFFFF;", "does not fit in 64 bits");
    EXPECT_ERRORS("const A = 1.5f + 0x + 12ab;", "invalid numeric literal '1.5f'", "invalid numeric literal '0x'",
                  "invalid numeric literal '12ab'");
    EXPECT_ERRORS("const A = 1e999;", "float literal '1e999' is out of range");
    EXPECT_ERRORS("const \xc3\xa9 = 1;", "invalid character '\xc3\xa9' (U+00E9)");
    EXPECT_ERRORS("const A = \xff\xfe;", "invalid byte '\\xff' (the source is not valid UTF-8)");
    /* the lexer's message is the only one for its bad token */
    assert_int_equal(expect_errors("const A = 1 $ 2;", NULL, 0), 1);
}

static void test_recovery(void **state)
{
    (void)state;
    const char *src = "kernel k(x: i32) {\n"
                      "    let a = (1 + ;\n"
                      "    let b = 2;\n"
                      "    let c = ] 3;\n"
                      "    if x { let d = 1 }\n"
                      "    let e = 1;\n"
                      "}\n"
                      "fn f(a) { return a }\n"
                      "const OK = 1;\n";
    Parsed p;
    parse(&p, src);
    assert_int_equal(p.diag.nerrors, 4);
    assert_has(messages(&p), "t.tile:2:18: error: expected expression, found ';'");
    assert_has(messages(&p), "t.tile:4:13: error: expected expression, found ']'");
    assert_has(messages(&p), "t.tile:5:22: error: expected ';' after expression, found '}'");
    assert_has(messages(&p), "t.tile:8:20: error: expected ';' after expression, found '}'");
    /* the statements and declarations around the errors survive */
    assert_non_null(p.ast);
    assert_has(p.dump.s, "(let b (int 2))");
    assert_has(p.dump.s, "(let e (int 1))");
    assert_has(p.dump.s, "(const OK (int 1))");
    release(&p);
}

static void test_error_limit(void **state)
{
    (void)state;
    StrBuf src = {0};
    for (int i = 0; i < 100; i++) sb_puts(&src, "const A = ;\n");
    Parsed p;
    parse(&p, src.s);
    assert_int_equal(p.diag.nerrors, p.diag.max_errors + 1);
    assert_has(messages(&p), "too many errors emitted");
    release(&p);
    sb_free(&src);
}

/* "const A = " + prefix + "1" + suffix + ";" with prefix and suffix repeated n times */
static void nested(StrBuf *b, const char *prefix, const char *suffix, int n)
{
    sb_puts(b, "const A = ");
    for (int i = 0; i < n; i++) sb_puts(b, prefix);
    sb_puts(b, "1");
    for (int i = 0; i < n; i++) sb_puts(b, suffix);
    sb_puts(b, ";\n");
}

static void expect_nesting(const char *prefix, const char *suffix, int n, bool ok)
{
    StrBuf src = {0};
    nested(&src, prefix, suffix, n);
    Parsed p;
    parse(&p, src.s);
    if (ok && p.diag.nerrors) fail_msg("%s x%d: %s", prefix, n, messages(&p));
    if (!ok) {
        if (p.diag.nerrors != 1) fail_msg("%s x%d: %s", prefix, n, messages(&p));
        assert_has(messages(&p), "error: nesting too deep (limit 256)");
        assert_null(p.ast);
    }
    release(&p);
    sb_free(&src);
}

static void test_nesting_limit(void **state)
{
    (void)state;
    expect_nesting("(", ")", 200, true);
    expect_nesting("(", ")", 100000, false);
    expect_nesting("[", "]", 300, false);
    expect_nesting("-", "", 200, true);
    expect_nesting("-", "", 100000, false);
    expect_nesting("f(", ")", 300, false);
    expect_nesting("", "+1", 250, true);
    expect_nesting("", "+1", 300, false);
    expect_nesting("- (", ")", 200, true);
    expect_nesting("(", "+1)", 200, true);
    expect_nesting("(", "+1+1)", 150, false); /* 150 brackets, but 300 levels of + */
    expect_nesting("", " as f32", 400, false);
    /* each level within every limit, but 100 x 200 levels exhaust bison's stack */
    char minus_run[202];
    memset(minus_run, '-', 200);
    minus_run[200] = '(';
    minus_run[201] = 0;
    expect_nesting(minus_run, ")", 100, false);
    StrBuf src = {0};
    sb_puts(&src, "fn f(x) {");
    for (int i = 0; i < 5000; i++) sb_puts(&src, " if x {} else");
    sb_puts(&src, " {} }\n");
    Parsed p;
    parse(&p, src.s);
    assert_has(messages(&p), "nesting too deep (limit 256)");
    release(&p);
    sb_free(&src);
    src = (StrBuf){0};
    sb_puts(&src, "fn f(x: ");
    for (int i = 0; i < 1000; i++) sb_puts(&src, "ptr<");
    sb_puts(&src, "f32");
    for (int i = 0; i < 1000; i++) sb_puts(&src, ">");
    sb_puts(&src, ") { }\n");
    parse(&p, src.s);
    assert_has(messages(&p), "nesting too deep (limit 256)");
    release(&p);
    sb_free(&src);
}

/* xorshift: deterministic garbage */
static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void test_garbage_never_crashes(void **state)
{
    (void)state;
    static const char *const words[] = {
        "kernel", "fn", "const", "let", "var", "if", "else", "for", "in", "while", "return", "static_assert",
        "as", "None", "range", "pipeline", "grid", "warps", "x", "zeros<f32>", "ptr<", "tile<", "tensor<",
        "(", ")", "[", "]", "{", "}", "<", ">", ">>", "<<=", ",", ";", ":", ".", "=", "+=", "-", "!", "1",
        "0x", "1.5", "\"s\"", "\"", "/*", "//", "\n", " ", "\x01", "\xff", "\xc3\xa9", "@"};
    uint64_t seed = 0x9e3779b97f4a7c15u;
    char *buf = malloc(4096);
    for (int round = 0; round < 600; round++) {
        size_t len = 0, want = next_random(&seed) % 4000;
        if (round % 2 == 0) {
            for (; len < want; len++) buf[len] = (char)next_random(&seed);
        } else {
            while (len + 16 < want) {
                const char *w = words[next_random(&seed) % TL_COUNTOF(words)];
                size_t n = strlen(w);
                memcpy(buf + len, w, n);
                len += n;
                buf[len++] = ' ';
            }
        }
        Parsed p;
        parse_n(&p, buf, len);
        release(&p);
        Diag d;
        diag_init(&d, "t.tile", buf, len, NULL, DIAG_COLOR_NEVER);
        StrBuf out = {0};
        ast_dump_tokens(&out, "t.tile", buf, len, &d);
        sb_free(&out);
        diag_free(&d);
    }
    /* every prefix of a real kernel: errors or not, never a crash */
    for (size_t n = 0; n <= sizeof gemm_src - 1; n++) {
        Parsed p;
        parse_n(&p, gemm_src, n);
        if (n == sizeof gemm_src - 1) assert_int_equal(p.diag.nerrors, 0);
        release(&p);
    }
    free(buf);
}

static void test_names_tables(void **state)
{
    (void)state;
    assert_string_equal(ast_kind_name[AST_INT], "int");
    assert_string_equal(ast_kind_name[AST_KERNEL], "kernel");
    assert_string_equal(ast_kind_name[AST_STATIC_ASSERT], "static_assert");
    assert_string_equal(ast_op_name[OP_ADD], "+");
    assert_string_equal(ast_op_name[OP_LOR], "||");
    assert_string_equal(ast_op_name[OP_ASSIGN], "=");
    for (int i = 0; i < AST_KIND_COUNT; i++) assert_non_null(ast_kind_name[i]);
    for (int i = 0; i < OP_COUNT; i++) assert_non_null(ast_op_name[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vadd),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_cast),
        cmocka_unit_test(test_type_arguments),
        cmocka_unit_test(test_named_arguments_and_index),
        cmocka_unit_test(test_tuples_and_statements),
        cmocka_unit_test(test_trailing_commas),
        cmocka_unit_test(test_literals_and_comments),
        cmocka_unit_test(test_tokens),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_lexical_errors),
        cmocka_unit_test(test_recovery),
        cmocka_unit_test(test_error_limit),
        cmocka_unit_test(test_nesting_limit),
        cmocka_unit_test(test_garbage_never_crashes),
        cmocka_unit_test(test_names_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
