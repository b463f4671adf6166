/*
 * nvf_dtype.h: the engine's element types and reduction operators, as plain enums.
 *
 * The mca/ layer translates Open MPI datatypes and ops into these; the engine never sees an
 * MPI handle. Every (type, op) pair that MPI_Allreduce allows for a predefined datatype and a
 * predefined op is listed here; nvf_op_supported() says which pairs are valid.
 * Must not include MPI or CUDA headers.
 */
#ifndef NVF_DTYPE_H
#define NVF_DTYPE_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X(ID, name) for every element type, in enum order. */
#define NVF_FOREACH_DTYPE(X)                                                                       \
    X(INT8, "int8")                                                                                \
    X(UINT8, "uint8")                                                                              \
    X(INT16, "int16")                                                                              \
    X(UINT16, "uint16")                                                                            \
    X(INT32, "int32")                                                                              \
    X(UINT32, "uint32")                                                                            \
    X(INT64, "int64")                                                                              \
    X(UINT64, "uint64")                                                                            \
    X(FLOAT, "float")                                                                              \
    X(DOUBLE, "double")                                                                            \
    X(LONG_DOUBLE, "long_double")                                                                  \
    X(BOOL, "bool")                                                                                \
    X(FLOAT_COMPLEX, "float_complex")                                                              \
    X(DOUBLE_COMPLEX, "double_complex")                                                            \
    X(LONG_DOUBLE_COMPLEX, "long_double_complex")                                                  \
    X(FLOAT_INT, "float_int")                                                                      \
    X(DOUBLE_INT, "double_int")                                                                    \
    X(LONG_INT, "long_int")                                                                        \
    X(INT_INT, "2int")                                                                             \
    X(SHORT_INT, "short_int")                                                                      \
    X(LONG_DOUBLE_INT, "long_double_int")

typedef enum nvf_dtype {
#define NVF_DTYPE_ENUM(id, name) NVF_DTYPE_##id,
    NVF_FOREACH_DTYPE(NVF_DTYPE_ENUM)
#undef NVF_DTYPE_ENUM
        NVF_DTYPE_COUNT,
    NVF_DTYPE_INVALID = -1
} nvf_dtype_t;

/* X(ID, name) for every predefined reduction operator that MPI_Allreduce accepts. */
#define NVF_FOREACH_OP(X)                                                                          \
    X(SUM, "sum")                                                                                  \
    X(PROD, "prod")                                                                                \
    X(MAX, "max")                                                                                  \
    X(MIN, "min")                                                                                  \
    X(LAND, "land")                                                                                \
    X(LOR, "lor")                                                                                  \
    X(LXOR, "lxor")                                                                                \
    X(BAND, "band")                                                                                \
    X(BOR, "bor")                                                                                  \
    X(BXOR, "bxor")                                                                                \
    X(MAXLOC, "maxloc")                                                                            \
    X(MINLOC, "minloc")

typedef enum nvf_op {
#define NVF_OP_ENUM(id, name) NVF_OP_##id,
    NVF_FOREACH_OP(NVF_OP_ENUM)
#undef NVF_OP_ENUM
        NVF_OP_COUNT,
    NVF_OP_INVALID = -1
} nvf_op_t;

/* Size in bytes of one element (the C type's sizeof, padding included). 0 for an invalid id. */
size_t nvf_dtype_size(nvf_dtype_t dt);
/* Whether an element has bytes that are not part of its value (the gap after a pair type's
 * value or index, an x87 long double's six unused bytes). A reduction writes only value bytes. */
bool nvf_dtype_has_gaps(nvf_dtype_t dt);
const char *nvf_dtype_name(nvf_dtype_t dt);
const char *nvf_op_name(nvf_op_t op);
/* Whether MPI defines `op` on `dt` (MPI-4.0 section 6.9.2) and the engine implements it. */
bool nvf_op_supported(nvf_dtype_t dt, nvf_op_t op);
/* Whether the device stage has this pair (no long double on GPUs). */
bool nvf_op_supported_on_device(nvf_dtype_t dt, nvf_op_t op);

#ifdef __cplusplus
}
#endif
#endif
