/*
 * nvf_pair_exchange.c: two ranks reading what the other has just written, through a shared
 * window (see nvf_pair_exchange.h).
 *
 * The two ranks meet through one cache line each: a rank stores the step it reached in its own
 * line and waits for the other's to reach it (yielding now and then: on an oversubscribed node
 * the other may need this CPU).
 */
#include "nvf_pair_exchange.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LINE 64

static MPI_Comm pair_comm = MPI_COMM_NULL;
static MPI_Win pair_win = MPI_WIN_NULL;
static _Atomic uint64_t *step_of[2];
static char *half[2];
static unsigned char *mine;
static size_t capacity;
static uint64_t steps;
static int me;

int nvf_pair_exchange_open(MPI_Comm comm, size_t max_bytes)
{
    int size, ok, rank;
    MPI_Comm_size(comm, &size);
    if (size != 2)
        return -1;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &pair_comm);
    int node_size;
    MPI_Comm_size(pair_comm, &node_size);
    mine = malloc(max_bytes ? max_bytes : 1);
    ok = node_size == 2 && mine != NULL;
    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, comm);
    if (!all_ok) {
        free(mine);
        mine = NULL;
        MPI_Comm_free(&pair_comm);
        return -1;
    }
    MPI_Comm_rank(pair_comm, &rank);
    char *base = NULL;
    const size_t bytes = 2 * LINE + 2 * max_bytes;
    if (MPI_Win_allocate_shared(rank == 0 ? (MPI_Aint)bytes : 0, 1, MPI_INFO_NULL, pair_comm, &base,
                                &pair_win) != MPI_SUCCESS) {
        free(mine);
        mine = NULL;
        MPI_Comm_free(&pair_comm);
        return -1;
    }
    MPI_Aint got;
    int disp;
    MPI_Win_shared_query(pair_win, 0, &got, &disp, &base);
    step_of[0] = (_Atomic uint64_t *)(void *)base;
    step_of[1] = (_Atomic uint64_t *)(void *)(base + LINE);
    half[0] = base + 2 * LINE;
    half[1] = half[0] + max_bytes;
    atomic_store(step_of[rank], 0);
    memset(mine, rank + 1, max_bytes);
    memset(half[rank], 0, max_bytes); /* first touches, outside any timing */
    me = rank;
    capacity = max_bytes;
    steps = 0;
    MPI_Barrier(pair_comm);
    return 0;
}

/* Both ranks at step `s`. */
static void meet(uint64_t s)
{
    atomic_store_explicit(step_of[me], s, memory_order_release);
    unsigned spins = 0;
    while (atomic_load_explicit(step_of[1 - me], memory_order_acquire) < s)
        if (++spins == 1u << 14) {
            spins = 0;
            sched_yield();
        }
}

double nvf_pair_exchange_us(size_t bytes, int reps)
{
    if (pair_win == MPI_WIN_NULL || bytes > capacity || reps < 1)
        return -1;
    double best = -1;
    for (int r = 0; r < reps; r++) {
        mine[(size_t)r % (bytes ? bytes : 1)]++; /* fresh data each time */
        memcpy(half[me], mine, bytes);
        meet(++steps);
        const double t0 = MPI_Wtime();
        memcpy(mine, half[1 - me], bytes);
        meet(++steps);
        const double us = (MPI_Wtime() - t0) * 1e6;
        if (best < 0 || us < best)
            best = us;
    }
    return me == 0 ? best : -1;
}

void nvf_pair_exchange_close(void)
{
    if (pair_win != MPI_WIN_NULL)
        MPI_Win_free(&pair_win);
    if (pair_comm != MPI_COMM_NULL)
        MPI_Comm_free(&pair_comm);
    free(mine);
    mine = NULL;
}
