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

typedef struct FeSpecSet {  /* one --spec 'NAME=VALUE,...': a specialization of the kernels */
    const FeDefine *defines;
    uint32_t ndefines;
    const char *text;       /* as the user wrote it, for messages */
} FeSpecSet;

typedef struct FeOptions {
    const FeDefine *defines;
    uint32_t ndefines;
    const char *kernel;     /* only this kernel (source name), or NULL for all */
} FeOptions;

/* Lowers every kernel of `ast` (or opts->kernel) with its default parameters
 * overridden by opts->defines.  Errors go to d; returns NULL if there were any.
 * A -D that names no compile-time parameter of any lowered kernel is an error.
 */
IrModule *fe_lower(const Ast *ast, const FeOptions *opts, Diag *d);
/* The same with nspecs > 0 spec sets: each kernel is lowered once per set, its
 * parameters set by opts->defines and then the set's (the set wins); a set
 * that gives a kernel the symbol of an earlier one adds nothing for that
 * kernel (a kernel the set does not parameterize is lowered once), and a set
 * that adds nothing at all is an error, as is a set's NAME that no lowered
 * kernel has.  nspecs == 0 is fe_lower. */
IrModule *fe_lower_specs(const Ast *ast, const FeOptions *opts, const FeSpecSet *specs, uint32_t nspecs, Diag *d);

/* The builtin names of the language (lang/builtins.def), for "did you mean". */
extern const char *const fe_builtin_names[];
extern const size_t fe_nbuiltin_names;

#endif
