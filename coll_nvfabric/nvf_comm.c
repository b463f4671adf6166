/*
 * nvf_comm.c: engine communicators (placeholder until the host stage lands: every call is
 * reported as unsupported, so mca/ delegates it).
 */
#include "nvf.h"

#include <stdlib.h>

struct nvf_comm {
    nvf_config_t cfg;
    nvf_oob_t oob;
};

nvf_status_t nvf_comm_create(const nvf_config_t *cfg, const nvf_oob_t *oob, nvf_comm_t **out)
{
    nvf_comm_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NVF_ERR_NOMEM;
    c->cfg = *cfg;
    c->oob = *oob;
    *out = c;
    return NVF_OK;
}

void nvf_comm_destroy(nvf_comm_t *comm)
{
    free(comm);
}

nvf_status_t nvf_allreduce(nvf_comm_t *comm, const void *sbuf, void *rbuf, size_t count,
                           nvf_dtype_t dt, nvf_op_t op, nvf_memkind_t kind,
                           nvf_call_report_t *report, const char **why)
{
    if (why != NULL)
        *why = "the engine has no stage yet";
    return NVF_ERR_UNSUPPORTED;
}
