/*
 * coll_nvfabric_module.c: which communicators nvfabric serves (comm_query), and the module's
 * life: enable saves the allreduce Open MPI selected before it, disable/destruct release it.
 * No communication here: the engine sets itself up lazily at the first call that needs it
 * (creating communicators or calling collectives inside enable hangs for runtime-created
 * communicators, see ../shared/OMPI-NOTES.md).
 */
#include "coll_nvfabric.h"

#include "ompi/mca/rte/rte.h"
#include "opal/class/opal_list.h"
#include "opal/util/show_help.h"
#include "opal/util/output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void nvfabric_module_construct(mca_coll_nvfabric_module_t *m)
{
    m->comm = NULL;
    m->prev_allreduce = NULL;
    m->prev_allreduce_module = NULL;
    m->prev_name = "none";
    m->engine = NULL;
    m->delegations_seen = 0;
    m->announced = false;
    m->cuda_off_reported = false;
}

static void nvfabric_release_prev(mca_coll_nvfabric_module_t *m)
{
    if (m->prev_allreduce_module != NULL) {
        OBJ_RELEASE(m->prev_allreduce_module);
        m->prev_allreduce_module = NULL;
        m->prev_allreduce = NULL;
    }
}

static void nvfabric_module_destruct(mca_coll_nvfabric_module_t *m)
{
    nvfabric_release_prev(m);
    if (m->engine != NULL) {
        nvf_comm_destroy(m->engine);
        m->engine = NULL;
    }
}

OBJ_CLASS_INSTANCE(mca_coll_nvfabric_module_t, mca_coll_base_module_t, nvfabric_module_construct,
                   nvfabric_module_destruct);

/* Open MPI 4.1's mca_coll_base_avail_coll_t, the entries of c_coll->module_list. Its header
 * (coll_base_util.h) cannot be included as installed: it pulls in ompi/op/op.h, which needs a
 * Fortran header Debian does not ship. Part of the 4.1 version shim. */
struct nvfabric_avail_coll {
    opal_list_item_t super;
    int ac_priority;
    mca_coll_base_module_t *ac_module;
    const char *ac_component_name;
};

/* The name of the component whose module currently provides comm's allreduce. */
static const char *nvfabric_prev_component_name(ompi_communicator_t *comm,
                                                mca_coll_base_module_t *prev)
{
    if (comm->c_coll->module_list == NULL)
        return "unknown";
    struct nvfabric_avail_coll *avail;
    OPAL_LIST_FOREACH(avail, comm->c_coll->module_list, struct nvfabric_avail_coll)
    {
        if (avail->ac_module == prev)
            return avail->ac_component_name;
    }
    return "unknown";
}

static int nvfabric_module_enable(mca_coll_base_module_t *module, ompi_communicator_t *comm)
{
    mca_coll_nvfabric_component_t *c = &mca_coll_nvfabric_component;
    mca_coll_nvfabric_module_t *m = (mca_coll_nvfabric_module_t *)module;

    if (comm->c_coll->coll_allreduce == NULL || comm->c_coll->coll_allgather == NULL) {
        /* Only nvfabric was selected (--mca coll nvfabric): there is nothing to delegate to
         * and no bootstrap. Say so once, in words, and step aside. */
        /* MPI_Init cannot succeed. Rank 0 says why, then every rank stops here rather than
         * let the coll base add its own messages about missing functions. */
        if (!c->no_fallback_reported && ompi_comm_rank(comm) == 0) {
            char *msg =
                opal_show_help_string("help-coll-nvfabric.txt", "no-fallback", true, comm->c_name);
            if (msg != NULL) {
                fputs(msg, stderr);
                fflush(stderr);
                free(msg);
            }
        }
        c->no_fallback_reported = true;
        sleep(1); /* let the output reach mpirun */
        ompi_rte_abort(1, NULL);
        return OMPI_ERROR;
    }
    m->comm = comm;
    m->prev_allreduce = comm->c_coll->coll_allreduce;
    m->prev_allreduce_module = comm->c_coll->coll_allreduce_module;
    OBJ_RETAIN(m->prev_allreduce_module);
    m->prev_name = nvfabric_prev_component_name(comm, m->prev_allreduce_module);

    nvf_oob_t oob;
    mca_coll_nvfabric_oob_init(&oob, comm);
    if (nvf_comm_create(&c->cfg, &oob, &m->engine) != NVF_OK) {
        nvfabric_release_prev(m);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    opal_output_verbose(1, c->output,
                        "coll:nvfabric: %s (cid %d, %d ranks): allreduce taken over, "
                        "delegating what the engine does not handle to %s",
                        comm->c_name, comm->c_contextid, ompi_comm_size(comm), m->prev_name);
    return OMPI_SUCCESS;
}

static int nvfabric_module_disable(mca_coll_base_module_t *module, ompi_communicator_t *comm)
{
    /* May be called once per c_coll slot still owned: idempotent. */
    nvfabric_release_prev((mca_coll_nvfabric_module_t *)module);
    return OMPI_SUCCESS;
}

int mca_coll_nvfabric_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    return OMPI_SUCCESS;
}

mca_coll_base_module_t *mca_coll_nvfabric_comm_query(struct ompi_communicator_t *comm,
                                                     int *priority)
{
    mca_coll_nvfabric_component_t *c = &mca_coll_nvfabric_component;
    const char *why = NULL;

    if (c->disabled)
        why = c->disabled_reason;
    else if (c->priority < 0)
        why = "priority < 0";
    else if (OMPI_COMM_IS_INTER(comm))
        why = "intercommunicator";
    else if (ompi_comm_size(comm) < 2)
        why = "fewer than 2 ranks";
    if (why != NULL) {
        opal_output_verbose(2, c->output, "coll:nvfabric: declining %s (cid %d): %s", comm->c_name,
                            comm->c_contextid, why);
        return NULL;
    }
    mca_coll_nvfabric_classify_init();

    mca_coll_nvfabric_module_t *m = OBJ_NEW(mca_coll_nvfabric_module_t);
    if (m == NULL)
        return NULL;
    *priority = c->priority;
    m->super.coll_module_enable = nvfabric_module_enable;
    m->super.coll_module_disable = nvfabric_module_disable;
    m->super.coll_allreduce = mca_coll_nvfabric_allreduce;
    return &m->super;
}
