/*
 * nvf_ucx_chan.c: the channels' per-message path: send (data put, fence, flag put), the
 * receiver's flag poll and release (credit put), local completion of puts, failure state.
 *
 * Message k of a channel uses slot s = k % nslots. The sender may put it once the slot's credit
 * word reads k - nslots + 1 (message k - nslots released; nothing to wait for while k < nslots).
 * The receiver sees it once the slot's flag reads k + 1. Both words are compared for equality,
 * never ordered: a torn 64-bit write cannot produce the exact awaited value before every byte
 * of it has landed, and each word has a single writer that writes it again only after the
 * reader has seen the previous value.
 *
 * Peers reached by active messages (nvf_ucx_am.c) keep the same slots, flags, credit words and
 * comparisons; only the way the words and the data get there differs.
 *
 * Must not allocate on the per-message path (except growing the request array) and must not
 * block: every call does at most one ucp_worker_progress (ucp_worker_fence aside, which UCX
 * makes a blocking flush where its protocols v2 need a strong fence: see nvf_ucx_check_fence).
 */
#include "nvf_ucx_int.h"

#include <stdlib.h>

nvf_status_t nvf_ucx_reserve(nvf_ucx_mesh_t *mesh, int peer)
{
    if (mesh->nreqs == mesh->cap_reqs && nvf_ucx_reap(mesh) == mesh->cap_reqs) {
        size_t cap = mesh->cap_reqs ? 2 * mesh->cap_reqs : 64;
        void **reqs = realloc(mesh->reqs, cap * sizeof(*reqs));
        if (reqs == NULL) {
            mesh->failed = true;
            return nvf_ucx_failf(NVF_ERR_NOMEM, "send to peer %d: out of memory", peer);
        }
        mesh->reqs = reqs;
        mesh->cap_reqs = cap;
    }
    return NVF_OK;
}

nvf_status_t nvf_ucx_track(nvf_ucx_mesh_t *mesh, ucs_status_ptr_t r, const char *call, int peer)
{
    if (r == NULL)
        return NVF_OK; /* completed in place */
    if (UCS_PTR_IS_ERR(r)) {
        mesh->failed = true;
        return nvf_ucx_failf(NVF_ERR_UCX, "%s to peer %d: %s", call, peer,
                             ucs_status_string(UCS_PTR_STATUS(r)));
    }
    mesh->reqs[mesh->nreqs++] = r;
    nvf_ucx_counters.requests++;
    return NVF_OK;
}

nvf_status_t nvf_ucx_put(nvf_ucx_mesh_t *mesh, nvf_ucx_peer_t *peer, const void *src, size_t len,
                         uint64_t raddr)
{
    nvf_status_t ret = nvf_ucx_reserve(mesh, peer->id);
    if (ret != NVF_OK)
        return ret;
    ucp_request_param_t prm = {.op_attr_mask = 0}; /* no callback: tracked, tested, freed */
    return nvf_ucx_track(mesh, ucp_put_nbx(peer->ep->ep, src, len, raddr, peer->rkey, &prm),
                         "ucp_put_nbx", peer->id);
}

size_t nvf_ucx_reap(nvf_ucx_mesh_t *mesh)
{
    size_t i = 0;
    while (i < mesh->nreqs) {
        ucs_status_t st = ucp_request_check_status(mesh->reqs[i]);
        if (st == UCS_INPROGRESS) {
            i++;
            continue;
        }
        if (st != UCS_OK && !mesh->failed) {
            mesh->failed = true;
            nvf_ucx_failf(NVF_ERR_UCX, "ucp_put_nbx (completion): %s", ucs_status_string(st));
        }
        ucp_request_free(mesh->reqs[i]);
        mesh->reqs[i] = mesh->reqs[--mesh->nreqs];
        nvf_ucx_counters.requests--;
    }
    return mesh->nreqs;
}

/* Failed: a put failed, or the endpoint of a connected peer did (its error callback ran). */
static bool nvf_ucx_check_failed(nvf_ucx_mesh_t *mesh)
{
    if (mesh->failed)
        return true;
    for (int i = 0; i < mesh->npeers; i++) {
        const nvf_ucx_ep_t *ep = mesh->peers[i].ep;
        if (ep != NULL && ep->failed) {
            mesh->failed = true;
            nvf_ucx_failf(NVF_ERR_UCX, "endpoint to peer %d failed: %s", mesh->peers[i].id,
                          ucs_status_string(ep->fail_status));
            return true;
        }
    }
    return false;
}

bool nvf_ucx_mesh_failed(const nvf_ucx_mesh_t *mesh)
{
    return nvf_ucx_check_failed((nvf_ucx_mesh_t *)mesh);
}

/* The per-message check: the mesh, or this channel's own endpoint (O(1), unlike the above). */
static bool nvf_ucx_chan_failed(nvf_ucx_mesh_t *mesh, const nvf_ucx_peer_t *peer)
{
    if (mesh->failed)
        return true;
    if (!peer->ep->failed)
        return false;
    mesh->failed = true;
    nvf_ucx_failf(NVF_ERR_UCX, "endpoint to peer %d failed: %s", peer->id,
                  ucs_status_string(peer->ep->fail_status));
    return true;
}

static nvf_status_t nvf_ucx_put_flag(nvf_ucx_mesh_t *mesh, nvf_ucx_send_chan_t *c, uint64_t k)
{
    const uint64_t s = k % (uint64_t)mesh->nslots;
    c->flag_src[s] = k + 1;
    return nvf_ucx_put(mesh, c->peer, &c->flag_src[s], sizeof(uint64_t),
                       c->remote_flags + s * sizeof(uint64_t));
}

nvf_status_t nvf_ucx_send(nvf_ucx_mesh_t *mesh, int peer, const void *src, size_t len,
                          bool *started)
{
    *started = false;
    nvf_ucx_send_chan_t *c = nvf_ucx_send_chan(mesh, peer);
    if (c == NULL || !c->connected)
        return nvf_ucx_failf(NVF_ERR_INVALID, "send: no connected channel to peer %d", peer);
    if (len > mesh->slot_bytes)
        return nvf_ucx_failf(NVF_ERR_INVALID, "send to peer %d: %zu bytes, slots have %zu", peer,
                             len, mesh->slot_bytes);
    if (nvf_ucx_chan_failed(mesh, c->peer))
        return NVF_ERR_UCX; /* the last error says why */

    const uint64_t k = c->nsent, s = k % (uint64_t)mesh->nslots;
    if (k >= (uint64_t)mesh->nslots) {
        const uint64_t need = k - (uint64_t)mesh->nslots + 1;
        if (atomic_load_explicit(&c->credit[s], memory_order_acquire) != need) {
            ucp_worker_progress(mesh->ctx->worker);
            if (atomic_load_explicit(&c->credit[s], memory_order_acquire) != need)
                return nvf_ucx_credits_flush(mesh, false); /* no free slot */
        }
    }
    nvf_status_t ret;
    if (c->peer->am) {
        ret = nvf_ucx_am_send(mesh, c, k, src, len);
        if (ret != NVF_OK)
            return ret;
        c->nsent = k + 1;
        *started = true;
        return NVF_OK;
    }
    if (len > 0) {
        ret = nvf_ucx_put(mesh, c->peer, src, len, c->remote_data + s * mesh->slot_stride);
        if (ret != NVF_OK)
            return ret;
    }
    /* the flag must not land before the data: same rkey, so the same lane (protocols v1), fenced;
     * with protocols v2 the context made sure that the fence is a strong one */
    ucs_status_t st = ucp_worker_fence(mesh->ctx->worker);
    if (st != UCS_OK) {
        mesh->failed = true;
        return nvf_ucx_fail("ucp_worker_fence", st, NULL);
    }
    ret = nvf_ucx_put_flag(mesh, c, k);
    if (ret != NVF_OK)
        return ret;
    c->nsent = k + 1;
    *started = true;
    return NVF_OK;
}

/* Every message sent has been released: the credit of the last one reads its count. */
static bool nvf_ucx_all_released(const nvf_ucx_mesh_t *mesh)
{
    for (int i = 0; i < mesh->nsend; i++) {
        const nvf_ucx_send_chan_t *c = &mesh->send[i];
        if (c->nsent > 0 &&
            atomic_load_explicit(&c->credit[(c->nsent - 1) % (uint64_t)mesh->nslots],
                                 memory_order_acquire) != c->nsent)
            return false;
    }
    return true;
}

/* Every put complete locally. */
static bool nvf_ucx_puts_done(nvf_ucx_mesh_t *mesh)
{
    return mesh->nreqs == 0 || nvf_ucx_reap(mesh) == 0;
}

bool nvf_ucx_send_idle(nvf_ucx_mesh_t *mesh, bool released)
{
    /* the peers may be waiting for my releases as I wait for theirs */
    if (released && nvf_ucx_credits_flush(mesh, true) != NVF_OK)
        return false;
    if (nvf_ucx_puts_done(mesh) && (!released || nvf_ucx_all_released(mesh)))
        return true;
    ucp_worker_progress(mesh->ctx->worker);
    return nvf_ucx_puts_done(mesh) && (!released || nvf_ucx_all_released(mesh));
}

bool nvf_ucx_recv_test(nvf_ucx_mesh_t *mesh, int peer, const void **data)
{
    nvf_ucx_recv_chan_t *c = nvf_ucx_recv_chan(mesh, peer);
    if (c == NULL || !c->connected)
        return false;
    const uint64_t k = c->nreleased, s = k % (uint64_t)mesh->nslots;
    if (atomic_load_explicit(&c->flags[s], memory_order_acquire) != k + 1) {
        if (nvf_ucx_chan_failed(mesh, c->peer))
            return false;
        ucp_worker_progress(mesh->ctx->worker);
        if (atomic_load_explicit(&c->flags[s], memory_order_acquire) != k + 1) {
            (void)nvf_ucx_credits_flush(mesh, false); /* a failure fails the mesh */
            return false;
        }
    }
    const nvf_ucx_landing_t *l = &c->land[s];
    *data = (l->seq1 == k + 1 && l->applied) ? NULL : c->data + s * mesh->slot_stride;
    return true;
}

nvf_status_t nvf_ucx_recv_release(nvf_ucx_mesh_t *mesh, int peer)
{
    nvf_ucx_recv_chan_t *c = nvf_ucx_recv_chan(mesh, peer);
    if (c == NULL || !c->connected)
        return nvf_ucx_failf(NVF_ERR_INVALID, "release: no connected channel from peer %d", peer);
    const uint64_t k = c->nreleased, s = k % (uint64_t)mesh->nslots;
    if (atomic_load_explicit(&c->flags[s], memory_order_acquire) != k + 1)
        return nvf_ucx_failf(NVF_ERR_INVALID, "release from peer %d: message %llu has not arrived",
                             peer, (unsigned long long)k);
    if (nvf_ucx_chan_failed(mesh, c->peer))
        return NVF_ERR_UCX;
    /* the caller's reads of the slot come before the sender may overwrite it */
    atomic_thread_fence(memory_order_release);
    c->land[s] = (nvf_ucx_landing_t){0};
    c->nreleased = k + 1;
    if (c->peer->am) { /* told at half the window, or sooner (nvf_ucx_int.h) */
        const uint64_t batch = mesh->nslots > 1 ? (uint64_t)mesh->nslots / 2 : 1;
        if (c->nreleased - c->credited >= batch)
            return nvf_ucx_am_credit(mesh, c);
        if (c->untold_since == 0) {
            c->untold_since = nvf_ucx_now_ns();
            mesh->untold++;
        }
        return NVF_OK;
    }
    c->credit_src[s] = k + 1;
    return nvf_ucx_put(mesh, c->peer, &c->credit_src[s], sizeof(uint64_t),
                       c->remote_credit + s * sizeof(uint64_t));
}

bool nvf_ucx_recv_post(nvf_ucx_mesh_t *mesh, int peer, unsigned ahead, void *dst, size_t cap,
                       size_t granule, nvf_ucx_land_fn_t fn, void *arg)
{
    nvf_ucx_recv_chan_t *c = nvf_ucx_recv_chan(mesh, peer);
    if (c == NULL || !c->connected || ahead >= (unsigned)mesh->nslots || granule == 0 ||
        (fn != NULL && NVF_UCX_AM_FRAG % granule != 0))
        return false;
    const uint64_t k = c->nreleased + ahead, s = k % (uint64_t)mesh->nslots;
    nvf_ucx_landing_t *l = &c->land[s];
    if (l->seq1 == k + 1)
        return true;
    /* nothing of message k may have landed yet (the slot's previous message is released) */
    if (c->landed[s] != 0 || atomic_load_explicit(&c->flags[s], memory_order_acquire) == k + 1)
        return false;
    *l = (nvf_ucx_landing_t){k + 1, dst, cap, granule, fn, arg, false};
    return true;
}

void nvf_ucx_recv_unpost(nvf_ucx_mesh_t *mesh, int peer)
{
    nvf_ucx_recv_chan_t *c = nvf_ucx_recv_chan(mesh, peer);
    if (c == NULL)
        return;
    for (int s = 0; s < mesh->nslots; s++)
        if (!c->land[s].applied)
            c->land[s] = (nvf_ucx_landing_t){0};
}
