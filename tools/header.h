/* header.h: `tilec --emit=header`, a C header that launches a module's kernels.
 *
 * The header is self-contained C (C99 and later) and C++ (C++11 and later),
 * clean under -Wall -Wextra -Werror, and needs only <tilert.h> (libtilert):
 *
 *   MODULE_module(&m)               loads the module once per translation unit
 *                                   and process (thread-safe): from the embedded
 *                                   cubin (--embed) or from a file
 *   MODULE_set_cubin_path(path)     (no --embed) the file, before the first launch
 *   MODULE_unload()                 unloads it (no launch may be in flight)
 *   K_kernel(&k)                    kernel K, looked up once
 *   K_launch(stream, PARAMS...)     checks the arguments and launches with the
 *                                   grid of K's grid(...) clause
 *   K_launch_grid(stream, grid, PARAMS...)   the same with an explicit grid
 *
 * K is the kernel's source name.  Where the module holds several
 * specializations of one kernel (--spec, or a .tir), each is K__P_V... for the
 * compile-time parameters P whose values V differ among them (gemm__BN_128);
 * and where only type parameters differ and every specialization has the same
 * C signature, K_launch and K_launch_grid also exist and launch the one that
 * takes the arguments (tilert_kernel_select: by the tensors' dtypes).
 * Parameters keep their source names (one that is a C or C++ keyword, or
 * `stream`/`grid`, gains a trailing '_').
 *
 * --arch=A,B,... (with --embed or --embed-c): one cubin per arch, MODULE_tilec_image_A()...;
 * the module loads the one for the device (tilert_module_load_best).
 *
 * --tune-table=TABLE.json (tools/tune.c): K_tune_entry(PARAMS...) gives the table entry (tuned
 * shape) nearest to the arguments, and K_launch / K_launch_grid launch the specialization the
 * table chose for it (see HeaderTune).
 *
 * --embed-c=FILE.c: the cubin's bytes go to FILE.c (MODULE_tilec_cubin,
 * MODULE_tilec_cubin_size), which the program compiles once; the header only
 * declares them, so a translation unit including it compiles fast.
 */
#ifndef TILEC_HEADER_H
#define TILEC_HEADER_H

#include "../ir/ir.h"

typedef struct HeaderImage {   /* one cubin of a header that carries several archs */
    const char *arch;
    const void *cubin;
    size_t len;
} HeaderImage;

/* --tune-table (tools/tune.c): a launcher K_launch that picks among the specializations of
 * kernel K by the arguments' shape.  Each table entry is a tuned shape: its key (nkey integers
 * read from the arguments: key_param[i]'s dimension key_dim[i], or the scalar itself where
 * key_dim[i] is -1) and the kernel of the module (an index into m->funcs) that was best for it.
 * The launcher takes the entry nearest to the arguments' key: the least sum over the key of
 * |lg(x) - lg(entry)|, lg the piecewise-linear log2 (exact at powers of two; x - 1 below 1),
 * the first entry on a tie. */
typedef struct HeaderTune {
    const char *kernel;         /* source name */
    const char *table;          /* the table file, for the header's comment */
    const char *tuned_on;       /* the device (or "the interpreter"), for the comment */
    uint32_t nkey, nentries;
    const uint32_t *key_param;  /* [nkey] */
    const int32_t *key_dim;     /* [nkey] */
    const int64_t *keys;        /* [nentries * nkey] */
    const uint32_t *entry_func; /* [nentries] */
    const char *const *shapes;  /* [nentries]: the tuned shapes as the table spells them */
} HeaderTune;

typedef struct HeaderOpts {
    const char *module_name;    /* prefix of the module functions; made a C identifier if it is not one */
    const char *source;         /* the input file, named in the header's comment */
    const char *arch;           /* what the cubin was (or is to be) compiled for */
    int opt_level;
    bool debug;
    const void *cubin;          /* --embed: the cubin's bytes; NULL: loaded from cubin_path */
    size_t cubin_len;
    const char *cubin_path;     /* without --embed: the default file to load */
    const char *tilec_version;
    const char *embed_c;        /* --embed-c: the .c that holds the cubin (NULL: the header holds it) */
    StrBuf *embed_c_out;        /* with embed_c: receives that .c's text */
    const HeaderImage *images;  /* nimages > 1: one cubin per arch (cubin is images[0]'s), the loader */
    uint32_t nimages;           /* picks the device's (tilert_module_load_best); arch names them all */
    const HeaderTune *tune;     /* NULL, or the launcher by shape of one kernel */
} HeaderOpts;

/* Appends the header for every kernel of m.  False (after an error in d) when
 * a parameter has a type the header cannot express. */
bool header_write(StrBuf *out, const IrModule *m, const HeaderOpts *h, Diag *d);

#endif
