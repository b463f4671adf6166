/*
 * nvf_inter.c: inter-node allreduce among rail peers: recursive doubling
 * (with the fold of a non-power-of-two rail into a power of two) and ring reduce-scatter +
 * all-gather, as non-blocking state machines over the channel primitives of nvf_transport_t.
 *
 * Each step sends one part of the buffer to one peer and receives one part from one peer, in
 * messages of at most slot_bytes (on rails with min_msg_bytes, a quarter of the part where that
 * lies between the two). A received message is processed (reduced or copied into the
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

size_t nvf_rail_put_slot_bytes(int p)
{
    const size_t granule = (size_t)64 << 10;
    size_t b = NVF_RAIL_SLOT_BUDGET / ((size_t)NVF_INTER_NSLOTS * (size_t)nvf_inter_max_peers(p));
    b = b / granule * granule;
    return b < NVF_RAIL_AM_SLOT_BYTES  ? NVF_RAIL_AM_SLOT_BYTES
           : b > NVF_RAIL_PUT_SLOT_MAX ? NVF_RAIL_PUT_SLOT_MAX
                                       : b;
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
    x->posted = 0;
    x->action = action;
}

/* The current step's transfers, as regions of buf. */
static void plan_step_in_buf(nvf_inter_op_t *op)
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

/* The current step's transfers. With a separate input (op->in != op->buf), a region of buf that
 * holds nothing yet is read from the input instead: a send reads the input itself, a reduction
 * combines the input with the received data into buf. In the ring every reduce-scatter step
 * receives a region not touched before, and only its first step sends one; under recursive
 * doubling and halving-doubling, everything up to my first reduction (the fold, or the first
 * exchange) reads the input, and that reduction writes every region a later step reads before
 * the all-gather's copies fill in the rest. */
static void plan_step(nvf_inter_op_t *op)
{
    plan_step_in_buf(op);
    nvf_inter_xfer_t *s = &op->send, *r = &op->recv;
    r->in = NULL;
    if (op->in == op->buf)
        return;
    const bool reduces = r->peer >= 0 && r->action != ACT_COPY && r->action != ACT_NONE;
    bool send_fresh, recv_fresh;
    if (op->alg == NVF_INTER_RING) {
        send_fresh = op->step == 0;
        recv_fresh = op->step < op->rail->p - 1;
    } else {
        send_fresh = recv_fresh = !op->buf_live;
        if (reduces)
            op->buf_live = true;
    }
    if (send_fresh && s->peer >= 0)
        s->ptr = (char *)op->in + (s->ptr - op->buf);
    if (recv_fresh && reduces)
        r->in = op->in + (r->ptr - op->buf);
}

void nvf_inter_start(nvf_inter_op_t *op, const nvf_rail_t *rail, nvf_inter_alg_t alg,
                     const void *in, void *buf, size_t count, nvf_dtype_t dt, nvf_op_t rop)
{
    memset(op, 0, sizeof(*op));
    op->rail = rail;
    op->alg = alg;
    op->buf = (char *)buf;
    op->in = in != NULL ? (const char *)in : op->buf;
    op->count = count;
    op->esize = nvf_dtype_size(dt);
    op->red = nvf_reduce_fn(dt, rop);
    op->red_rev = nvf_reduce_rev_fn(dt, rop);
    op->red3 = nvf_reduce3_fn(dt, rop);
    const int p = rail->p;
    if (p < 2 || count == 0)
        op->nsteps = 0;
    else if (alg == NVF_INTER_RING)
        op->nsteps = 2 * (p - 1);
    else if (alg == NVF_INTER_RHD)
        op->nsteps = 2 + 2 * log2_exact(largest_pow2_le(p));
    else
        op->nsteps = 2 + log2_exact(largest_pow2_le(p));
    if (op->nsteps == 0 && op->in != op->buf && count > 0)
        memcpy(op->buf, op->in, count * op->esize); /* nothing to exchange: the input is it */
}

/* dst = mine op data, where mine is in (the input) or, NULL, dst itself; and the other way round */
static void reduce_mine_first(const nvf_inter_op_t *op, char *dst, const char *in, const void *data,
                              size_t elems)
{
    if (in != NULL)
        op->red3(dst, in, data, elems);
    else
        op->red(dst, data, elems);
}

static void reduce_theirs_first(const nvf_inter_op_t *op, char *dst, const char *in,
                                const void *data, size_t elems)
{
    if (in != NULL)
        op->red3(dst, data, in, elems);
    else
        op->red_rev(dst, data, elems);
}

/* Process one arrived message of `elems` elements at offset `at` of the receive part. */
static void process(nvf_inter_op_t *op, const void *data, size_t at, size_t elems)
{
    char *dst = op->recv.ptr + at * op->esize;
    const size_t bytes = elems * op->esize;
    const char *in = op->recv.in != NULL ? op->recv.in + at * op->esize : NULL;
    switch (op->recv.action) {
    case ACT_REDUCE_MINE_FIRST: /* dst = mine op data */
        reduce_mine_first(op, dst, in, data, elems);
        break;
    case ACT_REDUCE_THEIRS_FIRST: /* dst = data op mine: the lower-ranked operand first */
        reduce_theirs_first(op, dst, in, data, elems);
        break;
    case ACT_COPY:
        memcpy(dst, data, bytes);
        break;
    default:
        break;
    }
}

/* Applying a message as it arrives (transports that can, see recv_post): the same three actions
 * as process(). */
static const char *land_input(const nvf_inter_op_t *op, const void *dst)
{
    return op->recv.in != NULL ? op->recv.in + ((const char *)dst - op->recv.ptr) : NULL;
}

static void land_reduce(void *arg, void *dst, const void *src, size_t bytes)
{
    const nvf_inter_op_t *op = arg;
    reduce_mine_first(op, dst, land_input(op, dst), src, bytes / op->esize);
}

static void land_reduce_rev(void *arg, void *dst, const void *src, size_t bytes)
{
    const nvf_inter_op_t *op = arg;
    reduce_theirs_first(op, dst, land_input(op, dst), src, bytes / op->esize);
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

/* Whether the received data may be written into [c0, c1) now. Recursive doubling sends and
 * receives the same region: a received chunk may be folded in only once the part of my send it
 * overlaps has been put on the wire, and once the puts that read it have completed. */
static bool writable(nvf_inter_op_t *op, const nvf_transport_t *tp, const char *c0, const char *c1)
{
    const nvf_inter_xfer_t *s = &op->send;
    if (s->peer >= 0 && s->issued < s->elems) {
        const char *u0 = s->ptr + s->issued * op->esize, *u1 = s->ptr + s->elems * op->esize;
        if (c0 < u1 && u0 < c1)
            return false;
    }
    return !pend_overlaps(op, c0, c1) || pend_settle(op, tp);
}

/* Posts in-place landings for the next messages of the current receive (as many as the
 * transport's window takes), each once its region may be written: the transport then applies
 * them as they arrive, any time until they are released. */
static void post_landings(nvf_inter_op_t *op, const nvf_transport_t *tp, size_t chunk)
{
    nvf_inter_xfer_t *r = &op->recv;
    if (r->action == ACT_NONE)
        return;
    const nvf_land_fn_t fn = r->action == ACT_REDUCE_MINE_FIRST     ? land_reduce
                             : r->action == ACT_REDUCE_THEIRS_FIRST ? land_reduce_rev
                                                                    : NULL;
    /* messages stay posted until released: start after the last one posted */
    size_t at = r->posted > r->issued ? r->posted : r->issued;
    for (size_t ahead = (at - r->issued) / chunk; ahead < NVF_INTER_NSLOTS && at < r->elems;
         ahead++) {
        size_t n = r->elems - at < chunk ? r->elems - at : chunk;
        char *c0 = r->ptr + at * op->esize, *c1 = c0 + n * op->esize;
        if (!writable(op, tp, c0, c1) ||
            !tp->recv_post(tp->ctx, op->rail->rank_of[r->peer], (unsigned)ahead, c0, n * op->esize,
                           op->esize, fn, op))
            return;
        at += n;
        r->posted = at;
    }
}

static nvf_status_t fail(nvf_inter_op_t *op, nvf_status_t st)
{
    nvf_inter_abort(op);
    return st;
}

void nvf_inter_abort(nvf_inter_op_t *op)
{
    const nvf_transport_t *tp = &op->rail->tp;
    if (tp->recv_unpost != NULL && op->step_ready && op->recv.peer >= 0)
        tp->recv_unpost(tp->ctx, op->rail->rank_of[op->recv.peer]);
}

/* Elements per message of a transfer of `elems`: the slot's worth; on rails with a smallest
 * message (large put slots), a quarter of the transfer where that lies between the two, so that
 * a step's part still flows as several messages (the receiver reduces one while the next
 * arrives). Sender and receiver of a transfer split it alike: both know its size. */
static size_t msg_elems(const nvf_inter_op_t *op, size_t elems)
{
    const size_t max = op->rail->slot_bytes / op->esize, min = op->rail->min_msg_bytes / op->esize;
    if (max == 0)
        return 1;
    if (min == 0 || min >= max)
        return max;
    size_t part = (elems + NVF_INTER_MSG_PARTS - 1) / NVF_INTER_MSG_PARTS;
    part = part < min ? min : part;
    return part < max ? part : max;
}

nvf_status_t nvf_inter_progress(nvf_inter_op_t *op, bool *done)
{
    const nvf_rail_t *rail = op->rail;
    const nvf_transport_t *tp = &rail->tp;
    nvf_status_t st;
    *done = false;
    tp->progress(tp->ctx);
    while (op->step < op->nsteps) {
        if (!op->step_ready) {
            plan_step(op);
            op->step_ready = true;
        }
        nvf_inter_xfer_t *s = &op->send, *r = &op->recv;
        const size_t chunk = msg_elems(op, s->elems), rchunk = msg_elems(op, r->elems);
        while (s->peer >= 0 && s->issued < s->elems) {
            size_t n = s->elems - s->issued < chunk ? s->elems - s->issued : chunk;
            const char *lo = s->ptr + s->issued * op->esize, *hi = lo + n * op->esize;
            if (!pend_add(op, lo, hi) && !(pend_settle(op, tp) && pend_add(op, lo, hi)))
                break; /* too many ranges in flight: wait for some to complete */
            bool started = false;
            st = tp->send(tp->ctx, rail->rank_of[s->peer], lo, n * op->esize, &started);
            if (st != NVF_OK)
                return fail(op, st);
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
        if (tp->recv_post != NULL && r->peer >= 0)
            post_landings(op, tp, rchunk);
        while (r->peer >= 0 && r->issued < r->elems) {
            const void *data;
            if (!tp->recv_test(tp->ctx, rail->rank_of[r->peer], &data))
                break;
            size_t n = r->elems - r->issued < rchunk ? r->elems - r->issued : rchunk;
            if (data != NULL) { /* NULL: applied in place as it arrived */
                const char *c0 = r->ptr + r->issued * op->esize, *c1 = c0 + n * op->esize;
                if (!writable(op, tp, c0, c1))
                    break;
                process(op, data, r->issued, n);
            }
            st = tp->recv_release(tp->ctx, rail->rank_of[r->peer]);
            if (st != NVF_OK)
                return fail(op, st);
            r->issued += n;
        }
        if (tp->failed(tp->ctx))
            return fail(op, NVF_ERR_UCX);
        if ((s->peer >= 0 && s->issued < s->elems) || (r->peer >= 0 && r->issued < r->elems))
            return NVF_OK; /* not yet */
        op->step++;
        op->step_ready = false;
    }
    /* the caller may reuse buf once no put reads from it */
    *done = pend_settle(op, tp);
    return NVF_OK;
}
