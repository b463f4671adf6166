/*
 * stress.c: thousands of MPI_Allreduce calls of random size, datatype, op and in-place mode,
 * interleaved over several communicators at once (WORLD, a dup, a parity split, a reversed
 * one), with communicators freed and re-created along the way. Every result checked against
 * each rank's own sequential reduction. The random choices come from one seed shared by all
 * ranks, so they agree on every call.
 *   stress [calls] [max_count]
 */
#include "nvf_mpi_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCOMMS 4

static void make_comms(MPI_Comm *c, const char **names, int wrank, int wsize)
{
    MPI_Comm_dup(MPI_COMM_WORLD, &c[0]);
    names[0] = "dup(WORLD)";
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &c[1]);
    names[1] = "split(parity)";
    MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank, &c[2]);
    names[2] = "reversed";
    c[3] = MPI_COMM_WORLD;
    names[3] = "MPI_COMM_WORLD";
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int wrank, wsize;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    long calls = argc > 1 ? atol(argv[1]) : 3000;
    size_t max_count = argc > 2 ? (size_t)atol(argv[2]) : 300000;
    nvf_pvars_open();
    MPI_Comm comms[NCOMMS];
    const char *names[NCOMMS];
    make_comms(comms, names, wrank, wsize);
    unsigned long long rng = 2024; /* the same stream on every rank */
    long bad = 0, recreated = 0;
    for (long i = 0; i < calls; i++) {
        if (i > 0 && i % 500 == 0) { /* free and re-create the derived communicators */
            for (int k = 0; k < NCOMMS - 1; k++)
                MPI_Comm_free(&comms[k]);
            make_comms(comms, names, wrank, wsize);
            recreated++;
        }
        int k = (int)(nvf_ref_rand(&rng) % NCOMMS);
        const nvf_mpi_type_t *ty;
        nvf_op_t op;
        do {
            ty = &nvf_mpi_types[nvf_ref_rand(&rng) % (unsigned)nvf_mpi_ntypes];
            op = (nvf_op_t)(nvf_ref_rand(&rng) % NVF_OP_COUNT);
        } while (!nvf_ref_mpi_defines(ty->dt, op) || ty->type == MPI_BYTE || ty->type == MPI_AINT ||
                 ty->type == MPI_OFFSET || ty->type == MPI_COUNT || ty->type == MPI_UNSIGNED_LONG);
        /* mostly small, sometimes large */
        unsigned long long r = nvf_ref_rand(&rng);
        size_t count = (r % 4 == 0) ? 1 + r / 4 % max_count : 1 + r / 4 % 2000;
        nvf_case_t c = {comms[k],       names[k],
                        ty->type,       ty->name,
                        ty->dt,         1,
                        nvf_mpi_op(op), op,
                        count,          (nvf_ref_rand(&rng) & 1) != 0,
                        NVF_REF_EXACT,  rng};
        bad += nvf_run_case(&c) != 0;
    }
    long total = nvf_sum_world(bad);
    nvf_pvars_t pv;
    nvf_pvars_read(&pv);
    if (wrank == 0)
        printf("stress: %d ranks, %ld calls over %d communicators (re-created %ld times), %ld "
               "wrong; nvfabric handled %llu, delegated %llu\n",
               wsize, calls, NCOMMS, recreated, total, pv.v[NVF_PV_CALLS_HANDLED],
               pv.v[NVF_PV_CALLS_DELEGATED]);
    for (int k = 0; k < NCOMMS - 1; k++)
        MPI_Comm_free(&comms[k]);
    nvf_pvars_close();
    MPI_Finalize();
    return total ? 1 : 0;
}
