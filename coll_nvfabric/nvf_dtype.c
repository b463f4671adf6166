/*
 * nvf_dtype.c: sizes and names of the engine's element types and operators, and the table of
 * which (type, op) pairs are valid. The table is derived from the operator list in
 * nvf_op_defs.h, so it cannot disagree with the reduction code.
 */
#include "nvf_dtype.h"
#include "nvf_op_defs.h"

#include <float.h>

static const size_t nvf_dtype_sizes[NVF_DTYPE_COUNT] = {
    [NVF_DTYPE_INT8] = sizeof(int8_t),
    [NVF_DTYPE_UINT8] = sizeof(uint8_t),
    [NVF_DTYPE_INT16] = sizeof(int16_t),
    [NVF_DTYPE_UINT16] = sizeof(uint16_t),
    [NVF_DTYPE_INT32] = sizeof(int32_t),
    [NVF_DTYPE_UINT32] = sizeof(uint32_t),
    [NVF_DTYPE_INT64] = sizeof(int64_t),
    [NVF_DTYPE_UINT64] = sizeof(uint64_t),
    [NVF_DTYPE_FLOAT] = sizeof(float),
    [NVF_DTYPE_DOUBLE] = sizeof(double),
    [NVF_DTYPE_LONG_DOUBLE] = sizeof(long double),
    [NVF_DTYPE_BOOL] = sizeof(nvf_bool_t),
    [NVF_DTYPE_FLOAT_COMPLEX] = sizeof(nvf_float_complex_t),
    [NVF_DTYPE_DOUBLE_COMPLEX] = sizeof(nvf_double_complex_t),
    [NVF_DTYPE_LONG_DOUBLE_COMPLEX] = sizeof(nvf_long_double_complex_t),
    [NVF_DTYPE_FLOAT_INT] = sizeof(nvf_float_int_t),
    [NVF_DTYPE_DOUBLE_INT] = sizeof(nvf_double_int_t),
    [NVF_DTYPE_LONG_INT] = sizeof(nvf_long_int_t),
    [NVF_DTYPE_INT_INT] = sizeof(nvf_int_int_t),
    [NVF_DTYPE_SHORT_INT] = sizeof(nvf_short_int_t),
    [NVF_DTYPE_LONG_DOUBLE_INT] = sizeof(nvf_long_double_int_t),
};

static const char *const nvf_dtype_names[NVF_DTYPE_COUNT] = {
#define NVF_DTYPE_NAME(id, name) [NVF_DTYPE_##id] = name,
    NVF_FOREACH_DTYPE(NVF_DTYPE_NAME)
#undef NVF_DTYPE_NAME
};

static const char *const nvf_op_names[NVF_OP_COUNT] = {
#define NVF_OP_NAME(id, name) [NVF_OP_##id] = name,
    NVF_FOREACH_OP(NVF_OP_NAME)
#undef NVF_OP_NAME
};

/* 1: host and device, 2: host only */
static const unsigned char nvf_pair_where[NVF_OP_COUNT][NVF_DTYPE_COUNT] = {
#define NVF_PAIR_DEV(op, dt, T, fn) [NVF_OP_##op][NVF_DTYPE_##dt] = 1,
#define NVF_PAIR_HOST(op, dt, T, fn) [NVF_OP_##op][NVF_DTYPE_##dt] = 2,
    NVF_FOREACH_OP_DTYPE_DEVICE(NVF_PAIR_DEV) NVF_FOREACH_OP_DTYPE_HOST_ONLY(NVF_PAIR_HOST)
#undef NVF_PAIR_DEV
#undef NVF_PAIR_HOST
};

size_t nvf_dtype_size(nvf_dtype_t dt)
{
    return (dt >= 0 && dt < NVF_DTYPE_COUNT) ? nvf_dtype_sizes[dt] : 0;
}

/* The pair types' gaps follow from their layout; long double's from its format (x87: a 64-bit
 * significand in 10 bytes of a 12- or 16-byte object). */
#define NVF_PAIR_GAPS(T) (sizeof(T) > sizeof(((T *)0)->v) + sizeof(((T *)0)->k))
#define NVF_LDBL_GAPS (LDBL_MANT_DIG == 64 && sizeof(long double) > 10)

bool nvf_dtype_has_gaps(nvf_dtype_t dt)
{
    switch (dt) {
    case NVF_DTYPE_LONG_DOUBLE:
    case NVF_DTYPE_LONG_DOUBLE_COMPLEX:
        return NVF_LDBL_GAPS;
    case NVF_DTYPE_FLOAT_INT:
        return NVF_PAIR_GAPS(nvf_float_int_t);
    case NVF_DTYPE_DOUBLE_INT:
        return NVF_PAIR_GAPS(nvf_double_int_t);
    case NVF_DTYPE_LONG_INT:
        return NVF_PAIR_GAPS(nvf_long_int_t);
    case NVF_DTYPE_INT_INT:
        return NVF_PAIR_GAPS(nvf_int_int_t);
    case NVF_DTYPE_SHORT_INT:
        return NVF_PAIR_GAPS(nvf_short_int_t);
    case NVF_DTYPE_LONG_DOUBLE_INT:
        return true; /* long double, then int: never a multiple of the alignment without a gap */
    default:
        return false;
    }
}

const char *nvf_dtype_name(nvf_dtype_t dt)
{
    return (dt >= 0 && dt < NVF_DTYPE_COUNT) ? nvf_dtype_names[dt] : "invalid";
}

const char *nvf_op_name(nvf_op_t op)
{
    return (op >= 0 && op < NVF_OP_COUNT) ? nvf_op_names[op] : "invalid";
}

bool nvf_op_supported(nvf_dtype_t dt, nvf_op_t op)
{
    return dt >= 0 && dt < NVF_DTYPE_COUNT && op >= 0 && op < NVF_OP_COUNT &&
           nvf_pair_where[op][dt] != 0;
}

bool nvf_op_supported_on_device(nvf_dtype_t dt, nvf_op_t op)
{
    return nvf_op_supported(dt, op) && nvf_pair_where[op][dt] == 1;
}
