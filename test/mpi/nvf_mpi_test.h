/*
 * nvf_mpi_test.h: helpers for the MPI integration tests: reading nvfabric's MPI_T counters,
 * the tests' own table of MPI datatypes, and one checked MPI_Allreduce.
 * Public MPI only: these programs are what an unmodified user code looks like.
 */
#ifndef NVF_MPI_TEST_H
#define NVF_MPI_TEST_H

#include "common/nvf_ref.h"

#include <mpi.h>
#include <stdbool.h>

/* ---- MPI_T counters -------------------------------------------------------------------- */
enum {
    NVF_PV_CALLS_HANDLED,
    NVF_PV_CALLS_DELEGATED,
    NVF_PV_BYTES_HANDLED,
    NVF_PV_INTER_CALLS,
    NVF_PV_CUDA_CALLS,
    NVF_PV_PREDICTED_NS,
    NVF_PV_COUNT
};
typedef struct {
    bool present; /* the component is loaded and registered its variables */
    unsigned long long v[NVF_PV_COUNT];
} nvf_pvars_t;

/* Start an MPI_T session (call after MPI_Init). Returns false if MPI_T is unusable. */
bool nvf_pvars_open(void);
void nvf_pvars_read(nvf_pvars_t *out);
void nvf_pvars_close(void);
extern const char *const nvf_pvar_names[NVF_PV_COUNT];

/* ---- datatypes ----------------------------------------------------------------------- */
typedef struct {
    MPI_Datatype type;
    const char *name;
    nvf_dtype_t dt; /* the C layout of one element */
} nvf_mpi_type_t;
extern const nvf_mpi_type_t nvf_mpi_types[];
extern const int nvf_mpi_ntypes;
MPI_Op nvf_mpi_op(nvf_op_t op);

/* ---- one checked call ------------------------------------------------------------------- */
typedef struct {
    MPI_Comm comm;
    const char *comm_name;
    MPI_Datatype type; /* the datatype passed to MPI_Allreduce */
    const char *type_name;
    nvf_dtype_t dt;     /* element layout, for the reference */
    int elems_per_item; /* > 1 for a derived contiguous type of `dt` */
    MPI_Op op;          /* the op passed */
    nvf_op_t ref_op;    /* the op the reference applies */
    size_t count;       /* count argument */
    bool in_place;
    nvf_ref_mode_t mode;
    unsigned long long seed;
} nvf_case_t;

/* Runs the case on every rank of c->comm; returns the number of wrong elements on this rank
 * (0 = correct), after printing the first wrong element with its inputs. */
long nvf_run_case(const nvf_case_t *c);

/* Sum of v over MPI_COMM_WORLD (used to agree on pass/fail). */
long nvf_sum_world(long v);

#endif

/* Read an unsigned MPI_T control variable (e.g. "coll_nvfabric_one_shot_max"). */
bool nvf_cvar_read_ulong(const char *name, unsigned long *value);
