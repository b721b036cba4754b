/* ptxas.c: PTX -> cubin through the toolkit's ptxas, compiling the module as a whole program.
 *
 * nvJitLink (jitlink.c) compiles its PTX input as a relocatable object (ptxas -c), and a
 * relocatable object must keep one register count per kernel across compilation units: ptxas
 * then ignores `setmaxnreg` (info C7504), so a warp-specialized kernel's consumer warpgroups run
 * at the entry count (168 registers at 384 threads) and spill where they need more.  Whole
 * program, ptxas honours it.  So a module whose PTX asks for `setmaxnreg` goes through ptxas:
 *
 * 1. Find ptxas: $TILEC_PTXAS (a path; "none" turns this off), else $CUDA_HOME/bin/ptxas, else
 *    the toolkit tilec was built with (TILEC_CUDA_BIN), else `ptxas` on $PATH.  None found:
 *    nvJitLink as for every other module (its C7504 note says what was lost).
 * 2. Write the PTX into a fresh private directory (mkdtemp), run
 *    `ptxas -arch=ARCH -O<n> [-lineinfo] [-v] -o out.cubin in.ptx` with posix_spawn, stdout and
 *    stderr into a log file there, and wait (wait4: the child's CPU time is reported).
 * 3. Exit status 0: read the cubin back, the log is the info log (registers, spills per kernel,
 *    as nvJitLink's).  Otherwise the log becomes the diagnostic.  The directory is removed.
 *
 * ptxas is deterministic: the same PTX and options give the same cubin bytes.
 */
#include "cg.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TILEC_CUDA_BIN
#define TILEC_CUDA_BIN "/usr/local/cuda/bin"
#endif

extern char **environ;

static bool is_exec(const char *p)
{
    struct stat st;
    return p && *p && stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

/* The ptxas to use, in buf; false when none (or TILEC_PTXAS=none). */
static bool find_ptxas(char *buf, size_t len)
{
    const char *env = getenv("TILEC_PTXAS");
    if (env && *env) {
        if (strcmp(env, "none") == 0) return false;
        snprintf(buf, len, "%s", env);
        return is_exec(buf);
    }
    const char *home = getenv("CUDA_HOME");
    if (home && *home) {
        snprintf(buf, len, "%s/bin/ptxas", home);
        if (is_exec(buf)) return true;
    }
    snprintf(buf, len, "%s/ptxas", TILEC_CUDA_BIN);
    if (is_exec(buf)) return true;
    const char *path = getenv("PATH");
    while (path && *path) {
        const char *end = strchr(path, ':');
        size_t n = end ? (size_t)(end - path) : strlen(path);
        if (n > 0 && n + 7 < len) {
            snprintf(buf, len, "%.*s/ptxas", (int)n, path);
            if (is_exec(buf)) return true;
        }
        path = end ? end + 1 : NULL;
    }
    return false;
}

bool cg_ptxas_wanted(const char *ptx, size_t ptx_len)
{
    /* a kernel that moves registers between its warpgroups */
    static const char key[] = "setmaxnreg.";
    size_t k = sizeof key - 1;
    for (size_t i = 0; i + k <= ptx_len; i++)
        if (ptx[i] == 's' && memcmp(ptx + i, key, k) == 0) return true;
    return false;
}

bool cg_ptxas_available(Diag *d, bool *err)
{
    char p[4096];
    *err = false;
    if (find_ptxas(p, sizeof p)) return true;
    const char *env = getenv("TILEC_PTXAS");
    if (env && *env && strcmp(env, "none") != 0) {
        /* asked for by name: not there is an error, not a quiet fallback */
        diag_error_noloc(d, "TILEC_PTXAS=%s is not an executable file (name the toolkit's ptxas, or 'none' "
                            "for nvJitLink, which drops setmaxnreg)", env);
        *err = true;
    }
    return false;
}

static bool write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok;
}

bool cg_ptxas_to_cubin(const char *ptx, size_t ptx_len, const CgTarget *t, void **cubin, size_t *cubin_len,
                       StrBuf *info, double *child_cpu, Diag *d)
{
    *cubin = NULL;
    *cubin_len = 0;
    if (child_cpu) *child_cpu = 0;
    char exe[4096];
    if (!find_ptxas(exe, sizeof exe)) {
        diag_error_noloc(d, "ptxas not found (TILEC_PTXAS, $CUDA_HOME/bin, %s, $PATH)", TILEC_CUDA_BIN);
        return false;
    }
    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tilec-ptxas-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        diag_error_noloc(d, "ptxas: cannot make a temporary directory in %s: %s", tmp && *tmp ? tmp : "/tmp",
                         strerror(errno));
        return false;
    }
    char in[4200], out[4200], logp[4200];
    snprintf(in, sizeof in, "%s/in.ptx", dir);
    snprintf(out, sizeof out, "%s/out.cubin", dir);
    snprintf(logp, sizeof logp, "%s/log", dir);
    bool ok = false;
    char *log = NULL;
    size_t loglen = 0;
    /* the PTX StrBuf may end in its terminating 0: ptxas wants text */
    size_t n = ptx_len;
    while (n > 0 && ptx[n - 1] == 0) n--;
    if (!write_file(in, ptx, n)) {
        diag_error_noloc(d, "ptxas: cannot write %s: %s", in, strerror(errno));
        goto out;
    }
    char arch[40], opt[16];
    snprintf(arch, sizeof arch, "-arch=%s", t->arch->name);
    int lvl = t->opt_level < 0 ? 0 : t->opt_level > 3 ? 3 : t->opt_level;
    snprintf(opt, sizeof opt, "-O%d", lvl);
    char *argv[10];
    int argc = 0;
    argv[argc++] = exe;
    argv[argc++] = arch;
    argv[argc++] = opt;
    if (t->lineinfo) argv[argc++] = "-lineinfo";
    if (t->verbose || info) argv[argc++] = "-v";
    argv[argc++] = "-o";
    argv[argc++] = out;
    argv[argc++] = in;
    argv[argc] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, logp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int rc = posix_spawn(&pid, exe, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        diag_error_noloc(d, "ptxas: cannot run %s: %s", exe, strerror(rc));
        goto out;
    }
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    pid_t w;
    do w = wait4(pid, &status, 0, &ru);
    while (w < 0 && errno == EINTR);
    if (w < 0) {
        diag_error_noloc(d, "ptxas: cannot wait for %s: %s", exe, strerror(errno));
        goto out;
    }
    if (child_cpu)
        *child_cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
                     ru.ru_stime.tv_usec * 1e-6;
    log = tl_read_file(logp, &loglen);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (WIFEXITED(status))
            diag_error_noloc(d, "ptxas rejected the PTX (exit status %d):\n%.*s", WEXITSTATUS(status),
                             (int)loglen, log ? log : "");
        else
            diag_error_noloc(d, "ptxas (%s) was killed by signal %d", exe,
                             WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        goto out;
    }
    size_t clen = 0;
    char *c = tl_read_file(out, &clen);
    if (!c || clen == 0) {
        free(c);
        diag_error_noloc(d, "ptxas produced no cubin");
        goto out;
    }
    *cubin = c;
    *cubin_len = clen;
    if (info && log) sb_puts(info, log);
    ok = true;
out:
    free(log);
    unlink(in);
    unlink(out);
    unlink(logp);
    rmdir(dir);
    return ok;
}
