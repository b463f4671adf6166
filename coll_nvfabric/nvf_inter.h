/*
 * nvf_inter.h: the inter-node stage: an allreduce of one buffer among the rail peers (the
 * ranks with the same local index on every node), over UCX channels (ucx_glue/).
 *
 * Written as a state machine so that the scheduler can overlap it with intra-node work:
 * nvf_inter_start() sets it up, nvf_inter_progress() advances it without blocking. Algorithms:
 * recursive doubling (with the fold for a non-power-of-two rail) and ring reduce-scatter +
 * all-gather. Both give every peer the same bits: each partial sum is computed once, or by both
 * partners with the same operand order.
 */
#ifndef NVF_INTER_H
#define NVF_INTER_H

#include "nvf.h"
#include "nvf_plan.h"
#include "nvf_reduce.h"

/* Applies bytes of a received message at dst (a copy or a reduction), see recv_post. */
typedef void (*nvf_land_fn_t)(void *arg, void *dst, const void *src, size_t bytes);

/* The channel primitives the algorithms run on (ucx_glue/ in production, an in-memory
 * transport in the unit tests). Peers are communicator ranks; semantics as in nvf_ucx.h. */
typedef struct nvf_transport {
    nvf_status_t (*send)(void *ctx, int peer, const void *src, size_t len, bool *started);
    bool (*send_idle)(void *ctx, bool released);
    bool (*recv_test)(void *ctx, int peer, const void **data);
    nvf_status_t (*recv_release)(void *ctx, int peer);
    void (*progress)(void *ctx);
    bool (*failed)(void *ctx);
    /* optional (NULL: messages always land in slots): receiving in place, see
     * nvf_ucx_recv_post / nvf_ucx_recv_unpost; recv_test then gives *data NULL */
    bool (*recv_post)(void *ctx, int peer, unsigned ahead, void *dst, size_t cap, size_t granule,
                      nvf_land_fn_t fn, void *arg);
    void (*recv_unpost)(void *ctx, int peer);
    void *ctx;
} nvf_transport_t;

/* A rail: my peers for the inter-node stage, and the channels to them. */
typedef struct nvf_rail {
    int p;                /* peers on the rail (one per node) */
    int me;               /* my index on the rail */
    int *rank_of;         /* [p] communicator rank of each rail index (the transport's peer ids) */
    size_t slot_bytes;    /* the largest message (the algorithms split their parts into these) */
    size_t min_msg_bytes; /* 0, or messages may be smaller than slot_bytes down to this, so
                           * that a step's part goes as NVF_INTER_MSG_PARTS messages */
    bool any_am;          /* some rank of the communicator sends over its rail by active messages */
    nvf_transport_t tp;
    void *owner; /* what nvf_rail_close frees (nvf_rail.c) */
} nvf_rail_t;

#define NVF_INTER_NSLOTS 4

/* coll_nvfabric_inter_slot_size 0 (auto): rails whose channels all write by RDMA put move
 * messages of up to NVF_RAIL_PUT_SLOT_MAX bytes, as far as a rank's receive slots stay within
 * NVF_RAIL_SLOT_BUDGET bytes (nvf_rail_put_slot_bytes); where any channel of the communicator
 * sends by active messages (tcp), messages of NVF_RAIL_AM_SLOT_BYTES. Measured 2026-12-07 on the
 * 2-core VM, 4 virtual nodes of 1 rank: over shared memory, 16 MiB took 15-46 ms with 256 KiB
 * slots and 9-13 ms with 2 MiB ones (Open MPI's tuned: 15-19 ms); over tcp, 29 ms with 256 KiB
 * and 39-51 ms with 1-2 MiB. At 2-4 MiB whole-part messages of 2 MiB slots lost to 256 KiB
 * ones (median 1.4 against 1.0 ms at 2 MiB): put rails split each step's part into
 * NVF_INTER_MSG_PARTS messages of at least NVF_RAIL_AM_SLOT_BYTES (rail->min_msg_bytes). */
#define NVF_RAIL_AM_SLOT_BYTES ((size_t)256 << 10)
#define NVF_INTER_MSG_PARTS 4
#define NVF_RAIL_PUT_SLOT_MAX ((size_t)2 << 20)
#define NVF_RAIL_SLOT_BUDGET ((size_t)40 << 20)
/* The receive-slot size of an auto rail of p nodes: the budget over NVF_INTER_NSLOTS slots per
 * peer a rank may receive from (nvf_inter_max_peers), between the two sizes above, in whole
 * 64 KiB. The same on every rank. */
size_t nvf_rail_put_slot_bytes(int p);

/* The rail indices I send to and receive from under any algorithm (for the mesh). Each list
 * has at most nvf_inter_max_peers(p) entries; returns their numbers. */
int nvf_inter_max_peers(int p);
void nvf_inter_peers(int p, int me, int *send_to, int *nsend, int *recv_from, int *nrecv);

typedef struct nvf_inter_xfer {
    int peer;       /* rail index */
    char *ptr;      /* where the data is (send) or goes (recv) */
    size_t elems;   /* total elements */
    size_t issued;  /* send: elements put on the wire; recv: elements processed */
    size_t posted;  /* recv: elements up to which landings are posted (see recv_post) */
    int action;     /* recv: what to do with arriving data */
    const char *in; /* recv: my operand, where it is not ptr itself (the input, at ptr's offset) */
} nvf_inter_xfer_t;

typedef struct nvf_inter_op {
    const nvf_rail_t *rail;
    nvf_inter_alg_t alg;
    char *buf;
    const char *in; /* the input (buf itself when in place) */
    bool buf_live;  /* recursive doubling: buf holds my partial results (else read in) */
    size_t count;
    size_t esize;
    nvf_reduce_fn_t red;     /* acc = acc op x */
    nvf_reduce_fn_t red_rev; /* acc = x op acc */
    nvf_reduce3_fn_t red3;   /* out = a op b */
    int step;
    int nsteps;
    bool step_ready; /* send/recv of the current step computed */
    nvf_inter_xfer_t send, recv;
    /* byte ranges of this operation's puts not yet known to be complete: a received message
     * that would overwrite one of them waits for the puts to complete (the others need not) */
    struct {
        const char *lo, *hi;
    } pend[8];
    int npend;
} nvf_inter_op_t;

/* Allreduce count elements among the rail into buf, from in (NULL or buf: in place). With a
 * separate input, no copy of it into buf is needed: the algorithms read what they have not yet
 * written from in, which they never write. */
void nvf_inter_start(nvf_inter_op_t *op, const nvf_rail_t *rail, nvf_inter_alg_t alg,
                     const void *in, void *buf, size_t count, nvf_dtype_t dt, nvf_op_t rop);
/* Advances the operation; *done when buf holds the result and no put reads from it any more. */
nvf_status_t nvf_inter_progress(nvf_inter_op_t *op, bool *done);
/* Abandons an operation that will not be progressed again (an error elsewhere): withdraws what
 * it posted for in-place receiving, so nothing is written into buf afterwards. */
void nvf_inter_abort(nvf_inter_op_t *op);

struct nvf_topo;
/* Collective over the whole communicator (every rank calls it, in the same order as the other
 * setup exchanges): builds my rail (local index `topo->local_rank` of every node; `active`
 * false: I take part in the exchange only), its UCX channels, and connects them; slot_bytes 0:
 * the size by transport (above), agreed among all ranks. Returns my local status; the caller
 * agrees on the outcome with the other ranks. */
nvf_status_t nvf_rail_setup(nvf_rail_t *rail, const struct nvf_topo *topo, const nvf_oob_t *oob,
                            size_t slot_bytes, bool active, char *err, size_t errlen);
/* Local: waits (bounded) until nothing is in flight, then frees the channels. */
void nvf_rail_close(nvf_rail_t *rail);
/* What the transport last reported as failing (for the scheduler's error lines). */
const char *nvf_rail_last_error(void);
/* The UCX variables nvfabric set in its context because the environment did not
 * ("UCX_NAME=value ...", "" if none or no UCX), for verbose output. */
const char *nvf_rail_ucx_defaults(const nvf_rail_t *rail);

/* Drives communication. */
static inline void nvf_rail_progress(const nvf_rail_t *rail)
{
    if (rail->tp.progress != NULL)
        rail->tp.progress(rail->tp.ctx);
}

#endif
