/*
 * nvf_ucx.h: the UCX glue, the only code that calls UCX.
 *
 * One UCP context and worker per process, shared by every communicator (reference counted),
 * endpoints cached by peer worker address, and "meshes": for one communicator, a set of
 * one-directional RDMA channels between this process and the peers it talks to.
 *
 * A channel carries messages from a sender to a receiver through a window of `nslots` slots of
 * `slot_bytes` in the receiver's registered memory. The sender puts the data into the slot,
 * fences (ucp_worker_fence), then puts the slot's flag (the message sequence number + 1); the
 * receiver polls the flag in its own memory (progressing the worker), reads the data in place,
 * and releases the slot by putting its consumed count into the sender's credit word for that slot
 * (one 64-bit word per slot: a word is written again only after the sender has seen its previous
 * value, so no two puts to it can be in flight, whatever the transport's ordering). A sender may
 * have at most nslots unreleased messages in flight. Where a peer is reached by active messages
 * instead (no RMA lane, e.g. tcp), releases are told in batches: once half the window is
 * released, on the next data message to that peer, after the receiver has polled idle for a
 * while (nvf_ucx_recv_test, nvf_ucx_send without a slot, nvf_ucx_progress), or when it asks
 * nvf_ucx_send_idle(released); until then the sender's window is that much smaller. Messages on a
 * channel are received in the order they were sent. Message k (from 0) uses slot k % nslots; its
 * flag reads k + 1 once it has arrived, and the credit word of that slot reads k + 1 once it has
 * been released.
 *
 * Everything is non-blocking and test-based (the engine's scheduler interleaves channels with
 * its other stages; the one exception is a UCX whose fence is strong, see nvf_ucx_ordering);
 * every UCX status is checked and turned into an nvf_status_t, with the failing call and UCX's
 * message available from nvf_ucx_last_error().
 *
 * Setup needs no MPI: nvf_ucx_mesh_create() returns a blob describing this process's side
 * (worker address, window addresses, rkeys); the engine exchanges blobs over its bootstrap and
 * hands the peers' blobs to nvf_ucx_mesh_connect().
 *
 * Must not include MPI, Open MPI or engine headers other than the status codes.
 */
#ifndef NVF_UCX_H
#define NVF_UCX_H

#include "coll_nvfabric/nvf.h" /* nvf_status_t only */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nvf_ucx_ctx nvf_ucx_ctx_t;
typedef struct nvf_ucx_mesh nvf_ucx_mesh_t;

/* The process-wide context: the first call creates the UCP context (feature RMA) and worker
 * (honouring the usual UCX_* environment variables, e.g. UCX_TLS), later calls add a reference.
 * On failure nothing is left allocated (a later call tries again) and nvf_ucx_last_error() says
 * why in one line; UCX's own warnings and errors during a failed call are folded into that line
 * instead of being printed.
 *
 * Threads: acquire and release may be called from any thread; everything else (progress, meshes)
 * must be serialized by the caller (the worker is created UCS_THREAD_MODE_SERIALIZED).
 *
 * Endpoints are created with error handling mode PEER (a failed peer marks its endpoint and
 * every mesh using it failed). Where no transport to the peer can report failures (UCX 1.13:
 * shared memory and self), the endpoint is created without error handling instead: it then
 * works but a dead peer is not detected. */
nvf_status_t nvf_ucx_ctx_acquire(nvf_ucx_ctx_t **ctx);
/* Drops a reference; the last one closes every endpoint (flushing, bounded: endpoints that do not
 * flush within a few seconds are closed by force) and destroys the worker and context. Every
 * mesh must have been destroyed. */
void nvf_ucx_ctx_release(nvf_ucx_ctx_t *ctx);
/* Drives communication. Returns the number of events processed. */
unsigned nvf_ucx_progress(nvf_ucx_ctx_t *ctx);
/* Whether UCX can put directly from/to CUDA device memory in this context. */
bool nvf_ucx_supports_cuda(const nvf_ucx_ctx_t *ctx);
/* How ucp_worker_fence orders a flag after its data, for verbose output: "fence" (UCX's
 * protocols v1: puts with one rkey share a lane, the weak per-transport fence orders them) or
 * "strong fence" (protocols v2, the default from UCX 1.16: the fence is a blocking flush of
 * every endpoint, so each send waits for its data to complete remotely). Configurations where
 * the fence would not order (protocols v2 with a weak fence, e.g. UCX 1.13 with
 * UCX_PROTO_ENABLE=y) are refused by nvf_ucx_ctx_acquire. */
const char *nvf_ucx_ordering(const nvf_ucx_ctx_t *ctx);
/* The UCX variables nvfabric gave its own defaults in this context because the environment did
 * not set them, as "UCX_NAME=value ..." ("" if none), for verbose output:
 * UCX_TCP_TX_SEG_SIZE=64K, UCX_TCP_RX_SEG_SIZE=256K. */
const char *nvf_ucx_defaults_applied(const nvf_ucx_ctx_t *ctx);
/* One line: the last UCX call that failed and UCX's message ("" if none failed yet).
 * Process-wide, overwritten by the next failure. */
const char *nvf_ucx_last_error(void);

/* Process-wide counts of what the glue holds, for leak checks and diagnostics. */
typedef struct nvf_ucx_counters {
    long contexts;          /* live contexts (0 or 1) */
    long endpoints;         /* endpoints in the cache */
    long failed_endpoints;  /* of which failed */
    long meshes;            /* live meshes */
    long mem_maps;          /* live ucp_mem_map registrations */
    long rkeys;             /* live unpacked remote keys */
    long requests;          /* put requests not yet completed and freed */
    long teardown_timeouts; /* flushes/closes/waits abandoned at a timeout (cumulative) */
    long credit_messages;   /* credits sent as messages of their own (active messages;
                             * cumulative): the others ride on data or are puts */
} nvf_ucx_counters_t;
void nvf_ucx_get_counters(nvf_ucx_counters_t *counters);

/* How a channel carries its messages (chosen by the sender, per peer; a receiver accepts both):
 *   PUT  the data put into the slot, a fence, the flag put (true RDMA: the receiver's CPU is
 *        not involved until it polls the flag);
 *   AM   eager active messages (32 KiB fragments; the slot, sequence number and offset in each
 *        header; the receiver's handler, run by its progress, lands the data in the slot and
 *        sets the flag once the whole message is there), credits by active message too. Used where
 * UCX has no RMA lane to the peer and would emulate each put in software over active messages
 * anyway (UCX 1.13's tcp transport): a message is then one network message instead of two puts, two
 * acknowledgements and a credit put with its own; AUTO AM where the endpoint has no RMA lane, PUT
 * elsewhere. */
typedef enum nvf_ucx_protocol {
    NVF_UCX_PROTO_AUTO = 0,
    NVF_UCX_PROTO_PUT,
    NVF_UCX_PROTO_AM
} nvf_ucx_protocol_t;

/* Peers of a mesh are identified by small integers chosen by the caller (the communicator
 * rank). `send_to` lists the peers this process sends to, `recv_from` the peers it receives
 * from; each direction gets one channel. */
typedef struct nvf_ucx_mesh_params {
    int my_id;
    const int *send_to;
    int nsend;
    const int *recv_from;
    int nrecv;
    int nslots;                  /* slots per channel, >= 1 */
    size_t slot_bytes;           /* bytes per slot */
    nvf_ucx_protocol_t protocol; /* how this side sends (0: AUTO) */
} nvf_ucx_mesh_params_t;

/* Allocates and registers this side's windows and credit words (one ucp_mem_map for all of
 * them, memory allocated by UCX so that shared-memory transports can write it directly).
 * *blob / *blob_len describe them for the peers (valid until the mesh is destroyed). A blob is
 * padded to nvf_ucx_mesh_blob_max(ctx, nsend, nrecv) bytes, a bound that depends on the list
 * lengths only, so every blob of one mesh has the same length as long as the processes' lists
 * have equal lengths; a fixed exchange of blob_max bytes per process always works. Blobs are in
 * host byte order (homogeneous clusters). Peer ids must be >= 0 and unique within each list. */
nvf_status_t nvf_ucx_mesh_create(nvf_ucx_ctx_t *ctx, const nvf_ucx_mesh_params_t *params,
                                 nvf_ucx_mesh_t **mesh, const void **blob, size_t *blob_len);
/* Upper bound of blob_len for a mesh with these list lengths. */
size_t nvf_ucx_mesh_blob_max(nvf_ucx_ctx_t *ctx, int nsend, int nrecv);
/* Connects to peer `peer_id` (one of send_to or recv_from) using its blob (blob_len may exceed
 * the blob's own length, e.g. a fixed-size exchange slot). Checks that the peer's blob has the
 * same nslots and slot_bytes and a channel for this direction (NVF_ERR_INVALID otherwise).
 * Each peer is connected once. */
nvf_status_t nvf_ucx_mesh_connect(nvf_ucx_mesh_t *mesh, int peer_id, const void *blob,
                                  size_t blob_len);
/* Local. Requires that no message is in flight on any channel (every sent message released by
 * its receiver, every received message released). Waits (progressing, bounded) for this mesh's
 * own puts to complete locally, then releases its rkeys and registration. */
void nvf_ucx_mesh_destroy(nvf_ucx_mesh_t *mesh);

/* ---- sending -------------------------------------------------------------------------------
 * nvf_ucx_send: start sending len (<= slot_bytes) bytes from src to peer. With a free slot:
 * the data and flag puts are issued, *started = true (src must stay valid and unchanged until
 * nvf_ucx_send_idle() is true). Without one: nothing is sent, *started = false (progress and
 * call again; this call progresses the worker once when it finds no slot). Any other return
 * than NVF_OK is a failure (NVF_ERR_INVALID: unknown or unconnected peer, len > slot_bytes;
 * NVF_ERR_UCX: a put failed or the mesh failed). The receiver is not told len: the protocol
 * above must know it. */
nvf_status_t nvf_ucx_send(nvf_ucx_mesh_t *mesh, int peer, const void *src, size_t len,
                          bool *started);
/* True when every put this mesh issued has completed locally (sources may be reused) and, with
 * `released`, every message sent has also been released by its receiver. Progresses the worker
 * once. A failed mesh never becomes released: callers waiting for it check nvf_ucx_mesh_failed. */
bool nvf_ucx_send_idle(nvf_ucx_mesh_t *mesh, bool released);

/* ---- receiving -----------------------------------------------------------------------------
 * nvf_ucx_recv_test: if the next message from peer (the oldest one not yet released) has
 * arrived, *data points at it in the window (readable until released; NULL if it was applied in
 * place, see nvf_ucx_recv_post) and returns true. It does
 * not consume: calling it again before nvf_ucx_recv_release returns the same message. When the
 * message has not arrived it progresses the worker once and looks again. False for an unknown or
 * unconnected peer; on a failed mesh, a message that has not arrived never will (check
 * nvf_ucx_mesh_failed). */
bool nvf_ucx_recv_test(nvf_ucx_mesh_t *mesh, int peer, const void **data);
/* Releases the oldest received message from peer (one that nvf_ucx_recv_test has seen): its
 * slot may be reused by the sender (by active messages: once told, see the top of this file).
 * NVF_ERR_INVALID if that message has not arrived. */
nvf_status_t nvf_ucx_recv_release(nvf_ucx_mesh_t *mesh, int peer);

/* Receiving in place. nvf_ucx_recv_post: the message `ahead` places after the oldest one not yet
 * released from peer (ahead < the mesh's nslots) is not to land in its slot but to be applied
 * straight to dst, at most cap bytes: each fragment, as it arrives, by fn(arg, dst + its offset,
 * fragment, bytes) (fn NULL: copied), in whole multiples of granule bytes. nvf_ucx_recv_test then
 * reports that message with *data NULL (nothing to read: it is applied). It saves a copy where
 * the message travels by active messages (the handler has the data in hand); where the sender
 * puts it into the slot by RDMA, the landing is ignored and the message is read from its slot as
 * usual. Returns false, and changes nothing, when the message has begun to arrive, ahead is
 * out of range, or fragments could split a granule; posting the same message again is a no-op.
 * dst must stay valid, and not be read or written by anyone else, until the message is
 * released or the landing withdrawn. A message larger than cap fails the mesh. */
typedef void (*nvf_ucx_land_fn_t)(void *arg, void *dst, const void *src, size_t bytes);
bool nvf_ucx_recv_post(nvf_ucx_mesh_t *mesh, int peer, unsigned ahead, void *dst, size_t cap,
                       size_t granule, nvf_ucx_land_fn_t fn, void *arg);
/* Withdraws every landing posted for peer's messages (the caller abandons the buffers): what
 * arrives later lands in the slots. */
void nvf_ucx_recv_unpost(nvf_ucx_mesh_t *mesh, int peer);

/* What the send channels use, for verbose output: "put", "am" or "put+am" (some of each), "none"
 * before any peer is connected. */
const char *nvf_ucx_mesh_protocol(const nvf_ucx_mesh_t *mesh);

/* A channel failed (peer died, transport error, a put completed with an error): the mesh is
 * unusable (destroy it). */
bool nvf_ucx_mesh_failed(const nvf_ucx_mesh_t *mesh);

#ifdef __cplusplus
}
#endif
#endif
