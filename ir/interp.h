/* interp.h: the reference interpreter.  It executes a kernel's tile IR on host
 * memory over the whole grid, one program at a time, with the language's
 * semantics exactly (see lang/REFERENCE.md).  What the GPU would silently get
 * wrong (an unmasked access outside a buffer, a misaligned pointer, an integer
 * division by zero, a failed assert) is reported as an error at the op's
 * source location, and the run stops.  So is a broken protocol of the
 * pipelining ops (an async_wait with the wrong phase, a shared-memory stage
 * read before its load was waited for): the interpreter checks what the
 * pipelining passes make.
 */
#ifndef TILEC_INTERP_H
#define TILEC_INTERP_H

#include <stdio.h>

#include "ir.h"

/* A host buffer a kernel may address.  Pointers handed to the kernel point
 * into one of these; any access outside [data, data+bytes) is an error. */
typedef struct InterpBuf {
    void *data;
    size_t bytes;
    const char *name;   /* for messages: the argument name */
} InterpBuf;

typedef enum { IARG_SCALAR, IARG_PTR, IARG_VIEW } InterpArgKind;

/* One kernel argument, in parameter order. */
typedef struct InterpArg {
    InterpArgKind kind;
    int64_t i;          /* IARG_SCALAR of an integer type */
    double f;           /* IARG_SCALAR of a float type (rounded to the type on entry) */
    uint32_t buf;       /* IARG_PTR / IARG_VIEW: index into the buffer array */
    int64_t offset;     /* in elements from the buffer's start */
    int64_t shape[IR_MAXRANK], stride[IR_MAXRANK];   /* IARG_VIEW, strides in elements */
} InterpArg;

/* num_sms() in the interpreter (kernel bodies and grid clauses) gives the SM
 * count of the module's target (ir/target.def; the default target's when the
 * module names none).  A kernel's results must not depend on it. */
uint32_t interp_num_sms(const IrFunc *f);

typedef struct InterpOptions {
    FILE *print_out;    /* where `print` writes (NULL: stdout) */
    uint64_t max_steps; /* 0: no limit; otherwise an error after this many executed ops */
    bool no_tma;        /* tma_ready gives false, as when the runtime cannot describe a
                           tensor to the TMA unit: pipelined loops take their fallback */
} InterpOptions;

/* Evaluates f->grid on the arguments.  Returns false (with an error in d) when
 * the kernel has no grid clause or an entry is not in 1..2^31-1. */
bool interp_grid(IrFunc *f, const InterpArg *args, uint32_t grid[3], Diag *d);

/* Evaluates f->requires on the arguments.  Returns false (with an error in d
 * naming the message of the first clause that does not hold) when one fails;
 * true when all hold or there are none. */
bool interp_requires(IrFunc *f, const InterpArg *args, Diag *d);

/* Runs every program of the grid.  Returns false after reporting the first error. */
bool interp_run(IrFunc *f, InterpBuf *bufs, uint32_t nbufs, const InterpArg *args,
                const uint32_t grid[3], const InterpOptions *opt, Diag *d);

#endif
