/* elf.h: the host-side look at a cubin (an ELF64 image for EM_CUDA): its
 * checks, its SM arch, and the bytes of the `__tilec_meta` symbol.  No CUDA. */
#ifndef TILERT_ELF_H
#define TILERT_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tilert.h"

#define TILERT_EM_CUDA 190

typedef struct tilert_elf_info {
    uint16_t sm;              /* from e_flags: 90 for sm_90 and sm_90a */
    bool arch_specific;       /* known "a" marker (ELF ABI 7's EF_CUDA_ACCELERATORS); ABI 8 does not say */
    uint8_t abi_version;      /* e_ident[EI_ABIVERSION] */
    const uint8_t *meta;      /* points into the image */
    size_t meta_len;
} tilert_elf_info;

/* Checks the image and finds the metadata.  On failure returns
 * TILERT_ERROR_INVALID_IMAGE or TILERT_ERROR_BAD_METADATA (no __tilec_meta)
 * with a message in err. */
tilert_status tilert_elf_inspect(const void *image, size_t size, tilert_elf_info *out, char *err, size_t errlen);

#endif
