/*
 * nvf_sched.c: the scheduler: runs one allreduce as a pipeline of blocks through the stages of
 * its plan. The hot path of the engine; setup and teardown live in nvf_comm.c.
 *
 * Each block has a sequence number (monotonic per communicator, the same on every local rank)
 * and uses buffer set seq % nsets of the node's segment. Per block and rank:
 *   copy-in   my input of the block into my input slot (two-shot: except the part I reduce
 *             myself), then publish in_seq;
 *   reduce    once every local rank published the block: my part, over every local rank's
 *             input in local-rank order, into the result slot (one-shot: all of it, straight
 *             into recvbuf);
 *   inter     (several nodes) my part allreduced with my rail peers, in place in the result
 *             slot; at most one block at a time, in block order;
 *   publish   res_seq;
 *   copy-out  once every local rank published: the whole block from the result slot into
 *             recvbuf, then done_seq (the set may be reused once every rank is done with it).
 * Up to plan->depth blocks are in flight, so block k's inter-node step overlaps block k+1's
 * copy-in and reduction and block k-1's copy-out. Waits are tests in one loop that spins,
 * drives UCX, and yields the core after cfg.spin_before_yield idle rounds (oversubscribed runs).
 * Device buffers (the staged device path) go through the segment with CUDA copies: the input is
 * copied whole into the input slot, the result out of the segment. The copies are queued on the
 * device's stream with an event after each (nvf_stage_copy_start), so that the blocks in flight
 * overlap them with the host's reductions: a block publishes in_seq (done_seq) once its copy in
 * (out) has landed and the block before it has published the same flag. Plans for large messages
 * (plan->stream) write results into a host recvbuf with streaming stores (nvf_copy.h): nobody
 * reads it before the call returns, and the inputs stay in the cache.
 * With one rank per node (the direct plan) there is nothing to do within a node: the rail's
 * allreduce runs alone, reading the send buffer and writing the receive buffer.
 */
#include "nvf_internal.h"
#include "nvf_log.h"
#include "nvf_cma.h"
#include "nvf_reduce.h"
#include "nvf_copy.h"
#include "cuda/nvf_cuda.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

enum blk_state { B_COPYIN, B_REDUCE, B_INTER, B_PUBLISH, B_COPYOUT, B_DONE };

typedef struct blk {
    uint64_t seq;
    size_t first;  /* first element of the call in this block */
    size_t n;      /* elements in this block */
    size_t lo, hi; /* my part of the block */
    int set;
    int slot;     /* its place in the pipeline (0 .. depth-1): which events its copies use */
    bool copying; /* staged device path: its copy in (or out) is queued on the device's stream */
    enum blk_state state;
} blk_t;

#define NVF_MAX_DEPTH 64
#define NVF_CACHE_GRANULE 64

static bool all_at_least(const nvf_shm_t *shm, size_t flag_offset, uint64_t seq)
{
    for (int r = 0; r < shm->nlocal; r++) {
        const _Atomic uint64_t *f =
            (const _Atomic uint64_t *)((const char *)&shm->ctrl[r] + flag_offset);
        if (atomic_load_explicit(f, memory_order_acquire) < seq)
            return false;
    }
    return true;
}

#define IN_SEQ offsetof(nvf_shm_ctrl_t, in_seq)
#define RES_SEQ offsetof(nvf_shm_ctrl_t, res_seq)
#define DONE_SEQ offsetof(nvf_shm_ctrl_t, done_seq)

static void publish(nvf_flag_t *flag, uint64_t seq)
{
    atomic_store_explicit(&flag->v, seq, memory_order_release);
}

/* My part [lo, hi) of a block of n elements: EVEN splits in cache-line granules so that no two
 * ranks write the same line of the result slot; LEADER gives everything to local rank 0. */
static void my_part(const nvf_plan_t *plan, int me, int L, size_t n, size_t esize, size_t *lo,
                    size_t *hi)
{
    if (plan->alg == NVF_ALG_ONESHOT ||
        (plan->alg == NVF_ALG_HIER && plan->split == NVF_SPLIT_LEADER)) {
        *lo = 0;
        *hi = (me == 0 || plan->alg == NVF_ALG_ONESHOT) ? n : 0;
        return;
    }
    size_t g = NVF_CACHE_GRANULE / esize;
    if (g == 0)
        g = 1;
    size_t units = (n + g - 1) / g, base = units / (size_t)L, extra = units % (size_t)L;
    size_t um = (size_t)me;
    size_t first_unit = um * base + (um < extra ? um : extra);
    size_t my_units = base + (um < extra ? 1 : 0);
    *lo = first_unit * g < n ? first_unit * g : n;
    *hi = (first_unit + my_units) * g < n ? (first_unit + my_units) * g : n;
}

/* The events of a block's queued copies: in (slot) and out (NVF_MAX_DEPTH + slot). */
#define EV_IN(b) ((b)->slot)
#define EV_OUT(b) (NVF_MAX_DEPTH + (b)->slot)

typedef struct run {
    nvf_comm_t *c;
    const nvf_plan_t *plan;
    const char *in;
    char *out;
    nvf_dtype_t dt;
    nvf_op_t op;
    size_t esize;
    int me, L;
    bool hier;
    bool in_dev;  /* the input is device memory: copied whole into my input slot */
    bool out_dev; /* the output is device memory: the result is copied out of the segment */
    nvf_cuda_dev_t *in_cu, *out_cu; /* the devices whose streams copy them (asked once a call) */
    bool cma;    /* single copies: peers' inputs read and my results written by CMA */
    bool stream; /* results into a host recvbuf with streaming stores */
    nvf_inter_op_t iop;
    bool iop_started;
} run_t;

/* Result bytes into my (host) receive buffer. */
static void copy_out(const run_t *r, char *dst, const char *src, size_t len)
{
    if (r->stream)
        nvf_copy_stream(dst, src, len);
    else
        memcpy(dst, src, len);
}

/* My finished part of block b (at res) into every peer's receive buffer. */
static nvf_status_t cma_scatter(run_t *r, const blk_t *b, const char *res)
{
    const nvf_shm_t *shm = &r->c->shm;
    const size_t e = r->esize, off = (b->first + b->lo) * e, len = (b->hi - b->lo) * e;
    for (int k = 0; k < r->L; k++) {
        if (k == r->me)
            continue;
        const nvf_shm_call_t *peer = &shm->ctrl[k].call;
        nvf_status_t st = nvf_cma_write((pid_t)peer->pid, peer->out_addr + off, res, len);
        if (st != NVF_OK) {
            nvf_error("process_vm_writev to local rank %d failed: %s", k, strerror(errno));
            return st;
        }
    }
    return NVF_OK;
}

/* The single-copy reduce of my part of block b: read it from every peer's buffer (CMA), reduce
 * with mine in local-rank order into my receive buffer, then write it into every peer's receive
 * buffer (cma_scatter). Hierarchical: into the result slot instead, for the inter-node stage;
 * written out once that is done. A peer's part is read in full before it is overwritten (in
 * place, its receive buffer is its input); nobody else reads or writes that part of its buffers.
 */
static nvf_status_t cma_reduce(run_t *r, const blk_t *b)
{
    const nvf_shm_t *shm = &r->c->shm;
    const size_t e = r->esize, off = (b->first + b->lo) * e, len = (b->hi - b->lo) * e;
    const void *srcs[NVF_MAX_LOCAL];
    char *tmp = r->c->cma_tmp;
    for (int k = 0; k < r->L; k++) {
        if (k == r->me) {
            srcs[k] = r->in + off;
            continue;
        }
        const nvf_shm_call_t *peer = &shm->ctrl[k].call;
        nvf_status_t st = nvf_cma_read((pid_t)peer->pid, tmp, peer->in_addr + off, len);
        if (st != NVF_OK) {
            nvf_error("process_vm_readv from local rank %d failed: %s", k, strerror(errno));
            return st;
        }
        srcs[k] = tmp;
        tmp += (len + 63) / 64 * 64;
    }
    if (r->hier) {
        nvf_reduce_many(r->dt, r->op, nvf_shm_res(shm, b->set) + b->lo * e, srcs, r->L,
                        b->hi - b->lo);
        return NVF_OK;
    }
    /* straight into my receive buffer (in place, over my own input: the loop stages each piece
     * where that matters); nobody reads the segment's result slot on this path */
    nvf_reduce_many_over(r->dt, r->op, r->out + off, srcs, r->L, b->hi - b->lo);
    return cma_scatter(r, b, r->out + off);
}

/* The single-copy path needs every local rank's buffers in host memory: each says where its
 * buffers are and whether they are host memory, and waits for the others (one flag round). */
static nvf_status_t cma_agree(run_t *r, uint64_t seq0, bool *all_host)
{
    const nvf_shm_t *shm = &r->c->shm;
    nvf_shm_call_t *mine = &shm->ctrl[r->me].call;
    mine->in_addr = (uint64_t)(uintptr_t)r->in;
    mine->out_addr = (uint64_t)(uintptr_t)r->out;
    mine->host = !r->in_dev && !r->out_dev;
    atomic_store_explicit(&mine->seq, seq0, memory_order_release);
    *all_host = true;
    for (int k = 0; k < r->L; k++) {
        const nvf_shm_call_t *peer = &shm->ctrl[k].call;
        unsigned spins = 0;
        while (atomic_load_explicit(&peer->seq, memory_order_acquire) < seq0) {
            if (++spins >= (unsigned)r->c->cfg.spin_before_yield) {
                spins = 0;
                sched_yield();
                if (atomic_load_explicit(&shm->hdr->failed, memory_order_acquire))
                    return NVF_ERR_PEER;
            }
        }
        *all_host = *all_host && peer->host;
    }
    return NVF_OK;
}

/* Block b's queued copy through event ev: started the first time (*started), then polled
 * (*landed). b->copying stays set until the caller has published what the copy made. */
static nvf_status_t block_copy(run_t *r, blk_t *b, int ev, nvf_cuda_dev_t *dev, void *dst,
                               const void *src, size_t bytes, bool *started, bool *landed)
{
    *started = !b->copying;
    if (*started) {
        nvf_status_t st = nvf_stage_copy_start(r->c, ev, dev, dst, src, bytes);
        if (st != NVF_OK)
            return st;
        b->copying = true;
    }
    return nvf_stage_copy_done(r->c, ev, landed);
}

/* The copy-out of block b to a device recvbuf: queued once every local rank published the
 * block's results; done_seq once it landed and the block before is done. */
static nvf_status_t copy_out_dev(run_t *r, blk_t *b, enum blk_state prev, bool *moved)
{
    const nvf_shm_t *shm = &r->c->shm;
    if (!b->copying && r->L > 1 && !all_at_least(shm, RES_SEQ, b->seq))
        return NVF_OK;
    bool started, landed;
    nvf_status_t st = block_copy(r, b, EV_OUT(b), r->out_cu, r->out + b->first * r->esize,
                                 nvf_shm_res(shm, b->set), b->n * r->esize, &started, &landed);
    if (st != NVF_OK)
        return st;
    if (!landed || prev != B_DONE) {
        *moved = started;
        return NVF_OK;
    }
    b->copying = false;
    publish(&shm->ctrl[r->me].done_seq, b->seq);
    b->state = B_DONE;
    *moved = true;
    return NVF_OK;
}

/* One step of block b (*moved: it changed state). prev is the state of the block before it
 * (B_DONE for the oldest): a flag says "every block up to this one", so a block publishes a
 * flag only after the block before it has published the same one. */
static nvf_status_t advance(run_t *r, blk_t *b, enum blk_state prev, bool inter_turn, bool *moved)
{
    const nvf_shm_t *shm = &r->c->shm;
    nvf_shm_ctrl_t *mine = &shm->ctrl[r->me];
    const size_t e = r->esize;
    *moved = false;
    switch (b->state) {
    case B_COPYIN: {
        char *slot = nvf_shm_in(shm, b->set, r->me);
        const char *src = r->in + b->first * e;
        if (r->cma) {
            /* nothing to copy: the peers read my part of their parts from my buffer */
        } else if (r->in_dev) {
            bool started, landed;
            nvf_status_t st =
                block_copy(r, b, EV_IN(b), r->in_cu, slot, src, b->n * e, &started, &landed);
            if (st != NVF_OK)
                return st;
            if (!landed || prev == B_COPYIN) {
                *moved = started;
                return NVF_OK;
            }
            b->copying = false;
        } else if (r->plan->alg == NVF_ALG_ONESHOT) {
            memcpy(slot, src, b->n * e);
        } else if (r->L > 1) {
            /* everything but my own part, which I read from the user's buffer */
            memcpy(slot, src, b->lo * e);
            memcpy(slot + b->hi * e, src + b->hi * e, (b->n - b->hi) * e);
        }
        publish(&mine->in_seq, b->seq);
        b->state = B_REDUCE;
        *moved = true;
        return NVF_OK;
    }
    case B_REDUCE: {
        const bool oneshot = r->plan->alg == NVF_ALG_ONESHOT;
        if (r->cma && b->hi > b->lo) {
            if (!all_at_least(shm, IN_SEQ, b->seq))
                return NVF_OK;
            nvf_status_t st = cma_reduce(r, b);
            if (st != NVF_OK)
                return st;
        } else if (b->hi > b->lo || oneshot) {
            if (r->L > 1 && !all_at_least(shm, IN_SEQ, b->seq))
                return NVF_OK;
            const void *srcs[NVF_MAX_LOCAL];
            for (int k = 0; k < r->L; k++)
                srcs[k] = (!oneshot && !r->in_dev && k == r->me)
                              ? r->in + (b->first + b->lo) * e
                              : nvf_shm_in(shm, b->set, k) + b->lo * e;
            char *res = nvf_shm_res(shm, b->set) + b->lo * e;
            if (oneshot && !r->out_dev) {
                nvf_reduce_many(r->dt, r->op, r->out + b->first * e, srcs, r->L, b->n);
            } else if (oneshot) { /* through private host memory, then to the device (every
                                   * rank reduces all of it: the result slot is not mine) */
                char *stage = nvf_comm_stage(r->c);
                if (stage == NULL)
                    return NVF_ERR_NOMEM;
                nvf_reduce_many(r->dt, r->op, stage, srcs, r->L, b->n);
                nvf_status_t st = nvf_stage_copy(r->out_cu, r->out + b->first * e, stage, b->n * e);
                if (st != NVF_OK)
                    return st;
            } else if (r->hier || r->out_dev) { /* the others (or a copy) take it from there */
                nvf_reduce_many(r->dt, r->op, res, srcs, r->L, b->hi - b->lo);
            } else { /* final: into the result slot for the others, and into my recvbuf */
                nvf_reduce_many2(r->dt, r->op, res, r->out + (b->first + b->lo) * e, srcs, r->L,
                                 b->hi - b->lo, r->stream);
            }
        }
        if (oneshot)
            b->state = B_COPYOUT; /* nothing to copy: only done_seq to publish, in order */
        else
            b->state = (r->hier && b->hi > b->lo) ? B_INTER : B_PUBLISH;
        *moved = true;
        return NVF_OK;
    }
    case B_INTER: {
        if (!inter_turn)
            return NVF_OK;
        if (!r->iop_started) {
            nvf_inter_start(&r->iop, &r->c->rail, r->plan->inter, NULL,
                            nvf_shm_res(shm, b->set) + b->lo * e, b->hi - b->lo, r->dt, r->op);
            r->iop_started = true;
        }
        bool done = false;
        nvf_status_t st = nvf_inter_progress(&r->iop, &done);
        if (st != NVF_OK)
            return st;
        if (done) {
            r->iop_started = false;
            b->state = B_PUBLISH;
            *moved = true;
        }
        return NVF_OK;
    }
    case B_PUBLISH:
        if (prev < B_COPYOUT)
            return NVF_OK;
        if (r->cma && r->hier && b->hi > b->lo) { /* my finished part, to everyone */
            const char *res = nvf_shm_res(shm, b->set) + b->lo * e;
            copy_out(r, r->out + (b->first + b->lo) * e, res, (b->hi - b->lo) * e);
            nvf_status_t st = cma_scatter(r, b, res);
            if (st != NVF_OK)
                return st;
        }
        publish(&mine->res_seq, b->seq);
        b->state = B_COPYOUT;
        *moved = true;
        return NVF_OK;
    case B_COPYOUT:
        if (r->out_dev && r->plan->alg != NVF_ALG_ONESHOT) /* (the CMA path is host-only) */
            return copy_out_dev(r, b, prev, moved);
        if (prev != B_DONE)
            return NVF_OK;
        if (r->cma) {
            if (!all_at_least(shm, RES_SEQ, b->seq))
                return NVF_OK; /* each rank writes its part into my buffer itself */
        } else if (r->plan->alg != NVF_ALG_ONESHOT) {
            if (r->L > 1 && !all_at_least(shm, RES_SEQ, b->seq))
                return NVF_OK;
            const char *res = nvf_shm_res(shm, b->set);
            char *out = r->out + b->first * e;
            if (r->hier) {
                copy_out(r, out, res, b->n * e);
            } else { /* my own part is in recvbuf already */
                copy_out(r, out, res, b->lo * e);
                copy_out(r, out + b->hi * e, res + b->hi * e, (b->n - b->hi) * e);
            }
        }
        publish(&mine->done_seq, b->seq);
        b->state = B_DONE;
        *moved = true;
        return NVF_OK;
    case B_DONE:
        return NVF_OK;
    }
    return NVF_OK;
}

/* A call that stops early: nothing may land in the segment or the user's buffers once it has
 * returned (the rail's transfers, the queued copies). */
static void stop_run(run_t *r)
{
    if (r->iop_started)
        nvf_inter_abort(&r->iop);
    r->iop_started = false;
    nvf_stage_drain(r->in_cu, r->out_cu);
}

/* One rank per node: the rail's allreduce of in into buf (in == buf: in place). */
static nvf_status_t direct_rail(nvf_comm_t *c, const nvf_plan_t *plan, const void *in, void *buf,
                                size_t count, nvf_dtype_t dt, nvf_op_t op)
{
    nvf_inter_op_t iop;
    nvf_inter_start(&iop, &c->rail, plan->inter, in, buf, count, dt, op);
    unsigned spins = 0;
    for (;;) {
        bool done = false;
        nvf_status_t st = nvf_inter_progress(&iop, &done);
        if (st != NVF_OK) {
            nvf_error("inter-node stage failed (plan %s): %s (%s)", plan->name, nvf_status_str(st),
                      nvf_rail_last_error());
            return st;
        }
        if (done)
            return NVF_OK;
        if (++spins >= (unsigned)c->cfg.spin_before_yield) {
            spins = 0;
            sched_yield(); /* oversubscribed: let the peers run */
        }
    }
}

/* The direct plan runs large calls as a few pieces (plan->block_elems each; nvf_plan.h), each
 * one allreduce of the rail, so that device data's copies overlap the rail's work: every
 * piece's copy to the host is queued at once, piece k is allreduced between nodes as soon as it
 * has landed (while later pieces still copy), and copied back while piece k+1 is allreduced.
 * Host calls are cut alike: in one call some ranks may pass host and others device memory, and
 * the rail's peers must run the same sequence of allreduces; every rank cuts a call the same
 * way, so results stay the same on every rank and every run. */
typedef struct pieces {
    size_t n;   /* how many */
    size_t per; /* elements in each but the last */
} pieces_t;

/* Events of a staged piece's copies: in k, out PIECE_EV_OUT + k. */
#define PIECE_EV_OUT (NVF_STAGE_EVENTS / 2)

static pieces_t direct_pieces(const nvf_plan_t *plan, size_t count)
{
    size_t per = plan->block_elems > 0 && plan->block_elems < count ? plan->block_elems : count;
    if (per > 0 && (count + per - 1) / per > PIECE_EV_OUT) /* (never from nvf_plan_choose) */
        per = (count + PIECE_EV_OUT - 1) / PIECE_EV_OUT;
    return (pieces_t){per > 0 ? (count + per - 1) / per : 1, per};
}

/* Piece k of a call of count elements: its first element, *n its elements. */
static size_t piece_at(pieces_t p, size_t k, size_t count, size_t *n)
{
    const size_t first = k * p.per < count ? k * p.per : count;
    *n = count - first < p.per ? count - first : p.per;
    return first;
}

/* Until the copies queued up to c's event `slot` have landed, driving the rail meanwhile (the
 * peers may be sending). */
static nvf_status_t wait_copies(nvf_comm_t *c, int slot)
{
    unsigned spins = 0;
    for (;;) {
        bool landed;
        nvf_status_t st = nvf_stage_copy_done(c, slot, &landed);
        if (st != NVF_OK || landed)
            return st;
        if (c->have_rail)
            nvf_rail_progress(&c->rail);
        if (++spins >= (unsigned)c->cfg.spin_before_yield) {
            spins = 0;
            sched_yield();
        }
    }
}

/* The direct plan on device buffers (either or both): through a host copy, in pieces (above);
 * page-locked and kept for later calls where the driver gives it, so that the copies are
 * direct DMA and queued without blocking. */
static nvf_status_t direct_staged(nvf_comm_t *c, const nvf_plan_t *plan, const void *in, void *rbuf,
                                  size_t count, nvf_dtype_t dt, nvf_op_t op,
                                  const nvf_call_mem_t *mem)
{
    const size_t esize = nvf_dtype_size(dt), bytes = count * esize;
    const pieces_t pc = direct_pieces(plan, count);
    nvf_cuda_dev_t *in_cu = NULL, *out_cu = NULL;
    nvf_status_t st = nvf_stage_devs(c, mem, &in_cu, &out_cu);
    if (st != NVF_OK)
        return st;
    const bool in_dev = in_cu != NULL, out_dev = out_cu != NULL;
    char *owned = NULL, *tmp = nvf_stage_pinned(c, in_dev ? in_cu : out_cu, bytes ? bytes : 1);
    if (tmp == NULL)
        tmp = owned = malloc(bytes ? bytes : 1);
    if (tmp == NULL)
        return NVF_ERR_NOMEM;
    if (!in_dev)
        memcpy(tmp, in, bytes);
    for (size_t k = 0; k < pc.n && in_dev && st == NVF_OK; k++) {
        size_t n, first = piece_at(pc, k, count, &n);
        st = nvf_stage_copy_start(c, (int)k, in_cu, tmp + first * esize,
                                  (const char *)in + first * esize, n * esize);
    }
    for (size_t k = 0; k < pc.n && st == NVF_OK; k++) {
        size_t n, first = piece_at(pc, k, count, &n);
        char *piece = tmp + first * esize;
        if (in_dev)
            st = wait_copies(c, (int)k);
        if (st == NVF_OK)
            st = direct_rail(c, plan, piece, piece, n, dt, op);
        if (st == NVF_OK && out_dev)
            st = nvf_stage_copy_start(c, PIECE_EV_OUT + (int)k, out_cu,
                                      (char *)rbuf + first * esize, piece, n * esize);
    }
    if (st == NVF_OK && out_dev) /* the last piece's copy back, and so every one before it */
        st = wait_copies(c, PIECE_EV_OUT + (int)pc.n - 1);
    else if (st == NVF_OK)
        memcpy(rbuf, tmp, bytes);
    if (st != NVF_OK) /* nothing may land in tmp or rbuf once the call has returned */
        nvf_stage_drain(in_cu, out_cu);
    free(owned);
    return st;
}

/* The direct plan: from the send buffer straight into the receive buffer, piece by piece. */
static nvf_status_t direct_run(nvf_comm_t *c, const nvf_plan_t *plan, const void *sbuf, void *rbuf,
                               size_t count, nvf_dtype_t dt, nvf_op_t op, const nvf_call_mem_t *mem)
{
    const void *in = sbuf != NULL ? sbuf : rbuf;
    if (mem != NULL)
        return direct_staged(c, plan, in, rbuf, count, dt, op, mem);
    const size_t esize = nvf_dtype_size(dt);
    const pieces_t pc = direct_pieces(plan, count);
    nvf_status_t st = NVF_OK;
    for (size_t k = 0; k < pc.n && st == NVF_OK; k++) {
        size_t n, first = piece_at(pc, k, count, &n);
        st = direct_rail(c, plan, (const char *)in + first * esize, (char *)rbuf + first * esize, n,
                         dt, op);
    }
    return st;
}

nvf_status_t nvf_sched_run(nvf_comm_t *c, const nvf_plan_t *plan, const void *sbuf, void *rbuf,
                           size_t count, nvf_dtype_t dt, nvf_op_t op, const nvf_call_mem_t *mem)
{
    if (plan->alg == NVF_ALG_DIRECT)
        return direct_run(c, plan, sbuf, rbuf, count, dt, op, mem);
    nvf_shm_t *shm = &c->shm;
    run_t r = {0};
    r.c = c;
    r.plan = plan;
    r.in = sbuf ? (const char *)sbuf : (const char *)rbuf;
    r.out = (char *)rbuf;
    r.dt = dt;
    r.op = op;
    r.esize = nvf_dtype_size(dt);
    r.me = c->topo.local_rank;
    r.L = c->topo.local_size;
    r.hier = plan->alg == NVF_ALG_HIER && c->topo.nnodes > 1;
    if (nvf_stage_devs(c, mem, &r.in_cu, &r.out_cu) != NVF_OK) {
        atomic_store_explicit(&shm->hdr->failed, 1, memory_order_release); /* peers stop too */
        return NVF_ERR_CUDA;
    }
    r.in_dev = r.in_cu != NULL;
    r.out_dev = r.out_cu != NULL;
    r.stream = plan->stream && !r.out_dev;

    size_t blk_elems = plan->block_elems;
    if (blk_elems * r.esize > shm->block_bytes)
        blk_elems = shm->block_bytes / r.esize;
    const size_t nblocks = (count + blk_elems - 1) / blk_elems;
    int depth = plan->depth < shm->nsets ? plan->depth : shm->nsets;
    if (depth > NVF_MAX_DEPTH)
        depth = NVF_MAX_DEPTH;
    if (depth < 1)
        depth = 1;
    const uint64_t seq0 = c->seq + 1;
    c->seq += nblocks;
    if (plan->cma) { /* every local rank agrees, from what each says of its buffers */
        bool all_host = false;
        nvf_status_t st = cma_agree(&r, seq0, &all_host);
        if (st != NVF_OK)
            return st;
        r.cma = all_host;
    }

    blk_t blocks[NVF_MAX_DEPTH];
    size_t head = 0, next = 0, inter_turn = 0;
    unsigned idle = 0;
    unsigned long idle_rounds = 0;
    double stall_since = 0;
    bool warned = false;
    while (head < nblocks) {
        bool progressed = false;
        /* start the next block once its buffer set is free on every local rank */
        if (next < nblocks && next - head < (size_t)depth) {
            uint64_t seq = seq0 + next;
            if (seq <= (uint64_t)shm->nsets ||
                all_at_least(shm, DONE_SEQ, seq - (uint64_t)shm->nsets)) {
                blk_t *b = &blocks[next % (size_t)depth];
                b->seq = seq;
                b->set = (int)(seq % (uint64_t)shm->nsets);
                b->first = next * blk_elems;
                b->n = count - b->first < blk_elems ? count - b->first : blk_elems;
                my_part(plan, r.me, r.L, b->n, r.esize, &b->lo, &b->hi);
                b->slot = (int)(next % (size_t)depth);
                b->copying = false;
                b->state = B_COPYIN;
                next++;
                progressed = true;
            }
        }
        for (size_t i = head; i < next; i++) {
            blk_t *b = &blocks[i % (size_t)depth];
            enum blk_state prev = i == head ? B_DONE : blocks[(i - 1) % (size_t)depth].state;
            bool moved;
            /* advance as far as it goes without waiting */
            do {
                nvf_status_t st = advance(&r, b, prev, i == inter_turn, &moved);
                if (st != NVF_OK) {
                    stop_run(&r);
                    atomic_store_explicit(&shm->hdr->failed, 1, memory_order_release);
                    nvf_error("stage of block %llu failed: %s (%s)", (unsigned long long)b->seq,
                              nvf_status_str(st),
                              st == NVF_ERR_UCX ? nvf_rail_last_error() : nvf_cuda_last_error());
                    return st;
                }
                progressed |= moved;
            } while (moved && b->state != B_DONE);
            while (inter_turn < next && blocks[inter_turn % (size_t)depth].state > B_INTER)
                inter_turn++;
        }
        while (head < next && blocks[head % (size_t)depth].state == B_DONE)
            head++;
        if (progressed) {
            idle = 0;
            idle_rounds = 0;
            continue;
        }
        /* nothing moved: let the peers (and UCX) run */
        if (c->have_rail)
            nvf_rail_progress(&c->rail);
        if (++idle >= (unsigned)c->cfg.spin_before_yield) {
            idle = 0;
            sched_yield();
        }
        if ((++idle_rounds & 0xfffff) == 0) {
            if (atomic_load_explicit(&shm->hdr->failed, memory_order_acquire)) {
                stop_run(&r);
                return NVF_ERR_PEER;
            }
            double t = 1e-6 * nvf_now_us();
            if (stall_since == 0)
                stall_since = t;
            else if (!warned && t - stall_since > 60) {
                warned = true;
                nvf_error("rank %d waited 60 s for its node's ranks in MPI_Allreduce (block %llu "
                          "of plan %s). If ranks pass buffers of different memory kinds (host "
                          "and device) to the same call, coll_nvfabric_host=off and "
                          "coll_nvfabric_cuda_ipc=true need them alike.",
                          c->topo.rank, (unsigned long long)blocks[head % (size_t)depth].seq,
                          plan->name);
            }
        }
    }
    if (r.stream) /* the streamed result is ordered before whatever the caller does next */
        nvf_copy_stream_fence();
    return NVF_OK;
}
