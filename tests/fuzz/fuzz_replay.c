/* fuzz_replay.c: main() for a fuzz target built without libFuzzer (gcc builds,
 * TILEC_FUZZ=OFF): replays files and folders given on the command line through
 * LLVMFuzzerTestOneInput, each file once, folders in name order, so the seed
 * corpus runs through every fuzz target in every build, sanitized or not.
 * A crash, a trap or a sanitizer report stops the replay; the last line on
 * stderr names the file being replayed (with TILEC_FUZZ_VERBOSE=1, every one).
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/base.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *prog = "fuzz";
static bool verbose;

static int replay_file(const char *path, unsigned *count)
{
    size_t len;
    char *buf = tl_read_file(path, &len);
    if (!buf) {
        fprintf(stderr, "%s: cannot read %s: %s\n", prog, path, strerror(errno));
        return 1;
    }
    if (verbose) fprintf(stderr, "%s: %s\n", prog, path);
    LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
    free(buf);
    (*count)++;
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_path(const char *path, unsigned *count)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) return replay_file(path, count);
    DIR *dir = opendir(path);
    if (!dir) {
        fprintf(stderr, "%s: cannot open %s: %s\n", prog, path, strerror(errno));
        return 1;
    }
    char **names = NULL;
    uint32_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.') continue;
        VEC_PUSH(names, n, cap, tl_xstrdup(e->d_name));
    }
    closedir(dir);
    if (n) qsort(names, n, sizeof *names, cmp_names); /* deterministic order */
    int bad = 0;
    for (uint32_t i = 0; i < n; i++) {
        size_t plen = strlen(path) + strlen(names[i]) + 2;
        char *full = tl_xmalloc(plen);
        snprintf(full, plen, "%s/%s", path, names[i]);
        bad |= replay_path(full, count);
        free(full);
        free(names[i]);
    }
    free(names);
    return bad;
}

int main(int argc, char **argv)
{
    const char *slash = strrchr(argv[0], '/');
    prog = slash ? slash + 1 : argv[0];
    const char *v = getenv("TILEC_FUZZ_VERBOSE");
    verbose = v && *v && strcmp(v, "0") != 0;
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...  (replays each input once)\n", prog);
        return 2;
    }
    unsigned count = 0;
    int bad = 0;
    for (int i = 1; i < argc; i++) bad |= replay_path(argv[i], &count);
    printf("%s: replayed %u inputs\n", prog, count);
    if (count == 0) fprintf(stderr, "%s: no inputs found\n", prog);
    return bad || count == 0 ? 1 : 0;
}
