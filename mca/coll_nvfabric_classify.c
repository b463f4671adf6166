/*
 * coll_nvfabric_classify.c: translate Open MPI datatypes and ops into the engine's enums.
 *
 * Only predefined datatypes whose layout the engine knows (size and extent checked against the
 * engine's C types when the table is built) and predefined ops are translated; everything else
 * is NVF_*_INVALID and the call is delegated. Lookups are O(1): predefined datatypes are
 * indexed by their Fortran handle index, ops by address.
 */
#include "coll_nvfabric.h"

#include "ompi/datatype/ompi_datatype.h"

#include <stdbool.h>

/* Which ops MPI defines on a datatype, by its MPI-4.0 section 6.9.2 category. */
enum nvfabric_category {
    CAT_C_INT,   /* C integers: arithmetic, min/max, logical, bitwise */
    CAT_F_INT,   /* Fortran integers and multi-language types: no logical ops */
    CAT_BYTE,    /* bitwise only */
    CAT_FLOAT,   /* sum, prod, min, max */
    CAT_COMPLEX, /* sum, prod */
    CAT_LOGICAL, /* land, lor, lxor */
    CAT_PAIR,    /* maxloc, minloc */
};

struct nvfabric_dtype_entry {
    MPI_Datatype handle;
    nvf_dtype_t dt;
    enum nvfabric_category cat;
};

#define NVFABRIC_FINDEX_MAX 256

static struct {
    bool ready;
    MPI_Datatype handle[NVFABRIC_FINDEX_MAX];
    signed char dt[NVFABRIC_FINDEX_MAX];
    unsigned char cat[NVFABRIC_FINDEX_MAX];
} nvfabric_dtypes;

static nvf_dtype_t nvfabric_int_by_size(size_t size, bool is_signed)
{
    switch (size) {
    case 1:
        return is_signed ? NVF_DTYPE_INT8 : NVF_DTYPE_UINT8;
    case 2:
        return is_signed ? NVF_DTYPE_INT16 : NVF_DTYPE_UINT16;
    case 4:
        return is_signed ? NVF_DTYPE_INT32 : NVF_DTYPE_UINT32;
    case 8:
        return is_signed ? NVF_DTYPE_INT64 : NVF_DTYPE_UINT64;
    default:
        return NVF_DTYPE_INVALID;
    }
}

static void nvfabric_add(MPI_Datatype handle, nvf_dtype_t dt, enum nvfabric_category cat)
{
    ompi_datatype_t *d = (ompi_datatype_t *)handle;
    ptrdiff_t lb = 0, extent = 0;
    size_t size = 0;
    if (dt == NVF_DTYPE_INVALID || d == NULL || d->d_f_to_c_index < 0 ||
        d->d_f_to_c_index >= NVFABRIC_FINDEX_MAX)
        return;
    ompi_datatype_get_extent(d, &lb, &extent);
    ompi_datatype_type_size(d, &size);
    /* The engine copies whole elements of nvf_dtype_size() bytes: the MPI type must span
     * exactly that (pair types have padding: their data size may be smaller). */
    if (lb != 0 || (size_t)extent != nvf_dtype_size(dt) || size == 0 || size > (size_t)extent)
        return;
    nvfabric_dtypes.handle[d->d_f_to_c_index] = handle;
    nvfabric_dtypes.dt[d->d_f_to_c_index] = (signed char)dt;
    nvfabric_dtypes.cat[d->d_f_to_c_index] = (unsigned char)cat;
}

static size_t nvfabric_size_of(MPI_Datatype handle)
{
    size_t size = 0;
    ompi_datatype_type_size((ompi_datatype_t *)handle, &size);
    return size;
}

void mca_coll_nvfabric_classify_init(void)
{
    if (nvfabric_dtypes.ready)
        return;
    for (int i = 0; i < NVFABRIC_FINDEX_MAX; i++)
        nvfabric_dtypes.dt[i] = (signed char)NVF_DTYPE_INVALID;

    const struct {
        MPI_Datatype handle;
        bool is_signed;
        enum nvfabric_category cat;
    } ints[] = {
        {MPI_SIGNED_CHAR, true, CAT_C_INT},   {MPI_UNSIGNED_CHAR, false, CAT_C_INT},
        {MPI_SHORT, true, CAT_C_INT},         {MPI_UNSIGNED_SHORT, false, CAT_C_INT},
        {MPI_INT, true, CAT_C_INT},           {MPI_UNSIGNED, false, CAT_C_INT},
        {MPI_LONG, true, CAT_C_INT},          {MPI_UNSIGNED_LONG, false, CAT_C_INT},
        {MPI_LONG_LONG_INT, true, CAT_C_INT}, {MPI_UNSIGNED_LONG_LONG, false, CAT_C_INT},
        {MPI_INT8_T, true, CAT_C_INT},        {MPI_UINT8_T, false, CAT_C_INT},
        {MPI_INT16_T, true, CAT_C_INT},       {MPI_UINT16_T, false, CAT_C_INT},
        {MPI_INT32_T, true, CAT_C_INT},       {MPI_UINT32_T, false, CAT_C_INT},
        {MPI_INT64_T, true, CAT_C_INT},       {MPI_UINT64_T, false, CAT_C_INT},
        {MPI_AINT, true, CAT_F_INT},          {MPI_OFFSET, true, CAT_F_INT},
        {MPI_COUNT, true, CAT_F_INT},         {MPI_INTEGER, true, CAT_F_INT},
        {MPI_INTEGER1, true, CAT_F_INT},      {MPI_INTEGER2, true, CAT_F_INT},
        {MPI_INTEGER4, true, CAT_F_INT},      {MPI_INTEGER8, true, CAT_F_INT},
        {MPI_BYTE, false, CAT_BYTE},
    };
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
        nvfabric_add(ints[i].handle,
                     nvfabric_int_by_size(nvfabric_size_of(ints[i].handle), ints[i].is_signed),
                     ints[i].cat);

    const struct nvfabric_dtype_entry others[] = {
        {MPI_FLOAT, NVF_DTYPE_FLOAT, CAT_FLOAT},
        {MPI_DOUBLE, NVF_DTYPE_DOUBLE, CAT_FLOAT},
        {MPI_LONG_DOUBLE, NVF_DTYPE_LONG_DOUBLE, CAT_FLOAT},
        {MPI_REAL, NVF_DTYPE_FLOAT, CAT_FLOAT},
        {MPI_REAL4, NVF_DTYPE_FLOAT, CAT_FLOAT},
        {MPI_DOUBLE_PRECISION, NVF_DTYPE_DOUBLE, CAT_FLOAT},
        {MPI_REAL8, NVF_DTYPE_DOUBLE, CAT_FLOAT},
        {MPI_C_BOOL, NVF_DTYPE_BOOL, CAT_LOGICAL},
        {MPI_CXX_BOOL, NVF_DTYPE_BOOL, CAT_LOGICAL},
        {MPI_C_FLOAT_COMPLEX, NVF_DTYPE_FLOAT_COMPLEX, CAT_COMPLEX},
        {MPI_C_DOUBLE_COMPLEX, NVF_DTYPE_DOUBLE_COMPLEX, CAT_COMPLEX},
        {MPI_C_LONG_DOUBLE_COMPLEX, NVF_DTYPE_LONG_DOUBLE_COMPLEX, CAT_COMPLEX},
        {MPI_CXX_FLOAT_COMPLEX, NVF_DTYPE_FLOAT_COMPLEX, CAT_COMPLEX},
        {MPI_CXX_DOUBLE_COMPLEX, NVF_DTYPE_DOUBLE_COMPLEX, CAT_COMPLEX},
        {MPI_CXX_LONG_DOUBLE_COMPLEX, NVF_DTYPE_LONG_DOUBLE_COMPLEX, CAT_COMPLEX},
        {MPI_COMPLEX, NVF_DTYPE_FLOAT_COMPLEX, CAT_COMPLEX},
        {MPI_DOUBLE_COMPLEX, NVF_DTYPE_DOUBLE_COMPLEX, CAT_COMPLEX},
        {MPI_FLOAT_INT, NVF_DTYPE_FLOAT_INT, CAT_PAIR},
        {MPI_DOUBLE_INT, NVF_DTYPE_DOUBLE_INT, CAT_PAIR},
        {MPI_LONG_INT, NVF_DTYPE_LONG_INT, CAT_PAIR},
        {MPI_2INT, NVF_DTYPE_INT_INT, CAT_PAIR},
        {MPI_SHORT_INT, NVF_DTYPE_SHORT_INT, CAT_PAIR},
        {MPI_LONG_DOUBLE_INT, NVF_DTYPE_LONG_DOUBLE_INT, CAT_PAIR},
    };
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
        nvfabric_add(others[i].handle, others[i].dt, others[i].cat);
    nvfabric_dtypes.ready = true;
}

nvf_dtype_t mca_coll_nvfabric_classify_dtype(struct ompi_datatype_t *dtype)
{
    int idx = dtype->d_f_to_c_index;
    if (!ompi_datatype_is_predefined(dtype) || idx < 0 || idx >= NVFABRIC_FINDEX_MAX ||
        nvfabric_dtypes.handle[idx] != (MPI_Datatype)dtype)
        return NVF_DTYPE_INVALID;
    return (nvf_dtype_t)nvfabric_dtypes.dt[idx];
}

bool mca_coll_nvfabric_op_allowed(struct ompi_datatype_t *dtype, nvf_op_t op)
{
    switch ((enum nvfabric_category)nvfabric_dtypes.cat[dtype->d_f_to_c_index]) {
    case CAT_C_INT:
        return op <= NVF_OP_BXOR;
    case CAT_F_INT:
        return op <= NVF_OP_MIN || (op >= NVF_OP_BAND && op <= NVF_OP_BXOR);
    case CAT_BYTE:
        return op >= NVF_OP_BAND && op <= NVF_OP_BXOR;
    case CAT_FLOAT:
        return op <= NVF_OP_MIN;
    case CAT_COMPLEX:
        return op == NVF_OP_SUM || op == NVF_OP_PROD;
    case CAT_LOGICAL:
        return op >= NVF_OP_LAND && op <= NVF_OP_LXOR;
    case CAT_PAIR:
        return op == NVF_OP_MAXLOC || op == NVF_OP_MINLOC;
    }
    return false;
}

nvf_op_t mca_coll_nvfabric_classify_op(struct ompi_op_t *op)
{
    MPI_Op h = (MPI_Op)op;
    if (h == MPI_SUM)
        return NVF_OP_SUM;
    if (h == MPI_PROD)
        return NVF_OP_PROD;
    if (h == MPI_MAX)
        return NVF_OP_MAX;
    if (h == MPI_MIN)
        return NVF_OP_MIN;
    if (h == MPI_LAND)
        return NVF_OP_LAND;
    if (h == MPI_LOR)
        return NVF_OP_LOR;
    if (h == MPI_LXOR)
        return NVF_OP_LXOR;
    if (h == MPI_BAND)
        return NVF_OP_BAND;
    if (h == MPI_BOR)
        return NVF_OP_BOR;
    if (h == MPI_BXOR)
        return NVF_OP_BXOR;
    if (h == MPI_MAXLOC)
        return NVF_OP_MAXLOC;
    if (h == MPI_MINLOC)
        return NVF_OP_MINLOC;
    return NVF_OP_INVALID;
}
