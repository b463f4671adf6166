/*
 * nvf_ucx_ctx.c: the process-wide UCP context and worker (reference counted), the endpoint cache
 * keyed by peer worker address, endpoint failure marking, and the bounded teardown.
 *
 * Must not know about meshes or channels (nvf_ucx_mesh.c, nvf_ucx_chan.c). Must not leave
 * anything allocated after a failed acquire, and must not wait unboundedly at teardown (a dead
 * peer must not hang the process's exit).
 */
#include "nvf_ucx_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static pthread_mutex_t nvf_ucx_lock = PTHREAD_MUTEX_INITIALIZER;
static nvf_ucx_ctx_t *nvf_ucx_the_ctx;

uint64_t nvf_ucx_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The value UCX parsed for one of its variables (name without the UCX_ prefix), read back with
 * ucp_config_print; false when it is not there (older UCX). */
static bool nvf_ucx_config_value(const ucp_config_t *config, const char *name, char *value,
                                 size_t len)
{
    char *text = NULL, key[64];
    size_t tlen = 0;
    bool found = false;
    FILE *f = open_memstream(&text, &tlen);
    if (f == NULL)
        return false;
    ucp_config_print(config, f, NULL, UCS_CONFIG_PRINT_CONFIG);
    fclose(f);
    snprintf(key, sizeof(key), "UCX_%s=", name);
    for (const char *p = text; p != NULL && (p = strstr(p, key)) != NULL; p++) {
        if (p != text && p[-1] != '\n')
            continue;
        p += strlen(key);
        size_t n = strcspn(p, "\n");
        snprintf(value, len, "%.*s", (int)n, p);
        found = true;
        break;
    }
    free(text);
    return found;
}

/*
 * A flag must not land before its data, and ucp_worker_fence is what orders them. Whether it
 * does depends on UCX's protocols and fence mode:
 *   protocols v1 (UCX_PROTO_ENABLE=n, the default before 1.16): every put with one rkey goes on
 *     that rkey's single rma lane, and the weak, per-transport fence orders them;
 *   protocols v2: a put may take another lane (seen with 1.13 and UCX_TLS=sm: a 256 KiB put
 *     overtaken by its flag); only a strong fence (a blocking flush of every endpoint) orders:
 *     UCX_FENCE_MODE=strong (1.14+), or auto from 1.16 on.
 * An unordered combination is refused here, at acquire: a wrong result is never an option.
 */
static nvf_status_t nvf_ucx_check_fence(const ucp_config_t *config, bool *strong)
{
    unsigned major, minor, release;
    ucp_get_version(&major, &minor, &release);
    bool v116 = major > 1 || (major == 1 && minor >= 16);
    char v[64];
    bool v2 = v116; /* the default where the variable is not found */
    if (nvf_ucx_config_value(config, "PROTO_ENABLE", v, sizeof(v)))
        v2 = strncasecmp(v, "y", 1) == 0 || strncasecmp(v, "on", 2) == 0 ||
             strncasecmp(v, "t", 1) == 0 || strcmp(v, "1") == 0;
    const char *mode = "weak"; /* 1.13 has no strong fence */
    if (nvf_ucx_config_value(config, "FENCE_MODE", v, sizeof(v)))
        mode = strcasecmp(v, "strong") == 0 ? "strong"
               : strcasecmp(v, "auto") == 0 ? "auto"
                                            : "weak";
    bool strong_fence = strcmp(mode, "strong") == 0 || (strcmp(mode, "auto") == 0 && v116);
    *strong = v2 && strong_fence;
    if (!v2 || strong_fence)
        return NVF_OK;
    return nvf_ucx_failf(NVF_ERR_UCX,
                         "ucp_worker_fence: %s in UCX %u.%u.%u, which with protocols v2 "
                         "(UCX_PROTO_ENABLE=y) lets a flag overtake its data: %s",
                         mode, major, minor, release,
                         major == 1 && minor < 14 ? "unset UCX_PROTO_ENABLE"
                                                  : "unset UCX_PROTO_ENABLE or set "
                                                    "UCX_FENCE_MODE=strong");
}

/* nvfabric's defaults for UCX variables the user has not set (in its own context only: Open
 * MPI's pml and osc keep theirs). TCP: segments of 64 KiB to send and 256 KiB to receive
 * instead of 8 and 64 KiB, so that a rail's messages (256 KiB active messages over tcp) go in
 * an eighth of the fragments (4 virtual nodes over loopback on the 2-core VM, medians of six
 * rounds against tuned: 4 MiB 0.96x against 0.85x, 8 MiB 1.17x against 1.09x, 16 MiB alike;
 * bench/results/ucx-tcp-seg-2026-12-08-amd.txt). ucp_config_modify
 * takes a transport's variable by its name without the transport's prefix and sets it in every
 * transport that has one by that name (UCX 1.13: TX_SEG_SIZE and RX_SEG_SIZE are tcp's alone;
 * "TCP_TX_SEG_SIZE" is accepted, then warned about as invalid at worker creation, unused).
 * Writes what it set, as "UCX_NAME=value ...", into applied (empty if nothing). */
static void nvf_ucx_apply_defaults(ucp_config_t *config, char *applied, size_t len)
{
    static const struct {
        const char *env, *key, *value;
    } defaults[] = {
        {"UCX_TCP_TX_SEG_SIZE", "TX_SEG_SIZE", "64K"},
        {"UCX_TCP_RX_SEG_SIZE", "RX_SEG_SIZE", "256K"},
    };
    size_t used = 0;
    applied[0] = '\0';
    for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
        if (getenv(defaults[i].env) != NULL ||
            ucp_config_modify(config, defaults[i].key, defaults[i].value) != UCS_OK)
            continue;
        int n = snprintf(applied + used, len - used, "%s%s=%s", used ? " " : "", defaults[i].env,
                         defaults[i].value);
        if (n > 0 && (size_t)n < len - used)
            used += (size_t)n;
    }
}

/* Destroys what exists of a context: used by a failed create and by the last release. */
static void nvf_ucx_ctx_free(nvf_ucx_ctx_t *ctx)
{
    if (ctx->addr != NULL)
        ucp_worker_release_address(ctx->worker, ctx->addr);
    if (ctx->worker != NULL)
        ucp_worker_destroy(ctx->worker);
    if (ctx->context != NULL)
        ucp_cleanup(ctx->context);
    free(ctx->eps);
    free(ctx->meshes);
    free(ctx);
}

static nvf_status_t nvf_ucx_ctx_create(nvf_ucx_ctx_t **out)
{
    nvf_ucx_ctx_t *ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL)
        return nvf_ucx_failf(NVF_ERR_NOMEM, "UCX context: out of memory");

    nvf_status_t ret = NVF_OK;
    nvf_ucx_capture_t cap;
    nvf_ucx_capture_begin(&cap);

    ucp_config_t *config;
    ucs_status_t st = ucp_config_read(NULL, NULL, &config);
    if (st != UCS_OK) {
        ret = nvf_ucx_fail("ucp_config_read", st, nvf_ucx_capture_text(&cap));
        goto out;
    }
    ucp_params_t params;
    memset(&params, 0, sizeof(params));
    params.field_mask =
        UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED | UCP_PARAM_FIELD_NAME;
    params.features = UCP_FEATURE_RMA | UCP_FEATURE_AM;
    params.mt_workers_shared = 0;
    params.name = "nvfabric";
    nvf_ucx_apply_defaults(config, ctx->defaults, sizeof(ctx->defaults));
    ret = nvf_ucx_check_fence(config, &ctx->strong_fence);
    if (ret != NVF_OK) {
        ucp_config_release(config);
        goto out;
    }
    st = ucp_init(&params, config, &ctx->context);
    ucp_config_release(config);
    if (st != UCS_OK) {
        ctx->context = NULL;
        ret = nvf_ucx_fail("ucp_init", st, nvf_ucx_capture_text(&cap));
        goto out;
    }

    ucp_worker_params_t wparams;
    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    st = ucp_worker_create(ctx->context, &wparams, &ctx->worker);
    if (st != UCS_OK) {
        ctx->worker = NULL;
        ret = nvf_ucx_fail("ucp_worker_create", st, nvf_ucx_capture_text(&cap));
        goto out;
    }
    if ((ret = nvf_ucx_am_init(ctx)) != NVF_OK)
        goto out;
    st = ucp_worker_get_address(ctx->worker, &ctx->addr, &ctx->addr_len);
    if (st != UCS_OK) {
        ctx->addr = NULL;
        ret = nvf_ucx_fail("ucp_worker_get_address", st, nvf_ucx_capture_text(&cap));
        goto out;
    }
    if (ctx->addr_len > NVF_UCX_ADDR_MAX) {
        ret = nvf_ucx_failf(NVF_ERR_UCX,
                            "ucp_worker_get_address: the worker address has %zu bytes, more than "
                            "the %d a mesh blob carries (restrict UCX_TLS or UCX_NET_DEVICES)",
                            ctx->addr_len, NVF_UCX_ADDR_MAX);
        goto out;
    }

    ucp_context_attr_t attr;
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    st = ucp_context_query(ctx->context, &attr);
    if (st != UCS_OK) {
        ret = nvf_ucx_fail("ucp_context_query", st, nvf_ucx_capture_text(&cap));
        goto out;
    }
    ctx->cuda = (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;

out:
    /* success: UCX's warnings (e.g. a misspelt transport next to valid ones) appear as usual;
     * failure: they are in the last error */
    nvf_ucx_capture_end(&cap, ret == NVF_OK);
    if (ret != NVF_OK) {
        nvf_ucx_ctx_free(ctx);
        return ret;
    }
    ctx->refs = 1;
    *out = ctx;
    return NVF_OK;
}

nvf_status_t nvf_ucx_ctx_acquire(nvf_ucx_ctx_t **ctx)
{
    nvf_status_t ret = NVF_OK;
    *ctx = NULL;
    pthread_mutex_lock(&nvf_ucx_lock);
    if (nvf_ucx_the_ctx != NULL) {
        nvf_ucx_the_ctx->refs++;
    } else {
        ret = nvf_ucx_ctx_create(&nvf_ucx_the_ctx);
        if (ret == NVF_OK)
            nvf_ucx_counters.contexts++;
    }
    if (ret == NVF_OK)
        *ctx = nvf_ucx_the_ctx;
    pthread_mutex_unlock(&nvf_ucx_lock);
    return ret;
}

/* ---- endpoints --------------------------------------------------------------------------------
 */

static void nvf_ucx_ep_error_cb(void *arg, ucp_ep_h uep, ucs_status_t status)
{
    nvf_ucx_ep_t *ep = arg;
    if (!ep->failed) {
        ep->fail_status = status;
        ep->failed = true;
        nvf_ucx_counters.failed_endpoints++;
    }
}

static ucs_status_t nvf_ucx_ep_create(nvf_ucx_ctx_t *ctx, nvf_ucx_ep_t *ep, bool peer_mode,
                                      nvf_ucx_capture_t *cap)
{
    ucp_ep_params_t params;
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.address = (const ucp_address_t *)ep->addr;
    params.err_mode = peer_mode ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
    if (peer_mode) {
        params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
        params.err_handler.cb = nvf_ucx_ep_error_cb;
        params.err_handler.arg = ep;
    }
    nvf_ucx_capture_begin(cap);
    ucs_status_t st = ucp_ep_create(ctx->worker, &params, &ep->ep);
    if (st != UCS_OK)
        ep->ep = NULL;
    ep->peer_mode = peer_mode;
    return st;
}

static uint64_t nvf_ucx_hash(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

nvf_status_t nvf_ucx_ep_get(nvf_ucx_ctx_t *ctx, const void *addr, size_t addr_len, int peer_id,
                            nvf_ucx_ep_t **out)
{
    uint64_t hash = nvf_ucx_hash(addr, addr_len);
    for (int i = 0; i < ctx->neps; i++) {
        nvf_ucx_ep_t *ep = ctx->eps[i];
        if (ep->addr_hash != hash || ep->addr_len != addr_len ||
            memcmp(ep->addr, addr, addr_len) != 0)
            continue;
        if (ep->failed)
            return nvf_ucx_failf(NVF_ERR_UCX, "endpoint to peer %d failed earlier: %s", peer_id,
                                 ucs_status_string(ep->fail_status));
        *out = ep;
        return NVF_OK;
    }
    if (ctx->neps == ctx->cap_eps) {
        int cap = ctx->cap_eps ? 2 * ctx->cap_eps : 16;
        nvf_ucx_ep_t **eps = realloc(ctx->eps, (size_t)cap * sizeof(*eps));
        if (eps == NULL)
            return nvf_ucx_failf(NVF_ERR_NOMEM, "endpoint cache: out of memory");
        ctx->eps = eps;
        ctx->cap_eps = cap;
    }
    nvf_ucx_ep_t *ep = calloc(1, sizeof(*ep));
    if (ep == NULL || (ep->addr = malloc(addr_len)) == NULL) {
        free(ep);
        return nvf_ucx_failf(NVF_ERR_NOMEM, "endpoint cache: out of memory");
    }
    memcpy(ep->addr, addr, addr_len);
    ep->addr_len = addr_len;
    ep->addr_hash = hash;
    ep->rma_emulated = -1;

    /* PEER first; UCX 1.13 refuses it (unreachable) where only transports without failure
     * detection reach the peer (shared memory, self): then without error handling, quietly */
    nvf_ucx_capture_t cap;
    ucs_status_t st = nvf_ucx_ep_create(ctx, ep, true, &cap);
    if (st == UCS_ERR_UNREACHABLE) {
        nvf_ucx_capture_end(&cap, false);
        st = nvf_ucx_ep_create(ctx, ep, false, &cap);
    }
    if (st != UCS_OK) {
        char call[64];
        snprintf(call, sizeof(call), "ucp_ep_create to peer %d", peer_id);
        nvf_status_t ret = nvf_ucx_fail(call, st, nvf_ucx_capture_text(&cap));
        nvf_ucx_capture_end(&cap, false);
        free(ep->addr);
        free(ep);
        return ret;
    }
    nvf_ucx_capture_end(&cap, true);
    ctx->eps[ctx->neps++] = ep;
    nvf_ucx_counters.endpoints++;
    *out = ep;
    return NVF_OK;
}

/* Progresses until no endpoint's request is in flight or the deadline passes. */
static void nvf_ucx_wait_ep_reqs(nvf_ucx_ctx_t *ctx, uint64_t deadline)
{
    for (;;) {
        bool busy = false;
        for (int i = 0; i < ctx->neps && !busy; i++)
            busy = ctx->eps[i]->req != NULL &&
                   ucp_request_check_status(ctx->eps[i]->req) == UCS_INPROGRESS;
        if (!busy || nvf_ucx_now_ns() > deadline)
            return;
        ucp_worker_progress(ctx->worker);
    }
}

/* Frees an endpoint's request; false if it had not completed successfully. */
static bool nvf_ucx_ep_req_done(nvf_ucx_ep_t *ep)
{
    if (ep->req == NULL)
        return true;
    ucs_status_t st = ucp_request_check_status(ep->req);
    if (st == UCS_INPROGRESS)
        nvf_ucx_counters.teardown_timeouts++;
    ucp_request_free(ep->req);
    ep->req = NULL;
    return st == UCS_OK;
}

/* Closes every cached endpoint: healthy ones are flushed (so that puts issued just before, e.g.
 * a last credit, reach the peer) and then closed in flush mode; failed ones, and those whose
 * flush did not complete in time, are closed by force (allowed in PEER mode only: the others are
 * closed in flush mode, their close bounded by the same timeout). */
static void nvf_ucx_close_eps(nvf_ucx_ctx_t *ctx)
{
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof(prm));
    for (int i = 0; i < ctx->neps; i++) {
        nvf_ucx_ep_t *ep = ctx->eps[i];
        ep->req = NULL;
        if (ep->failed)
            continue;
        ucs_status_ptr_t r = ucp_ep_flush_nbx(ep->ep, &prm);
        if (UCS_PTR_IS_PTR(r))
            ep->req = r;
        else if (UCS_PTR_IS_ERR(r))
            nvf_ucx_ep_error_cb(ep, ep->ep, UCS_PTR_STATUS(r)); /* not flushable: force it */
    }
    nvf_ucx_wait_ep_reqs(ctx, nvf_ucx_now_ns() + NVF_UCX_TEARDOWN_TIMEOUT_NS);

    for (int i = 0; i < ctx->neps; i++) {
        nvf_ucx_ep_t *ep = ctx->eps[i];
        bool flushed = nvf_ucx_ep_req_done(ep) && !ep->failed;
        memset(&prm, 0, sizeof(prm));
        prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        prm.flags = !flushed && ep->peer_mode ? UCP_EP_CLOSE_FLAG_FORCE : 0;
        ucs_status_ptr_t r = ucp_ep_close_nbx(ep->ep, &prm);
        if (UCS_PTR_IS_PTR(r))
            ep->req = r;
        else if (UCS_PTR_IS_ERR(r))
            nvf_ucx_fail("ucp_ep_close_nbx", UCS_PTR_STATUS(r), NULL);
    }
    nvf_ucx_wait_ep_reqs(ctx, nvf_ucx_now_ns() + NVF_UCX_TEARDOWN_TIMEOUT_NS);

    for (int i = 0; i < ctx->neps; i++) {
        nvf_ucx_ep_t *ep = ctx->eps[i];
        nvf_ucx_ep_req_done(ep);
        if (ep->failed)
            nvf_ucx_counters.failed_endpoints--;
        free(ep->addr);
        free(ep);
    }
    nvf_ucx_counters.endpoints -= ctx->neps;
    ctx->neps = 0;
}

void nvf_ucx_ctx_release(nvf_ucx_ctx_t *ctx)
{
    if (ctx == NULL)
        return;
    pthread_mutex_lock(&nvf_ucx_lock);
    if (--ctx->refs == 0) {
        nvf_ucx_close_eps(ctx);
        nvf_ucx_ctx_free(ctx);
        nvf_ucx_the_ctx = NULL;
        nvf_ucx_counters.contexts--;
    }
    pthread_mutex_unlock(&nvf_ucx_lock);
}

unsigned nvf_ucx_progress(nvf_ucx_ctx_t *ctx)
{
    unsigned n = ucp_worker_progress(ctx->worker);
    for (int i = 0; i < ctx->nmeshes; i++) /* releases held back too long (a failure fails it) */
        (void)nvf_ucx_credits_flush(ctx->meshes[i], false);
    return n;
}

bool nvf_ucx_supports_cuda(const nvf_ucx_ctx_t *ctx)
{
    return ctx->cuda;
}

const char *nvf_ucx_ordering(const nvf_ucx_ctx_t *ctx)
{
    return ctx->strong_fence ? "strong fence" : "fence";
}

const char *nvf_ucx_defaults_applied(const nvf_ucx_ctx_t *ctx)
{
    return ctx->defaults;
}
