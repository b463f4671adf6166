/*
 * nvf_rail.c: a communicator's rail over UCX: the peers' channels (ucx_glue/), set up through
 * the bootstrap, and the adapter that gives them to the algorithms as an nvf_transport_t.
 * Nothing here runs per call except the thin adapter functions.
 */
#include "nvf_config.h"

#include "nvf_inter.h"
#include "nvf_log.h"
#include "nvf_topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef NVF_HAVE_UCX
#include "ucx_glue/nvf_ucx.h"

typedef struct rail_owner {
    nvf_ucx_ctx_t *ucx;
    nvf_ucx_mesh_t *mesh;
} rail_owner_t;

static nvf_status_t tp_send(void *ctx, int peer, const void *src, size_t len, bool *started)
{
    return nvf_ucx_send(((rail_owner_t *)ctx)->mesh, peer, src, len, started);
}

static bool tp_send_idle(void *ctx, bool released)
{
    return nvf_ucx_send_idle(((rail_owner_t *)ctx)->mesh, released);
}

static bool tp_recv_test(void *ctx, int peer, const void **data)
{
    return nvf_ucx_recv_test(((rail_owner_t *)ctx)->mesh, peer, data);
}

static nvf_status_t tp_recv_release(void *ctx, int peer)
{
    return nvf_ucx_recv_release(((rail_owner_t *)ctx)->mesh, peer);
}

static bool tp_recv_post(void *ctx, int peer, unsigned ahead, void *dst, size_t cap, size_t granule,
                         nvf_land_fn_t fn, void *arg)
{
    return nvf_ucx_recv_post(((rail_owner_t *)ctx)->mesh, peer, ahead, dst, cap, granule, fn, arg);
}

static void tp_recv_unpost(void *ctx, int peer)
{
    nvf_ucx_recv_unpost(((rail_owner_t *)ctx)->mesh, peer);
}

static void tp_progress(void *ctx)
{
    nvf_ucx_progress(((rail_owner_t *)ctx)->ucx);
}

static bool tp_failed(void *ctx)
{
    return nvf_ucx_mesh_failed(((rail_owner_t *)ctx)->mesh);
}

static void add_peer(int *list, int *n, int v)
{
    for (int i = 0; i < *n; i++)
        if (list[i] == v)
            return;
    list[(*n)++] = v;
}

nvf_status_t nvf_rail_setup(nvf_rail_t *rail, const nvf_topo_t *topo, const nvf_oob_t *oob,
                            size_t slot_bytes, bool active, char *err, size_t errlen)
{
    memset(rail, 0, sizeof(*rail));
    nvf_status_t st = NVF_OK;
    const bool auto_slots = slot_bytes == 0; /* the windows for puts; less below if need be */
    if (auto_slots)
        slot_bytes = nvf_rail_put_slot_bytes(topo->nnodes);
    const int maxp = nvf_inter_max_peers(topo->nnodes);
    int *send_to = calloc((size_t)maxp, sizeof(int)),
        *recv_from = calloc((size_t)maxp, sizeof(int));
    int *peers = calloc(2 * (size_t)maxp, sizeof(int));
    int nsend = 0, nrecv = 0, npeers = 0;
    uint64_t *lens = calloc((size_t)oob->size, sizeof(uint64_t));
    rail_owner_t *own = calloc(1, sizeof(*own));
    const void *blob = NULL;
    size_t blob_len = 0;
    char *blobs = NULL;
    if (!send_to || !recv_from || !peers || !lens || !own) {
        st = NVF_ERR_NOMEM;
        snprintf(err, errlen, "out of memory setting up the rail");
    }
    if (st == NVF_OK && active) {
        rail->p = topo->nnodes;
        rail->me = topo->node;
        rail->slot_bytes = slot_bytes;
        rail->rank_of = malloc(sizeof(int) * (size_t)rail->p);
        if (rail->rank_of == NULL) {
            st = NVF_ERR_NOMEM;
            snprintf(err, errlen, "out of memory setting up the rail");
        } else {
            for (int n = 0; n < rail->p; n++)
                rail->rank_of[n] = nvf_topo_member(topo, n, topo->local_rank);
            nvf_inter_peers(rail->p, rail->me, send_to, &nsend, recv_from, &nrecv);
            for (int i = 0; i < nsend; i++)
                add_peer(peers, &npeers, send_to[i] = rail->rank_of[send_to[i]]);
            for (int i = 0; i < nrecv; i++)
                add_peer(peers, &npeers, recv_from[i] = rail->rank_of[recv_from[i]]);
            st = nvf_ucx_ctx_acquire(&own->ucx);
            if (st == NVF_OK) {
                nvf_ucx_mesh_params_t mp = {
                    topo->rank, send_to,          nsend,      recv_from,
                    nrecv,      NVF_INTER_NSLOTS, slot_bytes, NVF_UCX_PROTO_AUTO};
                st = nvf_ucx_mesh_create(own->ucx, &mp, &own->mesh, &blob, &blob_len);
            }
            if (st != NVF_OK)
                snprintf(err, errlen, "UCX unusable: %s", nvf_ucx_last_error());
        }
    }
    /* every rank takes part in both exchanges: blob lengths, then blobs padded to the longest */
    uint64_t my_len = (st == NVF_OK && active) ? blob_len : 0, maxlen = 1;
    bool exchanged = lens != NULL && oob->allgather(oob->ctx, &my_len, lens, sizeof(uint64_t)) == 0;
    for (int r = 0; exchanged && r < oob->size; r++)
        maxlen = lens[r] > maxlen ? lens[r] : maxlen;
    blobs = exchanged ? malloc((size_t)maxlen * (size_t)(oob->size + 1)) : NULL;
    if (blobs != NULL) {
        char *mine = blobs + (size_t)maxlen * (size_t)oob->size;
        memset(mine, 0, (size_t)maxlen);
        if (my_len)
            memcpy(mine, blob, (size_t)my_len);
        exchanged = oob->allgather(oob->ctx, mine, blobs, (size_t)maxlen) == 0;
    }
    if (st == NVF_OK && (!exchanged || blobs == NULL)) {
        st = NVF_ERR_PEER;
        snprintf(err, errlen, "bootstrap exchange of UCX addresses failed");
    }
    for (int i = 0; st == NVF_OK && active && i < npeers; i++) {
        int r = peers[i];
        if (lens[r] == 0) {
            st = NVF_ERR_PEER;
            snprintf(err, errlen, "rank %d has no UCX endpoint", r);
        } else if ((st = nvf_ucx_mesh_connect(own->mesh, r, blobs + (size_t)maxlen * (size_t)r,
                                              (size_t)lens[r])) != NVF_OK) {
            snprintf(err, errlen, "UCX connect to rank %d failed: %s", r, nvf_ucx_last_error());
        }
    }
    free(blobs);
    /* auto: messages as large as the windows where every channel of the communicator writes by
     * put; where any sends by active messages (tcp), small ones on every rank (the receiver
     * splits a part into messages the way its sender does) */
    if (auto_slots && lens != NULL) {
        uint64_t am =
            st == NVF_OK && active && strstr(nvf_ucx_mesh_protocol(own->mesh), "am") != NULL;
        if (oob->allgather(oob->ctx, &am, lens, sizeof(uint64_t)) != 0) {
            if (st == NVF_OK)
                snprintf(err, errlen, "bootstrap exchange of the rails' protocols failed");
            st = NVF_ERR_PEER;
        }
        for (int r = 0; st == NVF_OK && r < oob->size; r++)
            rail->any_am = rail->any_am || lens[r] != 0;
        if (rail->any_am && active)
            rail->slot_bytes = NVF_RAIL_AM_SLOT_BYTES;
        else if (active && rail->slot_bytes > NVF_RAIL_AM_SLOT_BYTES)
            rail->min_msg_bytes = NVF_RAIL_AM_SLOT_BYTES;
    }
    free(lens);
    free(send_to);
    free(recv_from);
    free(peers);
    if (own != NULL && !active) {
        free(own); /* I only took part in the exchange */
        own = NULL;
    }
    if (own != NULL) {
        rail->owner = own;
        rail->tp = (nvf_transport_t){.send = tp_send,
                                     .send_idle = tp_send_idle,
                                     .recv_test = tp_recv_test,
                                     .recv_release = tp_recv_release,
                                     .progress = tp_progress,
                                     .failed = tp_failed,
                                     .recv_post = tp_recv_post,
                                     .recv_unpost = tp_recv_unpost,
                                     .ctx = own};
    }
    if (st != NVF_OK)
        nvf_rail_close(rail);
    return st;
}

void nvf_rail_close(nvf_rail_t *rail)
{
    rail_owner_t *own = rail->owner;
    if (own != NULL) {
        if (own->mesh != NULL) {
            /* every message sent must be released by its receiver before the windows go */
            for (long spins = 0; !nvf_ucx_send_idle(own->mesh, true) && spins < 20000000L; spins++)
                nvf_ucx_progress(own->ucx);
            nvf_ucx_mesh_destroy(own->mesh);
        }
        if (own->ucx != NULL)
            nvf_ucx_ctx_release(own->ucx);
        free(own);
    }
    free(rail->rank_of);
    memset(rail, 0, sizeof(*rail));
}

const char *nvf_rail_last_error(void)
{
    return nvf_ucx_last_error();
}

const char *nvf_rail_ucx_defaults(const nvf_rail_t *rail)
{
    const rail_owner_t *own = rail->owner;
    return own != NULL && own->ucx != NULL ? nvf_ucx_defaults_applied(own->ucx) : "";
}

#else /* built without UCX: there is no inter-node stage */

const char *nvf_rail_last_error(void)
{
    return "built without UCX";
}

const char *nvf_rail_ucx_defaults(const nvf_rail_t *rail)
{
    (void)rail;
    return "";
}

nvf_status_t nvf_rail_setup(nvf_rail_t *rail, const nvf_topo_t *topo, const nvf_oob_t *oob,
                            size_t slot_bytes, bool active, char *err, size_t errlen)
{
    memset(rail, 0, sizeof(*rail));
    snprintf(err, errlen, "built without UCX: no inter-node stage");
    return NVF_ERR_UNSUPPORTED;
}

void nvf_rail_close(nvf_rail_t *rail)
{
    memset(rail, 0, sizeof(*rail));
}

#endif
