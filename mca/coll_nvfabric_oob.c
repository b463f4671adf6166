/*
 * coll_nvfabric_oob.c: the engine's bootstrap (used only during its lazy setup) implemented
 * with the communicator's own, already selected, allgather.
 */
#include "coll_nvfabric.h"

#include "ompi/datatype/ompi_datatype.h"
#include "opal/runtime/opal_progress.h"

#include <limits.h>

static int nvfabric_oob_allgather(void *ctx, const void *sbuf, void *rbuf, size_t len)
{
    ompi_communicator_t *comm = (ompi_communicator_t *)ctx;
    if (len > INT_MAX)
        return OMPI_ERR_BAD_PARAM;
    int rc = comm->c_coll->coll_allgather(sbuf, (int)len, MPI_BYTE, rbuf, (int)len, MPI_BYTE, comm,
                                          comm->c_coll->coll_allgather_module);
    return rc == OMPI_SUCCESS ? 0 : -1;
}

static bool nvfabric_oob_yield_when_idle(void *ctx)
{
    (void)ctx;
    return opal_progress_yield_when_idle; /* set by MPI_Init: mpi_yield_when_idle, or more
                                           * processes than cores */
}

void mca_coll_nvfabric_oob_init(nvf_oob_t *oob, struct ompi_communicator_t *comm)
{
    oob->allgather = nvfabric_oob_allgather;
    oob->yield_when_idle = nvfabric_oob_yield_when_idle;
    oob->ctx = comm;
    oob->rank = ompi_comm_rank(comm);
    oob->size = ompi_comm_size(comm);
}
