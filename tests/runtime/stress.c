/* stress.c: libtilert under load, built twice:
 *   test_runtime_stress  (ctest runtime/stress, label runtime) against fake_cuda.c, a few
 *                        seconds, in every CI build (the ASan+UBSan one finds leaks);
 *   gpu_stress           (the GPU suite, tests/gpu/gpu-check) against the real driver, 60 s.
 *
 * 1. Launches: THREADS host threads (default 8) launch one kernel of one module on STREAMS
 *    streams (default 4) for SECONDS, in rounds, each on a module loaded for it (so the first
 *    launches, which resolve the kernel, race every round; the threads start together).  Kernel tick(slots: ptr<u32>, tag: i32)
 *    adds 1 to slots[tag]; each launch has a tag of its own (thread t, launch i: tag
 *    t * PER_THREAD + i), so after a round (every stream synchronized) slots[tag] must be 1
 *    for each launch tilert_launch accepted and 0 for every other tag: no launch lost, none
 *    run twice, none run that was refused.  Each thread also makes every 5th call a wrong one,
 *    in turn: a wrong argument count (TILERT_ERROR_ARG_COUNT), a pointer of the wrong dtype
 *    (ARG_TYPE), a misaligned pointer (ARG_ALIGN), a tag that does not fit i32 (ARG_VALUE), a
 *    NULL argument array (INVALID_VALUE): each must return exactly that status, with a
 *    message on the calling thread (tilert_last_error is per thread) that names the kernel.
 *    Per stream, the launches the driver saw are counted too (the fake driver counts them
 *    itself; on the GPU each stream's launches are checked through the slots).  Meanwhile one
 *    more thread loads and unloads a second copy of the module over and over.
 * 2. Load and unload: the module loaded from memory, its kernel looked up and launched once,
 *    and unloaded, LOADS times (default 1000).  The fake driver counts modules loaded and not
 *    unloaded (0 at the end) and ASan checks the host memory; on the GPU, the device's free
 *    memory (cuMemGetInfo) and the process's resident memory are compared before and after.
 * Options: --seconds S --threads N --streams N --loads N.  Prints a summary last; exit 1 on any
 * failure, 77 (skipped) where there is no GPU (gpu_stress only).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>

#include "meta.h"
#include "rt_util.h"
#include "tilert.h"

enum { MAX_THREADS = 64, MAX_STREAMS = 8, NKINDS = 5 };

static atomic_int failures;
static atomic_long checks;

#define CHECK(cond, ...)                                                                                  \
    do {                                                                                                  \
        atomic_fetch_add(&checks, 1);                                                                     \
        if (!(cond)) {                                                                                    \
            if (atomic_fetch_add(&failures, 1) < 20) {                                                    \
                flockfile(stdout);                                                                        \
                printf("FAIL %s:%d: ", __FILE__, __LINE__);                                               \
                printf(__VA_ARGS__);                                                                      \
                printf("\n");                                                                             \
                funlockfile(stdout);                                                                      \
            }                                                                                             \
        }                                                                                                 \
    } while (0)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the module: tick(slots: ptr<u32>, tag: i32), no grid clause (launched on 1 block) ---- */

static uint8_t *tick_meta(const char *arch, size_t *len)
{
    uint16_t sm;
    uint8_t fl;
    if (!tilert_meta_parse_arch(arch, &sm, &fl)) return NULL;
    static const tilert_meta_param ps[] = {{"slots", TILERT_PARAM_PTR, TILERT_U32, 0, 0, NULL, 0},
                                           {"tag", TILERT_PARAM_SCALAR, TILERT_I32, 0, 0, NULL, 0}};
    tilert_meta_kernel k = {"tick", "tick", sm, fl, 0, 1, 0, 0, 2, 0, 0, ps, NULL, NULL, 0, NULL};
    uint8_t *out;
    char e[300];
    if (!tilert_meta_write(&k, 1, &out, len, e, sizeof e)) {
        fprintf(stderr, "tick metadata: %s\n", e);
        return NULL;
    }
    return out;
}

#ifdef STRESS_GPU
static const char tick_ptx[] =
    ".visible .entry tick(.param .u64 slots, .param .u32 tag)\n"
    ".maxntid 32, 1, 1\n"
    "{\n"
    "    .reg .b32 %r<4>;\n    .reg .b64 %rd<4>;\n    .reg .pred %p<2>;\n"
    "    mov.u32 %r1, %tid.x;\n"
    "    setp.ne.u32 %p1, %r1, 0;\n"
    "    @%p1 bra DONE;\n"
    "    ld.param.u64 %rd1, [slots];\n    ld.param.u32 %r2, [tag];\n"
    "    cvta.to.global.u64 %rd1, %rd1;\n"
    "    mul.wide.u32 %rd2, %r2, 4;\n    add.s64 %rd3, %rd1, %rd2;\n"
    "    atom.global.add.u32 %r3, [%rd3], 1;\n"
    "DONE:\n"
    "    ret;\n"
    "}\n";

/* the cubin for the device's arch, through nvJitLink */
static uint8_t *tick_image(size_t *len)
{
    tilert_device_info info;
    if (tilert_device_get_info(&info) != TILERT_OK) return NULL;
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d%d%s", info.cc_major, info.cc_minor, info.cc_major >= 9 ? "a" : "");
    size_t mlen;
    uint8_t *meta = tick_meta(arch, &mlen);
    if (!meta) return NULL;
    size_t cap = sizeof tick_ptx + 256 + mlen * 5;
    char *ptx = malloc(cap);
    int n = snprintf(ptx, cap, ".version 8.0\n.target %s\n.address_size 64\n\n%s\n.visible .global .align 8 .b8 %s[%zu] = {",
                     arch, tick_ptx, TILERT_META_SYMBOL, mlen);
    for (size_t i = 0; i < mlen; i++) n += snprintf(ptx + n, cap - (size_t)n, "%s%u", i ? ", " : "", meta[i]);
    snprintf(ptx + n, cap - (size_t)n, "};\n");
    free(meta);
    char log[4096];
    uint8_t *img = rt_nvjitlink(ptx, arch, len, log, sizeof log);
    if (!img) fprintf(stderr, "nvJitLink: %s\n", log);
    free(ptx);
    return img;
}
#else
/* a synthetic cubin-shaped ELF image holding the metadata (the fake driver loads anything) */
static uint8_t *tick_image(size_t *len)
{
    size_t mlen;
    uint8_t *meta = tick_meta("sm_90a", &mlen);
    if (!meta) return NULL;
    RtElfOpts o = rt_elf_opts(90);
    uint8_t *img = rt_make_elf(meta, mlen, &o, len);
    free(meta);
    return img;
}
#endif

/* ---- the driver side the test needs beyond libtilert ---------------------------------------- */

static struct {
    void *lib;
#ifdef STRESS_GPU
    __typeof__(&cuStreamCreate) stream_create;
    __typeof__(&cuStreamDestroy) stream_destroy;
    __typeof__(&cuMemGetInfo) mem_get_info;
#else
    uint32_t *stream_launches;  /* fake_cuda.c: launches per stream 1..8 */
    int *modules_live;
    void (*stress_set)(uint32_t *slots, uint32_t nslots, int tag_param);
#endif
} drv;

static bool driver_open(void)
{
#ifdef STRESS_GPU
    drv.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!drv.lib) return false;
    /* cuda.h maps these names to their _v2 entry points */
    *(void **)&drv.stream_create = dlsym(drv.lib, "cuStreamCreate");
    *(void **)&drv.stream_destroy = dlsym(drv.lib, "cuStreamDestroy_v2");
    *(void **)&drv.mem_get_info = dlsym(drv.lib, "cuMemGetInfo_v2");
    return drv.stream_create && drv.stream_destroy && drv.mem_get_info;
#else
    drv.lib = dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_NOLOAD);
    if (!drv.lib) return false;
    drv.stream_launches = dlsym(drv.lib, "fake_stream_launches");
    drv.modules_live = dlsym(drv.lib, "fake_modules_live");
    *(void **)&drv.stress_set = dlsym(drv.lib, "fake_stress_set");
    return drv.stream_launches && drv.modules_live && drv.stress_set;
#endif
}

/* ---- 1. launches -------------------------------------------------------------------------- */

typedef struct Shared {
    tilert_kernel *k;
    void *streams[MAX_STREAMS];
    int nstreams;
    void *slots;                /* device: nthreads * per_thread u32 */
    uint32_t per_thread;
    double deadline;
    const uint8_t *image;
    size_t image_len;
    atomic_bool stop_loader;
    pthread_barrier_t start;    /* the workers' first launches race: each round's module is new */
} Shared;

typedef struct Worker {
    Shared *sh;
    int id;
    pthread_t th;
    uint8_t *ok;                /* ok[i]: launch i of this round was accepted */
    uint32_t launched;          /* this round */
    uint64_t total_ok, total_err, per_kind[NKINDS];
    uint64_t per_stream[MAX_STREAMS];
} Worker;

static const tilert_status kind_status[NKINDS] = {TILERT_ERROR_ARG_COUNT, TILERT_ERROR_ARG_TYPE,
                                                  TILERT_ERROR_ARG_ALIGN, TILERT_ERROR_ARG_VALUE,
                                                  TILERT_ERROR_INVALID_VALUE};

static void *worker(void *p)
{
    Worker *w = p;
    Shared *sh = w->sh;
    uint32_t *slots = sh->slots;
    w->launched = 0;
    pthread_barrier_wait(&sh->start);
    for (uint32_t i = 0; i < sh->per_thread; i++) {
        if ((i & 63) == 0 && now() > sh->deadline) break;
        uint32_t tag = (uint32_t)w->id * sh->per_thread + i;
        int si = (int)((tag * 2654435761u) >> 8) % sh->nstreams;
        void *stream = sh->streams[si];
        static const uint32_t one[3] = {1, 1, 1};
        w->ok[i] = 0;
        w->launched = i + 1;
        if (i % 5 == 4) { /* a wrong call, of each kind in turn */
            int kind = (int)(i / 5) % NKINDS;
            tilert_arg a[2] = {tilert_arg_ptr(slots, TILERT_U32), tilert_arg_i32((int32_t)tag)};
            tilert_status s;
            switch (kind) {
            case 0: s = tilert_launch_grid(sh->k, stream, one, a, 1); break;
            case 1: a[0] = tilert_arg_ptr(slots, TILERT_F32); s = tilert_launch_grid(sh->k, stream, one, a, 2); break;
            case 2: a[0] = tilert_arg_ptr((char *)slots + 2, TILERT_U32); s = tilert_launch_grid(sh->k, stream, one, a, 2); break;
            case 3: a[1] = tilert_arg_i64((int64_t)tag + (1ll << 40)); s = tilert_launch_grid(sh->k, stream, one, a, 2); break;
            default: s = tilert_launch_grid(sh->k, stream, one, NULL, 2); break;
            }
            CHECK(s == kind_status[kind], "thread %d, call %u: got %s (%s), want %s", w->id, i,
                  tilert_status_string(s), tilert_last_error(), tilert_status_string(kind_status[kind]));
            CHECK(s == TILERT_OK || strstr(tilert_last_error(), "tick") || kind == 4, "thread %d: message '%s'",
                  w->id, tilert_last_error());
            w->per_kind[kind]++;
            w->total_err++;
            continue;
        }
        tilert_arg a[2] = {tilert_arg_ptr(slots, TILERT_U32), tilert_arg_i32((int32_t)tag)};
        tilert_status s = tilert_launch_grid(sh->k, stream, one, a, 2);
        CHECK(s == TILERT_OK, "thread %d, launch %u: %s (%s)", w->id, i, tilert_status_string(s), tilert_last_error());
        if (s == TILERT_OK) {
            w->ok[i] = 1;
            w->total_ok++;
            w->per_stream[si]++;
        }
    }
    return NULL;
}

/* loads and unloads another copy of the module until told to stop */
static void *loader(void *p)
{
    Shared *sh = p;
    long n = 0;
    while (!atomic_load(&sh->stop_loader)) {
        tilert_module *m = NULL;
        tilert_kernel *k = NULL;
        tilert_status s = tilert_module_load_data(sh->image, sh->image_len, &m);
        CHECK(s == TILERT_OK, "loader: %s", tilert_last_error());
        if (s != TILERT_OK) break;
        CHECK(tilert_kernel_get(m, "tick", &k) == TILERT_OK, "loader: %s", tilert_last_error());
        CHECK(tilert_module_unload(m) == TILERT_OK, "loader: unload: %s", tilert_last_error());
        n++;
    }
    return (void *)(intptr_t)n;
}

static bool download(uint32_t *host, void *dev, size_t n)
{
#ifdef STRESS_GPU
    return tilert_memcpy_dtoh(host, dev, n * sizeof *host) == TILERT_OK;
#else
    (void)dev;
    (void)host;
    (void)n;
    return true; /* the fake driver counted into host memory already */
#endif
}

static int launches(double seconds, int nthreads, int nstreams, const uint8_t *img, size_t len)
{
    Shared sh = {0};
    sh.nstreams = nstreams;
    sh.image = img;
    sh.image_len = len;
    pthread_barrier_init(&sh.start, NULL, (unsigned)nthreads);
#ifdef STRESS_GPU
    sh.per_thread = 1u << 21;
    for (int i = 0; i < nstreams; i++) {
        CUstream st;
        CHECK(drv.stream_create(&st, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS, "cuStreamCreate");
        sh.streams[i] = st;
    }
#else
    sh.per_thread = 1u << 12; /* short rounds: many first launches racing */
    for (int i = 0; i < nstreams; i++) sh.streams[i] = (void *)(uintptr_t)(i + 1); /* the fake's stream ids */
#endif
    size_t nslots = (size_t)nthreads * sh.per_thread;
    uint32_t *host = calloc(nslots, sizeof *host);
#ifdef STRESS_GPU
    CHECK(tilert_malloc(&sh.slots, nslots * 4) == TILERT_OK, "tilert_malloc: %s", tilert_last_error());
#else
    sh.slots = (void *)(uintptr_t)0x7f0000100000ull; /* never dereferenced: the fake counts into host */
    drv.stress_set(host, (uint32_t)nslots, 1);
    uint32_t stream0[MAX_STREAMS + 1];
    memcpy(stream0, drv.stream_launches, sizeof stream0);
#endif
    Worker ws[MAX_THREADS];
    memset(ws, 0, sizeof ws);
    for (int t = 0; t < nthreads; t++) {
        ws[t].sh = &sh;
        ws[t].id = t;
        ws[t].ok = calloc(sh.per_thread, 1);
    }
    pthread_t lt;
    pthread_create(&lt, NULL, loader, &sh);
    double t0 = now(), end = t0 + seconds;
    int rounds = 0;
    uint64_t lost = 0, extra = 0;
    while (now() < end && atomic_load(&failures) == 0) {
#ifdef STRESS_GPU
        CHECK(tilert_memset_d8(sh.slots, 0, nslots * 4) == TILERT_OK, "memset: %s", tilert_last_error());
        CHECK(tilert_stream_synchronize(NULL) == TILERT_OK, "sync: %s", tilert_last_error());
#else
        memset(host, 0, nslots * sizeof *host);
#endif
        /* a new module each round: the first launches of its kernel (which resolve it) race */
        tilert_module *m = NULL;
        CHECK(tilert_module_load_data(img, len, &m) == TILERT_OK, "load: %s", tilert_last_error());
        if (!m) break;
        CHECK(tilert_kernel_get(m, "tick", &sh.k) == TILERT_OK, "tick: %s", tilert_last_error());
        sh.deadline = end;
        for (int t = 0; t < nthreads; t++) pthread_create(&ws[t].th, NULL, worker, &ws[t]);
        for (int t = 0; t < nthreads; t++) pthread_join(ws[t].th, NULL);
        for (int i = 0; i < nstreams; i++)
            CHECK(tilert_stream_synchronize(sh.streams[i]) == TILERT_OK, "sync: %s", tilert_last_error());
        CHECK(tilert_module_unload(m) == TILERT_OK, "unload: %s", tilert_last_error()); /* after every use */
        CHECK(download(host, sh.slots, nslots), "download: %s", tilert_last_error());
        for (int t = 0; t < nthreads; t++)
            for (uint32_t i = 0; i < sh.per_thread; i++) {
                uint32_t got = host[(size_t)t * sh.per_thread + i], want = i < ws[t].launched ? ws[t].ok[i] : 0;
                if (got < want) lost++;
                if (got > want) extra++;
            }
        rounds++;
    }
    atomic_store(&sh.stop_loader, true);
    void *nloads;
    pthread_join(lt, &nloads);
    double secs = now() - t0;
    uint64_t ok = 0, bad = 0, per_stream[MAX_STREAMS] = {0}, per_kind[NKINDS] = {0};
    for (int t = 0; t < nthreads; t++) {
        ok += ws[t].total_ok;
        bad += ws[t].total_err;
        for (int i = 0; i < nstreams; i++) per_stream[i] += ws[t].per_stream[i];
        for (int k = 0; k < NKINDS; k++) per_kind[k] += ws[t].per_kind[k];
        free(ws[t].ok);
    }
    CHECK(lost == 0 && extra == 0, "%llu launches lost, %llu run that were refused or run twice",
          (unsigned long long)lost, (unsigned long long)extra);
#ifndef STRESS_GPU
    /* the single launch per load of the loader thread does not exist: it only loads */
    for (int i = 0; i < nstreams; i++)
        CHECK(drv.stream_launches[i + 1] - stream0[i + 1] == per_stream[i],
              "stream %d: the driver saw %u launches, tilert accepted %llu", i + 1,
              drv.stream_launches[i + 1] - stream0[i + 1], (unsigned long long)per_stream[i]);
    drv.stress_set(NULL, 0, 0);
#endif
    printf("launches: %d threads, %d streams, %.1f s, %d rounds: %llu launched (%.0f/s), %llu refused as they should be "
           "(count %llu, type %llu, align %llu, value %llu, null %llu), %llu lost, %llu extra; streams",
           nthreads, nstreams, secs, rounds, (unsigned long long)ok, (double)ok / secs, (unsigned long long)bad,
           (unsigned long long)per_kind[0], (unsigned long long)per_kind[1], (unsigned long long)per_kind[2],
           (unsigned long long)per_kind[3], (unsigned long long)per_kind[4], (unsigned long long)lost,
           (unsigned long long)extra);
    for (int i = 0; i < nstreams; i++) printf(" %llu", (unsigned long long)per_stream[i]);
    printf("; %ld loads and unloads beside them\n", (long)(intptr_t)nloads);
    free(host);
#ifdef STRESS_GPU
    tilert_free(sh.slots);
    for (int i = 0; i < nstreams; i++) drv.stream_destroy(sh.streams[i]);
#endif
    pthread_barrier_destroy(&sh.start);
    return 0;
}

/* ---- 2. load and unload --------------------------------------------------------------------- */

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRESS_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(STRESS_ASAN)
static const bool under_asan = true;
#else
static const bool under_asan = false;
#endif

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
        fclose(f);
    }
    return res * 4;
}

static void load_unload(int n, const uint8_t *img, size_t len)
{
    void *slots = NULL;
#ifdef STRESS_GPU
    CHECK(tilert_malloc(&slots, 4) == TILERT_OK, "tilert_malloc: %s", tilert_last_error());
    CHECK(tilert_memset_d8(slots, 0, 4) == TILERT_OK, "memset: %s", tilert_last_error());
    size_t free0 = 0, free1 = 0, total = 0;
    CHECK(drv.mem_get_info(&free0, &total) == CUDA_SUCCESS, "cuMemGetInfo");
#else
    uint32_t count = 0;
    slots = (void *)(uintptr_t)0x7f0000200000ull;
    drv.stress_set(&count, 1, 1);
    int live0 = *drv.modules_live;
#endif
    long rss0 = 0;
    static const uint32_t one[3] = {1, 1, 1};
    int done = 0;
    for (int i = 0; i < n; i++) {
        if (i == 10) rss0 = rss_kb(); /* after the first loads: the allocator's and the driver's own caches */
        tilert_module *m = NULL;
        tilert_kernel *k = NULL;
        tilert_status s = tilert_module_load_data(img, len, &m);
        CHECK(s == TILERT_OK, "load %d: %s", i, tilert_last_error());
        if (s) break;
        CHECK(tilert_kernel_get(m, "tick", &k) == TILERT_OK, "kernel %d: %s", i, tilert_last_error());
        tilert_arg a[2] = {tilert_arg_ptr(slots, TILERT_U32), tilert_arg_i32(0)};
        CHECK(k && tilert_launch_grid(k, NULL, one, a, 2) == TILERT_OK, "launch %d: %s", i, tilert_last_error());
        /* the kernel must finish before its module goes */
        CHECK(tilert_stream_synchronize(NULL) == TILERT_OK, "sync %d: %s", i, tilert_last_error());
        CHECK(tilert_module_unload(m) == TILERT_OK, "unload %d: %s", i, tilert_last_error());
        done++;
    }
    long rss1 = rss_kb();
#ifdef STRESS_GPU
    uint32_t count = 0;
    CHECK(tilert_memcpy_dtoh(&count, slots, 4) == TILERT_OK, "download: %s", tilert_last_error());
    CHECK(drv.mem_get_info(&free1, &total) == CUDA_SUCCESS, "cuMemGetInfo");
    long long dfree = (long long)free0 - (long long)free1;
    /* the driver frees a module's memory at unload: 1000 kept would be megabytes */
    CHECK(dfree <= (4ll << 20), "device memory: %lld bytes less free after %d loads and unloads", dfree, done);
    tilert_free(slots);
    printf("load/unload: %d times, each launched once (counted %u); device memory free before %zu, after %zu "
           "(%+lld bytes); resident memory %+ld KiB\n", done, count, free0, free1, -dfree, rss1 - rss0);
#else
    CHECK(*drv.modules_live == live0, "the driver holds %d modules more than before", *drv.modules_live - live0);
    drv.stress_set(NULL, 0, 0);
    printf("load/unload: %d times, each launched once (counted %u); driver modules held: %d before, %d after; "
           "resident memory %+ld KiB\n", done, count, live0, *drv.modules_live, rss1 - rss0);
#endif
    CHECK(count == (uint32_t)done, "%d launches, %u counted", done, count);
    /* under ASan its quarantine holds freed memory (and LeakSanitizer checks at exit instead) */
    CHECK(under_asan || rss1 - rss0 < 16 * 1024, "resident memory grew by %ld KiB over %d loads and unloads",
          rss1 - rss0, done);
}

int main(int argc, char **argv)
{
    double seconds = 3;
    int nthreads = 8, nstreams = 4, nloads = 1000;
#ifdef STRESS_GPU
    seconds = 60;
#endif
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--seconds") == 0) seconds = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--threads") == 0) nthreads = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--streams") == 0) nstreams = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--loads") == 0) nloads = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: %s [--seconds S] [--threads N] [--streams N] [--loads N]\n", argv[0]);
            return 2;
        }
    }
    if ((argc - 1) % 2 || nthreads < 1 || nthreads > MAX_THREADS || nstreams < 1 || nstreams > MAX_STREAMS ||
        nloads < 0 || seconds < 0) {
        fprintf(stderr, "%s: threads 1..%d, streams 1..%d, loads and seconds >= 0\n", argv[0], MAX_THREADS,
                MAX_STREAMS);
        return 2;
    }
#ifndef STRESS_GPU
    setenv("TILERT_CUDA_LIBRARY", FAKE_CUDA_PATH, 1);
#endif
    tilert_status s = tilert_init();
    if (s != TILERT_OK) {
#ifdef STRESS_GPU
        printf("SKIP: no CUDA device (%s)\n", tilert_last_error());
        return 77;
#else
        fprintf(stderr, "the fake driver %s: %s\n", FAKE_CUDA_PATH, tilert_last_error());
        return 1;
#endif
    }
    if (!driver_open()) {
        fprintf(stderr, "cannot open the driver's entry points the test needs\n");
        return 1;
    }
    size_t len;
    uint8_t *img = tick_image(&len);
    if (!img) {
        fprintf(stderr, "cannot build the test module\n");
        return 1;
    }
    launches(seconds, nthreads, nstreams, img, len);
    load_unload(nloads, img, len);
    free(img);
    int f = atomic_load(&failures);
    printf("%s: %ld checks, %d failed\n", argv[0], atomic_load(&checks), f);
    return f ? 1 : 0;
}
