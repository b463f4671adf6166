/*
 * nvf_ucx_mesh.c: setting meshes up and tearing them down: the registered region that holds this
 * side's receive windows and credit words, the blob that describes it to the peers, connecting
 * to a peer from its blob (endpoint, rkey, remote addresses), and destroy.
 *
 * Region layout (one ucp_mem_map, so one rkey and one rma lane per peer: UCX 1.13's
 * ucp_worker_fence orders puts per transport lane only):
 *   for each receive channel (sorted by peer id): nslots slots of slot_stride bytes, then the
 *     nslots 64-bit flags (rounded up to 64 bytes);
 *   for each send channel (sorted by peer id): the nslots 64-bit credit words (same rounding).
 * Blob: a fixed header, the receive entries (peer, offset of its window), the send entries
 * (peer, offset of its credit words), the worker address, the packed rkey, zero padding.
 *
 * Must not be on the per-message path (that is nvf_ucx_chan.c) and must not trust a blob: every
 * length and offset in it is checked before use.
 */
#include "nvf_ucx_int.h"

#include <stdlib.h>
#include <string.h>

#define NVF_UCX_BLOB_MAGIC 0x4e564655u /* "NVFU" */
#define NVF_UCX_BLOB_VERSION 2u
#define NVF_UCX_ALIGN 64u
#define NVF_UCX_MAX_SLOTS (1 << 20)
#define NVF_UCX_MAX_SLOT_BYTES ((size_t)1 << 30)

typedef struct nvf_ucx_blob_hdr {
    uint32_t magic, version;
    int32_t id, nslots;
    uint64_t slot_bytes;
    uint64_t region_bytes;
    uint64_t base; /* address of the region in the owner's address space */
    uint64_t uid;  /* the owner's mesh, for active-message headers */
    uint32_t addr_len, rkey_len;
    int32_t nsend, nrecv;
    uint64_t blob_len; /* including the padding */
} nvf_ucx_blob_hdr_t;

typedef struct nvf_ucx_blob_entry {
    int32_t peer;
    uint32_t pad;
    uint64_t offset;
} nvf_ucx_blob_entry_t;

static size_t nvf_ucx_round_up(size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}

size_t nvf_ucx_mesh_blob_max(nvf_ucx_ctx_t *ctx, int nsend, int nrecv)
{
    size_t n = (size_t)(nsend > 0 ? nsend : 0) + (size_t)(nrecv > 0 ? nrecv : 0);
    return sizeof(nvf_ucx_blob_hdr_t) + n * sizeof(nvf_ucx_blob_entry_t) + NVF_UCX_ADDR_MAX +
           NVF_UCX_RKEY_MAX;
}

static int nvf_ucx_cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Sorted copy of a list of peer ids; NVF_ERR_INVALID for negative or repeated ids. */
static nvf_status_t nvf_ucx_sorted_ids(const int *ids, int n, const char *what, int **out)
{
    *out = NULL;
    if (n == 0)
        return NVF_OK;
    if (ids == NULL)
        return nvf_ucx_failf(NVF_ERR_INVALID, "mesh: %s is NULL with %d entries", what, n);
    int *s = malloc((size_t)n * sizeof(int));
    if (s == NULL)
        return nvf_ucx_failf(NVF_ERR_NOMEM, "mesh: out of memory");
    memcpy(s, ids, (size_t)n * sizeof(int));
    qsort(s, (size_t)n, sizeof(int), nvf_ucx_cmp_int);
    for (int i = 0; i < n; i++) {
        if (s[i] < 0 || (i > 0 && s[i] == s[i - 1])) {
            int bad = s[i];
            free(s);
            return nvf_ucx_failf(NVF_ERR_INVALID, "mesh: peer id %d in %s is %s", bad, what,
                                 bad < 0 ? "negative" : "repeated");
        }
    }
    *out = s;
    return NVF_OK;
}

static nvf_status_t nvf_ucx_mesh_check(const nvf_ucx_mesh_params_t *p)
{
    if (p->my_id < 0)
        return nvf_ucx_failf(NVF_ERR_INVALID, "mesh: my_id %d is negative", p->my_id);
    if (p->nsend < 0 || p->nrecv < 0)
        return nvf_ucx_failf(NVF_ERR_INVALID, "mesh: negative list length (%d, %d)", p->nsend,
                             p->nrecv);
    if (p->nslots < 1 || p->nslots > NVF_UCX_MAX_SLOTS)
        return nvf_ucx_failf(NVF_ERR_INVALID, "mesh: nslots %d outside 1..%d", p->nslots,
                             NVF_UCX_MAX_SLOTS);
    if (p->slot_bytes < 1 || p->slot_bytes > NVF_UCX_MAX_SLOT_BYTES)
        return nvf_ucx_failf(NVF_ERR_INVALID, "mesh: slot_bytes %zu outside 1..%zu", p->slot_bytes,
                             NVF_UCX_MAX_SLOT_BYTES);
    return NVF_OK;
}

/* Frees everything a mesh holds; the caller has waited for its requests. With `abandoned` puts
 * (requests freed while UCX may still be working on them) the rkeys and the put sources are left
 * allocated: UCX may still read them. */
static void nvf_ucx_mesh_free(nvf_ucx_mesh_t *mesh, bool abandoned)
{
    nvf_ucx_am_unregister(mesh);
    for (int i = 0; i < mesh->npeers && !abandoned; i++) {
        if (mesh->peers[i].rkey != NULL) {
            ucp_rkey_destroy(mesh->peers[i].rkey);
            nvf_ucx_counters.rkeys--;
        }
    }
    if (mesh->memh != NULL) {
        ucs_status_t st = ucp_mem_unmap(mesh->ctx->context, mesh->memh);
        if (st != UCS_OK)
            nvf_ucx_fail("ucp_mem_unmap", st, NULL);
        nvf_ucx_counters.mem_maps--;
    }
    free(mesh->peers);
    free(mesh->send);
    free(mesh->recv);
    free(mesh->reqs);
    free(mesh->blob);
    if (!abandoned) {
        free(mesh->src_words);
        free(mesh->hdrs);
    }
    free(mesh->landed);
    free(mesh->lands);
    free(mesh);
}

/* Registers the region (memory allocated by UCX: shared-memory transports can then put into it
 * directly instead of through the target's progress) and zeroes it. */
static nvf_status_t nvf_ucx_mesh_map(nvf_ucx_mesh_t *mesh)
{
    ucp_mem_map_params_t mp;
    memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                    UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    mp.address = NULL;
    mp.length = mesh->region_bytes;
    mp.flags = UCP_MEM_MAP_ALLOCATE;
    nvf_ucx_capture_t cap;
    nvf_ucx_capture_begin(&cap);
    ucs_status_t st = ucp_mem_map(mesh->ctx->context, &mp, &mesh->memh);
    if (st != UCS_OK) {
        mesh->memh = NULL;
        nvf_status_t ret = nvf_ucx_fail("ucp_mem_map", st, nvf_ucx_capture_text(&cap));
        nvf_ucx_capture_end(&cap, false);
        return ret;
    }
    nvf_ucx_capture_end(&cap, true);
    nvf_ucx_counters.mem_maps++;

    ucp_mem_attr_t attr;
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
    st = ucp_mem_query(mesh->memh, &attr);
    if (st != UCS_OK)
        return nvf_ucx_fail("ucp_mem_query", st, NULL);
    if (attr.address == NULL || attr.length < mesh->region_bytes)
        return nvf_ucx_failf(NVF_ERR_UCX, "ucp_mem_map: got %zu bytes at %p, asked for %zu",
                             attr.length, attr.address, mesh->region_bytes);
    mesh->region = attr.address;
    memset(mesh->region, 0, mesh->region_bytes);
    return NVF_OK;
}

/* Writes the blob: header, entries, worker address, rkey, padding. */
static nvf_status_t nvf_ucx_mesh_blob(nvf_ucx_mesh_t *mesh)
{
    nvf_ucx_ctx_t *ctx = mesh->ctx;
    void *rkey;
    size_t rkey_len;
    ucs_status_t st = ucp_rkey_pack(ctx->context, mesh->memh, &rkey, &rkey_len);
    if (st != UCS_OK)
        return nvf_ucx_fail("ucp_rkey_pack", st, NULL);
    if (rkey_len > NVF_UCX_RKEY_MAX) {
        ucp_rkey_buffer_release(rkey);
        return nvf_ucx_failf(NVF_ERR_UCX,
                             "ucp_rkey_pack: the packed rkey has %zu bytes, more than the %d a "
                             "mesh blob carries",
                             rkey_len, NVF_UCX_RKEY_MAX);
    }
    mesh->blob_len = nvf_ucx_mesh_blob_max(ctx, mesh->nsend, mesh->nrecv);
    mesh->blob = calloc(1, mesh->blob_len);
    if (mesh->blob == NULL) {
        ucp_rkey_buffer_release(rkey);
        return nvf_ucx_failf(NVF_ERR_NOMEM, "mesh: out of memory");
    }
    nvf_ucx_blob_hdr_t h;
    memset(&h, 0, sizeof(h));
    h.magic = NVF_UCX_BLOB_MAGIC;
    h.version = NVF_UCX_BLOB_VERSION;
    h.id = mesh->my_id;
    h.nslots = mesh->nslots;
    h.slot_bytes = mesh->slot_bytes;
    h.region_bytes = mesh->region_bytes;
    h.base = (uint64_t)(uintptr_t)mesh->region;
    h.uid = mesh->uid;
    h.addr_len = (uint32_t)ctx->addr_len;
    h.rkey_len = (uint32_t)rkey_len;
    h.nsend = mesh->nsend;
    h.nrecv = mesh->nrecv;
    h.blob_len = mesh->blob_len;
    unsigned char *p = mesh->blob;
    memcpy(p, &h, sizeof(h));
    p += sizeof(h);
    for (int i = 0; i < mesh->nrecv; i++) {
        nvf_ucx_blob_entry_t e = {mesh->recv[i].peer_id, 0,
                                  (uint64_t)(mesh->recv[i].data - (unsigned char *)mesh->region)};
        memcpy(p, &e, sizeof(e));
        p += sizeof(e);
    }
    for (int i = 0; i < mesh->nsend; i++) {
        nvf_ucx_blob_entry_t e = {
            mesh->send[i].peer_id, 0,
            (uint64_t)((unsigned char *)mesh->send[i].credit - (unsigned char *)mesh->region)};
        memcpy(p, &e, sizeof(e));
        p += sizeof(e);
    }
    memcpy(p, ctx->addr, ctx->addr_len);
    p += ctx->addr_len;
    memcpy(p, rkey, rkey_len);
    ucp_rkey_buffer_release(rkey);
    return NVF_OK;
}

nvf_status_t nvf_ucx_mesh_create(nvf_ucx_ctx_t *ctx, const nvf_ucx_mesh_params_t *params,
                                 nvf_ucx_mesh_t **out, const void **blob, size_t *blob_len)
{
    *out = NULL;
    nvf_status_t ret = nvf_ucx_mesh_check(params);
    if (ret != NVF_OK)
        return ret;
    int *sends = NULL, *recvs = NULL;
    nvf_ucx_mesh_t *mesh = NULL;
    if ((ret = nvf_ucx_sorted_ids(params->send_to, params->nsend, "send_to", &sends)) != NVF_OK ||
        (ret = nvf_ucx_sorted_ids(params->recv_from, params->nrecv, "recv_from", &recvs)) != NVF_OK)
        goto fail;

    const int ns = params->nsend, nr = params->nrecv, nslots = params->nslots;
    size_t stride = nvf_ucx_round_up(params->slot_bytes, NVF_UCX_ALIGN);
    size_t flags_bytes = nvf_ucx_round_up((size_t)nslots * sizeof(uint64_t), NVF_UCX_ALIGN);
    size_t win_bytes, region;
    if (__builtin_mul_overflow(stride, (size_t)nslots, &win_bytes) ||
        __builtin_add_overflow(win_bytes, flags_bytes, &win_bytes) ||
        __builtin_mul_overflow(win_bytes, (size_t)nr, &region) ||
        __builtin_add_overflow(region, flags_bytes * (size_t)ns, &region) ||
        region > ((size_t)1 << 40)) {
        ret = nvf_ucx_failf(NVF_ERR_INVALID, "mesh: %d windows of %d x %zu bytes are too large", nr,
                            nslots, params->slot_bytes);
        goto fail;
    }

    mesh = calloc(1, sizeof(*mesh));
    if (mesh == NULL) {
        ret = nvf_ucx_failf(NVF_ERR_NOMEM, "mesh: out of memory");
        goto fail;
    }
    mesh->ctx = ctx;
    mesh->my_id = params->my_id;
    mesh->nslots = nslots;
    mesh->slot_bytes = params->slot_bytes;
    mesh->slot_stride = stride;
    mesh->region_bytes = region > 0 ? region : NVF_UCX_ALIGN;
    mesh->nsend = ns;
    mesh->nrecv = nr;
    mesh->send = calloc((size_t)ns + 1, sizeof(*mesh->send));
    mesh->recv = calloc((size_t)nr + 1, sizeof(*mesh->recv));
    mesh->peers = calloc((size_t)ns + (size_t)nr + 1, sizeof(*mesh->peers));
    mesh->src_words = calloc(((size_t)ns + (size_t)nr) * (size_t)nslots + 1, sizeof(uint64_t));
    mesh->am_frags = (int)((params->slot_bytes + NVF_UCX_AM_FRAG - 1) / NVF_UCX_AM_FRAG);
    mesh->hdrs = calloc(((size_t)ns * (size_t)mesh->am_frags + (size_t)nr) * (size_t)nslots + 1,
                        sizeof(*mesh->hdrs));
    mesh->landed = calloc((size_t)nr * (size_t)nslots + 1, sizeof(uint64_t));
    mesh->lands = calloc((size_t)nr * (size_t)nslots + 1, sizeof(*mesh->lands));
    mesh->protocol = params->protocol;
    if (mesh->send == NULL || mesh->recv == NULL || mesh->peers == NULL ||
        mesh->src_words == NULL || mesh->hdrs == NULL || mesh->landed == NULL ||
        mesh->lands == NULL) {
        ret = nvf_ucx_failf(NVF_ERR_NOMEM, "mesh: out of memory");
        goto fail;
    }
    /* peers: the union of both sorted lists, merged */
    for (int i = 0, j = 0; i < ns || j < nr;) {
        int id;
        if (j >= nr || (i < ns && sends[i] < recvs[j]))
            id = sends[i++];
        else if (i >= ns || recvs[j] < sends[i])
            id = recvs[j++];
        else
            id = sends[i++], j++;
        mesh->peers[mesh->npeers++].id = id;
    }

    if ((ret = nvf_ucx_am_register(mesh)) != NVF_OK || (ret = nvf_ucx_mesh_map(mesh)) != NVF_OK)
        goto fail;
    unsigned char *base = mesh->region;
    uint64_t *words = mesh->src_words;
    nvf_ucx_am_hdr_t *hdrs = mesh->hdrs;
    for (int j = 0; j < nr; j++) {
        nvf_ucx_recv_chan_t *c = &mesh->recv[j];
        c->peer_id = recvs[j];
        c->peer = nvf_ucx_peer(mesh, c->peer_id);
        c->data = base + (size_t)j * win_bytes;
        c->flags = (_Atomic uint64_t *)(void *)(c->data + (size_t)nslots * stride);
        c->credit_src = words;
        words += nslots;
        c->hdr = hdrs;
        hdrs += nslots;
        c->landed = mesh->landed + (size_t)j * (size_t)nslots;
        c->land = mesh->lands + (size_t)j * (size_t)nslots;
    }
    for (int i = 0; i < ns; i++) {
        nvf_ucx_send_chan_t *c = &mesh->send[i];
        c->peer_id = sends[i];
        c->peer = nvf_ucx_peer(mesh, c->peer_id);
        c->credit =
            (_Atomic uint64_t *)(void *)(base + (size_t)nr * win_bytes + (size_t)i * flags_bytes);
        c->flag_src = words;
        words += nslots;
        c->hdr = hdrs;
        hdrs += (size_t)nslots * (size_t)mesh->am_frags;
    }
    if ((ret = nvf_ucx_mesh_blob(mesh)) != NVF_OK)
        goto fail;
    free(sends);
    free(recvs);
    nvf_ucx_counters.meshes++;
    *out = mesh;
    *blob = mesh->blob;
    *blob_len = mesh->blob_len;
    return NVF_OK;

fail:
    free(sends);
    free(recvs);
    if (mesh != NULL)
        nvf_ucx_mesh_free(mesh, false);
    return ret;
}

/* The offset of `id`'s entry among n entries at p, or false. */
static bool nvf_ucx_blob_find(const unsigned char *p, int n, int id, uint64_t *offset)
{
    for (int i = 0; i < n; i++) {
        nvf_ucx_blob_entry_t e;
        memcpy(&e, p + (size_t)i * sizeof(e), sizeof(e));
        if (e.peer == id) {
            *offset = e.offset;
            return true;
        }
    }
    return false;
}

nvf_status_t nvf_ucx_mesh_connect(nvf_ucx_mesh_t *mesh, int peer_id, const void *blob,
                                  size_t blob_len)
{
    nvf_ucx_peer_t *peer = nvf_ucx_peer(mesh, peer_id);
    if (peer == NULL)
        return nvf_ucx_failf(NVF_ERR_INVALID,
                             "mesh connect: peer %d is in neither list of process %d", peer_id,
                             mesh->my_id);
    if (peer->ep != NULL)
        return nvf_ucx_failf(NVF_ERR_INVALID, "mesh connect: peer %d is already connected",
                             peer_id);
    nvf_ucx_blob_hdr_t h;
    if (blob == NULL || blob_len < sizeof(h))
        return nvf_ucx_failf(NVF_ERR_INVALID, "mesh connect: blob of peer %d has %zu bytes",
                             peer_id, blob == NULL ? (size_t)0 : blob_len);
    memcpy(&h, blob, sizeof(h));
    if (h.magic != NVF_UCX_BLOB_MAGIC || h.version != NVF_UCX_BLOB_VERSION)
        return nvf_ucx_failf(NVF_ERR_INVALID,
                             "mesh connect: blob of peer %d is not a mesh blob (version %u)",
                             peer_id, h.version);
    if (h.id != peer_id)
        return nvf_ucx_failf(NVF_ERR_INVALID, "mesh connect: blob for peer %d comes from %d",
                             peer_id, h.id);
    if (h.nslots != mesh->nslots || h.slot_bytes != mesh->slot_bytes)
        return nvf_ucx_failf(NVF_ERR_INVALID,
                             "mesh connect: peer %d has %d slots of %llu bytes, this side %d of "
                             "%zu",
                             peer_id, h.nslots, (unsigned long long)h.slot_bytes, mesh->nslots,
                             mesh->slot_bytes);
    size_t nent = (size_t)(h.nsend >= 0 ? h.nsend : 0) + (size_t)(h.nrecv >= 0 ? h.nrecv : 0);
    if (h.nsend < 0 || h.nrecv < 0 || h.addr_len == 0 || h.addr_len > NVF_UCX_ADDR_MAX ||
        h.rkey_len == 0 || h.rkey_len > NVF_UCX_RKEY_MAX || h.blob_len > blob_len ||
        nent > (1u << 24) ||
        sizeof(h) + nent * sizeof(nvf_ucx_blob_entry_t) + h.addr_len + h.rkey_len > h.blob_len)
        return nvf_ucx_failf(NVF_ERR_INVALID, "mesh connect: blob of peer %d is malformed",
                             peer_id);

    const unsigned char *p = (const unsigned char *)blob + sizeof(h);
    const unsigned char *recv_ent = p,
                        *send_ent = p + (size_t)h.nrecv * sizeof(nvf_ucx_blob_entry_t);
    const unsigned char *addr = p + nent * sizeof(nvf_ucx_blob_entry_t);
    const unsigned char *rkey_buf = addr + h.addr_len;
    size_t win_bytes = (size_t)mesh->nslots * mesh->slot_stride +
                       nvf_ucx_round_up((size_t)mesh->nslots * sizeof(uint64_t), NVF_UCX_ALIGN);
    size_t credit_bytes = (size_t)mesh->nslots * sizeof(uint64_t);

    /* this side sends to the peer: the peer must receive from us; and the other way round */
    nvf_ucx_send_chan_t *sc = nvf_ucx_send_chan(mesh, peer_id);
    nvf_ucx_recv_chan_t *rc = nvf_ucx_recv_chan(mesh, peer_id);
    uint64_t win_off = 0, credit_off = 0;
    if (sc != NULL) {
        if (!nvf_ucx_blob_find(recv_ent, h.nrecv, mesh->my_id, &win_off))
            return nvf_ucx_failf(NVF_ERR_INVALID,
                                 "mesh connect: %d sends to %d, which does not receive from it",
                                 mesh->my_id, peer_id);
        if (win_off > h.region_bytes || h.region_bytes - win_off < win_bytes || win_off % 8)
            return nvf_ucx_failf(NVF_ERR_INVALID,
                                 "mesh connect: blob of peer %d: window outside its region",
                                 peer_id);
    }
    if (rc != NULL) {
        if (!nvf_ucx_blob_find(send_ent, h.nsend, mesh->my_id, &credit_off))
            return nvf_ucx_failf(NVF_ERR_INVALID,
                                 "mesh connect: %d receives from %d, which does not send to it",
                                 mesh->my_id, peer_id);
        if (credit_off > h.region_bytes || h.region_bytes - credit_off < credit_bytes ||
            credit_off % 8)
            return nvf_ucx_failf(NVF_ERR_INVALID,
                                 "mesh connect: blob of peer %d: credits outside its region",
                                 peer_id);
    }

    nvf_ucx_ep_t *ep;
    nvf_status_t ret = nvf_ucx_ep_get(mesh->ctx, addr, h.addr_len, peer_id, &ep);
    if (ret != NVF_OK)
        return ret;
    nvf_ucx_capture_t cap;
    nvf_ucx_capture_begin(&cap);
    ucs_status_t st = ucp_ep_rkey_unpack(ep->ep, rkey_buf, &peer->rkey);
    if (st != UCS_OK) {
        peer->rkey = NULL;
        char call[64];
        snprintf(call, sizeof(call), "ucp_ep_rkey_unpack for peer %d", peer_id);
        ret = nvf_ucx_fail(call, st, nvf_ucx_capture_text(&cap));
        nvf_ucx_capture_end(&cap, false);
        return ret;
    }
    nvf_ucx_capture_end(&cap, true);
    nvf_ucx_counters.rkeys++;
    peer->ep = ep;
    peer->uid = h.uid;
    peer->am = mesh->protocol == NVF_UCX_PROTO_AM ||
               (mesh->protocol == NVF_UCX_PROTO_AUTO && nvf_ucx_ep_rma_emulated(ep));
    if (sc != NULL) {
        sc->remote_data = h.base + win_off;
        sc->remote_flags = sc->remote_data + (uint64_t)mesh->nslots * mesh->slot_stride;
        sc->connected = true;
    }
    if (rc != NULL) {
        rc->remote_credit = h.base + credit_off;
        rc->connected = true;
    }
    return NVF_OK;
}

void nvf_ucx_mesh_destroy(nvf_ucx_mesh_t *mesh)
{
    if (mesh == NULL)
        return;
    /* the rkeys and the sources of flag and credit puts must outlive the puts */
    uint64_t deadline = nvf_ucx_now_ns() + NVF_UCX_TEARDOWN_TIMEOUT_NS;
    while (nvf_ucx_reap(mesh) > 0 && nvf_ucx_now_ns() < deadline)
        ucp_worker_progress(mesh->ctx->worker);
    bool abandoned = mesh->nreqs > 0;
    if (abandoned) {
        nvf_ucx_failf(NVF_ERR_UCX, "mesh destroy: %zu puts still in flight after %llu s, abandoned",
                      mesh->nreqs, NVF_UCX_TEARDOWN_TIMEOUT_NS / 1000000000ull);
        nvf_ucx_counters.teardown_timeouts++;
        for (size_t i = 0; i < mesh->nreqs; i++)
            ucp_request_free(mesh->reqs[i]);
        nvf_ucx_counters.requests -= (long)mesh->nreqs;
        mesh->nreqs = 0;
    }
    nvf_ucx_counters.meshes--;
    nvf_ucx_mesh_free(mesh, abandoned);
}

const char *nvf_ucx_mesh_protocol(const nvf_ucx_mesh_t *mesh)
{
    bool put = false, am = false;
    for (int i = 0; i < mesh->nsend; i++) {
        const nvf_ucx_peer_t *peer = mesh->send[i].peer;
        if (peer != NULL && peer->ep != NULL) {
            am = am || peer->am;
            put = put || !peer->am;
        }
    }
    return put && am ? "put+am" : am ? "am" : put ? "put" : "none";
}
