/*
 * nvf_counters.c: prints nvfabric's MPI_T counters (coll_nvfabric_*) of every rank when an
 * unmodified MPI program calls MPI_Finalize, as "rank R: coll_nvfabric_<name>=<value>" lines
 * on stdout, or "rank R: coll_nvfabric=absent" if the component is not loaded. A PMPI wrapper
 * of MPI_Init, MPI_Init_thread and MPI_Finalize: preload it into the ranks, not into mpirun.
 *
 *   mpicc -shared -fPIC -o libnvf_counters.so nvf_counters.c
 *   mpirun -x LD_PRELOAD=$PWD/libnvf_counters.so ./app            # Open MPI's launcher
 *   srun --mpi=pmix --export=ALL,LD_PRELOAD=$PWD/libnvf_counters.so ./app
 *
 * With the batch scripts here: NVF_MPIRUN_ARGS="-x LD_PRELOAD=..." or
 * NVF_SRUN_ARGS="--export=ALL,LD_PRELOAD=...". To read the counters inside your own program,
 * copy nvf_counters_start() (call it right after MPI_Init) and nvf_counters_print() (call it
 * before MPI_Finalize). Open MPI counts a counter from the moment its handle is allocated, so
 * allocate early and read late.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define NVF_MAX_COUNTERS 16

static MPI_T_pvar_session session;
static MPI_T_pvar_handle handles[NVF_MAX_COUNTERS];
static char names[NVF_MAX_COUNTERS][64];
static int ncounters, started;

static void nvf_counters_start(void)
{
    int provided, n;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return;
    started = 1;
    MPI_T_pvar_session_create(&session);
    MPI_T_pvar_get_num(&n);
    for (int i = 0; i < n && ncounters < NVF_MAX_COUNTERS; i++) {
        char desc[256];
        int name_len = sizeof(names[0]), desc_len = sizeof(desc), verbosity, var_class, bind,
            readonly, continuous, atomic, count;
        MPI_Datatype datatype;
        MPI_T_enum enumtype;
        if (MPI_T_pvar_get_info(i, names[ncounters], &name_len, &verbosity, &var_class, &datatype,
                                &enumtype, desc, &desc_len, &bind, &readonly, &continuous,
                                &atomic) != MPI_SUCCESS ||
            strncmp(names[ncounters], "coll_nvfabric_", 14) != 0)
            continue;
        /* continuous counters: no MPI_T_pvar_start needed */
        if (MPI_T_pvar_handle_alloc(session, i, NULL, &handles[ncounters], &count) == MPI_SUCCESS)
            ncounters++;
    }
}

static void nvf_counters_print(void)
{
    int rank;
    if (!started)
        return;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (ncounters == 0)
        printf("rank %d: coll_nvfabric=absent\n", rank);
    for (int k = 0; k < ncounters; k++) {
        unsigned long long value = 0;
        MPI_T_pvar_read(session, handles[k], &value);
        printf("rank %d: %s=%llu\n", rank, names[k], value);
        MPI_T_pvar_handle_free(session, &handles[k]);
    }
    fflush(stdout);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    started = 0;
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS)
        nvf_counters_start();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        nvf_counters_start();
    return rc;
}

int MPI_Finalize(void)
{
    nvf_counters_print();
    return PMPI_Finalize();
}
