/*
 * nvf_inter.c: inter-node allreduce among rail peers: recursive doubling
 * (with the fold of a non-power-of-two rail into a power of two) and ring reduce-scatter +
 * all-gather, as non-blocking state machines over the channel primitives of nvf_transport_t.
 *
 * Each step sends one part of the buffer to one peer and receives one part from one peer, in
 * messages of at most slot_bytes. A received message is processed (reduced or copied into the
 * buffer) only once the puts that read the bytes it overwrites have completed locally, so no put
 * ever reads memory that is being written, while puts of other parts stay in flight (the ring's
 * reduce-scatter never waits). Must not block: every wait is a test.
 */
#include "nvf_inter.h"

#include "nvf_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ACT_NONE, ACT_REDUCE_MINE_FIRST, ACT_REDUCE_THEIRS_FIRST, ACT_COPY };

static int largest_pow2_le(int p)
{
    int q = 1;
    while (q * 2 <= p)
        q *= 2;
    return q;
}

static int log2_exact(int q)
{
    int k = 0;
    while ((1 << k) < q)
        k++;
    return k;
}

/* Recursive doubling on p peers: the first 2*rem peers fold in pairs (even into odd). */
static int rd_vid(int p, int me)
{
    int rem = p - largest_pow2_le(p);
    if (me < 2 * rem)
        return (me % 2) ? me / 2 : -1;
    return me - rem;
}

static int rd_real(int p, int vid)
{
    int rem = p - largest_pow2_le(p);
    return vid < rem ? 2 * vid + 1 : vid + rem;
}

int nvf_inter_max_peers(int p)
{
    return 3 + log2_exact(p);
}

static void add_unique(int *list, int *n, int v)
{
    for (int i = 0; i < *n; i++)
        if (list[i] == v)
            return;
    list[(*n)++] = v;
}

void nvf_inter_peers(int p, int me, int *send_to, int *nsend, int *recv_from, int *nrecv)
{
    *nsend = *nrecv = 0;
    if (p < 2)
        return;
    /* ring */
    add_unique(send_to, nsend, (me + 1) % p);
    add_unique(recv_from, nrecv, (me + p - 1) % p);
    /* recursive doubling and its fold */
    int rem = p - largest_pow2_le(p);
    if (me < 2 * rem) {
        int mate = (me % 2) ? me - 1 : me + 1;
        add_unique(send_to, nsend, mate);
        add_unique(recv_from, nrecv, mate);
    }
    int vid = rd_vid(p, me);
    if (vid >= 0) {
        int q = largest_pow2_le(p);
        for (int k = 0; (1 << k) < q; k++) {
            int partner = rd_real(p, vid ^ (1 << k));
            add_unique(send_to, nsend, partner);
            add_unique(recv_from, nrecv, partner);
        }
    }
}

/* ---- steps ---------------------------------------------------------------------------------*/

/* Ring piece j of count elements among p: [first, first+len). */
static void ring_piece(size_t count, int p, int j, size_t *first, size_t *len)
{
    size_t base = count / (size_t)p, extra = count % (size_t)p;
    size_t uj = (size_t)j;
    *first = uj * base + (uj < extra ? uj : extra);
    *len = base + (uj < extra ? 1 : 0);
}

/* Halving-doubling: the range [lo, hi) of count elements that virtual peer vid owns after
 * `steps` halvings (distances q/2, q/4, ...): at each, the peer whose bit is set keeps the upper
 * half. After log q halvings vid owns the vid-th piece. */
static void rhd_range(size_t count, int q, int vid, int steps, size_t *lo, size_t *hi)
{
    *lo = 0;
    *hi = count;
    for (int t = 0; t < steps; t++) {
        size_t mid = *lo + (*hi - *lo) / 2;
        if (vid & (q >> (t + 1)))
            *lo = mid;
        else
            *hi = mid;
    }
}

static void set_xfer(nvf_inter_xfer_t *x, int peer, char *ptr, size_t elems, int action)
{
    x->peer = peer;
    x->ptr = ptr;
    x->elems = elems;
    x->issued = 0;
    x->action = action;
}

static void plan_step(nvf_inter_op_t *op)
{
    const int p = op->rail->p, me = op->rail->me;
    set_xfer(&op->send, -1, NULL, 0, ACT_NONE);
    set_xfer(&op->recv, -1, NULL, 0, ACT_NONE);
    if (op->alg == NVF_INTER_RING) {
        int t = op->step;
        size_t first, len;
        if (t < p - 1) { /* reduce-scatter */
            int sp = (me - t + p) % p, rp = (me - t - 1 + 2 * p) % p;
            ring_piece(op->count, p, sp, &first, &len);
            set_xfer(&op->send, (me + 1) % p, op->buf + first * op->esize, len, ACT_NONE);
            ring_piece(op->count, p, rp, &first, &len);
            set_xfer(&op->recv, (me - 1 + p) % p, op->buf + first * op->esize, len,
                     ACT_REDUCE_MINE_FIRST);
        } else { /* all-gather */
            t -= p - 1;
            int sp = (me + 1 - t + p) % p, rp = (me - t + p) % p;
            ring_piece(op->count, p, sp, &first, &len);
            set_xfer(&op->send, (me + 1) % p, op->buf + first * op->esize, len, ACT_NONE);
            ring_piece(op->count, p, rp, &first, &len);
            set_xfer(&op->recv, (me - 1 + p) % p, op->buf + first * op->esize, len, ACT_COPY);
        }
        return;
    }
    /* recursive doubling and halving-doubling: step 0 is the fold, the last the unfold */
    const int q = largest_pow2_le(p), rem = p - q, k = log2_exact(q);
    const bool folded = me < 2 * rem;
    int s = op->step;
    if (op->alg == NVF_INTER_RHD && s > 0 && s <= 2 * k) {
        int vid = rd_vid(p, me);
        if (vid < 0)
            return; /* folded away: idle until the unfold */
        size_t lo, hi, klo, khi;
        if (s <= k) { /* halving: keep one half of my range, send the other, distance q/2^s */
            int d = q >> s;
            rhd_range(op->count, q, vid, s - 1, &lo, &hi);
            rhd_range(op->count, q, vid, s, &klo, &khi);
            size_t slo = klo == lo ? khi : lo, shi = klo == lo ? hi : klo;
            int partner = rd_real(p, vid ^ d);
            set_xfer(&op->send, partner, op->buf + slo * op->esize, shi - slo, ACT_NONE);
            set_xfer(&op->recv, partner, op->buf + klo * op->esize, khi - klo,
                     partner < me ? ACT_REDUCE_THEIRS_FIRST : ACT_REDUCE_MINE_FIRST);
        } else { /* doubling: send my range, receive my partner's, distance 2^(s-k-1) */
            int j = s - k - 1, d = 1 << j;
            rhd_range(op->count, q, vid, k - j, &lo, &hi);       /* mine now */
            rhd_range(op->count, q, vid, k - j - 1, &klo, &khi); /* mine after */
            size_t rlo = klo == lo ? hi : klo, rhi = klo == lo ? khi : lo;
            int partner = rd_real(p, vid ^ d);
            set_xfer(&op->send, partner, op->buf + lo * op->esize, hi - lo, ACT_NONE);
            set_xfer(&op->recv, partner, op->buf + rlo * op->esize, rhi - rlo, ACT_COPY);
        }
        return;
    }
    if (op->alg == NVF_INTER_RHD && s > 2 * k)
        s = k + 1; /* the unfold below */
    if (s == 0) {
        if (folded && me % 2 == 0)
            set_xfer(&op->send, me + 1, op->buf, op->count, ACT_NONE);
        else if (folded)
            set_xfer(&op->recv, me - 1, op->buf, op->count, ACT_REDUCE_THEIRS_FIRST);
        return;
    }
    if (s <= k) {
        int vid = rd_vid(p, me);
        if (vid < 0)
            return; /* folded away: idle until the unfold */
        int partner = rd_real(p, vid ^ (1 << (s - 1)));
        set_xfer(&op->send, partner, op->buf, op->count, ACT_NONE);
        set_xfer(&op->recv, partner, op->buf, op->count,
                 partner < me ? ACT_REDUCE_THEIRS_FIRST : ACT_REDUCE_MINE_FIRST);
        return;
    }
    if (folded && me % 2 == 1)
        set_xfer(&op->send, me - 1, op->buf, op->count, ACT_NONE);
    else if (folded)
        set_xfer(&op->recv, me + 1, op->buf, op->count, ACT_COPY);
}

void nvf_inter_start(nvf_inter_op_t *op, const nvf_rail_t *rail, nvf_inter_alg_t alg, void *buf,
                     size_t count, nvf_dtype_t dt, nvf_op_t rop)
{
    memset(op, 0, sizeof(*op));
    op->rail = rail;
    op->alg = alg;
    op->buf = (char *)buf;
    op->count = count;
    op->esize = nvf_dtype_size(dt);
    op->red = nvf_reduce_fn(dt, rop);
    op->red_rev = nvf_reduce_rev_fn(dt, rop);
    const int p = rail->p;
    if (p < 2 || count == 0)
        op->nsteps = 0;
    else if (alg == NVF_INTER_RING)
        op->nsteps = 2 * (p - 1);
    else if (alg == NVF_INTER_RHD)
        op->nsteps = 2 + 2 * log2_exact(largest_pow2_le(p));
    else
        op->nsteps = 2 + log2_exact(largest_pow2_le(p));
}

/* Process one arrived message of `elems` elements at offset `at` of the receive part. */
static void process(nvf_inter_op_t *op, const void *data, size_t at, size_t elems)
{
    char *dst = op->recv.ptr + at * op->esize;
    const size_t bytes = elems * op->esize;
    switch (op->recv.action) {
    case ACT_REDUCE_MINE_FIRST: /* dst = dst op data */
        op->red(dst, data, elems);
        break;
    case ACT_REDUCE_THEIRS_FIRST: /* dst = data op dst: the lower-ranked operand first */
        op->red_rev(dst, data, elems);
        break;
    case ACT_COPY:
        memcpy(dst, data, bytes);
        break;
    default:
        break;
    }
}

/* Records [lo, hi) as read by a put in flight; false if no room (wait for completion first). */
static bool pend_add(nvf_inter_op_t *op, const char *lo, const char *hi)
{
    if (op->npend > 0 && op->pend[op->npend - 1].hi == lo) {
        op->pend[op->npend - 1].hi = hi; /* contiguous with the last one */
        return true;
    }
    if (op->npend == (int)(sizeof(op->pend) / sizeof(op->pend[0])))
        return false;
    op->pend[op->npend].lo = lo;
    op->pend[op->npend].hi = hi;
    op->npend++;
    return true;
}

static bool pend_overlaps(const nvf_inter_op_t *op, const char *lo, const char *hi)
{
    for (int i = 0; i < op->npend; i++)
        if (lo < op->pend[i].hi && op->pend[i].lo < hi)
            return true;
    return false;
}

/* Whether every put issued so far has completed (then forgets them). */
static bool pend_settle(nvf_inter_op_t *op, const nvf_transport_t *tp)
{
    if (op->npend == 0)
        return true;
    if (!tp->send_idle(tp->ctx, false))
        return false;
    op->npend = 0;
    return true;
}

nvf_status_t nvf_inter_progress(nvf_inter_op_t *op, bool *done)
{
    const nvf_rail_t *rail = op->rail;
    const nvf_transport_t *tp = &rail->tp;
    const size_t chunk = rail->slot_bytes / op->esize;
    nvf_status_t st;
    *done = false;
    tp->progress(tp->ctx);
    while (op->step < op->nsteps) {
        if (!op->step_ready) {
            plan_step(op);
            op->step_ready = true;
        }
        nvf_inter_xfer_t *s = &op->send, *r = &op->recv;
        while (s->peer >= 0 && s->issued < s->elems) {
            size_t n = s->elems - s->issued < chunk ? s->elems - s->issued : chunk;
            const char *lo = s->ptr + s->issued * op->esize, *hi = lo + n * op->esize;
            if (!pend_add(op, lo, hi) && !(pend_settle(op, tp) && pend_add(op, lo, hi)))
                break; /* too many ranges in flight: wait for some to complete */
            bool started = false;
            st = tp->send(tp->ctx, rail->rank_of[s->peer], lo, n * op->esize, &started);
            if (st != NVF_OK)
                return st;
            if (!started) {
                /* no credit: the range was not put after all */
                if (op->pend[op->npend - 1].hi == hi && op->pend[op->npend - 1].lo == lo)
                    op->npend--;
                else
                    op->pend[op->npend - 1].hi = lo;
                break;
            }
            s->issued += n;
        }
        while (r->peer >= 0 && r->issued < r->elems) {
            const void *data;
            if (!tp->recv_test(tp->ctx, rail->rank_of[r->peer], &data))
                break;
            size_t n = r->elems - r->issued < chunk ? r->elems - r->issued : chunk;
            const char *c0 = r->ptr + r->issued * op->esize, *c1 = c0 + n * op->esize;
            /* recursive doubling sends and receives the same region: a received chunk may be
             * folded in only once the part of my send it overlaps has been put on the wire */
            if (s->peer >= 0 && s->issued < s->elems) {
                const char *u0 = s->ptr + s->issued * op->esize,
                           *u1 = s->ptr + s->elems * op->esize;
                if (c0 < u1 && u0 < c1)
                    break;
            }
            /* ... and once the puts that read it have completed */
            if (pend_overlaps(op, c0, c1) && !pend_settle(op, tp))
                break;
            process(op, data, r->issued, n);
            st = tp->recv_release(tp->ctx, rail->rank_of[r->peer]);
            if (st != NVF_OK)
                return st;
            r->issued += n;
        }
        if (tp->failed(tp->ctx))
            return NVF_ERR_UCX;
        if ((s->peer >= 0 && s->issued < s->elems) || (r->peer >= 0 && r->issued < r->elems))
            return NVF_OK; /* not yet */
        op->step++;
        op->step_ready = false;
    }
    /* the caller may reuse buf once no put reads from it */
    *done = pend_settle(op, tp);
    return NVF_OK;
}
