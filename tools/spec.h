/* spec.h: --spec 'NAME=VALUE,...', several specializations of a module's kernels in one
 * invocation (one cubin, one header; see frontend.h's FeSpecSet). */
#ifndef TILEC_SPEC_H
#define TILEC_SPEC_H

#include "run.h"

/* Parses one --spec argument into a set appended to *sets: 1, or -1 after a usage error. */
int driver_add_spec(const char *cmd, FeSpecSet **sets, uint32_t *nsets, uint32_t *cap, const char *arg);
void driver_free_specs(FeSpecSet *sets, uint32_t nsets);
/* --arch=A,B,... (several archs in one header): 1 after filling *archs (malloc'd: free it)
 * with the *n rows of ir/target.def the names give (each one a row, none twice); -1 after a
 * usage error. */
int driver_parse_arch_list(const char *cmd, const char *arg, const IrTarget ***archs, uint32_t *n);

#endif
