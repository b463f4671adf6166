/*
 * nvf_ucx_am.c: channels carried by active messages: the worker's handler, the registry of live
 * meshes it delivers to, the data and credit messages, and the test that picks this protocol
 * where UCX has no RMA lane to a peer.
 *
 * A data message travels as eager fragments; each header names the receiving mesh (its uid), the
 * sender, the sequence number k, the fragment's offset and the message's length. The handler
 * copies each fragment into slot k % nslots and, once the whole message has landed, stores k + 1
 * into the slot's flag with release order: exactly what the flag put does under the put
 * protocol, so the channel code that polls and releases is the same. A credit message sets the
 * sender's credit word in the same way. Everything runs inside ucp_worker_progress, on the
 * thread that drives the worker.
 *
 * A message the receiver posted a landing for (nvf_ucx_recv_post) goes to that buffer instead
 * of the slot, fragment by fragment, copied or reduced by the poster's function: the data is
 * touched once after UCX has it, where landing in the slot and then reducing from it touches it
 * twice.
 *
 * A message for a mesh that is no longer registered (uids are never reused) is dropped; one that
 * contradicts its channel (unknown sender, a sequence number outside the window, a payload larger
 * than a slot) fails the mesh with a clear error instead of writing anywhere.
 */
#include "nvf_ucx_int.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NVF_UCX_AM_ID 0x6e76u /* "nv" */

static nvf_ucx_mesh_t *nvf_ucx_am_find(nvf_ucx_ctx_t *ctx, uint64_t uid)
{
    for (int i = 0; i < ctx->nmeshes; i++)
        if (ctx->meshes[i]->uid == uid)
            return ctx->meshes[i];
    return NULL;
}

static void nvf_ucx_am_reject(nvf_ucx_mesh_t *mesh, const nvf_ucx_am_hdr_t *h, const char *why)
{
    if (!mesh->failed)
        nvf_ucx_failf(NVF_ERR_UCX, "active message %u from peer %d (message %llu): %s", h->kind,
                      h->from, (unsigned long long)h->seq, why);
    mesh->failed = true;
}

/* The receiver of channel c says its first n messages are released: each slot's credit word
 * takes the number of the last of them in that slot, plus one, as a credit put would have. A
 * count no larger than one already seen is a repeat (a header rewritten before UCX sent it). */
static void nvf_ucx_am_apply_credit(nvf_ucx_mesh_t *mesh, const nvf_ucx_am_hdr_t *h, uint64_t n)
{
    nvf_ucx_send_chan_t *c = nvf_ucx_send_chan(mesh, h->from);
    if (c == NULL || n > c->nsent) {
        nvf_ucx_am_reject(mesh, h, "credit for a message not sent");
        return;
    }
    if (n <= c->credited)
        return;
    const uint64_t ns = (uint64_t)mesh->nslots;
    for (uint64_t j = n - c->credited > ns ? n - ns : c->credited; j < n; j++)
        atomic_store_explicit(&c->credit[j % ns], j + 1, memory_order_release);
    c->credited = n;
}

/* Lands a fragment of a data message in its slot; the last byte to land sets the flag. */
static void nvf_ucx_am_data(nvf_ucx_mesh_t *mesh, const nvf_ucx_am_hdr_t *h, const void *data,
                            size_t length, const ucp_am_recv_param_t *param)
{
    nvf_ucx_recv_chan_t *c = nvf_ucx_recv_chan(mesh, h->from);
    if (c == NULL) {
        nvf_ucx_am_reject(mesh, h, "no channel from this peer");
        return;
    }
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        nvf_ucx_am_reject(mesh, h, "sent by rendezvous, not eager");
        return;
    }
    if (h->seq < c->nreleased || h->seq - c->nreleased >= (uint64_t)mesh->nslots) {
        nvf_ucx_am_reject(mesh, h, "outside the channel's window");
        return;
    }
    const uint64_t s = h->seq % (uint64_t)mesh->nslots;
    if (h->len > mesh->slot_bytes || h->offset > h->len || length > h->len - h->offset ||
        c->landed[s] + length > h->len) {
        nvf_ucx_am_reject(mesh, h, "does not fit its slot");
        return;
    }
    unsigned char *slot = c->data + s * mesh->slot_stride;
    nvf_ucx_landing_t *l = &c->land[s];
    const bool posted = l->seq1 == h->seq + 1;
    if (posted && h->len > l->cap) {
        nvf_ucx_am_reject(mesh, h, "larger than the buffer posted for it");
        return;
    }
    if (posted && l->fn != NULL && (h->offset % l->granule != 0 || length % l->granule != 0)) {
        nvf_ucx_am_reject(mesh, h, "fragment splits an element");
        return;
    }
    if (length == 0) {
        /* nothing to land (an empty message) */
    } else if (!posted) {
        memcpy(slot + h->offset, data, length);
    } else if (l->fn == NULL) {
        memcpy(l->dst + h->offset, data, length);
    } else {
        /* the reduction reads whole elements: from UCX's buffer where it is aligned for them,
         * else from the slot (unused by this message) */
        const size_t align = l->granule & (~l->granule + 1); /* largest power of 2 dividing it */
        if ((uintptr_t)data % (align < 16 ? align : 16) != 0) {
            memcpy(slot + h->offset, data, length);
            data = slot + h->offset;
        }
        l->fn(l->arg, l->dst + h->offset, data, length);
    }
    c->landed[s] += length;
    if (c->landed[s] == h->len) {
        c->landed[s] = 0;
        l->applied = posted;
        atomic_store_explicit(&c->flags[s], h->seq + 1, memory_order_release);
    }
}

static ucs_status_t nvf_ucx_am_cb(void *arg, const void *header, size_t header_length, void *data,
                                  size_t length, const ucp_am_recv_param_t *param)
{
    nvf_ucx_ctx_t *ctx = arg;
    nvf_ucx_am_hdr_t h;
    if (header_length != sizeof(h))
        return UCS_OK; /* not one of ours */
    memcpy(&h, header, sizeof(h));
    nvf_ucx_mesh_t *mesh = nvf_ucx_am_find(ctx, h.uid);
    if (mesh == NULL)
        return UCS_OK; /* its mesh is gone */
    if (h.kind == NVF_UCX_AM_DATA) {
        if (h.credit != 0)
            nvf_ucx_am_apply_credit(mesh, &h, h.credit);
        nvf_ucx_am_data(mesh, &h, data, length, param);
    } else if (h.kind == NVF_UCX_AM_CREDIT) {
        nvf_ucx_am_apply_credit(mesh, &h, h.seq);
    } else {
        nvf_ucx_am_reject(mesh, &h, "unknown kind");
    }
    return UCS_OK;
}

nvf_status_t nvf_ucx_am_init(nvf_ucx_ctx_t *ctx)
{
    ucp_am_handler_param_t hp;
    memset(&hp, 0, sizeof(hp));
    hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                    UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
    hp.id = NVF_UCX_AM_ID;
    hp.flags = UCP_AM_FLAG_WHOLE_MSG;
    hp.cb = nvf_ucx_am_cb;
    hp.arg = ctx;
    ucs_status_t st = ucp_worker_set_am_recv_handler(ctx->worker, &hp);
    return st == UCS_OK ? NVF_OK : nvf_ucx_fail("ucp_worker_set_am_recv_handler", st, NULL);
}

nvf_status_t nvf_ucx_am_register(nvf_ucx_mesh_t *mesh)
{
    nvf_ucx_ctx_t *ctx = mesh->ctx;
    if (ctx->nmeshes == ctx->cap_meshes) {
        int cap = ctx->cap_meshes ? 2 * ctx->cap_meshes : 8;
        nvf_ucx_mesh_t **m = realloc(ctx->meshes, (size_t)cap * sizeof(*m));
        if (m == NULL)
            return nvf_ucx_failf(NVF_ERR_NOMEM, "mesh: out of memory");
        ctx->meshes = m;
        ctx->cap_meshes = cap;
    }
    mesh->uid = ++ctx->next_uid;
    ctx->meshes[ctx->nmeshes++] = mesh;
    return NVF_OK;
}

void nvf_ucx_am_unregister(nvf_ucx_mesh_t *mesh)
{
    nvf_ucx_ctx_t *ctx = mesh->ctx;
    for (int i = 0; i < ctx->nmeshes; i++) {
        if (ctx->meshes[i] == mesh) {
            ctx->meshes[i] = ctx->meshes[--ctx->nmeshes];
            return;
        }
    }
}

bool nvf_ucx_ep_rma_emulated(nvf_ucx_ep_t *ep)
{
    if (ep->rma_emulated >= 0)
        return ep->rma_emulated != 0;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL)
        return false; /* cannot tell: puts work everywhere */
    ucp_ep_print_info(ep->ep, f);
    fclose(f);
    /* UCX lists the put protocols of each RMA lane as "put[lane]: ..." */
    bool emulated =
        text != NULL && len > 0 && strstr(text, "lane[") != NULL && strstr(text, "put[") == NULL;
    free(text);
    ep->rma_emulated = emulated;
    return emulated;
}

static void nvf_ucx_am_hdr(nvf_ucx_am_hdr_t *h, const nvf_ucx_mesh_t *mesh,
                           const nvf_ucx_peer_t *peer, uint32_t kind, uint64_t k, uint64_t offset,
                           uint64_t len, uint64_t credit)
{
    h->uid = peer->uid;
    h->seq = k;
    h->from = mesh->my_id;
    h->kind = kind;
    h->offset = offset;
    h->len = len;
    h->credit = credit;
}

/* The releases of channel c are told (by whatever message carries c->nreleased). */
static void nvf_ucx_am_told(nvf_ucx_mesh_t *mesh, nvf_ucx_recv_chan_t *c)
{
    if (c->untold_since != 0)
        mesh->untold--;
    c->credited = c->nreleased;
    c->untold_since = 0;
}

static nvf_status_t nvf_ucx_am_post(nvf_ucx_mesh_t *mesh, nvf_ucx_peer_t *peer, nvf_ucx_am_hdr_t *h,
                                    const void *src, size_t len, uint32_t flags)
{
    nvf_status_t ret = nvf_ucx_reserve(mesh, peer->id);
    if (ret != NVF_OK)
        return ret;
    ucp_request_param_t prm;
    memset(&prm, 0, sizeof(prm));
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    prm.flags = flags;
    return nvf_ucx_track(
        mesh, ucp_am_send_nbx(peer->ep->ep, NVF_UCX_AM_ID, h, sizeof(*h), src, len, &prm),
        "ucp_am_send_nbx", peer->id);
}

nvf_status_t nvf_ucx_am_send(nvf_ucx_mesh_t *mesh, nvf_ucx_send_chan_t *c, uint64_t k,
                             const void *src, size_t len)
{
    nvf_ucx_am_hdr_t *hdrs = &c->hdr[(k % (uint64_t)mesh->nslots) * (uint64_t)mesh->am_frags];
    /* the releases of the reverse channel not yet told ride along (in every fragment) */
    nvf_ucx_recv_chan_t *rev = nvf_ucx_recv_chan(mesh, c->peer_id);
    const uint64_t credit = rev != NULL && rev->nreleased > rev->credited ? rev->nreleased : 0;
    size_t off = 0;
    int f = 0;
    do { /* a message of 0 bytes is one empty fragment */
        size_t n = len - off < NVF_UCX_AM_FRAG ? len - off : NVF_UCX_AM_FRAG;
        nvf_ucx_am_hdr_t *h = &hdrs[f++];
        nvf_ucx_am_hdr(h, mesh, c->peer, NVF_UCX_AM_DATA, k, off, len, credit);
        nvf_status_t ret =
            nvf_ucx_am_post(mesh, c->peer, h, (const char *)src + off, n, UCP_AM_SEND_FLAG_EAGER);
        if (ret != NVF_OK)
            return ret;
        off += n;
    } while (off < len);
    if (credit != 0)
        nvf_ucx_am_told(mesh, rev);
    return NVF_OK;
}

/* The header of the credit for n releases is the slot of message n - 1: it is written again
 * only for a later count (at least nslots later, unless UCX has not sent it yet: then it goes
 * with the later count, which says everything the earlier one did). */
nvf_status_t nvf_ucx_am_credit(nvf_ucx_mesh_t *mesh, nvf_ucx_recv_chan_t *c)
{
    const uint64_t n = c->nreleased;
    nvf_ucx_am_hdr_t *h = &c->hdr[(n - 1) % (uint64_t)mesh->nslots];
    nvf_ucx_am_hdr(h, mesh, c->peer, NVF_UCX_AM_CREDIT, n, 0, 0, 0);
    nvf_status_t ret = nvf_ucx_am_post(mesh, c->peer, h, NULL, 0, UCP_AM_SEND_FLAG_EAGER);
    if (ret == NVF_OK) {
        nvf_ucx_am_told(mesh, c);
        nvf_ucx_counters.credit_messages++;
    }
    return ret;
}

nvf_status_t nvf_ucx_credits_flush(nvf_ucx_mesh_t *mesh, bool force)
{
    if (mesh->untold == 0)
        return NVF_OK;
    if (mesh->failed)
        return NVF_ERR_UCX; /* the last error says why */
    const uint64_t now = force ? 0 : nvf_ucx_now_ns();
    for (int i = 0; i < mesh->nrecv && mesh->untold > 0; i++) {
        nvf_ucx_recv_chan_t *c = &mesh->recv[i];
        if (c->untold_since == 0 || (!force && now - c->untold_since < NVF_UCX_CREDIT_FLUSH_NS))
            continue;
        nvf_status_t ret = nvf_ucx_am_credit(mesh, c);
        if (ret != NVF_OK)
            return ret;
    }
    return NVF_OK;
}
