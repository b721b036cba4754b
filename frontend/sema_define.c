/* sema_define.c: the value of a `-D NAME=VALUE` option.
 *
 * VALUE is a scalar type name (`f16`) or an integer expression of literals
 * (decimal or 0x hex) with C's operators and precedence: unary - + ~ !,
 * * / %, + -, << >>, < <= > >=, == !=, &, ^, |, &&, ||, parentheses.
 * Arithmetic wraps in 64 bits; division by zero, a shift count outside
 * [0, 64), an out-of-range literal, or nesting deeper than 64 makes it invalid.
 */
#include <ctype.h>
#include <string.h>

#include "lower_int.h"

typedef struct DefParser {
    const char *p;
    bool bad;
    int depth;
} DefParser;

static void skip(DefParser *s)
{
    while (isspace((unsigned char)*s->p)) s->p++;
}

static bool eat(DefParser *s, const char *tok)
{
    skip(s);
    size_t n = strlen(tok);
    if (strncmp(s->p, tok, n) != 0) return false;
    /* do not take '<' from "<<" or "<=", '&' from "&&", and so on */
    if (n == 1 && (s->p[1] == tok[0] || s->p[1] == '=') && strchr("<>&|=!", tok[0])) return false;
    s->p += n;
    return true;
}

static int64_t binary_level(DefParser *s, int level);

static int64_t unary(DefParser *s)
{
    skip(s);
    if (++s->depth > 64) {
        s->bad = true;
        return 0;
    }
    int64_t v = 0;
    if (eat(s, "-")) v = (int64_t)(0 - (uint64_t)unary(s));
    else if (eat(s, "+")) v = unary(s);
    else if (eat(s, "~")) v = ~unary(s);
    else if (eat(s, "!")) v = !unary(s);
    else if (eat(s, "(")) {
        v = binary_level(s, 0);
        if (!eat(s, ")")) s->bad = true;
    } else if (isdigit((unsigned char)*s->p)) {
        int base = 10;
        if (s->p[0] == '0' && (s->p[1] == 'x' || s->p[1] == 'X')) {
            base = 16;
            s->p += 2;
            if (!isxdigit((unsigned char)*s->p)) s->bad = true;
        }
        uint64_t u = 0;
        for (; isxdigit((unsigned char)*s->p); s->p++) {
            int c = (unsigned char)*s->p;
            int dgt = isdigit(c) ? c - '0' : tolower(c) - 'a' + 10;
            if (dgt >= base || u > (uint64_t)(INT64_MAX - dgt) / (uint64_t)base) {
                s->bad = true;
                break;
            }
            u = u * (uint64_t)base + (uint64_t)dgt;
        }
        if (s->p[0] == '_' || isalpha((unsigned char)s->p[0])) s->bad = true;
        v = (int64_t)u;
    } else {
        s->bad = true;
    }
    s->depth--;
    return v;
}

/* ORDER: lowest precedence first. */
static const char *const levels[][4] = {
    {"||"}, {"&&"}, {"|"}, {"^"}, {"&"}, {"==", "!="}, {"<=", ">=", "<", ">"}, {"<<", ">>"}, {"+", "-"}, {"*", "/", "%"},
};

static int64_t apply(DefParser *s, const char *op, int64_t a, int64_t b)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (op[0]) {
    case '|': return op[1] ? (a || b) : (int64_t)(ua | ub);
    case '&': return op[1] ? (a && b) : (int64_t)(ua & ub);
    case '^': return (int64_t)(ua ^ ub);
    case '=': return a == b;
    case '!': return a != b;
    case '+': return (int64_t)(ua + ub);
    case '-': return (int64_t)(ua - ub);
    case '*': return (int64_t)(ua * ub);
    case '/':
    case '%':
        if (b == 0 || (a == INT64_MIN && b == -1)) {
            s->bad = true;
            return 0;
        }
        return op[0] == '/' ? a / b : a % b;
    case '<':
    case '>':
        if (op[1] == op[0]) {
            if (b < 0 || b >= 64) {
                s->bad = true;
                return 0;
            }
            return op[0] == '<' ? (int64_t)(ua << b) : a >> b;
        }
        if (op[1] == '=') return op[0] == '<' ? a <= b : a >= b;
        return op[0] == '<' ? a < b : a > b;
    }
    s->bad = true;
    return 0;
}

static int64_t binary_level(DefParser *s, int level)
{
    if (level == (int)TL_COUNTOF(levels)) return unary(s);
    int64_t v = binary_level(s, level + 1);
    for (;;) {
        const char *op = NULL;
        for (int k = 0; k < 4 && levels[level][k]; k++)
            if (eat(s, levels[level][k])) {
                op = levels[level][k];
                break;
            }
        if (!op || s->bad) return v;
        v = apply(s, op, v, binary_level(s, level + 1));
    }
}

DefKind sema_parse_define(const char *text, int64_t *ival, DType *dt)
{
    const char *b = text, *e = text + strlen(text);
    while (b < e && isspace((unsigned char)*b)) b++;
    while (e > b && isspace((unsigned char)e[-1])) e--;
    if (dt_from_name(b, (size_t)(e - b), dt)) return DEF_TYPE;
    DefParser s = {text, false, 0};
    int64_t v = binary_level(&s, 0);
    skip(&s);
    if (s.bad || *s.p) return DEF_BAD;
    *ival = v;
    return DEF_INT;
}
