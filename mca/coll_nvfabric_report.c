/*
 * coll_nvfabric_report.c: what the component tells the user: verbose explanations of its
 * choices and delegations, help messages, and the sink for the engine's log.
 */
#include "coll_nvfabric.h"

#include <stdio.h>
#include <stdlib.h>

#include "ompi/mca/rte/rte.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

static const char *const nvfabric_delegation_text[NVFABRIC_DELEGATE_KINDS] = {
    [NVFABRIC_DELEGATE_COUNT_ZERO] = "count is 0",
    [NVFABRIC_DELEGATE_DTYPE] = "datatype is derived, or not one the engine handles",
    [NVFABRIC_DELEGATE_OP] = "op is user-defined, or not defined on this datatype",
    [NVFABRIC_DELEGATE_HOST_OFF] = "host buffers and coll_nvfabric_host=off",
    [NVFABRIC_DELEGATE_HOST_AUTO] = "below coll_nvfabric_host_auto_min (coll_nvfabric_host=auto)",
    [NVFABRIC_DELEGATE_ENGINE] = "the engine declined",
};

void mca_coll_nvfabric_report_delegation(mca_coll_nvfabric_module_t *m,
                                         mca_coll_nvfabric_delegation_t why, const char *detail)
{
    m->delegations_seen |= 1u << why;
    opal_output_verbose(1, mca_coll_nvfabric_component.output,
                        "coll:nvfabric: %s: delegating to %s: %s%s%s%s", m->comm->c_name,
                        m->prev_name, nvfabric_delegation_text[why], detail ? " (" : "",
                        detail ? detail : "", detail ? ")" : "");
}

void mca_coll_nvfabric_report_first_call(mca_coll_nvfabric_module_t *m,
                                         const nvf_call_report_t *rep)
{
    m->announced = true;
    opal_output_verbose(1, mca_coll_nvfabric_component.output,
                        "coll:nvfabric: %s: first call handled by the engine, plan %s",
                        m->comm->c_name, rep->plan ? rep->plan : "?");
}

void mca_coll_nvfabric_report_cuda_off(mca_coll_nvfabric_module_t *m)
{
    m->cuda_off_reported = true;
    opal_output_verbose(1, mca_coll_nvfabric_component.output,
                        "coll:nvfabric: %s: device buffers copied to host memory and reduced there "
                        "(coll_nvfabric_cuda=false)",
                        m->comm->c_name);
}

void mca_coll_nvfabric_show_help(const char *topic, const char *arg)
{
    /* Every rank reads the same parameters, so one copy of the message is enough: the job's
     * first process writes it to its stderr itself. opal_show_help would relay it to mpirun
     * over the RTE, and such a relayed message was seen lost when the job ended soon after.
     * Outside MPI_Init (ompi_info) there is one process: it always speaks. */
    if (ompi_mpi_state >= OMPI_MPI_STATE_INIT_STARTED && OMPI_PROC_MY_NAME->vpid != 0) {
        opal_output_verbose(1, mca_coll_nvfabric_component.output, "coll:nvfabric: %s: %s", topic,
                            arg);
        return;
    }
    char *msg = opal_show_help_string("help-coll-nvfabric.txt", topic, true, arg);
    if (msg != NULL) {
        fputs(msg, stderr);
        fflush(stderr);
        free(msg);
    }
}

void mca_coll_nvfabric_log_sink(int level, const char *msg)
{
    if (level == 0)
        opal_output(0, "coll:nvfabric: %s", msg);
    else
        opal_output_verbose(level, mca_coll_nvfabric_component.output, "coll:nvfabric: %s", msg);
}
