/* spec.c: --spec 'NAME=VALUE[,NAME=VALUE...]'.
 *
 * Each --spec is one specialization: its NAME=VALUE pairs set compile-time
 * parameters as -D does (after the -D options, which every set shares).  The
 * frontend lowers every kernel once per set (fe_lower), so one module, cubin
 * and header hold them all; the header names their launchers apart.
 */
#include "spec.h"

#include <stdlib.h>
#include <string.h>

static bool ident(const char *s, size_t n)
{
    if (n == 0 || (s[0] >= '0' && s[0] <= '9')) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
    }
    return true;
}

static char *dup_n(const char *s, size_t n)
{
    char *p = tl_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

void driver_free_specs(FeSpecSet *sets, uint32_t nsets)
{
    for (uint32_t i = 0; i < nsets; i++) {
        for (uint32_t j = 0; j < sets[i].ndefines; j++) {
            free((char *)sets[i].defines[j].name);
            free((char *)sets[i].defines[j].value);
        }
        free((FeDefine *)sets[i].defines);
    }
    free(sets);
}

int driver_add_spec(const char *cmd, FeSpecSet **sets, uint32_t *nsets, uint32_t *cap, const char *arg)
{
    FeDefine *defs = NULL;
    uint32_t n = 0, dcap = 0;
    const char *p = arg;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t nlen = eq ? (size_t)(eq - p) : 0;
        if (!eq || !ident(p, nlen) || eq + 1 == p + len) {
            driver_usage_error(cmd, "--spec wants NAME=VALUE[,NAME=VALUE...], not '%s'", arg);
            goto bad;
        }
        for (uint32_t i = 0; i < n; i++)
            if (strlen(defs[i].name) == nlen && memcmp(defs[i].name, p, nlen) == 0) {
                driver_usage_error(cmd, "--spec '%s' sets %s twice", arg, defs[i].name);
                goto bad;
            }
        FeDefine d = {dup_n(p, nlen), dup_n(eq + 1, len - nlen - 1)};
        VEC_PUSH(defs, n, dcap, d);
        if (!end) break;
        p = end + 1;
    }
    FeSpecSet set = {defs, n, arg};
    VEC_PUSH(*sets, *nsets, *cap, set);
    return 1;
bad:
    for (uint32_t i = 0; i < n; i++) {
        free((char *)defs[i].name);
        free((char *)defs[i].value);
    }
    free(defs);
    return -1;
}

int driver_parse_arch_list(const char *cmd, const char *arg, const IrTarget ***archs, uint32_t *n)
{
    const IrTarget **list = NULL;
    uint32_t cnt = 0, cap = 0;
    const char *p = arg;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char *a = dup_n(p, len);
        const IrTarget *tg = ir_target_find(a);
        bool again = false;
        for (uint32_t i = 0; i < cnt; i++) again = again || list[i] == tg;
        if (!tg || again) {
            IrTargetList l;
            if (again) driver_usage_error(cmd, "--arch=%s names %s twice", arg, a);
            else driver_usage_error(cmd, "unknown GPU arch '%s' in '--arch=%s' (use %s)", a, arg,
                                    ir_target_list(&l, 0, ", ", " or "));
            free(a);
            free(list);
            return -1;
        }
        free(a);
        VEC_PUSH(list, cnt, cap, tg);
        if (!end) break;
        p = end + 1;
    }
    *archs = list;
    *n = cnt;
    return 1;
}
