/*
 * nvf_wait.c: waiting for a peer's progress word in the node's segment.
 *
 * Spins with a pause between looks (the peer may be writing data on the same line), yields the
 * core after spin_before_yield looks (at once where ranks outnumber cores: the peer may need this
 * core), gives up when a rank has marked the segment failed, and says once, after 60 s, what it
 * waits for and the likely cause, then keeps waiting (a slow peer is not an error).
 */
#include "nvf_internal.h"
#include "nvf_log.h"

#include <sched.h>

nvf_status_t nvf_wait_slow(nvf_comm_t *c, const _Atomic uint64_t *word, uint64_t value,
                           const char *what, int peer)
{
    unsigned spins = 0;
    double since = 0;
    bool warned = false;
    while (atomic_load_explicit(word, memory_order_acquire) < value) {
        if (++spins < (unsigned)c->cfg.spin_before_yield) {
            nvf_cpu_relax();
            continue;
        }
        spins = 0;
        sched_yield();
        if (atomic_load_explicit(&c->shm.hdr->failed, memory_order_acquire))
            return NVF_ERR_PEER;
        const double now = nvf_now_us();
        if (since == 0)
            since = now;
        else if (!warned && now - since > 60e6) {
            warned = true;
            nvf_error("rank %d waited 60 s for local rank %d's %s: if ranks pass buffers of "
                      "different memory kinds (host and device) to the same call, "
                      "coll_nvfabric_host=off and coll_nvfabric_cuda_ipc=true need them alike.",
                      c->topo.rank, peer, what);
        }
    }
    return NVF_OK;
}
