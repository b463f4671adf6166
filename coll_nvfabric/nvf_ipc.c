/*
 * nvf_ipc.c: MPI_Allreduce on device buffers on one node through CUDA IPC (coll_nvfabric_cuda_ipc,
 * off by default: it has not run on a GPU yet, only against the mock driver).
 *
 * Two-shot, as the host path: every rank maps its peers' buffers (nvf_cuda_ipc_import, cached per
 * peer allocation), local rank i reduces chunk i of the count from every rank's input, in local
 * rank order, straight into chunk i of its receive buffer (one kernel, loads through NVLink or
 * the same device's memory), then copies every other chunk from the peer that reduced it. The
 * same bits land on every rank, and the same inputs give the same bits every time.
 *
 * Four steps, each ended by a number in my control block (4 s + step for my IPC call s) that the
 * others wait for:
 *   1. my buffers exported (descriptors in the control block), my inputs complete on the device
 *      (an event after the work the program queued on the legacy default stream), ok = whether
 *      I can take part at all;
 *   2. go = every rank said ok and my device reaches each peer's (same device, or peer access);
 *      if any rank says no, every rank returns with *ran false and runs the staged path;
 *   3. my chunk reduced (kernel done);
 *   4. the other chunks copied: nobody reads my buffers any more, the call may return.
 * My descriptors of call s + 1 overwrite those of call s only after step 4 of call s, when every
 * peer has finished reading them.
 */
#include "nvf_internal.h"
#include "nvf_log.h"

bool nvf_ipc_wanted(const nvf_comm_t *c)
{
    return c->cfg.cuda_ipc && c->topo.nnodes == 1 && c->topo.local_size > 1;
}

void nvf_ipc_release(nvf_comm_t *c)
{
    if (c->ipc_ready != NULL)
        nvf_cuda_event_destroy(c->ipc_ready);
    c->ipc_ready = NULL;
    c->ipc_ready_dev = NULL;
}

/* Waits until the program's work on my buffers (queued before this call on the legacy default
 * stream, which nvfabric's blocking stream follows) is done: peers read them with their kernels. */
static nvf_status_t inputs_complete(nvf_comm_t *c, nvf_cuda_dev_t *d)
{
    if (c->ipc_ready_dev != d) {
        nvf_ipc_release(c);
        nvf_status_t st = nvf_cuda_event_create(d, &c->ipc_ready);
        if (st != NVF_OK)
            return st;
        c->ipc_ready_dev = d;
    }
    nvf_status_t st = nvf_cuda_event_record(d, c->ipc_ready);
    return st == NVF_OK ? nvf_cuda_event_sync(c->ipc_ready) : st;
}

/* Step 1 for me: the device of my buffers, exported into my control block. false: I cannot take
 * part (not an error: the call goes the staged way on every rank). */
static bool take_part(nvf_comm_t *c, nvf_shm_ipc_t *mine, const void *sbuf, void *rbuf,
                      size_t bytes, nvf_dtype_t dt, nvf_op_t op, const nvf_call_mem_t *mem,
                      nvf_cuda_dev_t **dev)
{
    if (c->topo.local_size > NVF_CUDA_MAX_SOURCES || !nvf_op_supported_on_device(dt, op))
        return false;
    /* both buffers device memory of one context (what the call's classification found) */
    const nvf_cuda_ptr_info_t *ri = &mem->out, *si = &mem->in;
    if (ri->kind != NVF_MEM_DEVICE ||
        (sbuf != NULL && (si->kind != NVF_MEM_DEVICE || si->context != ri->context)))
        return false;
    nvf_cuda_dev_t *d = NULL;
    const char *why = NULL;
    if (nvf_cuda_dev_for_buffer(ri, &d) != NVF_OK ||
        nvf_cuda_ipc_export_described(d, rbuf, bytes, ri, &mine->out, &why) != NVF_OK)
        goto no;
    if (sbuf == NULL)
        mine->in = mine->out;
    else if (nvf_cuda_ipc_export_described(d, sbuf, bytes, si, &mine->in, &why) != NVF_OK)
        goto no;
    if (inputs_complete(c, d) != NVF_OK)
        goto no;
    *dev = d;
    return true;
no:
    nvf_log(2, "rank %d: CUDA IPC path not taken: %s", c->topo.rank,
            why != NULL ? why : nvf_cuda_last_error());
    return false;
}

/* Publishes step `v` of my call and waits for every peer to reach it. */
static nvf_status_t step(nvf_comm_t *c, nvf_shm_ipc_t *mine, uint64_t v, const char *what)
{
    atomic_store_explicit(&mine->seq, v, memory_order_release);
    for (int k = 0; k < c->topo.local_size; k++) {
        if (k == c->topo.local_rank)
            continue;
        nvf_status_t st = nvf_wait_at_least(c, &c->shm.ctrl[k].ipc.seq, v, what, k);
        if (st != NVF_OK)
            return st;
    }
    return NVF_OK;
}

/* First element of local rank k's chunk of count (an MPI count: count x k fits in 64 bits). */
static size_t chunk_lo(size_t count, int k, int n)
{
    return count * (size_t)k / (size_t)n;
}

nvf_status_t nvf_ipc_run(nvf_comm_t *c, const void *sbuf, void *rbuf, size_t count, nvf_dtype_t dt,
                         nvf_op_t op, const nvf_call_mem_t *mem, bool *ran)
{
    *ran = false;
    const int L = c->topo.local_size, me = c->topo.local_rank;
    const size_t es = nvf_dtype_size(dt), bytes = count * es;
    nvf_shm_ctrl_t *ctrl = c->shm.ctrl;
    nvf_shm_ipc_t *mine = &ctrl[me].ipc;
    const uint64_t base = 4 * ++c->ipc_seq;
    nvf_cuda_dev_t *d = NULL;

    mine->ok = take_part(c, mine, sbuf, rbuf, bytes, dt, op, mem, &d);
    nvf_status_t st = step(c, mine, base + 1, "buffers for the CUDA IPC path");
    if (st != NVF_OK)
        return st;

    bool go = true;
    for (int k = 0; k < L && go; k++)
        go = ctrl[k].ipc.ok != 0;
    for (int k = 0; k < L && go; k++) {
        if (k == me)
            continue;
        bool can = false, same = false;
        go = nvf_cuda_peer_reachable(d, &ctrl[k].ipc.out.uuid, &can, &same) == NVF_OK && can;
    }
    mine->go = go;
    st = step(c, mine, base + 2, "verdict on the CUDA IPC path");
    if (st != NVF_OK)
        return st;
    for (int k = 0; k < L; k++)
        if (!ctrl[k].ipc.go)
            return NVF_OK; /* everyone read the same verdicts: all go the staged way */

    /* 3: my chunk from every rank's input, in local rank order */
    const void *src[NVF_CUDA_MAX_SOURCES];
    const size_t lo = chunk_lo(count, me, L), n = chunk_lo(count, me + 1, L) - lo;
    for (int k = 0; k < L && st == NVF_OK; k++) {
        void *p = NULL;
        if (k == me)
            p = (void *)(sbuf != NULL ? sbuf : rbuf);
        else
            st = nvf_cuda_ipc_import(d, &ctrl[k].ipc.in, &p);
        src[k] = (const char *)p + lo * es;
    }
    if (st == NVF_OK && n > 0)
        st = nvf_cuda_reduce_async(d, dt, op, (char *)rbuf + lo * es, src, L, n);
    if (st == NVF_OK)
        st = nvf_cuda_stream_sync(d);
    if (st == NVF_OK)
        st = step(c, mine, base + 3, "reduced chunk on the CUDA IPC path");

    /* 4: every other chunk from the rank that reduced it */
    for (int k = 0; k < L && st == NVF_OK; k++) {
        const size_t klo = chunk_lo(count, k, L), kn = chunk_lo(count, k + 1, L) - klo;
        if (k == me || kn == 0)
            continue;
        void *p = NULL;
        st = nvf_cuda_ipc_import(d, &ctrl[k].ipc.out, &p);
        if (st == NVF_OK)
            st = nvf_cuda_copy_kernel_async(d, (char *)rbuf + klo * es, (char *)p + klo * es,
                                            kn * es);
    }
    if (st == NVF_OK)
        st = nvf_cuda_stream_sync(d);
    if (st == NVF_OK)
        st = step(c, mine, base + 4, "copies on the CUDA IPC path");
    if (st != NVF_OK) {
        nvf_error("rank %d: MPI_Allreduce over CUDA IPC failed: %s (%s)", c->topo.rank,
                  nvf_status_str(st), nvf_cuda_last_error());
        atomic_store_explicit(&c->shm.hdr->failed, 1, memory_order_release);
        return st;
    }
    *ran = true;
    return NVF_OK;
}
