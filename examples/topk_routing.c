/* topk_routing.c: MoE routing (topk_routing.tile: softmax over 64 experts, the
 * top 2, weights renormalized) on the GPU, checked against the host: the
 * expert indices exactly (a near-tie may come in either order), the weights
 * in float64. */
#include "example.h"
#include "topk_routing.h"

enum { E = 64, K = 2 }; /* topk_routing.tile's defaults */

static bool run_case(int64_t tokens)
{
    size_t nl = (size_t)(tokens * E), nk = (size_t)(tokens * K);
    float *logits = ex_xmalloc(nl * sizeof(float)), *w = ex_xmalloc(nk * sizeof(float));
    int32_t *ex = ex_xmalloc(nk * sizeof(int32_t));
    ex_fill(logits, nl, -4, 4);
    float *dl = ex_upload(logits, nl * sizeof(float)), *dw = ex_poisoned(nk * sizeof(float));
    int32_t *de = ex_poisoned(nk * sizeof(int32_t));
    ex_check(topk_routing_launch(NULL, tilert_tensor2d(dl, TILERT_F32, tokens, E), tilert_tensor2d(dw, TILERT_F32, tokens, K),
                                 tilert_tensor2d(de, TILERT_I32, tokens, K)),
             "topk_routing_launch");
    ex_download(w, dw, nk * sizeof(float));
    ex_download(ex, de, nk * sizeof(int32_t));

    double *got = ex_xmalloc(nk * sizeof(double)), *ref = ex_xmalloc(nk * sizeof(double));
    size_t bad_idx = 0;
    for (int64_t t = 0; t < tokens; t++) {
        const float *l = logits + t * E;
        double p[E], mx = -INFINITY, sum = 0;
        for (int e = 0; e < E; e++) mx = fmax(mx, l[e]);
        for (int e = 0; e < E; e++) sum += p[e] = exp((double)l[e] - mx);
        for (int e = 0; e < E; e++) p[e] /= sum;
        /* the top K, descending, equal values keeping the lower index first */
        int top[K];
        bool taken[E] = {false};
        double wsum = 0;
        for (int k = 0; k < K; k++) {
            int best = -1;
            for (int e = 0; e < E; e++)
                if (!taken[e] && (best < 0 || p[e] > p[best])) best = e;
            taken[best] = true;
            top[k] = best;
            wsum += p[best];
        }
        for (int k = 0; k < K; k++) {
            int32_t g = ex[t * K + k];
            ref[t * K + k] = p[top[k]] / wsum;
            got[t * K + k] = w[t * K + k];
            bool near_tie = g >= 0 && g < E && fabs(p[g] - p[top[k]]) <= 1e-6 * p[top[k]];
            if (g != top[k] && !near_tie) {
                if (bad_idx < 5)
                    fprintf(stderr, "  token %lld: expert %d is %d, expected %d\n", (long long)t, k, (int)g, top[k]);
                bad_idx++;
            }
        }
    }
    char what[64];
    snprintf(what, sizeof what, "topk_routing tokens=%lld experts", (long long)tokens);
    if (bad_idx) printf("%-40s FAIL: %zu of %zu indices wrong\n", what, bad_idx, nk);
    else printf("%-40s ok (all %zu indices)\n", what, nk);
    snprintf(what, sizeof what, "topk_routing tokens=%lld weights", (long long)tokens);
    bool ok = ex_compare(what, got, ref, nk, 1e-6, 1e-5) && bad_idx == 0;
    tilert_free(dl);
    tilert_free(dw);
    tilert_free(de);
    free(logits);
    free(w);
    free(ex);
    free(got);
    free(ref);
    return ok;
}

int main(void)
{
    ex_require_gpu();
    static const int64_t tokens[] = {1000, 77, 16, 1, 8192};
    bool ok = true;
    for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; i++) ok = run_case(tokens[i]) && ok;
    return ex_finish(ok);
}
