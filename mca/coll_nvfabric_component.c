/*
 * coll_nvfabric_component.c: the component structure Open MPI loads, and its open/close.
 * Parameters and performance variables are registered in their own files.
 */
#include "coll_nvfabric.h"

#include "opal/util/output.h"
#include "opal/util/show_help.h"

#include <dlfcn.h>
#include <libgen.h>
#include <string.h>

static int nvfabric_register(void);
static int nvfabric_open(void);
static int nvfabric_close(void);

mca_coll_nvfabric_component_t mca_coll_nvfabric_component = {
    .super =
        {
            .collm_version =
                {
                    MCA_COLL_BASE_VERSION_2_0_0,
                    .mca_component_name = "nvfabric",
                    MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
                    .mca_open_component = nvfabric_open,
                    .mca_close_component = nvfabric_close,
                    .mca_register_component_params = nvfabric_register,
                },
            .collm_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
            .collm_init_query = mca_coll_nvfabric_init_query,
            .collm_comm_query = mca_coll_nvfabric_comm_query,
        },
    .output = -1,
};

static int nvfabric_register(void)
{
    int rc = mca_coll_nvfabric_register_params();
    if (OMPI_SUCCESS != rc)
        return rc;
    return mca_coll_nvfabric_register_pvars();
}

/* The help file is installed beside mca_coll_nvfabric.so (and in Open MPI's pkgdatadir when
 * installed there), so that staged or per-user installs find it too. */
static void nvfabric_add_help_dir(void)
{
    Dl_info info;
    if (dladdr((void *)&mca_coll_nvfabric_component, &info) == 0 || info.dli_fname == NULL)
        return;
    char path[4096];
    snprintf(path, sizeof(path), "%s", info.dli_fname);
    opal_show_help_add_dir(dirname(path));
}

static int nvfabric_open(void)
{
    mca_coll_nvfabric_component_t *c = &mca_coll_nvfabric_component;
    c->output = opal_output_open(NULL);
    opal_output_set_verbosity(c->output, c->cfg.verbose);
    nvf_log_set_sink(mca_coll_nvfabric_log_sink, c->cfg.verbose);
    nvfabric_add_help_dir();
    mca_coll_nvfabric_check_params();
    return OMPI_SUCCESS;
}

static int nvfabric_close(void)
{
    mca_coll_nvfabric_component_t *c = &mca_coll_nvfabric_component;
    nvf_memkind_fini(); /* communicators are freed before coll components close */
    nvf_log_set_sink(NULL, 0);
    if (c->output >= 0) {
        opal_output_close(c->output);
        c->output = -1;
    }
    return OMPI_SUCCESS;
}
