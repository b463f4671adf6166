/*
 * nvf_ucx_int.h: what the glue's own files share: the context, endpoint and mesh structures, the
 * process-wide counters, error recording and the capture of UCX's log messages.
 *
 * Only the glue's .c files include it. It must not be included by the engine (which sees the opaque
 * types of nvf_ucx.h only), and must not include MPI or engine headers.
 */
#ifndef NVF_UCX_INT_H
#define NVF_UCX_INT_H

#include "ucx_glue/nvf_ucx.h"

#include <ucp/api/ucp.h>
#include <ucs/debug/log_def.h>

#include <pthread.h>
#include <stdatomic.h>

/* Largest worker address and packed rkey a blob carries. The bound must not depend on this
 * process's hardware (it sizes a fixed exchange between processes on different hosts). */
#define NVF_UCX_ADDR_MAX 4096
#define NVF_UCX_RKEY_MAX 1024
/* Bounded waits at teardown (each phase). */
#define NVF_UCX_TEARDOWN_TIMEOUT_NS (2ull * 1000000000ull)

/* ---- counters and errors (nvf_ucx_err.c) ------------------------------------------------------
 */
extern nvf_ucx_counters_t nvf_ucx_counters;

/* Records "call: UCX status (detail)" as the last error and returns NVF_ERR_UCX. detail may be
 * NULL. The prefix names the failing call and what it was for (e.g. "ucp_ep_create to peer 3"). */
nvf_status_t nvf_ucx_fail(const char *call, ucs_status_t status, const char *detail);
/* Records a free-form one-line error and returns `ret`. */
nvf_status_t nvf_ucx_failf(nvf_status_t ret, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* While a capture is active on this thread, UCX's warnings and errors are kept instead of printed.
 * At the end they are either dropped (the call failed and its message went into the last error,
 * or the failure was expected) or replayed to UCX's log exactly as they would have appeared. */
#define NVF_UCX_CAPTURE_MAX 4
typedef struct nvf_ucx_capture_msg {
    const char *file, *function;
    unsigned line;
    ucs_log_level_t level;
    const ucs_log_component_config_t *comp;
    char text[240];
} nvf_ucx_capture_msg_t;
typedef struct nvf_ucx_capture {
    int nmsg; /* messages seen (may exceed NVF_UCX_CAPTURE_MAX) */
    nvf_ucx_capture_msg_t msg[NVF_UCX_CAPTURE_MAX];
    bool installed;
    unsigned handlers_before;
    pthread_t thread;
} nvf_ucx_capture_t;
void nvf_ucx_capture_begin(nvf_ucx_capture_t *cap);
void nvf_ucx_capture_end(nvf_ucx_capture_t *cap, bool replay);
/* The most severe captured message (the first error, else the first warning), or NULL. */
const char *nvf_ucx_capture_text(const nvf_ucx_capture_t *cap);

/* ---- context and endpoints (nvf_ucx_ctx.c) ----------------------------------------------------
 */
typedef struct nvf_ucx_ep {
    ucp_ep_h ep;
    unsigned char *addr; /* the peer's worker address: the cache key */
    size_t addr_len;
    uint64_t addr_hash; /* FNV-1a of addr: most lookups compare this only */
    bool peer_mode;     /* UCP_ERR_HANDLING_MODE_PEER: failures are reported, force close allowed */
    bool failed;        /* set by the error callback (during progress) */
    ucs_status_t fail_status;
    void *req;        /* teardown: the flush or close request in flight */
    int rma_emulated; /* puts to it emulated by UCX (no RMA lane): 1, 0, -1 not looked at yet */
} nvf_ucx_ep_t;

struct nvf_ucx_ctx {
    int refs;
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_address_t *addr;
    size_t addr_len;
    bool cuda;
    bool strong_fence;  /* ucp_worker_fence is a (blocking) flush: protocols v2, UCX >= 1.16 */
    char defaults[128]; /* nvfabric's defaults applied to UCX variables ("" if none) */
    nvf_ucx_ep_t **eps; /* the endpoint cache: linear, by address hash (setup time only) */
    int neps, cap_eps;
    struct nvf_ucx_mesh **meshes; /* live meshes, for the active-message handler */
    int nmeshes, cap_meshes;
    uint64_t next_uid; /* uids are never reused: a late message for a destroyed mesh is dropped */
};

/* The cached endpoint to the worker at addr, created on first use. Fails (NVF_ERR_UCX) for an
 * endpoint that failed earlier. */
nvf_status_t nvf_ucx_ep_get(nvf_ucx_ctx_t *ctx, const void *addr, size_t addr_len, int peer_id,
                            nvf_ucx_ep_t **ep);
uint64_t nvf_ucx_now_ns(void);

/* ---- meshes (nvf_ucx_mesh.c: setup; nvf_ucx_chan.c: the channels) ------------------------------
 */
typedef struct nvf_ucx_peer {
    int id;
    nvf_ucx_ep_t *ep; /* NULL until connected */
    ucp_rkey_h rkey;  /* the peer's region */
    uint64_t uid;     /* the peer's mesh, in active-message headers */
    bool am;          /* this side sends to the peer by active message (else by put) */
} nvf_ucx_peer_t;

/* The header of every active message of the glue. A message travels as fragments of at most
 * NVF_UCX_AM_FRAG bytes, each an eager active message (UCX 1.13's rendezvous for active messages
 * did not complete over tcp here). The size keeps each fragment, with UCX's headers and ours,
 * within one UCX tcp segment (am_zcopy and the receive segment: 64 KiB by default): UCX then
 * sends it from the source buffer and hands the handler the data where it read it, where a
 * larger one is cut by UCX and reassembled (a copy). Measured over tcp loopback, 2 ranks
 * allreducing 1-4 MiB with receives in place: 60 KiB fragments 10-15% faster than 32 KiB;
 * 64 KiB and more (UCX's own fragmentation) slower than either. 61440 is a multiple of every
 * element size. */
#define NVF_UCX_AM_FRAG ((size_t)61440)
enum { NVF_UCX_AM_DATA = 1, NVF_UCX_AM_CREDIT = 2 };
/* Credits are counts: "the first n messages of the channel are released". A receiver tells the
 * sender once half its window is released (an explicit CREDIT message), or sooner on a DATA
 * message it sends to the same peer anyway (the count of the reverse channel rides in the
 * header), or when it has polled idle for NVF_UCX_CREDIT_FLUSH_NS with releases untold, or when
 * asked whether its sends are released (teardown). Over tcp each message is a system call on
 * both sides: with a credit message per data message, a 4-process recursive doubling of 8 bytes
 * took 56-74 us on this project's 2-core VM, batched 36-45 us. The flush delay is a backstop
 * (a receiver that waits releases nothing more): senders rarely need the last credits. */
#define NVF_UCX_CREDIT_FLUSH_NS 200000ull
typedef struct nvf_ucx_am_hdr {
    uint64_t uid; /* the receiving mesh */
    uint64_t seq; /* DATA: the message; CREDIT: how many messages are released */
    int32_t from; /* the sender's peer id */
    uint32_t kind;
    uint64_t offset; /* DATA: where this fragment goes in the slot */
    uint64_t len;    /* DATA: the whole message's length */
    uint64_t credit; /* DATA: messages of the reverse channel released (0: none carried) */
} nvf_ucx_am_hdr_t;

typedef struct nvf_ucx_send_chan {
    int peer_id;
    nvf_ucx_peer_t *peer;
    uint64_t remote_data;     /* the receiver's slots for this channel */
    uint64_t remote_flags;    /* and their flags */
    _Atomic uint64_t *credit; /* nslots words in this side's region, written by the receiver */
    uint64_t *flag_src;       /* nslots: the source of each slot's flag put */
    nvf_ucx_am_hdr_t *hdr;    /* nslots x am_frags: each fragment's active-message header */
    uint64_t nsent;
    uint64_t credited; /* AM: messages the receiver has said are released */
    bool connected;
} nvf_ucx_send_chan_t;

/* Where one message goes instead of its slot (nvf_ucx_recv_post). */
typedef struct nvf_ucx_landing {
    uint64_t seq1; /* the message it is for, plus one (0: none) */
    char *dst;
    size_t cap, granule;
    nvf_ucx_land_fn_t fn;
    void *arg;
    bool applied; /* the whole message was applied in place */
} nvf_ucx_landing_t;

typedef struct nvf_ucx_recv_chan {
    int peer_id;
    nvf_ucx_peer_t *peer;
    unsigned char *data;     /* nslots slots of slot_stride bytes in this side's region */
    _Atomic uint64_t *flags; /* nslots flags in this side's region, written by the sender */
    uint64_t remote_credit;  /* the sender's credit words for this channel */
    uint64_t *credit_src;    /* nslots: the source of each slot's credit put */
    nvf_ucx_am_hdr_t *hdr;   /* nslots: the credit active-message headers (by count) */
    uint64_t *landed;        /* nslots: bytes of the slot's message landed so far (AM) */
    nvf_ucx_landing_t *land; /* nslots: where the slot's message goes instead (AM) */
    uint64_t nreleased;
    uint64_t credited;     /* AM: releases the sender has been told of */
    uint64_t untold_since; /* AM: when the oldest untold release happened (ns; 0: none) */
    bool connected;
} nvf_ucx_recv_chan_t;

struct nvf_ucx_mesh {
    nvf_ucx_ctx_t *ctx;
    int my_id;
    int nslots;
    size_t slot_bytes, slot_stride;
    void *region; /* allocated by ucp_mem_map */
    size_t region_bytes;
    ucp_mem_h memh;
    nvf_ucx_peer_t *peers; /* sorted by id: the union of both lists */
    int npeers;
    nvf_ucx_send_chan_t *send; /* sorted by peer id */
    int nsend;
    nvf_ucx_recv_chan_t *recv; /* sorted by peer id */
    int nrecv;
    void **reqs; /* put requests not yet seen complete */
    size_t nreqs, cap_reqs;
    bool failed;
    unsigned char *blob;
    size_t blob_len;
    uint64_t *src_words;      /* backing store of every flag_src and credit_src */
    nvf_ucx_am_hdr_t *hdrs;   /* backing store of every hdr */
    int am_frags;             /* active messages per slot-sized message */
    uint64_t *landed;         /* backing store of every landed */
    nvf_ucx_landing_t *lands; /* backing store of every land */
    uint64_t uid;
    nvf_ucx_protocol_t protocol;
    int untold; /* receive channels with releases the sender has not been told of (AM) */
};

/* Lookups by peer id (the arrays are sorted by id): NULL when absent. */
#define NVF_UCX_BSEARCH(arr, n, key, field)                                                        \
    do {                                                                                           \
        int lo_ = 0, hi_ = (n)-1;                                                                  \
        while (lo_ <= hi_) {                                                                       \
            int mid_ = lo_ + (hi_ - lo_) / 2;                                                      \
            if ((arr)[mid_].field == (key))                                                        \
                return &(arr)[mid_];                                                               \
            if ((arr)[mid_].field < (key))                                                         \
                lo_ = mid_ + 1;                                                                    \
            else                                                                                   \
                hi_ = mid_ - 1;                                                                    \
        }                                                                                          \
        return NULL;                                                                               \
    } while (0)
static inline nvf_ucx_send_chan_t *nvf_ucx_send_chan(nvf_ucx_mesh_t *mesh, int id)
{
    NVF_UCX_BSEARCH(mesh->send, mesh->nsend, id, peer_id);
}
static inline nvf_ucx_recv_chan_t *nvf_ucx_recv_chan(nvf_ucx_mesh_t *mesh, int id)
{
    NVF_UCX_BSEARCH(mesh->recv, mesh->nrecv, id, peer_id);
}
static inline nvf_ucx_peer_t *nvf_ucx_peer(nvf_ucx_mesh_t *mesh, int id)
{
    NVF_UCX_BSEARCH(mesh->peers, mesh->npeers, id, id);
}

/* Puts len bytes from src to raddr of peer and tracks the request. NVF_OK or NVF_ERR_UCX /
 * NVF_ERR_NOMEM (the mesh is then failed). */
nvf_status_t nvf_ucx_put(nvf_ucx_mesh_t *mesh, nvf_ucx_peer_t *peer, const void *src, size_t len,
                         uint64_t raddr);
/* Makes room for one more request (before the call that may return it); then tracks the request
 * UCX returned (NULL: completed in place; an error fails the mesh, recorded as `call`). */
nvf_status_t nvf_ucx_reserve(nvf_ucx_mesh_t *mesh, int peer);
nvf_status_t nvf_ucx_track(nvf_ucx_mesh_t *mesh, ucs_status_ptr_t r, const char *call, int peer);

/* ---- active messages (nvf_ucx_am.c) ------------------------------------------------------------
 * The handler is registered on the worker when the context is made; meshes are registered by
 * uid while they live. */
nvf_status_t nvf_ucx_am_init(nvf_ucx_ctx_t *ctx);
nvf_status_t nvf_ucx_am_register(nvf_ucx_mesh_t *mesh);
void nvf_ucx_am_unregister(nvf_ucx_mesh_t *mesh);
/* Whether UCX would emulate puts to this endpoint in software (no RMA lane); looked at once per
 * endpoint. */
bool nvf_ucx_ep_rma_emulated(nvf_ucx_ep_t *ep);
/* Sends message k (slot k % nslots) of channel c, len bytes from src, as eager active messages
 * of at most NVF_UCX_AM_FRAG bytes. */
nvf_status_t nvf_ucx_am_send(nvf_ucx_mesh_t *mesh, nvf_ucx_send_chan_t *c, uint64_t k,
                             const void *src, size_t len);
/* Tells the sender of channel c how many of its messages are released (c->nreleased). */
nvf_status_t nvf_ucx_am_credit(nvf_ucx_mesh_t *mesh, nvf_ucx_recv_chan_t *c);
/* Sends the releases not yet told: on every receive channel (force), or on those whose oldest
 * untold release is NVF_UCX_CREDIT_FLUSH_NS old. */
nvf_status_t nvf_ucx_credits_flush(nvf_ucx_mesh_t *mesh, bool force);

/* Frees the requests that have completed; a completion with an error fails the mesh. Returns the
 * number still in flight. */
size_t nvf_ucx_reap(nvf_ucx_mesh_t *mesh);

#endif
