/* frontend.h: from source text to tile IR.
 *
 * lower.c walks the AST once per kernel specialization: it resolves names and
 * scopes, evaluates compile-time parameters and constants, infers types and
 * shapes (with broadcasting), inlines `fn` calls, checks static_assert, and
 * builds tile IR (var -> loop-carried values / if results).
 */
#ifndef TILEC_FRONTEND_H
#define TILEC_FRONTEND_H

#include "../ir/ir.h"
#include "ast.h"

typedef struct FeDefine {   /* -D NAME=VALUE */
    const char *name;
    const char *value;
} FeDefine;

typedef struct FeOptions {
    const FeDefine *defines;
    uint32_t ndefines;
    const char *kernel;     /* only this kernel (source name), or NULL for all */
} FeOptions;

/* Lowers every kernel of `ast` (or opts->kernel) with its default parameters
 * overridden by opts->defines.  Errors go to d; returns NULL if there were any.
 * A -D that names no compile-time parameter of any lowered kernel is an error. */
IrModule *fe_lower(const Ast *ast, const FeOptions *opts, Diag *d);

/* The builtin names of the language (lang/builtins.def), for "did you mean". */
extern const char *const fe_builtin_names[];
extern const size_t fe_nbuiltin_names;

#endif
