/*
 * nvf_mpi_test.c: MPI_T counter access, the datatype table, and the checked allreduce used by
 * the MPI integration tests. Each rank generates every rank's input from a seed, reduces them
 * in rank order itself (test/common/nvf_ref.c), poisons its receive buffer, calls
 * MPI_Allreduce and compares every element.
 */
#include "nvf_mpi_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const nvf_pvar_names[NVF_PV_COUNT] = {
    "coll_nvfabric_calls_handled", "coll_nvfabric_calls_delegated", "coll_nvfabric_bytes_handled",
    "coll_nvfabric_inter_calls",   "coll_nvfabric_cuda_calls",      "coll_nvfabric_predicted_ns",
};

static MPI_T_pvar_session nvf_session;
static MPI_T_pvar_handle nvf_handles[NVF_PV_COUNT];
static bool nvf_have[NVF_PV_COUNT];
static bool nvf_open;

bool nvf_pvars_open(void)
{
    int provided, num;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return false;
    if (MPI_T_pvar_session_create(&nvf_session) != MPI_SUCCESS)
        return false;
    MPI_T_pvar_get_num(&num);
    for (int i = 0; i < num; i++) {
        char name[256], desc[1024];
        int name_len = sizeof(name), desc_len = sizeof(desc), verb, var_class, bind, ro, cont,
            atomic;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_T_pvar_get_info(i, name, &name_len, &verb, &var_class, &dt, &en, desc, &desc_len,
                                &bind, &ro, &cont, &atomic) != MPI_SUCCESS)
            continue;
        for (int k = 0; k < NVF_PV_COUNT; k++) {
            if (strcmp(name, nvf_pvar_names[k]) == 0) {
                int count;
                if (MPI_T_pvar_handle_alloc(nvf_session, i, NULL, &nvf_handles[k], &count) ==
                    MPI_SUCCESS)
                    nvf_have[k] = true;
            }
        }
    }
    nvf_open = true;
    return true;
}

void nvf_pvars_read(nvf_pvars_t *out)
{
    memset(out, 0, sizeof(*out));
    out->present = nvf_open;
    for (int k = 0; k < NVF_PV_COUNT; k++) {
        if (!nvf_have[k]) {
            out->present = false;
            continue;
        }
        unsigned long long v = 0;
        MPI_T_pvar_read(nvf_session, nvf_handles[k], &v);
        out->v[k] = v;
    }
}

void nvf_pvars_close(void)
{
    if (!nvf_open)
        return;
    for (int k = 0; k < NVF_PV_COUNT; k++)
        if (nvf_have[k])
            MPI_T_pvar_handle_free(nvf_session, &nvf_handles[k]);
    MPI_T_pvar_session_free(&nvf_session);
    MPI_T_finalize();
    nvf_open = false;
}

const nvf_mpi_type_t nvf_mpi_types[] = {
    {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", NVF_DTYPE_INT8},
    {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", NVF_DTYPE_UINT8},
    {MPI_SHORT, "MPI_SHORT", NVF_DTYPE_INT16},
    {MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", NVF_DTYPE_UINT16},
    {MPI_INT, "MPI_INT", NVF_DTYPE_INT32},
    {MPI_UNSIGNED, "MPI_UNSIGNED", NVF_DTYPE_UINT32},
    {MPI_LONG, "MPI_LONG", NVF_DTYPE_INT64},
    {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", NVF_DTYPE_UINT64},
    {MPI_LONG_LONG, "MPI_LONG_LONG", NVF_DTYPE_INT64},
    {MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", NVF_DTYPE_UINT64},
    {MPI_INT8_T, "MPI_INT8_T", NVF_DTYPE_INT8},
    {MPI_UINT8_T, "MPI_UINT8_T", NVF_DTYPE_UINT8},
    {MPI_INT16_T, "MPI_INT16_T", NVF_DTYPE_INT16},
    {MPI_UINT16_T, "MPI_UINT16_T", NVF_DTYPE_UINT16},
    {MPI_INT32_T, "MPI_INT32_T", NVF_DTYPE_INT32},
    {MPI_UINT32_T, "MPI_UINT32_T", NVF_DTYPE_UINT32},
    {MPI_INT64_T, "MPI_INT64_T", NVF_DTYPE_INT64},
    {MPI_UINT64_T, "MPI_UINT64_T", NVF_DTYPE_UINT64},
    {MPI_AINT, "MPI_AINT", NVF_DTYPE_INT64},
    {MPI_OFFSET, "MPI_OFFSET", NVF_DTYPE_INT64},
    {MPI_COUNT, "MPI_COUNT", NVF_DTYPE_INT64},
    {MPI_BYTE, "MPI_BYTE", NVF_DTYPE_UINT8},
    {MPI_FLOAT, "MPI_FLOAT", NVF_DTYPE_FLOAT},
    {MPI_DOUBLE, "MPI_DOUBLE", NVF_DTYPE_DOUBLE},
    {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", NVF_DTYPE_LONG_DOUBLE},
    {MPI_C_BOOL, "MPI_C_BOOL", NVF_DTYPE_BOOL},
    {MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", NVF_DTYPE_FLOAT_COMPLEX},
    {MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", NVF_DTYPE_DOUBLE_COMPLEX},
    {MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX", NVF_DTYPE_LONG_DOUBLE_COMPLEX},
    {MPI_FLOAT_INT, "MPI_FLOAT_INT", NVF_DTYPE_FLOAT_INT},
    {MPI_DOUBLE_INT, "MPI_DOUBLE_INT", NVF_DTYPE_DOUBLE_INT},
    {MPI_LONG_INT, "MPI_LONG_INT", NVF_DTYPE_LONG_INT},
    {MPI_2INT, "MPI_2INT", NVF_DTYPE_INT_INT},
    {MPI_SHORT_INT, "MPI_SHORT_INT", NVF_DTYPE_SHORT_INT},
    {MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT", NVF_DTYPE_LONG_DOUBLE_INT},
};
const int nvf_mpi_ntypes = (int)(sizeof(nvf_mpi_types) / sizeof(nvf_mpi_types[0]));

MPI_Op nvf_mpi_op(nvf_op_t op)
{
    static const MPI_Op ops[NVF_OP_COUNT] = {
        [NVF_OP_SUM] = MPI_SUM,   [NVF_OP_PROD] = MPI_PROD,     [NVF_OP_MAX] = MPI_MAX,
        [NVF_OP_MIN] = MPI_MIN,   [NVF_OP_LAND] = MPI_LAND,     [NVF_OP_LOR] = MPI_LOR,
        [NVF_OP_LXOR] = MPI_LXOR, [NVF_OP_BAND] = MPI_BAND,     [NVF_OP_BOR] = MPI_BOR,
        [NVF_OP_BXOR] = MPI_BXOR, [NVF_OP_MAXLOC] = MPI_MAXLOC, [NVF_OP_MINLOC] = MPI_MINLOC,
    };
    return ops[op];
}

long nvf_sum_world(long v)
{
    long s = 0;
    MPI_Allreduce(&v, &s, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    return s;
}

long nvf_run_case(const nvf_case_t *c)
{
    int rank, size;
    MPI_Comm_rank(c->comm, &rank);
    MPI_Comm_size(c->comm, &size);
    const size_t n = c->count * (size_t)c->elems_per_item;
    const size_t es = nvf_ref_size(c->dt);
    const size_t bytes = n * es;
    void **in = calloc((size_t)size, sizeof(void *));
    for (int r = 0; r < size; r++) {
        in[r] = malloc(bytes ? bytes : 1);
        nvf_ref_fill(c->dt, c->ref_op, c->mode, in[r], n, c->seed * 1000003ULL + (unsigned)r);
    }
    void *ref = malloc(bytes ? bytes : 1);
    nvf_ref_reduce(c->dt, c->ref_op, ref, in, size, n);

    /* The receive buffer: poisoned, or holding this rank's input for MPI_IN_PLACE. */
    void *recv = malloc(bytes ? bytes : 1);
    if (c->in_place)
        memcpy(recv, in[rank], bytes);
    else
        memset(recv, 0xA5, bytes);
    int rc = MPI_Allreduce(c->in_place ? MPI_IN_PLACE : in[rank], recv, (int)c->count, c->type,
                           c->op, c->comm);
    long bad = 0;
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "FAIL rank %d: MPI_Allreduce returned %d on %s %s count=%zu\n", rank, rc,
                c->comm_name, c->type_name, c->count);
        bad = (long)(n ? n : 1);
    }
    size_t first = n;
    for (size_t i = 0; rc == MPI_SUCCESS && i < n; i++) {
        if (!nvf_ref_same(c->dt, recv, ref, i, c->mode == NVF_REF_RANDOM)) {
            if (bad++ == 0)
                first = i;
        }
    }
    if (bad && first < n) {
        char got[96], want[96], inputs[512] = "";
        nvf_ref_format(c->dt, recv, first, got, sizeof(got));
        nvf_ref_format(c->dt, ref, first, want, sizeof(want));
        for (int r = 0; r < size && strlen(inputs) < 400; r++) {
            char one[96];
            nvf_ref_format(c->dt, in[r], first, one, sizeof(one));
            strcat(inputs, r ? ", " : "");
            strcat(inputs, one);
        }
        fprintf(stderr,
                "FAIL rank %d: %s %s op=%s count=%zu %s seed=%llu: %ld wrong elements; "
                "element %zu is %s, expected %s (inputs by rank: %s)\n",
                rank, c->comm_name, c->type_name, nvf_ref_op_name(c->ref_op), c->count,
                c->in_place ? "in-place" : "out-of-place", c->seed, bad, first, got, want, inputs);
    }
    for (int r = 0; r < size; r++)
        free(in[r]);
    free(in);
    free(ref);
    free(recv);
    return bad;
}

bool nvf_cvar_read_ulong(const char *name, unsigned long *value)
{
    int num;
    if (MPI_T_cvar_get_num(&num) != MPI_SUCCESS)
        return false;
    for (int i = 0; i < num; i++) {
        char n[256], desc[1024];
        int nl = sizeof(n), dl = sizeof(desc), verb, bind, scope;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_T_cvar_get_info(i, n, &nl, &verb, &dt, &en, desc, &dl, &bind, &scope) !=
                MPI_SUCCESS ||
            strcmp(n, name) != 0)
            continue;
        MPI_T_cvar_handle h;
        int count;
        if (MPI_T_cvar_handle_alloc(i, NULL, &h, &count) != MPI_SUCCESS)
            return false;
        unsigned long long big = 0;
        unsigned long ul = 0;
        int ok;
        if (dt == MPI_UNSIGNED_LONG_LONG)
            ok = MPI_T_cvar_read(h, &big) == MPI_SUCCESS, ul = (unsigned long)big;
        else if (dt == MPI_UNSIGNED_LONG)
            ok = MPI_T_cvar_read(h, &ul) == MPI_SUCCESS;
        else {
            int iv = 0;
            ok = MPI_T_cvar_read(h, &iv) == MPI_SUCCESS;
            ul = (unsigned long)iv;
        }
        MPI_T_cvar_handle_free(&h);
        *value = ul;
        return ok;
    }
    return false;
}
