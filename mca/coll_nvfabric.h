/*
 * coll_nvfabric.h: the Open MPI side of nvfabric: component and module structures and the
 * functions the mca/ files share.
 *
 * mca/ is the only code that includes Open MPI internals. It translates communicators,
 * datatypes and ops for the engine (coll_nvfabric/nvf.h) and delegates everything the engine
 * does not handle to the allreduce that Open MPI selected before this component.
 * Everything Open-MPI-version-specific (4.1 today) stays in mca/.
 */
#ifndef MCA_COLL_NVFABRIC_H
#define MCA_COLL_NVFABRIC_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"

#include "coll_nvfabric/nvf.h"

#include <stdatomic.h>

BEGIN_C_DECLS

/* Why a call was delegated; one bit each in a module's `delegations_seen`. */
typedef enum mca_coll_nvfabric_delegation {
    NVFABRIC_DELEGATE_COUNT_ZERO,
    NVFABRIC_DELEGATE_DTYPE,     /* derived, non-contiguous or unsupported datatype */
    NVFABRIC_DELEGATE_OP,        /* user-defined op or op not defined on the datatype */
    NVFABRIC_DELEGATE_HOST_OFF,  /* host buffers and coll_nvfabric_host=off */
    NVFABRIC_DELEGATE_HOST_AUTO, /* below coll_nvfabric_host_auto_min, any memory kind */
    NVFABRIC_DELEGATE_ENGINE,    /* the engine declined (setup failed, no stage for it) */
    NVFABRIC_DELEGATE_KINDS
} mca_coll_nvfabric_delegation_t;

/* MPI_T performance variables: counters read with MPI_T_pvar_read. */
typedef struct mca_coll_nvfabric_counters {
    atomic_ullong calls_handled;
    atomic_ullong calls_delegated;
    atomic_ullong bytes_handled;
    atomic_ullong bytes_delegated;
    atomic_ullong inter_calls;
    atomic_ullong cuda_calls;
    atomic_ullong predicted_ns; /* sum of the cost model's predictions for handled calls */
} mca_coll_nvfabric_counters_t;

typedef struct mca_coll_nvfabric_component_t {
    mca_coll_base_component_2_0_0_t super;

    int priority;
    char *host_mode_text;   /* storage of coll_nvfabric_host, parsed into cfg.host_mode */
    char *inter_large_text; /* storage of coll_nvfabric_inter_algorithm, into cfg.inter_large */
    nvf_config_t cfg;       /* every other parameter is stored here directly */
    int output;             /* opal_output stream at coll_nvfabric_verbose */

    /* A bad parameter value: the component declines every communicator. */
    bool disabled;
    char disabled_reason[256];
    bool no_fallback_reported;

    mca_coll_nvfabric_counters_t counters;
} mca_coll_nvfabric_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_nvfabric_component_t mca_coll_nvfabric_component;

typedef struct mca_coll_nvfabric_module_t {
    mca_coll_base_module_t super;

    ompi_communicator_t *comm;
    /* The allreduce Open MPI would have used without nvfabric (retained at enable). */
    mca_coll_base_module_allreduce_fn_t prev_allreduce;
    mca_coll_base_module_t *prev_allreduce_module;
    const char *prev_name;

    nvf_comm_t *engine;
    unsigned delegations_seen; /* bit per mca_coll_nvfabric_delegation_t, for verbose */
    bool announced;            /* the first-call summary was printed */
    bool cuda_off_reported;    /* device buffers staged because coll_nvfabric_cuda=false */
} mca_coll_nvfabric_module_t;

OBJ_CLASS_DECLARATION(mca_coll_nvfabric_module_t);

/* coll_nvfabric_params.c */
int mca_coll_nvfabric_register_params(void);
int mca_coll_nvfabric_check_params(void);

/* coll_nvfabric_pvars.c */
int mca_coll_nvfabric_register_pvars(void);

/* coll_nvfabric_module.c */
int mca_coll_nvfabric_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_nvfabric_comm_query(struct ompi_communicator_t *comm,
                                                     int *priority);

/* coll_nvfabric_classify.c: MPI handles to engine enums. */
nvf_dtype_t mca_coll_nvfabric_classify_dtype(struct ompi_datatype_t *dtype);
nvf_op_t mca_coll_nvfabric_classify_op(struct ompi_op_t *op);
/* Whether MPI defines op on this MPI datatype (MPI_BYTE: bitwise only, and so on). */
bool mca_coll_nvfabric_op_allowed(struct ompi_datatype_t *dtype, nvf_op_t op);
void mca_coll_nvfabric_classify_init(void);

/* coll_nvfabric_allreduce.c */
int mca_coll_nvfabric_allreduce(const void *sbuf, void *rbuf, int count,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                struct ompi_communicator_t *comm, mca_coll_base_module_t *module);

/* coll_nvfabric_oob.c: the engine's bootstrap over a communicator. */
void mca_coll_nvfabric_oob_init(nvf_oob_t *oob, struct ompi_communicator_t *comm);

/* coll_nvfabric_report.c: verbose output and help messages. */
void mca_coll_nvfabric_report_delegation(mca_coll_nvfabric_module_t *m,
                                         mca_coll_nvfabric_delegation_t why, const char *detail);
void mca_coll_nvfabric_report_first_call(mca_coll_nvfabric_module_t *m,
                                         const nvf_call_report_t *rep);
void mca_coll_nvfabric_report_cuda_off(mca_coll_nvfabric_module_t *m);
void mca_coll_nvfabric_show_help(const char *topic, const char *arg);
void mca_coll_nvfabric_log_sink(int level, const char *msg);

END_C_DECLS
#endif
