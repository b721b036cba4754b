/* tune.h: `tilec tune`, offline autotuning, and the tuning tables it writes.
 *
 *   tilec tune FILE.tile --kernel K --interp|--device [--space NAME=V1,V2,...]...
 *              --shape 'ARG ARG ...'... | --shapes FILE  [-o TABLE.json] [options]
 *
 * compiles kernel K once per point of the search space (the kernel's tune(...)
 * clause, with --space replacing or adding parameters), runs every candidate on
 * every shape, checks each against a reference, times it on the GPU, and writes
 * a table (JSON) of the best -D set per shape.  `tilec FILE --tune-table TABLE`
 * compiles the specializations a table chose, and with --emit=header adds a
 * launcher that picks one by the arguments' shape (header.h's HeaderTune).
 * lang/REFERENCE.md describes the command and the table's format.
 */
#ifndef TILEC_TUNE_H
#define TILEC_TUNE_H

#include "header.h"
#include "run.h"

/* getopt code of `tilec FILE --tune-table` (tilec.c), past driver.h's. */
enum { OPT_TUNE_TABLE = 1000 };

typedef struct TuneTable TuneTable;

/* `tilec tune ...` (argv[0] is "tune"): the exit status (0, 1 after errors, 2 for a bad command line). */
int tune_main(int argc, char **argv);

/* Reads a tuning table; NULL after reporting what is wrong with it (file:line:col, to stderr). */
TuneTable *tune_table_load(const char *path, DiagColor color);
/* Makes o compile what the table chose: its kernel (an --kernel given must name it), its -D
 * values, and one --spec per distinct -D set the table chose.  -1 to go on, else 2 after a
 * usage error (-D or --spec that contradict the table).  The table must outlive o. */
int tune_table_apply(TuneTable *t, DriverOpts *o);
/* The launcher by shape for module m (compiled with the options tune_table_apply set): false
 * after an error in d (the table's key does not fit the kernel: it changed since the tuning). */
bool tune_table_header(TuneTable *t, const IrModule *m, HeaderTune *ht, Diag *d);
void tune_table_free(TuneTable *t);

#endif
