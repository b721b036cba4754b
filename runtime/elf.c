/* elf.c: checks a cubin on the host and finds its metadata.
 *
 * 1. The ELF header: magic, ELF64, little-endian, machine EM_CUDA, section
 *    header table inside the image (a truncated file fails here).
 * 2. The SM arch from e_flags.  Its place depends on the CUDA ELF ABI version
 *    (e_ident[EI_ABIVERSION]): up to 7 it is the low byte (with the virtual
 *    arch in bits 16-23 and EF_CUDA_ACCELERATORS 0x800 for "a" targets); from
 *    8 (ptxas of CUDA 13) it is bits 8-15, and "a" is not in e_flags.
 *    Program headers and segments must lie inside the image too (cubins end with them).
 * 3. The symbol table: the symbol `__tilec_meta`, its section's bytes, all
 *    range-checked.
 * Every offset and size is checked against the image before it is used.
 */
#include "elf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "meta.h"

enum { SHT_SYMTAB_ = 2, SHT_NOBITS_ = 8, SHN_LORESERVE_ = 0xff00, EHDR_SIZE = 64, SHDR_SIZE = 64, PHDR_SIZE = 56, SYM_SIZE = 24 };

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

static tilert_status fail(tilert_status s, char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return s;
}

/* [off, off+len) inside [0, size)? */
static bool inside(uint64_t off, uint64_t len, size_t size) { return off <= size && len <= size - off; }

typedef struct Shdr {
    uint32_t name, type, link;
    uint64_t addr, offset, size, entsize;
} Shdr;

static Shdr shdr(const uint8_t *img, uint64_t shoff, uint32_t i)
{
    const uint8_t *p = img + shoff + (uint64_t)i * SHDR_SIZE;
    return (Shdr){rd32(p), rd32(p + 4), rd32(p + 40), rd64(p + 16), rd64(p + 24), rd64(p + 32), rd64(p + 56)};
}

tilert_status tilert_elf_inspect(const void *image, size_t size, tilert_elf_info *out, char *err, size_t errlen)
{
    const uint8_t *p = image;
    memset(out, 0, sizeof *out);
    if (!image || size == 0) return fail(TILERT_ERROR_INVALID_IMAGE, err, errlen, "empty image");
    if (size >= 4 && memcmp(p, "\x7f" "ELF", 4) != 0) {
        if (size >= 4 && rd32(p) == 0xBA55ED50u)
            return fail(TILERT_ERROR_INVALID_IMAGE, err, errlen,
                        "a fatbinary, not a cubin: load the cubin tilec wrote (--emit=cubin)");
        const char *s = (const char *)p;
        if ((size >= 2 && s[0] == '/' && s[1] == '/') || (size >= 8 && memcmp(s, ".version", 8) == 0))
            return fail(TILERT_ERROR_INVALID_IMAGE, err, errlen,
                        "PTX text, not a cubin: compile it with tilec --emit=cubin");
        return fail(TILERT_ERROR_INVALID_IMAGE, err, errlen,
                    "not an ELF file (bad magic %02x %02x %02x %02x; a cubin starts with 7f 45 4c 46)", p[0],
                    size > 1 ? p[1] : 0, size > 2 ? p[2] : 0, size > 3 ? p[3] : 0);
    }
    if (size < EHDR_SIZE)
        return fail(TILERT_ERROR_INVALID_IMAGE, err, errlen, "truncated: %zu bytes, shorter than an ELF64 header (64)",
                    size);
    if (p[4] != 2)
        return fail(TILERT_ERROR_INVALID_IMAGE, err, errlen, "ELF class %u: a cubin is ELF64 (class 2)", p[4]);
    if (p[5] != 1)
        return fail(TILERT_ERROR_INVALID_IMAGE, err, errlen, "big-endian or unknown data encoding %u (a cubin is little-endian)",
                    p[5]);
    uint16_t machine = rd16(p + 18);
    if (machine != TILERT_EM_CUDA)
        return fail(TILERT_ERROR_INVALID_IMAGE, err, errlen,
                    "ELF machine %u%s, not NVIDIA CUDA (%d): this is not a cubin", machine,
                    machine == 62 ? " (x86-64)" : machine == 183 ? " (AArch64)" : "", TILERT_EM_CUDA);
    uint64_t shoff = rd64(p + 40);
    uint32_t flags = rd32(p + 48);
    uint16_t shentsize = rd16(p + 58), shnum = rd16(p + 60);
    out->abi_version = p[8];
    if (out->abi_version >= 8) {
        out->sm = (uint16_t)((flags >> 8) & 0xFF);
    } else {
        out->sm = (uint16_t)(flags & 0xFF);
        out->arch_specific = (flags & 0x800u) != 0;
    }
    if (out->sm < 10)
        return fail(TILERT_ERROR_INVALID_IMAGE, err, errlen, "ELF flags 0x%x name no SM arch", (unsigned)flags);
    if (shnum == 0 || shentsize != SHDR_SIZE)
        return fail(TILERT_ERROR_INVALID_IMAGE, err, errlen, "no section headers (count %u, entry size %u)", shnum,
                    shentsize);
    if (!inside(shoff, (uint64_t)shnum * SHDR_SIZE, size))
        return fail(TILERT_ERROR_INVALID_IMAGE, err, errlen,
                    "truncated: the section headers end at byte %llu, the image has %zu bytes",
                    (unsigned long long)(shoff + (uint64_t)shnum * SHDR_SIZE), size);
    /* cubins put the program headers after the section headers: they mark the true end */
    uint64_t phoff = rd64(p + 32);
    uint16_t phentsize = rd16(p + 54), phnum = rd16(p + 56);
    if (phnum) {
        if (phentsize != PHDR_SIZE)
            return fail(TILERT_ERROR_INVALID_IMAGE, err, errlen, "program header entry size %u (ELF64: 56)", phentsize);
        if (!inside(phoff, (uint64_t)phnum * PHDR_SIZE, size))
            return fail(TILERT_ERROR_INVALID_IMAGE, err, errlen,
                        "truncated: the program headers end at byte %llu, the image has %zu bytes",
                        (unsigned long long)(phoff + (uint64_t)phnum * PHDR_SIZE), size);
        for (uint32_t i = 0; i < phnum; i++) {
            const uint8_t *ph = p + phoff + (uint64_t)i * PHDR_SIZE;
            uint64_t off = rd64(ph + 8), filesz = rd64(ph + 32);
            if (!inside(off, filesz, size))
                return fail(TILERT_ERROR_INVALID_IMAGE, err, errlen,
                            "truncated: segment %u ends at byte %llu, the image has %zu bytes", i,
                            (unsigned long long)(off + filesz), size);
        }
    }
    for (uint32_t i = 1; i < shnum; i++) {
        Shdr s = shdr(p, shoff, i);
        if (s.type != SHT_NOBITS_ && !inside(s.offset, s.size, size))
            return fail(TILERT_ERROR_INVALID_IMAGE, err, errlen,
                        "truncated: section %u ends at byte %llu, the image has %zu bytes", i,
                        (unsigned long long)(s.offset + s.size), size);
    }
    const size_t nlen = sizeof TILERT_META_SYMBOL; /* with the NUL */
    for (uint32_t i = 1; i < shnum; i++) {
        Shdr st = shdr(p, shoff, i);
        if (st.type != SHT_SYMTAB_) continue;
        if (st.entsize != SYM_SIZE || st.link == 0 || st.link >= shnum)
            return fail(TILERT_ERROR_INVALID_IMAGE, err, errlen, "malformed symbol table (section %u)", i);
        Shdr strs = shdr(p, shoff, st.link);
        if (strs.type == SHT_NOBITS_)
            return fail(TILERT_ERROR_INVALID_IMAGE, err, errlen, "symbol table names an empty string table");
        for (uint64_t j = 1; j < st.size / SYM_SIZE; j++) {
            const uint8_t *sym = p + st.offset + j * SYM_SIZE;
            uint32_t name = rd32(sym);
            if (name >= strs.size || strs.size - name < nlen) continue;
            if (memcmp(p + strs.offset + name, TILERT_META_SYMBOL, nlen) != 0) continue;
            uint16_t shndx = rd16(sym + 6);
            uint64_t value = rd64(sym + 8), ssize = rd64(sym + 16);
            if (shndx == 0 || shndx >= SHN_LORESERVE_ || shndx >= shnum)
                return fail(TILERT_ERROR_BAD_METADATA, err, errlen, "%s is not defined in a section (index %u)",
                            TILERT_META_SYMBOL, shndx);
            Shdr sec = shdr(p, shoff, shndx);
            if (sec.type == SHT_NOBITS_)
                return fail(TILERT_ERROR_BAD_METADATA, err, errlen,
                            "%s has no contents (it was declared without an initializer)", TILERT_META_SYMBOL);
            /* st_value is section-relative in cubins (sh_addr 0); subtract sh_addr for images that set it */
            uint64_t off = value - sec.addr;
            if (value < sec.addr || !inside(off, ssize, sec.size))
                return fail(TILERT_ERROR_BAD_METADATA, err, errlen,
                            "%s (offset %llu, %llu bytes) lies outside its section (%llu bytes)", TILERT_META_SYMBOL,
                            (unsigned long long)value, (unsigned long long)ssize, (unsigned long long)sec.size);
            out->meta = p + sec.offset + off;
            out->meta_len = (size_t)ssize;
            return TILERT_OK;
        }
    }
    return fail(TILERT_ERROR_BAD_METADATA, err, errlen,
                "no %s symbol: this cubin was not made by tilec (or its metadata was stripped)", TILERT_META_SYMBOL);
}
