/* target.c: the target table (target.def) and its lookups. */
#include "target.h"

#include <stdio.h>
#include <string.h>

#include "../common/base.h"

const IrTarget ir_targets[IR_TARGET_COUNT] = {
#define TARGET(id, name, sm, specific, features, smem_cta, nsms, regs_sm, threads_sm, ptx) \
    [IR_TARGET_##id] = {name, sm, specific, features, smem_cta, nsms, regs_sm, threads_sm, ptx},
#include "target.def"
#undef TARGET
};

const IrTarget *ir_target_find(const char *name)
{
    if (!name) return NULL;
    for (int i = 0; i < IR_TARGET_COUNT; i++)
        if (strcmp(name, ir_targets[i].name) == 0) return &ir_targets[i];
    return NULL;
}

const IrTarget *ir_target_default(void) { return &ir_targets[IR_TARGET_DEFAULT]; }

const IrTarget *ir_target_for_cc(int major, int minor)
{
    const IrTarget *best = NULL;
    for (int i = 0; i < IR_TARGET_COUNT; i++) {
        const IrTarget *t = &ir_targets[i];
        int tmaj = t->sm / 10, tmin = t->sm % 10;
        if (tmaj != major || tmin > minor || (t->specific && tmin != minor)) continue;
        if (!best || t->sm > best->sm || (t->sm == best->sm && t->specific && !best->specific)) best = t;
    }
    return best;
}

const char *ir_target_list(IrTargetList *out, uint32_t need, const char *sep, const char *last)
{
    int idx[IR_TARGET_COUNT], n = 0;
    for (int i = 0; i < IR_TARGET_COUNT; i++)
        if ((ir_targets[i].features & need) == need) idx[n++] = i;
    size_t len = 0;
    out->s[0] = 0;
    for (int k = 0; k < n; k++) {
        int w = snprintf(out->s + len, sizeof out->s - len, "%s%s", k == 0 ? "" : k == n - 1 ? last : sep,
                         ir_targets[idx[k]].name);
        TL_ASSERT(w >= 0 && (size_t)w < sizeof out->s - len, "target");
        len += (size_t)w;
    }
    return out->s;
}
