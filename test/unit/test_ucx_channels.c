/*
 * test_ucx_channels.c: the UCX glue's channels between forked processes (no MPI), once per
 * transport setting (default: UCX_TLS=tcp, where puts are emulated and the target must
 * progress, then UCX_TLS=sm, shared memory) and once per protocol (auto, put, active messages;
 * auto must pick active messages over tcp and puts over shared memory):
 *   - ring (each sends to the next, receives from the previous; 1 to 4 processes, 1 = itself)
 *     and all-to-all meshes carry thousands of messages of 1 .. slot_bytes bytes whose contents
 *     depend on (sender, receiver, sequence number): every byte is checked, so a lost,
 *     reordered, torn or overwritten message fails;
 *   - on some of them the receiver posts in-place receives for its window (nvf_ucx_recv_post):
 *     by active messages some must be applied in place (and are checked there), by puts none;
 *   - a sender starts exactly nslots messages the receiver has not released, then stays
 *     blocked until a release; recv_test peeks without consuming; misuse is refused;
 *   - meshes of changing shapes, and the context itself, are destroyed and re-created many
 *     times with no registration, rkey, request or endpoint left behind.
 *
 * Usage: test_ucx_channels [UCX_TLS value ...] ("default": leave UCX_TLS alone).
 * NVF_TEST_ONLY=text runs the cases whose "name pattern n=N" contains it. NVF_TEST_SLOW=N (e.g. 10
 * under valgrind) stretches deadlines and divides message counts by N.
 */
#include "nvf_test.h"
#include "nvf_test_ucx.h"

#include <sched.h>
#include <string.h>

typedef struct chan_case {
    const char *tls;
    const char *pattern; /* "ring" or "all" */
    int nproc;
    int nslots;
    size_t slot_bytes;
    int msgs; /* per channel */
} chan_case_t;

static int scaled(int n)
{
    int s = (int)(n / nvf_tf_slow());
    return s < 20 ? 20 : s;
}

static nvf_ucx_ctx_t *child_init(const char *tls)
{
    nvf_test_failures = 0;
    nvf_test_checks = 0;
    if (strcmp(tls, "default") != 0)
        setenv("UCX_TLS", tls, 1);
    nvf_ucx_ctx_t *ctx = NULL;
    nvf_status_t st = nvf_ucx_ctx_acquire(&ctx);
    CHECK(st == NVF_OK, "UCX_TLS=%s: acquire: %s", tls, nvf_ucx_last_error());
    return ctx;
}

/* Moves messages on every channel of the mesh until each carried `msgs`; sources are reused
 * only once every put has completed locally. */
typedef struct pump_chan {
    int peer;
    uint64_t k;         /* next message */
    unsigned char *buf; /* ring of nbuf source buffers (send side), of nslots landings (receive) */
    bool filled;
} pump_chan_t;

/* A landing function of the tests: a copy that counts the bytes it applied. */
static long landed_bytes;
static void land_copy(void *arg, void *dst, const void *src, size_t bytes)
{
    CHECK(arg == &landed_bytes, "landing called with the wrong argument");
    memcpy(dst, src, bytes);
    landed_bytes += (long)bytes;
}

/* With `land`, the receiver posts in-place receives (nvf_ucx_recv_post) for the messages of its
 * window into buffers of its own, alternately copied by the glue and by land_copy; *applied
 * counts the messages recv_test reported as applied (checked in the landing buffer). */
static bool pump(nvf_tf_t *tf, nvf_ucx_ctx_t *ctx, nvf_ucx_mesh_t *mesh, const int *send_to,
                 int nsend, const int *recv_from, int nrecv, int nslots, size_t slot_bytes,
                 int msgs, bool land, long *applied, const char *what)
{
    const int nbuf = nslots + 2;
    pump_chan_t s[NVF_TF_MAX], r[NVF_TF_MAX];
    for (int i = 0; i < nsend; i++) {
        s[i] = (pump_chan_t){send_to[i], 0, malloc((size_t)nbuf * slot_bytes), false};
    }
    for (int i = 0; i < nrecv; i++)
        r[i] = (pump_chan_t){recv_from[i], 0, land ? malloc((size_t)nslots * slot_bytes) : NULL,
                             false};
    *applied = 0;
    double deadline = nvf_tf_now() + 30 * nvf_tf_slow();
    bool ok = true;
    for (;;) {
        bool done = true, moved = false;
        for (int i = 0; i < nsend && ok; i++) {
            pump_chan_t *c = &s[i];
            if (c->k >= (uint64_t)msgs)
                continue;
            done = false;
            unsigned char *b = c->buf + (size_t)(c->k % (uint64_t)nbuf) * slot_bytes;
            size_t len = tu_msg_len(tf->rank, c->peer, c->k, slot_bytes);
            if (!c->filled) {
                if (c->k >= (uint64_t)nbuf && !nvf_ucx_send_idle(mesh, false))
                    continue; /* this buffer may still be read by a put */
                tu_msg_fill(b, len, tf->rank, c->peer, c->k);
                c->filled = true;
            }
            bool started = false;
            nvf_status_t st = nvf_ucx_send(mesh, c->peer, b, len, &started);
            CHECK(st == NVF_OK, "%s: send %llu to %d: %s: %s", what, (unsigned long long)c->k,
                  c->peer, nvf_status_str(st), nvf_ucx_last_error());
            ok = st == NVF_OK;
            if (started) {
                c->k++;
                c->filled = false;
                moved = true;
            }
        }
        for (int i = 0; i < nrecv && ok; i++) {
            pump_chan_t *c = &r[i];
            if (c->k >= (uint64_t)msgs)
                continue;
            done = false;
            for (int a = 0; land && a < nslots && c->k + (uint64_t)a < (uint64_t)msgs; a++) {
                uint64_t m = c->k + (uint64_t)a;
                nvf_ucx_recv_post(mesh, c->peer, (unsigned)a,
                                  c->buf + (size_t)(m % (uint64_t)nslots) * slot_bytes, slot_bytes,
                                  1, m % 2 ? land_copy : NULL, &landed_bytes);
            }
            const void *data;
            if (!nvf_ucx_recv_test(mesh, c->peer, &data))
                continue;
            if (data == NULL) { /* applied in place: look at the landing buffer */
                CHECK(land, "%s: a message reported applied in place without a landing", what);
                if (!land)
                    break;
                data = c->buf + (size_t)(c->k % (uint64_t)nslots) * slot_bytes;
                (*applied)++;
            }
            size_t len = tu_msg_len(c->peer, tf->rank, c->k, slot_bytes);
            ok = tu_msg_check(data, len, c->peer, tf->rank, c->k, what);
            nvf_status_t st = nvf_ucx_recv_release(mesh, c->peer);
            CHECK(st == NVF_OK, "%s: release %llu from %d: %s: %s", what, (unsigned long long)c->k,
                  c->peer, nvf_status_str(st), nvf_ucx_last_error());
            ok = ok && st == NVF_OK;
            c->k++;
            moved = true;
        }
        if (done || !ok)
            break;
        CHECK(!nvf_ucx_mesh_failed(mesh), "%s: mesh failed: %s", what, nvf_ucx_last_error());
        if (nvf_ucx_mesh_failed(mesh) || nvf_tf_now() > deadline) {
            for (int i = 0; i < nsend; i++)
                CHECK(s[i].k == (uint64_t)msgs, "%s: rank %d sent %llu of %d to %d", what, tf->rank,
                      (unsigned long long)s[i].k, msgs, s[i].peer);
            for (int i = 0; i < nrecv; i++)
                CHECK(r[i].k == (uint64_t)msgs, "%s: rank %d received %llu of %d from %d", what,
                      tf->rank, (unsigned long long)r[i].k, msgs, r[i].peer);
            ok = false;
            break;
        }
        if (nvf_ucx_progress(ctx) == 0 && !moved)
            sched_yield(); /* 2 cores, up to 4 processes: let the peers run */
    }
    /* every message released by its receiver, every put complete */
    while (ok && !nvf_ucx_send_idle(mesh, true)) {
        sched_yield();
        if (nvf_tf_now() > deadline || nvf_ucx_mesh_failed(mesh)) {
            CHECK(false, "%s: rank %d: sends not released in time (%s)", what, tf->rank,
                  nvf_ucx_last_error());
            ok = false;
        }
    }
    for (int i = 0; i < nsend; i++)
        free(s[i].buf);
    for (int i = 0; i < nrecv; i++)
        free(r[i].buf);
    return ok;
}

static int chan_body(nvf_tf_t *tf, void *arg)
{
    const chan_case_t *cc = arg;
    char what[128];
    snprintf(what, sizeof(what), "UCX_TLS=%s %s n=%d nslots=%d slot=%zu", cc->tls, cc->pattern,
             cc->nproc, cc->nslots, cc->slot_bytes);
    nvf_ucx_ctx_t *ctx = child_init(cc->tls);
    if (ctx == NULL) {
        nvf_tf_barrier(tf);
        return 1;
    }
    CHECK(!nvf_ucx_supports_cuda(ctx), "Debian's UCX claims CUDA support");
    int n = tf->size, me = tf->rank, send_to[NVF_TF_MAX], recv_from[NVF_TF_MAX], ns = 0, nr = 0;
    if (strcmp(cc->pattern, "ring") == 0) {
        send_to[ns++] = (me + 1) % n;
        recv_from[nr++] = (me + n - 1) % n;
    } else {
        for (int p = 0; p < n; p++) {
            if (p != me) {
                send_to[ns++] = p;
                recv_from[nr++] = p;
            }
        }
    }
    nvf_ucx_mesh_t *mesh =
        tu_mesh_setup(tf, ctx, send_to, ns, recv_from, nr, cc->nslots, cc->slot_bytes, what);
    const char *got = mesh != NULL ? nvf_ucx_mesh_protocol(mesh) : "none";
    if (mesh != NULL && n > 1) {
        const char *want = tu_protocol == NVF_UCX_PROTO_PUT  ? "put"
                           : tu_protocol == NVF_UCX_PROTO_AM ? "am"
                           : strcmp(cc->tls, "tcp") == 0     ? "am"
                           : strcmp(cc->tls, "sm") == 0      ? "put"
                                                             : NULL;
        CHECK(want == NULL || strcmp(got, want) == 0, "%s: protocol %s sends by %s, expected %s",
              what, tu_protocol_name(tu_protocol), got, want);
    }
    if (mesh != NULL) {
        /* receiving in place on the cases with an even window */
        const bool land = cc->nslots % 2 == 0;
        long applied = 0;
        if (pump(tf, ctx, mesh, send_to, ns, recv_from, nr, cc->nslots, cc->slot_bytes,
                 scaled(cc->msgs), land, &applied, what) &&
            land) {
            /* by active messages some messages are posted before they arrive; by puts the
             * landing is ignored */
            if (strcmp(got, "am") == 0)
                CHECK(applied > 0, "%s: no message applied in place by active messages", what);
            else if (strcmp(got, "put") == 0)
                CHECK(applied == 0, "%s: %ld messages applied in place under puts", what, applied);
        }
        nvf_ucx_mesh_destroy(mesh);
    }
    tu_check_no_mesh_state(what);
    nvf_tf_barrier(tf); /* nobody tears down while a peer still needs it */
    nvf_ucx_ctx_release(ctx);
    tu_check_nothing_left(what);
    return nvf_test_failures;
}

/* Waits for recv_test on peer (progressing); NULL after the deadline. */
static const void *wait_recv(nvf_ucx_mesh_t *mesh, int peer, double seconds)
{
    double deadline = nvf_tf_now() + seconds * nvf_tf_slow();
    const void *data = NULL;
    while (!nvf_ucx_recv_test(mesh, peer, &data)) {
        if (nvf_tf_now() > deadline)
            return NULL;
        sched_yield();
    }
    return data;
}

/* Tries to start message k for `seconds`; returns whether it started. */
static bool try_send(nvf_ucx_mesh_t *mesh, int me, int peer, unsigned char *buf, size_t slot,
                     uint64_t k, double seconds)
{
    size_t len = tu_msg_len(me, peer, k, slot);
    tu_msg_fill(buf, len, me, peer, k);
    double deadline = nvf_tf_now() + seconds;
    do {
        bool started = false;
        nvf_status_t st = nvf_ucx_send(mesh, peer, buf, len, &started);
        CHECK(st == NVF_OK, "credit: send %llu: %s", (unsigned long long)k, nvf_ucx_last_error());
        if (started || st != NVF_OK)
            return started;
        sched_yield();
    } while (nvf_tf_now() < deadline);
    return false;
}

/* Rank 0 sends to rank 1, which holds back its releases. */
static int credit_body(nvf_tf_t *tf, void *arg)
{
    const chan_case_t *cc = arg;
    const int nslots = cc->nslots;
    const size_t slot = cc->slot_bytes;
    char what[96];
    snprintf(what, sizeof(what), "UCX_TLS=%s credit limit nslots=%d", cc->tls, nslots);
    nvf_ucx_ctx_t *ctx = child_init(cc->tls);
    if (ctx == NULL)
        return 1;
    int other = 1 - tf->rank;
    bool sender = tf->rank == 0;
    nvf_ucx_mesh_t *mesh =
        tu_mesh_setup(tf, ctx, &other, sender ? 1 : 0, &other, sender ? 0 : 1, nslots, slot, what);
    if (mesh == NULL)
        return 1;
    unsigned char *bufs = malloc(((size_t)nslots + 2) * slot);
    if (sender) {
        /* misuse is refused, nothing is sent */
        bool started = true;
        CHECK(nvf_ucx_send(mesh, 7, bufs, 1, &started) == NVF_ERR_INVALID && !started,
              "%s: send to a peer outside the mesh accepted", what);
        CHECK(nvf_ucx_send(mesh, 1, bufs, slot + 1, &started) == NVF_ERR_INVALID && !started,
              "%s: send above slot_bytes accepted", what);
        const void *d;
        CHECK(!nvf_ucx_recv_test(mesh, 1, &d), "%s: recv_test on a send-only peer", what);
        CHECK(nvf_ucx_recv_release(mesh, 1) == NVF_ERR_INVALID,
              "%s: release on a send-only peer accepted", what);
        /* nslots messages start at once, without any release */
        for (int k = 0; k < nslots; k++)
            CHECK(try_send(mesh, 0, 1, bufs + (size_t)k * slot, slot, (uint64_t)k, 0),
                  "%s: message %d of %d did not start at once", what, k, nslots);
        /* the next one does not, however long we progress */
        CHECK(!try_send(mesh, 0, 1, bufs + (size_t)nslots * slot, slot, (uint64_t)nslots, 0.2),
              "%s: message %d started with %d unreleased", what, nslots, nslots);
        CHECK(!nvf_ucx_send_idle(mesh, true), "%s: idle(released) before any release", what);
        double deadline = nvf_tf_now() + 10 * nvf_tf_slow();
        while (!nvf_ucx_send_idle(mesh, false) && nvf_tf_now() < deadline)
            sched_yield();
        CHECK(nvf_ucx_send_idle(mesh, false), "%s: puts not complete locally", what);
        nvf_tf_barrier(tf); /* 1: the receiver releases message 0 */
        nvf_tf_barrier(tf); /* 2 */
        CHECK(try_send(mesh, 0, 1, bufs + (size_t)nslots * slot, slot, (uint64_t)nslots,
                       10 * nvf_tf_slow()),
              "%s: message %d did not start after a release", what, nslots);
        CHECK(!try_send(mesh, 0, 1, bufs + ((size_t)nslots + 1) * slot, slot, (uint64_t)nslots + 1,
                        0.1),
              "%s: message %d started with %d unreleased", what, nslots + 1, nslots);
        nvf_tf_barrier(tf); /* 3: the receiver releases everything */
        CHECK(try_send(mesh, 0, 1, bufs + ((size_t)nslots + 1) * slot, slot, (uint64_t)nslots + 1,
                       10 * nvf_tf_slow()),
              "%s: message %d did not start after the releases", what, nslots + 1);
        while (!nvf_ucx_send_idle(mesh, true) && nvf_tf_now() < deadline + 10)
            sched_yield();
        CHECK(nvf_ucx_send_idle(mesh, true), "%s: not released in the end", what);
    } else {
        const void *d0 = wait_recv(mesh, 0, 10), *again = NULL;
        CHECK(d0 != NULL, "%s: message 0 did not arrive", what);
        if (d0 != NULL)
            tu_msg_check(d0, tu_msg_len(0, 1, 0, slot), 0, 1, 0, what);
        CHECK(nvf_ucx_recv_test(mesh, 0, &again) && again == d0,
              "%s: a second recv_test did not return the same message", what);
        nvf_tf_barrier(tf); /* 1 */
        CHECK(nvf_ucx_recv_release(mesh, 0) == NVF_OK, "%s: release 0: %s", what,
              nvf_ucx_last_error());
        nvf_tf_barrier(tf); /* 2 */
        nvf_tf_barrier(tf); /* 3 */
        for (uint64_t k = 1; k <= (uint64_t)nslots + 1; k++) {
            const void *d = wait_recv(mesh, 0, 10);
            CHECK(d != NULL, "%s: message %llu did not arrive", what, (unsigned long long)k);
            if (d == NULL)
                break;
            tu_msg_check(d, tu_msg_len(0, 1, k, slot), 0, 1, k, what);
            CHECK(nvf_ucx_recv_release(mesh, 0) == NVF_OK, "%s: release %llu: %s", what,
                  (unsigned long long)k, nvf_ucx_last_error());
        }
        CHECK(nvf_ucx_recv_release(mesh, 0) == NVF_ERR_INVALID,
              "%s: release of a message that has not arrived accepted", what);
        /* the credit puts must have left before this side stops progressing in the barrier */
        double deadline = nvf_tf_now() + 10 * nvf_tf_slow();
        while (!nvf_ucx_send_idle(mesh, false) && nvf_tf_now() < deadline)
            sched_yield();
        CHECK(nvf_ucx_send_idle(mesh, false), "%s: credit puts not complete locally", what);
    }
    nvf_tf_barrier(tf); /* 4 */
    free(bufs);
    nvf_ucx_mesh_destroy(mesh);
    tu_check_no_mesh_state(what);
    nvf_tf_barrier(tf);
    nvf_ucx_ctx_release(ctx);
    tu_check_nothing_left(what);
    return nvf_test_failures;
}

static long credit_messages(void)
{
    nvf_ucx_counters_t c;
    nvf_ucx_get_counters(&c);
    return c.credit_messages;
}

/* How releases reach the sender by active messages (by puts each is a put of its own): in a
 * ping-pong every release rides on the reply, no credit message of its own; one way, they are
 * told once half the window is released, and a lone one after the receiver has polled idle for
 * a while. */
static int told_body(nvf_tf_t *tf, void *arg)
{
    const chan_case_t *cc = arg;
    const int nslots = cc->nslots;
    const size_t slot = cc->slot_bytes;
    char what[96];
    snprintf(what, sizeof(what), "UCX_TLS=%s told nslots=%d", cc->tls, nslots);
    nvf_ucx_ctx_t *ctx = child_init(cc->tls);
    if (ctx == NULL)
        return 1;
    const int me = tf->rank, other = 1 - me;
    nvf_ucx_mesh_t *mesh = tu_mesh_setup(tf, ctx, &other, 1, &other, 1, nslots, slot, what);
    if (mesh == NULL)
        return 1;
    const bool am = strcmp(nvf_ucx_mesh_protocol(mesh), "am") == 0;
    unsigned char *bufs = malloc(2 * (size_t)nslots * slot); /* one per one-way message */
    /* ping-pong: rank 0 sends message k, rank 1 answers with its message k */
    const int rounds = scaled(cc->msgs);
    long before = credit_messages();
    uint64_t k = 0;
    for (; k < (uint64_t)rounds; k++) {
        if (me == 0 && !try_send(mesh, me, other, bufs, slot, k, 10 * nvf_tf_slow()))
            break;
        const void *d = wait_recv(mesh, other, 10);
        CHECK(d != NULL, "%s: ping-pong message %llu did not arrive", what, (unsigned long long)k);
        if (d == NULL || !tu_msg_check(d, tu_msg_len(other, me, k, slot), other, me, k, what))
            break;
        CHECK(nvf_ucx_recv_release(mesh, other) == NVF_OK, "%s: release: %s", what,
              nvf_ucx_last_error());
        if (me == 1 && !try_send(mesh, me, other, bufs, slot, k, 10 * nvf_tf_slow()))
            break;
    }
    CHECK(k == (uint64_t)rounds, "%s: ping-pong stopped at %llu of %d", what, (unsigned long long)k,
          rounds);
    if (am)
        CHECK(credit_messages() == before, "%s: %ld credit messages in a ping-pong of %d", what,
              credit_messages() - before, rounds);
    /* in the end every release is told */
    double deadline = nvf_tf_now() + 10 * nvf_tf_slow();
    while (!nvf_ucx_send_idle(mesh, true) && nvf_tf_now() < deadline)
        sched_yield();
    CHECK(nvf_ucx_send_idle(mesh, true), "%s: ping-pong not released in the end", what);
    nvf_tf_barrier(tf);

    /* one way: rank 0 sends 3 messages; rank 1 releases them and then only progresses */
    const uint64_t k0 = k, n1 = (uint64_t)nslots - 1;
    if (me == 0) {
        for (uint64_t j = 0; j < n1; j++)
            CHECK(try_send(mesh, me, other, bufs + j * slot, slot, k0 + j, 10 * nvf_tf_slow()),
                  "%s: one way: message %llu did not start", what, (unsigned long long)j);
        nvf_tf_barrier(tf); /* 1: sent */
        /* the window: nslots messages beyond the last one released; the receiver's last
         * release is told only after its idle polling */
        for (uint64_t j = n1; j < n1 + (uint64_t)nslots; j++)
            CHECK(try_send(mesh, me, other, bufs + j * slot, slot, k0 + j, 10 * nvf_tf_slow()),
                  "%s: one way: message %llu did not start", what, (unsigned long long)j);
        nvf_tf_barrier(tf); /* 2 */
    } else {
        nvf_tf_barrier(tf); /* 1 */
        before = credit_messages();
        for (uint64_t j = 0; j < n1; j++) {
            const void *d = wait_recv(mesh, other, 10);
            CHECK(d != NULL &&
                      tu_msg_check(d, tu_msg_len(other, me, k0 + j, slot), other, me, k0 + j, what),
                  "%s: one way: message %llu", what, (unsigned long long)j);
            CHECK(nvf_ucx_recv_release(mesh, other) == NVF_OK, "%s: release: %s", what,
                  nvf_ucx_last_error());
        }
        deadline = nvf_tf_now() + 1 * nvf_tf_slow();
        while (nvf_tf_now() < deadline)
            if (nvf_ucx_progress(ctx) == 0)
                sched_yield();
        if (am) /* nslots - 1 releases: (nslots - 1) / (nslots / 2) batches, then the flush */
            CHECK(credit_messages() - before >= 1 &&
                      credit_messages() - before <= (long)n1 / (nslots / 2) + 2,
                  "%s: one way: %ld credit messages for %llu releases", what,
                  credit_messages() - before, (unsigned long long)n1);
        nvf_tf_barrier(tf); /* 2 */
        for (uint64_t j = n1; j < n1 + (uint64_t)nslots; j++) {
            const void *d = wait_recv(mesh, other, 10);
            CHECK(d != NULL &&
                      tu_msg_check(d, tu_msg_len(other, me, k0 + j, slot), other, me, k0 + j, what),
                  "%s: one way: message %llu", what, (unsigned long long)j);
            CHECK(nvf_ucx_recv_release(mesh, other) == NVF_OK, "%s: release: %s", what,
                  nvf_ucx_last_error());
        }
    }
    deadline = nvf_tf_now() + 10 * nvf_tf_slow();
    while (!nvf_ucx_send_idle(mesh, true) && nvf_tf_now() < deadline)
        sched_yield();
    CHECK(nvf_ucx_send_idle(mesh, true), "%s: one way: not released in the end", what);
    nvf_tf_barrier(tf);
    free(bufs);
    nvf_ucx_mesh_destroy(mesh);
    tu_check_no_mesh_state(what);
    nvf_tf_barrier(tf);
    nvf_ucx_ctx_release(ctx);
    tu_check_nothing_left(what);
    return nvf_test_failures;
}

/* Many meshes of changing shapes on one context, and the context itself re-created. */
static int recreate_body(nvf_tf_t *tf, void *arg)
{
    const chan_case_t *cc = arg;
    char what[128];
    nvf_ucx_ctx_t *ctx = child_init(cc->tls);
    if (ctx == NULL)
        return 1;
    int n = tf->size, me = tf->rank, next = (me + 1) % n, prev = (me + n - 1) % n;
    int iters = scaled(cc->msgs);
    long endpoints = -1;
    for (int it = 0; it < iters; it++) {
        snprintf(what, sizeof(what), "UCX_TLS=%s recreate iteration %d", cc->tls, it);
        if (it > 0 && it % 10 == 0) {
            nvf_tf_barrier(tf);
            nvf_ucx_ctx_release(ctx);
            tu_check_nothing_left(what);
            nvf_status_t st = nvf_ucx_ctx_acquire(&ctx);
            CHECK(st == NVF_OK, "%s: re-acquire: %s", what, nvf_ucx_last_error());
            if (st != NVF_OK)
                return 1;
            endpoints = -1;
        }
        int nslots = 1 + it % 4;
        size_t slot = (size_t)64 << (it % 5);
        nvf_ucx_mesh_t *mesh = tu_mesh_setup(tf, ctx, &next, 1, &prev, 1, nslots, slot, what);
        if (mesh == NULL)
            return 1;
        long applied;
        pump(tf, ctx, mesh, &next, 1, &prev, 1, nslots, slot, 20, it % 2 == 1, &applied, what);
        nvf_ucx_mesh_destroy(mesh);
        tu_check_no_mesh_state(what);
        nvf_ucx_counters_t c;
        nvf_ucx_get_counters(&c);
        CHECK(endpoints < 0 || c.endpoints == endpoints,
              "%s: the endpoint cache went from %ld to %ld entries", what, endpoints, c.endpoints);
        endpoints = c.endpoints;
    }
    nvf_tf_barrier(tf);
    nvf_ucx_ctx_release(ctx);
    tu_check_nothing_left("recreate: the end");
    return nvf_test_failures;
}

static void run_case(const char *name, nvf_tf_body_t body, const chan_case_t *cc)
{
    /* NVF_TEST_ONLY=substring of "name pattern n=N" runs the matching cases alone */
    char id[64];
    snprintf(id, sizeof(id), "%s %s n=%d", name, cc->pattern, cc->nproc);
    const char *only = getenv("NVF_TEST_ONLY");
    if (only != NULL && strstr(id, only) == NULL)
        return;
    double t0 = nvf_tf_now();
    int failed = nvf_tf_run(name, cc->nproc, 60, body, (void *)cc);
    CHECK(failed == 0,
          "%s (UCX_TLS=%s %s n=%d nslots=%d slot_bytes=%zu msgs=%d): %d of %d "
          "processes failed",
          name, cc->tls, cc->pattern, cc->nproc, cc->nslots, cc->slot_bytes, cc->msgs, failed,
          cc->nproc);
    printf("  %-9s UCX_TLS=%-5s %-4s %-4s n=%d nslots=%d slot_bytes=%-7zu msgs=%-5d %6.2f s %s\n",
           name, cc->tls, tu_protocol_name(tu_protocol), cc->pattern, cc->nproc, cc->nslots,
           cc->slot_bytes, cc->msgs, nvf_tf_now() - t0, failed ? "FAILED" : "ok");
}

int main(int argc, char **argv)
{
    const char *deflt[] = {"tcp", "sm"};
    const char **tls = argc > 1 ? (const char **)argv + 1 : deflt;
    int ntls = argc > 1 ? argc - 1 : 2;
    const nvf_ucx_protocol_t protos[] = {NVF_UCX_PROTO_AUTO, NVF_UCX_PROTO_PUT, NVF_UCX_PROTO_AM};
    for (int t = 0; t < ntls * 3; t++) {
        tu_protocol = protos[t % 3];
        const chan_case_t cases[] = {
            {tls[t / 3], "ring", 2, 4, 4096, 3000}, {tls[t / 3], "ring", 3, 2, 256 << 10, 200},
            {tls[t / 3], "ring", 4, 8, 1024, 2000}, {tls[t / 3], "ring", 1, 3, 512, 500},
            {tls[t / 3], "all", 4, 3, 2048, 800},   {tls[t / 3], "all", 3, 1, 100, 500},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
            run_case("channels", chan_body, &cases[i]);
        const chan_case_t credit = {tls[t / 3], "pair", 2, 3, 64, 0};
        run_case("credit", credit_body, &credit);
        const chan_case_t told = {tls[t / 3], "pair", 2, 4, 64, 500};
        run_case("told", told_body, &told);
        const chan_case_t recreate = {tls[t / 3], "ring", 3, 0, 0, 40};
        run_case("recreate", recreate_body, &recreate);
    }
    return nvf_test_finish("test_ucx_channels");
}
