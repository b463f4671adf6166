/*
 * nvf_ucx.h: the UCX glue, the only code that calls UCX.
 *
 * One UCP context and worker per process, shared by every communicator (reference counted),
 * endpoints cached by peer worker address, and "meshes": for one communicator, a set of
 * one-directional RDMA channels between this process and the peers it talks to.
 *
 * A channel carries messages from a sender to a receiver through a window of `nslots` slots of
 * `slot_bytes` in the receiver's registered memory. The sender puts the data into the slot,
 * fences, then puts the slot's flag (the message sequence number + 1); the receiver polls the
 * flag in its own memory (progressing the worker), reads the data in place, and releases the
 * slot by putting its consumed count into the sender's credit word. A sender may have at most
 * nslots unreleased messages in flight. Messages on a channel are received in the order they
 * were sent.
 *
 * Everything is non-blocking and test-based (the engine's scheduler interleaves channels with
 * its other stages); every UCX status is checked and turned into an nvf_status_t, with the failing
 * call and UCX's message available from nvf_ucx_last_error().
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

/* The process-wide context: the first call creates the UCP context and worker (honouring the
 * usual UCX_* environment variables, e.g. UCX_TLS), later calls add a reference. On failure
 * nothing is left allocated and nvf_ucx_last_error() says why in one line. */
nvf_status_t nvf_ucx_ctx_acquire(nvf_ucx_ctx_t **ctx);
/* Drops a reference; the last one closes every endpoint (flushing) and destroys the worker and
 * context. */
void nvf_ucx_ctx_release(nvf_ucx_ctx_t *ctx);
/* Drives communication. Returns the number of events processed. */
unsigned nvf_ucx_progress(nvf_ucx_ctx_t *ctx);
/* Whether UCX can put directly from/to CUDA device memory in this context. */
bool nvf_ucx_supports_cuda(const nvf_ucx_ctx_t *ctx);
/* One line: the last UCX call that failed and UCX's message. */
const char *nvf_ucx_last_error(void);

/* Peers of a mesh are identified by small integers chosen by the caller (the communicator
 * rank). `send_to` lists the peers this process sends to, `recv_from` the peers it receives
 * from; each direction gets one channel. */
typedef struct nvf_ucx_mesh_params {
    int my_id;
    const int *send_to;
    int nsend;
    const int *recv_from;
    int nrecv;
    int nslots;        /* slots per channel, >= 1 */
    size_t slot_bytes; /* bytes per slot */
} nvf_ucx_mesh_params_t;

/* Allocates and registers this side's windows and credit words. *blob / *blob_len describe
 * them for the peers (valid until the mesh is destroyed); every blob of one mesh has the same
 * length as long as all processes pass the same nslots and their lists have equal lengths: use
 * nvf_ucx_mesh_blob_max() to size a fixed exchange. */
nvf_status_t nvf_ucx_mesh_create(nvf_ucx_ctx_t *ctx, const nvf_ucx_mesh_params_t *params,
                                 nvf_ucx_mesh_t **mesh, const void **blob, size_t *blob_len);
/* Upper bound of blob_len for a mesh with these list lengths. */
size_t nvf_ucx_mesh_blob_max(nvf_ucx_ctx_t *ctx, int nsend, int nrecv);
/* Connects to peer `peer_id` (one of send_to or recv_from) using its blob. */
nvf_status_t nvf_ucx_mesh_connect(nvf_ucx_mesh_t *mesh, int peer_id, const void *blob,
                                  size_t blob_len);
/* Local. Requires that no message is in flight on any channel (every sent message released by
 * its receiver, every received message released). */
void nvf_ucx_mesh_destroy(nvf_ucx_mesh_t *mesh);

/* ---- sending -------------------------------------------------------------------------------
 * nvf_ucx_send: start sending len (<= slot_bytes) bytes from src to peer. With a free slot:
 * the data and flag puts are issued, *started = true (src must stay valid and unchanged until
 * nvf_ucx_send_idle() is true). Without one: nothing is sent, *started = false (progress and
 * call again). Any other return than NVF_OK is a failure. */
nvf_status_t nvf_ucx_send(nvf_ucx_mesh_t *mesh, int peer, const void *src, size_t len,
                          bool *started);
/* True when every put this mesh issued has completed locally (sources may be reused) and, with
 * `released`, every message sent has also been released by its receiver. */
bool nvf_ucx_send_idle(nvf_ucx_mesh_t *mesh, bool released);

/* ---- receiving -----------------------------------------------------------------------------
 * nvf_ucx_recv_test: if the next message from peer has arrived, *data points at it in the
 * window (readable until released) and returns true. */
bool nvf_ucx_recv_test(nvf_ucx_mesh_t *mesh, int peer, const void **data);
/* Releases the oldest received message from peer: its slot may be reused by the sender. */
nvf_status_t nvf_ucx_recv_release(nvf_ucx_mesh_t *mesh, int peer);

/* A channel failed (peer died, transport error): the mesh is unusable. */
bool nvf_ucx_mesh_failed(const nvf_ucx_mesh_t *mesh);

#ifdef __cplusplus
}
#endif
#endif
