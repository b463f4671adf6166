/*
 * nvf_line_probe.c: the round trip of one cache line between ranks 0 and 1 of a node, through
 * a shared-memory window (see nvf_line_probe.h).
 *
 * The line holds a counter: rank 0 makes it odd, rank 1 makes it even again, `rounds` times.
 * The other ranks wait on a second line with short sleeps, so that on an oversubscribed node
 * they do not take the CPUs the two probing ranks need (MPI_Barrier would spin).
 */
#include "nvf_line_probe.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#define LINE 64

static MPI_Comm probe_comm = MPI_COMM_NULL;
static MPI_Win probe_win = MPI_WIN_NULL;
static _Atomic uint64_t *counter, *released;
static uint64_t generation;
static int probe_rank;

int nvf_line_probe_open(MPI_Comm comm)
{
    int rank, size, node_rank, same_node, ok;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &probe_comm);
    MPI_Comm_rank(probe_comm, &node_rank);
    /* ranks 0 and 1 of comm must be ranks 0 and 1 of one node (the split keeps comm's order) */
    same_node = rank > 1 || node_rank == rank;
    MPI_Allreduce(&same_node, &ok, 1, MPI_INT, MPI_LAND, comm);
    if (!ok || size < 2) {
        MPI_Comm_free(&probe_comm);
        return -1;
    }
    /* local rank 0 holds the two lines, its node's ranks map them */
    char *base = NULL;
    MPI_Aint bytes;
    int disp;
    MPI_Win_allocate_shared(node_rank == 0 ? 2 * LINE : 0, 1, MPI_INFO_NULL, probe_comm, &base,
                            &probe_win);
    MPI_Win_shared_query(probe_win, 0, &bytes, &disp, &base);
    counter = (_Atomic uint64_t *)(void *)base;
    released = (_Atomic uint64_t *)(void *)(base + LINE);
    if (node_rank == 0) {
        atomic_store(counter, 0);
        atomic_store(released, 0);
    }
    probe_rank = node_rank;
    generation = 0;
    MPI_Barrier(probe_comm);
    return 0;
}

static void spin_until(_Atomic uint64_t *v, uint64_t want)
{
    unsigned spins = 0;
    while (atomic_load_explicit(v, memory_order_acquire) != want)
        if (++spins == 1u << 16) { /* the peer shares our CPU: let it run */
            spins = 0;
            sched_yield();
        }
}

double nvf_line_probe_rtt_ns(int rounds)
{
    if (probe_win == MPI_WIN_NULL || rounds < 1)
        return -1;
    MPI_Barrier(probe_comm);
    generation++;
    double rtt = -1;
    if (probe_rank == 0) {
        uint64_t start = atomic_load(counter);
        double t0 = MPI_Wtime();
        for (int i = 0; i < rounds; i++) {
            atomic_store_explicit(counter, start + 2 * (uint64_t)i + 1, memory_order_release);
            spin_until(counter, start + 2 * (uint64_t)i + 2);
        }
        rtt = (MPI_Wtime() - t0) / rounds * 1e9;
        atomic_store_explicit(released, generation, memory_order_release);
    } else if (probe_rank == 1) {
        /* even at rest; rank 0 may already have made it odd */
        uint64_t start = atomic_load(counter) & ~(uint64_t)1;
        for (int i = 0; i < rounds; i++) {
            spin_until(counter, start + 2 * (uint64_t)i + 1);
            atomic_store_explicit(counter, start + 2 * (uint64_t)i + 2, memory_order_release);
        }
    } else {
        const struct timespec nap = {0, 50 * 1000};
        while (atomic_load_explicit(released, memory_order_acquire) != generation)
            nanosleep(&nap, NULL);
    }
    return rtt;
}

void nvf_line_probe_close(void)
{
    if (probe_win != MPI_WIN_NULL)
        MPI_Win_free(&probe_win);
    if (probe_comm != MPI_COMM_NULL)
        MPI_Comm_free(&probe_comm);
}
