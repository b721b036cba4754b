/* sema_scope.c: bindings, scopes and name lookup.
 *
 * Invariants: binds[] is a stack; a scope is a contiguous run at its top with
 * one scope id.  Popping a scope truncates the stack, so indices of outer
 * bindings stay valid while inner code runs (loops and ifs keep indices, never
 * pointers, across lowering calls that may grow the array).  An inlined fn
 * starts a frame: it sees its own bindings and the globals, never its caller's.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "lower_int.h"

uint32_t sema_scope_push(Lower *L)
{
    uint32_t token = L->scope;
    L->scope = ++L->next_scope;
    return token;
}

void sema_scope_pop(Lower *L, uint32_t token)
{
    while (L->nbinds > L->nglobal && L->nbinds > L->frame && L->binds[L->nbinds - 1].scope == L->scope)
        L->nbinds--;
    L->scope = token;
}

const char *sema_bind_kind_name(BindKind k)
{
    switch (k) {
    case BIND_CONST: return "const";
    case BIND_FN: return "fn";
    case BIND_KERNEL: return "kernel";
    case BIND_CPARAM: return "compile-time parameter";
    case BIND_PARAM: return "parameter";
    case BIND_LET: return "let";
    case BIND_VAR: return "var";
    case BIND_LOOP: return "loop variable";
    }
    return "?";
}

static uint32_t find_in(Lower *L, const char *name, uint32_t lo, uint32_t hi)
{
    for (uint32_t i = hi; i > lo; i--)
        if (strcmp(L->binds[i - 1].name, name) == 0) return i - 1;
    return UINT32_MAX;
}

uint32_t sema_lookup(Lower *L, const char *name)
{
    uint32_t i = find_in(L, name, L->frame, L->nbinds);
    if (i != UINT32_MAX) return i;
    return find_in(L, name, 0, L->nglobal);
}

uint32_t sema_declare(Lower *L, const char *name, BindKind kind, SrcLoc loc, LVal val, const AstNode *decl)
{
    uint32_t lo = L->nbinds > L->frame ? L->frame : L->nbinds;
    for (uint32_t i = L->nbinds; i > lo; i--) {
        Binding *p = &L->binds[i - 1];
        if (p->scope != L->scope) break;
        if (strcmp(p->name, name) == 0) {
            diag_error(L->d, loc, "redeclaration of '%s'", name);
            diag_note(L->d, p->loc, "previous declaration of '%s' (%s) is here", name,
                      sema_bind_kind_name((BindKind)p->kind));
            return UINT32_MAX;
        }
    }
    Binding nb;
    memset(&nb, 0, sizeof nb);
    nb.name = name;
    nb.kind = (uint8_t)kind;
    nb.scope = L->scope;
    nb.loc = loc;
    nb.val = val;
    nb.decl = decl;
    VEC_PUSH(L->binds, L->nbinds, L->bindcap, nb);
    return L->nbinds - 1;
}

void sema_undeclared(Lower *L, SrcLoc loc, const char *what, const char *name)
{
    diag_error(L->d, loc, "use of undeclared %s '%s'", what, name);
    /* candidates: for a type, the scalar types and `type` parameters; else the
     * visible locals, the globals and the builtins */
    uint32_t n = 0, cap = 0;
    const char **c = NULL;
    if (strcmp(what, "type") == 0) {
        for (uint32_t i = L->frame; i < L->nbinds; i++)
            if (L->binds[i].val.kind == LV_TYPE) VEC_PUSH(c, n, cap, L->binds[i].name);
        for (int i = 0; i < DT_COUNT; i++) VEC_PUSH(c, n, cap, dt_name[i]);
    } else {
        for (uint32_t i = L->frame; i < L->nbinds; i++) VEC_PUSH(c, n, cap, L->binds[i].name);
        for (uint32_t i = 0; i < L->nglobal; i++)
            if (L->binds[i].kind != BIND_KERNEL) VEC_PUSH(c, n, cap, L->binds[i].name);
        for (size_t i = 0; i < fe_nbuiltin_names; i++) VEC_PUSH(c, n, cap, fe_builtin_names[i]);
    }
    const char *best = diag_closest(name, c, n);
    /* for one- and two-letter names any short name is "close": demand the same first letter */
    if (best && strlen(name) <= 2 && tolower((unsigned char)best[0]) != tolower((unsigned char)name[0])) best = NULL;
    if (best) {
        uint32_t b = sema_lookup(L, best);
        diag_note(L->d, b != UINT32_MAX ? L->binds[b].loc : loc, "did you mean '%s'?", best);
    }
    free((void *)c);
}
