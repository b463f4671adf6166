/*
 * nvf_small.c: small calls on one node (at most NVF_SMALL_MAX_BYTES), one-shot with the
 * inputs inline.
 *
 * The scheduler's one-shot keeps a rank's input in its slot of the data area and the flag that
 * publishes it in its control block: a peer misses on the flag's line, then on the data's, and
 * a "done" flag follows. Here each rank copies its input into its own control block right
 * after the number that publishes it (the call's number on this path), so a peer's first miss
 * brings the start of the data, and there is no "done" flag. Every rank reduces all inputs, in
 * local rank order, into its receive buffer: the same bits on every rank.
 * Waiters pause between looks at a peer's number (nvf_cpu_relax): the peer writes its data on
 * that same line, and a waiter pulling the line back between those stores made the call 1.5x
 * slower (0.35 against 0.23 us at 8 bytes on 2 ranks; with the pause 0.11 us).
 *
 * Two slots per rank, by the parity of the call's number: I write slot s & 1 for call s only
 * after my call s - 1 finished, which needed every peer's input of s - 1, which each published
 * only after finishing its call s - 2, the last reader of that slot.
 */
#include "nvf_internal.h"
#include "nvf_log.h"
#include "nvf_reduce.h"

#include <string.h>

bool nvf_small_fits(const nvf_comm_t *c, const nvf_plan_t *plan, size_t bytes)
{
    return plan->alg == NVF_ALG_ONESHOT && bytes <= NVF_SMALL_MAX_BYTES && c->topo.nnodes == 1 &&
           c->topo.local_size > 1;
}

nvf_status_t nvf_small_run(nvf_comm_t *c, const void *sbuf, void *rbuf, size_t count,
                           nvf_dtype_t dt, nvf_op_t op, const nvf_call_mem_t *mem)
{
    const size_t bytes = count * nvf_dtype_size(dt);
    const nvf_shm_t *shm = &c->shm;
    const int L = c->topo.local_size, me = c->topo.local_rank;
    const uint64_t s = ++c->small_seq;
    nvf_small_slot_t *mine = &shm->ctrl[me].small[s & 1];
    const void *in = sbuf != NULL ? sbuf : rbuf;
    nvf_cuda_dev_t *in_cu = NULL, *out_cu = NULL; /* device buffers: their copies' devices */
    if (mem != NULL && nvf_stage_devs(c, mem, &in_cu, &out_cu) != NVF_OK) {
        atomic_store_explicit(&shm->hdr->failed, 1, memory_order_release);
        return NVF_ERR_CUDA;
    }
    if (in_cu != NULL) {
        nvf_status_t st = nvf_stage_copy(in_cu, mine->data, in, bytes);
        if (st != NVF_OK) {
            atomic_store_explicit(&shm->hdr->failed, 1, memory_order_release);
            return st;
        }
    } else {
        memcpy(mine->data, in, bytes);
    }
    atomic_store_explicit(&mine->seq, s, memory_order_release);

    const void *srcs[NVF_MAX_LOCAL];
    for (int k = 0; k < L; k++) {
        const nvf_small_slot_t *slot = &shm->ctrl[k].small[s & 1];
        if (k != me) {
            nvf_status_t st =
                nvf_wait_at_least(c, &slot->seq, s, "input to a small MPI_Allreduce", k);
            if (st != NVF_OK)
                return st;
        }
        srcs[k] = slot->data;
    }
    if (out_cu == NULL) {
        nvf_reduce_many(dt, op, rbuf, srcs, L, count);
        return NVF_OK;
    }
    _Alignas(16) unsigned char res[NVF_SMALL_MAX_BYTES];
    nvf_reduce_many(dt, op, res, srcs, L, count);
    return nvf_stage_copy(out_cu, rbuf, res, bytes);
}
