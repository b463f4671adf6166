/*
 * pvar_probe.c: runs a few MPI_Allreduce calls (int sums of 1 and 100000 elements, one
 * user-op call) and prints nvfabric's MPI_T counters as `name=value` lines on rank 0,
 * or `coll_nvfabric=absent` when the component's variables do not exist. Used by the
 * selection tests and the Slurm job check. Exit status 0 if every result was correct.
 */
#include "nvf_mpi_test.h"

#include <stdio.h>
#include <stdlib.h>

static void user_sum_int(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    nvf_pvars_open();
    long bad = 0;
    const size_t counts[] = {1, 100000};
    for (int k = 0; k < 2; k++) {
        nvf_case_t c = {
            MPI_COMM_WORLD, "MPI_COMM_WORLD", MPI_INT, "MPI_INT",     NVF_DTYPE_INT32, 1, MPI_SUM,
            NVF_OP_SUM,     counts[k],        false,   NVF_REF_EXACT, 42 + (unsigned)k};
        bad += nvf_run_case(&c) != 0;
    }
    MPI_Op usum;
    MPI_Op_create(user_sum_int, 1, &usum);
    nvf_case_t d = {MPI_COMM_WORLD,
                    "MPI_COMM_WORLD",
                    MPI_INT,
                    "MPI_INT/user-op",
                    NVF_DTYPE_INT32,
                    1,
                    usum,
                    NVF_OP_SUM,
                    10,
                    false,
                    NVF_REF_EXACT,
                    7};
    bad += nvf_run_case(&d) != 0;
    MPI_Op_free(&usum);

    nvf_pvars_t pv;
    nvf_pvars_read(&pv);
    long total_bad = nvf_sum_world(bad);
    if (rank == 0) {
        printf("ranks=%d wrong_results=%ld\n", size, total_bad);
        if (!pv.present)
            printf("coll_nvfabric=absent\n");
        else
            for (int k = 0; k < NVF_PV_COUNT; k++)
                printf("%s=%llu\n", nvf_pvar_names[k], pv.v[k]);
    }
    nvf_pvars_close();
    MPI_Finalize();
    return total_bad ? 1 : 0;
}
