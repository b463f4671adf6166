/*
 * test_inter_algos.c: the inter-node algorithms (recursive doubling with its fold, ring,
 * recursive halving-doubling) on
 * 1..9 simulated rail peers in one process, over an in-memory transport that behaves like
 * RDMA: a put reads its source only when it "completes", at a later, random progress call, and
 * slots are credit-limited. Every peer's state machine is advanced in random order.
 *
 * Checks: every element equals the tests' own sequential reduction (exact inputs: any order
 * gives the same bits), every peer ends with bitwise the same result on random inputs, the
 * same inputs give the same bits run after run, and no message is left unreleased. Slots are
 * tiny (48 bytes) so that every part travels in many messages.
 */
#include "coll_nvfabric/nvf_inter.h"
#include "common/nvf_ref.h"
#include "nvf_test.h"

#include <stdint.h>
#include <string.h>

#define MAXP 9
#define NSLOTS 3
#define SLOT 48

typedef struct slot {
    bool full;       /* the receiver may read it */
    bool pending;    /* put issued, data not copied yet */
    const char *src; /* where a pending put reads from */
    size_t len;
    unsigned long seq; /* the message's number on its channel */
    char data[SLOT];
} slot_t;

typedef struct landing { /* a receive in place, posted by the receiver for one message */
    unsigned long seq1;  /* message number + 1; 0: none */
    void *dst;
    size_t cap, granule;
    nvf_land_fn_t fn;
    void *arg;
    bool applied;
} landing_t;

typedef struct chan {
    slot_t s[NSLOTS];
    landing_t land[NSLOTS];
    unsigned long sent, received, released;
} chan_t;

typedef struct world {
    int p;
    chan_t ch[MAXP][MAXP]; /* [from][to] */
    unsigned long long rng;
    bool landings;        /* the transport offers receiving in place */
    size_t min_msg_bytes; /* the rails split parts into quarters down to this (0: slots) */
} world_t;

typedef struct peer_ctx {
    world_t *w;
    int me;
} peer_ctx_t;

static void complete_some(world_t *w, int me, bool all)
{
    for (int to = 0; to < w->p; to++) {
        chan_t *c = &w->ch[me][to];
        for (int k = 0; k < NSLOTS; k++) {
            slot_t *s = &c->s[k];
            if (s->pending && (all || nvf_ref_rand(&w->rng) % 3 == 0)) {
                landing_t *l = &c->land[k];
                if (l->seq1 == s->seq + 1) {
                    /* posted for the message in this slot: applied from the source, in two
                     * pieces cut at an element boundary, as fragments would be */
                    CHECK(s->len <= l->cap, "message of %zu bytes into a landing of %zu", s->len,
                          l->cap);
                    size_t cut = s->len / 2 / l->granule * l->granule;
                    if (l->fn != NULL) {
                        l->fn(l->arg, l->dst, s->src, cut);
                        l->fn(l->arg, (char *)l->dst + cut, s->src + cut, s->len - cut);
                    } else {
                        memcpy(l->dst, s->src, s->len);
                    }
                    l->applied = true;
                } else {
                    memcpy(s->data, s->src, s->len); /* the "RDMA" reads the source now */
                }
                s->pending = false;
                s->full = true;
            }
        }
    }
}

static nvf_status_t t_send(void *ctx, int peer, const void *src, size_t len, bool *started)
{
    peer_ctx_t *pc = ctx;
    chan_t *c = &pc->w->ch[pc->me][peer];
    CHECK(len <= SLOT && len > 0, "message of %zu bytes", len);
    *started = false;
    if (c->sent - c->released >= NSLOTS)
        return NVF_OK; /* no credit */
    slot_t *s = &c->s[c->sent % NSLOTS];
    CHECK(!s->full && !s->pending, "slot reused while in use");
    s->pending = true;
    s->src = src;
    s->len = len;
    s->seq = c->sent++;
    *started = true;
    return NVF_OK;
}

static bool t_send_idle(void *ctx, bool released)
{
    peer_ctx_t *pc = ctx;
    for (int to = 0; to < pc->w->p; to++) {
        chan_t *c = &pc->w->ch[pc->me][to];
        for (int k = 0; k < NSLOTS; k++)
            if (c->s[k].pending)
                return false;
        if (released && c->released != c->sent)
            return false;
    }
    return true;
}

static bool t_recv_test(void *ctx, int peer, const void **data)
{
    peer_ctx_t *pc = ctx;
    chan_t *c = &pc->w->ch[peer][pc->me];
    if (c->received == c->sent)
        return false;
    slot_t *s = &c->s[c->received % NSLOTS];
    if (!s->full)
        return false;
    const landing_t *l = &c->land[c->received % NSLOTS];
    *data = (l->seq1 == c->received + 1 && l->applied) ? NULL : s->data;
    return true;
}

static nvf_status_t t_recv_release(void *ctx, int peer)
{
    peer_ctx_t *pc = ctx;
    chan_t *c = &pc->w->ch[peer][pc->me];
    slot_t *s = &c->s[c->received % NSLOTS];
    CHECK(s->full, "release of an empty slot");
    s->full = false;
    c->land[c->received % NSLOTS] = (landing_t){0};
    c->received++;
    c->released++;
    return NVF_OK;
}

static bool t_recv_post(void *ctx, int peer, unsigned ahead, void *dst, size_t cap, size_t granule,
                        nvf_land_fn_t fn, void *arg)
{
    peer_ctx_t *pc = ctx;
    chan_t *c = &pc->w->ch[peer][pc->me];
    if (ahead >= NSLOTS || nvf_ref_rand(&pc->w->rng) % 4 == 0)
        return false; /* out of the window, or (at random) declined: the slot path then */
    const unsigned long m = c->received + ahead;
    landing_t *l = &c->land[m % NSLOTS];
    if (l->seq1 == m + 1)
        return true;
    const slot_t *s = &c->s[m % NSLOTS];
    if (m < c->sent && s->full)
        return false; /* arrived already */
    *l = (landing_t){m + 1, dst, cap, granule, fn, arg, false};
    return true;
}

static void t_recv_unpost(void *ctx, int peer)
{
    peer_ctx_t *pc = ctx;
    chan_t *c = &pc->w->ch[peer][pc->me];
    for (int k = 0; k < NSLOTS; k++)
        if (!c->land[k].applied)
            c->land[k] = (landing_t){0};
}

static void t_progress(void *ctx)
{
    peer_ctx_t *pc = ctx;
    complete_some(pc->w, pc->me, false);
}

static bool t_failed(void *ctx)
{
    return false;
}

/* Runs one allreduce on p simulated peers: from ins[r] (NULL: in place) into bufs[r]. */
static bool run(world_t *w, int p, nvf_inter_alg_t alg, nvf_dtype_t dt, nvf_op_t op,
                void *const *ins, void **bufs, size_t count)
{
    memset(w->ch, 0, sizeof(w->ch));
    w->p = p;
    peer_ctx_t ctx[MAXP];
    nvf_rail_t rails[MAXP];
    nvf_inter_op_t ops[MAXP];
    int rank_of[MAXP];
    bool done[MAXP];
    for (int r = 0; r < p; r++)
        rank_of[r] = r;
    for (int r = 0; r < p; r++) {
        ctx[r] = (peer_ctx_t){w, r};
        rails[r] = (nvf_rail_t){.p = p,
                                .me = r,
                                .rank_of = rank_of,
                                .slot_bytes = SLOT,
                                .min_msg_bytes = w->min_msg_bytes,
                                .tp = {.send = t_send,
                                       .send_idle = t_send_idle,
                                       .recv_test = t_recv_test,
                                       .recv_release = t_recv_release,
                                       .progress = t_progress,
                                       .failed = t_failed,
                                       .recv_post = w->landings ? t_recv_post : NULL,
                                       .recv_unpost = w->landings ? t_recv_unpost : NULL,
                                       .ctx = &ctx[r]}};
        nvf_inter_start(&ops[r], &rails[r], alg, ins ? ins[r] : NULL, bufs[r], count, dt, op);
        done[r] = false;
    }
    for (long round = 0; round < 10000000; round++) {
        int r = (int)(nvf_ref_rand(&w->rng) % (unsigned)p);
        if (!done[r]) {
            nvf_status_t st = nvf_inter_progress(&ops[r], &done[r]);
            if (st != NVF_OK) {
                CHECK(0, "peer %d: %s", r, nvf_status_str(st));
                return false;
            }
        } else {
            complete_some(w, r, true);
        }
        bool all = true;
        for (int k = 0; k < p; k++)
            all &= done[k];
        if (all) {
            for (int k = 0; k < p; k++) {
                complete_some(w, k, true);
                CHECK(t_send_idle(&ctx[k], true), "p=%d peer %d: messages left unreleased", p, k);
            }
            return true;
        }
    }
    CHECK(0, "p=%d alg %d count=%zu: no progress (deadlock)", p, (int)alg, count);
    return false;
}

static void check_case(world_t *w, int p, nvf_inter_alg_t alg, nvf_dtype_t dt, nvf_op_t op,
                       size_t count, nvf_ref_mode_t mode, unsigned long long seed)
{
    const size_t es = nvf_ref_size(dt);
    void *in[MAXP], *keep[MAXP], *buf[MAXP], *again[MAXP];
    void *ref = malloc(count * es + 1);
    /* in place or from a separate input; with receiving in place or without */
    const bool separate = seed % 2 == 0;
    w->landings = seed % 4 >= 2;
    w->min_msg_bytes = seed % 3 == 0 ? 8 : 0; /* messages of a quarter of a part, 8..SLOT */
    for (int r = 0; r < p; r++) {
        in[r] = malloc(count * es + 1);
        keep[r] = malloc(count * es + 1);
        buf[r] = malloc(count * es + 1);
        again[r] = malloc(count * es + 1);
        nvf_ref_fill(dt, op, mode, in[r], count, seed * 131 + (unsigned)r);
        memcpy(keep[r], in[r], count * es);
        if (separate) { /* poisoned outputs */
            memset(buf[r], 0xA5, count * es);
            memset(again[r], 0x5A, count * es);
        } else {
            memcpy(buf[r], in[r], count * es);
            memcpy(again[r], in[r], count * es);
        }
    }
    nvf_ref_reduce(dt, op, ref, in, p, count);
    const char *name = alg == NVF_INTER_RD ? "rd" : alg == NVF_INTER_RING ? "ring" : "rhd";
    if (!run(w, p, alg, dt, op, separate ? in : NULL, buf, count))
        goto out;
    for (int r = 0; separate && r < p; r++)
        CHECK(memcmp(in[r], keep[r], count * es) == 0, "%s p=%d count=%zu: peer %d's input changed",
              name, p, count, r);
    for (int r = 0; r < p; r++) {
        if (mode == NVF_REF_EXACT) {
            size_t bad = nvf_ref_first_diff(dt, buf[r], ref, count, false);
            CHECK(bad == count, "%s p=%d %s %s count=%zu: peer %d element %zu wrong", name, p,
                  nvf_dtype_name(dt), nvf_op_name(op), count, r, bad);
        }
        size_t diff = nvf_ref_first_diff(dt, buf[r], buf[0], count, true);
        CHECK(diff == count, "%s p=%d %s count=%zu: peer %d differs from peer 0 at %zu", name, p,
              nvf_dtype_name(dt), count, r, diff);
    }
    /* same inputs, same layout: same bits (whatever the interleaving of the peers) */
    if (run(w, p, alg, dt, op, separate ? in : NULL, again, count))
        for (int r = 0; r < p; r++)
            CHECK(nvf_ref_first_diff(dt, again[r], buf[r], count, true) == count,
                  "%s p=%d %s count=%zu: not repeatable on peer %d", name, p, nvf_dtype_name(dt),
                  count, r);
out:
    for (int r = 0; r < p; r++) {
        free(in[r]);
        free(keep[r]);
        free(buf[r]);
        free(again[r]);
    }
    free(ref);
}

int main(void)
{
    static world_t w;
    w.rng = 12345;
    unsigned long long seed = 1;
    const size_t counts[] = {0, 1, 2, 3, 5, 8, 9, 12, 13, 100, 257, 1000};
    for (int p = 1; p <= MAXP; p++) {
        const nvf_inter_alg_t algs[] = {NVF_INTER_RD, NVF_INTER_RING, NVF_INTER_RHD};
        for (int a = 0; a < 3; a++) {
            nvf_inter_alg_t alg = algs[a];
            for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
                check_case(&w, p, alg, NVF_DTYPE_INT32, NVF_OP_SUM, counts[k], NVF_REF_EXACT,
                           seed++);
                check_case(&w, p, alg, NVF_DTYPE_DOUBLE_INT, NVF_OP_MAXLOC, counts[k],
                           NVF_REF_EXACT, seed++);
                check_case(&w, p, alg, NVF_DTYPE_FLOAT, NVF_OP_SUM, counts[k], NVF_REF_RANDOM,
                           seed++);
                check_case(&w, p, alg, NVF_DTYPE_DOUBLE, NVF_OP_MIN, counts[k], NVF_REF_RANDOM,
                           seed++);
                check_case(&w, p, alg, NVF_DTYPE_UINT8, NVF_OP_BXOR, counts[k], NVF_REF_EXACT,
                           seed++);
            }
        }
    }
    /* peer lists: whatever a peer sends to, the receiver expects from it */
    for (int p = 2; p <= 40; p++) {
        static int s[64][64], r[64][64], ns[64], nr[64];
        for (int me = 0; me < p; me++)
            nvf_inter_peers(p, me, s[me], &ns[me], r[me], &nr[me]);
        for (int me = 0; me < p; me++)
            for (int i = 0; i < ns[me]; i++) {
                int to = s[me][i];
                bool found = false;
                for (int j = 0; j < nr[to]; j++)
                    found |= r[to][j] == me;
                CHECK(found && to != me, "p=%d: %d sends to %d, which does not expect it", p, me,
                      to);
                CHECK(ns[me] <= nvf_inter_max_peers(p), "p=%d: too many peers", p);
            }
    }
    /* the auto receive-slot size for puts: within its bounds, in 64 KiB, a rank's slots within
     * the budget (unless at the floor), the largest such size, never larger for more nodes; 2 MiB
     * on the 4 nodes where it was measured */
    size_t prev = SIZE_MAX;
    for (int p = 1; p <= 65536; p = p < 64 ? p + 1 : p * 2) {
        size_t b = nvf_rail_put_slot_bytes(p), per_peer = NVF_INTER_NSLOTS;
        size_t slots = per_peer * (size_t)nvf_inter_max_peers(p);
        CHECK(b >= NVF_RAIL_AM_SLOT_BYTES && b <= NVF_RAIL_PUT_SLOT_MAX && b % 65536 == 0,
              "p=%d: put slot %zu bytes", p, b);
        CHECK(b * slots <= NVF_RAIL_SLOT_BUDGET || b == NVF_RAIL_AM_SLOT_BYTES,
              "p=%d: %zu slots of %zu bytes exceed the budget", p, slots, b);
        CHECK(b == NVF_RAIL_PUT_SLOT_MAX || (b + 65536) * slots > NVF_RAIL_SLOT_BUDGET,
              "p=%d: slot %zu bytes, %zu slots: could be larger", p, b, slots);
        CHECK(b <= prev, "p=%d: slot %zu bytes, more than %zu for fewer nodes", p, b, prev);
        prev = b;
    }
    CHECK(nvf_rail_put_slot_bytes(4) == ((size_t)2 << 20), "4 nodes: put slot %zu bytes",
          nvf_rail_put_slot_bytes(4));
    return nvf_test_finish("test_inter_algos");
}
