/*
 * nvf_op_defs.h: the reduction operators, written once for the host and the device.
 *
 * Each operator is a small function on two elements, `acc = op(acc, x)`, where `acc` holds the
 * lower ranks' partial result. Host C and CUDA C++ both include this header: the host loops
 * (nvf_reduce_host.c) and the kernels (kernels/) are generated from NVF_FOREACH_OP_DTYPE, so a
 * pair defined here exists on both sides, except long double (no GPU has it).
 *
 * Arithmetic is the C arithmetic of the type, with one change: signed integer SUM and PROD wrap
 * (computed in the unsigned type), because overflow is undefined behaviour in C and MPI leaves
 * the result unspecified; without overflow the results are identical. Floating point is never
 * contracted (built with -ffp-contract=off / nvcc -fmad=false) so host and device round alike.
 * Must not hold state, allocate, or depend on anything but its arguments.
 */
#ifndef NVF_OP_DEFS_H
#define NVF_OP_DEFS_H

#include "nvf_dtype.h"

#ifdef __CUDACC__
#define NVF_HD static __host__ __device__ __forceinline__
#else
#include <stdbool.h>
#include <stdint.h>
#define NVF_HD static inline
#endif

/* ---- element types ---------------------------------------------------------------------- */
#ifdef __CUDACC__
/* CUDA C++ has no C99 _Complex: a struct of the same layout, with the textbook operations. */
struct nvf_cfloat {
    float re, im;
};
struct nvf_cdouble {
    double re, im;
};
#define NVF_COMPLEX_OPS(T)                                                                         \
    static __host__ __device__ __forceinline__ T operator+(T a, T b)                               \
    {                                                                                              \
        T r = {a.re + b.re, a.im + b.im};                                                          \
        return r;                                                                                  \
    }                                                                                              \
    static __host__ __device__ __forceinline__ T operator*(T a, T b)                               \
    {                                                                                              \
        T r = {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};                              \
        return r;                                                                                  \
    }
NVF_COMPLEX_OPS(nvf_cfloat)
NVF_COMPLEX_OPS(nvf_cdouble)
typedef nvf_cfloat nvf_float_complex_t;
typedef nvf_cdouble nvf_double_complex_t;
typedef bool nvf_bool_t;
#else
typedef float _Complex nvf_float_complex_t;
typedef double _Complex nvf_double_complex_t;
typedef long double _Complex nvf_long_double_complex_t;
typedef _Bool nvf_bool_t;
#endif

/* The MPI pair types, laid out as C lays out {value; int} (what Open MPI's MPI_*_INT are). */
typedef struct {
    float v;
    int k;
} nvf_float_int_t;
typedef struct {
    double v;
    int k;
} nvf_double_int_t;
typedef struct {
    long v;
    int k;
} nvf_long_int_t;
typedef struct {
    int v;
    int k;
} nvf_int_int_t;
typedef struct {
    short v;
    int k;
} nvf_short_int_t;
#ifndef __CUDACC__
typedef struct {
    long double v;
    int k;
} nvf_long_double_int_t;
#endif

/* ---- operators ---------------------------------------------------------------------------- */
/* Integers: T is the element type, UT the unsigned type the arithmetic wraps in (at least
 * unsigned int, so that uint16 * uint16 cannot overflow a promoted int). */
#define NVF_DEFINE_INT_OPS(ID, T, UT)                                                              \
    NVF_HD T nvf_sum_##ID(T a, T b)                                                                \
    {                                                                                              \
        return (T)((UT)a + (UT)b);                                                                 \
    }                                                                                              \
    NVF_HD T nvf_prod_##ID(T a, T b)                                                               \
    {                                                                                              \
        return (T)((UT)a * (UT)b);                                                                 \
    }                                                                                              \
    NVF_HD T nvf_max_##ID(T a, T b)                                                                \
    {                                                                                              \
        return a > b ? a : b;                                                                      \
    }                                                                                              \
    NVF_HD T nvf_min_##ID(T a, T b)                                                                \
    {                                                                                              \
        return a < b ? a : b;                                                                      \
    }                                                                                              \
    NVF_HD T nvf_land_##ID(T a, T b)                                                               \
    {                                                                                              \
        return (T)(a && b);                                                                        \
    }                                                                                              \
    NVF_HD T nvf_lor_##ID(T a, T b)                                                                \
    {                                                                                              \
        return (T)(a || b);                                                                        \
    }                                                                                              \
    NVF_HD T nvf_lxor_##ID(T a, T b)                                                               \
    {                                                                                              \
        return (T)(!a != !b);                                                                      \
    }                                                                                              \
    NVF_HD T nvf_band_##ID(T a, T b)                                                               \
    {                                                                                              \
        return (T)(a & b);                                                                         \
    }                                                                                              \
    NVF_HD T nvf_bor_##ID(T a, T b)                                                                \
    {                                                                                              \
        return (T)(a | b);                                                                         \
    }                                                                                              \
    NVF_HD T nvf_bxor_##ID(T a, T b)                                                               \
    {                                                                                              \
        return (T)(a ^ b);                                                                         \
    }

#define NVF_DEFINE_FLOAT_OPS(ID, T)                                                                \
    NVF_HD T nvf_sum_##ID(T a, T b)                                                                \
    {                                                                                              \
        return a + b;                                                                              \
    }                                                                                              \
    NVF_HD T nvf_prod_##ID(T a, T b)                                                               \
    {                                                                                              \
        return a * b;                                                                              \
    }                                                                                              \
    NVF_HD T nvf_max_##ID(T a, T b)                                                                \
    {                                                                                              \
        return a > b ? a : b;                                                                      \
    }                                                                                              \
    NVF_HD T nvf_min_##ID(T a, T b)                                                                \
    {                                                                                              \
        return a < b ? a : b;                                                                      \
    }

#define NVF_DEFINE_COMPLEX_OPS(ID, T)                                                              \
    NVF_HD T nvf_sum_##ID(T a, T b)                                                                \
    {                                                                                              \
        return a + b;                                                                              \
    }                                                                                              \
    NVF_HD T nvf_prod_##ID(T a, T b)                                                               \
    {                                                                                              \
        return a * b;                                                                              \
    }

/* MPI's rule: the larger (smaller) value wins; on a tie, the smaller index. */
#define NVF_DEFINE_LOC_OPS(ID, T)                                                                  \
    NVF_HD T nvf_maxloc_##ID(T a, T b)                                                             \
    {                                                                                              \
        if (a.v > b.v)                                                                             \
            return a;                                                                              \
        if (b.v > a.v)                                                                             \
            return b;                                                                              \
        if (b.k < a.k)                                                                             \
            a.k = b.k;                                                                             \
        return a;                                                                                  \
    }                                                                                              \
    NVF_HD T nvf_minloc_##ID(T a, T b)                                                             \
    {                                                                                              \
        if (a.v < b.v)                                                                             \
            return a;                                                                              \
        if (b.v < a.v)                                                                             \
            return b;                                                                              \
        if (b.k < a.k)                                                                             \
            a.k = b.k;                                                                             \
        return a;                                                                                  \
    }

NVF_DEFINE_INT_OPS(INT8, int8_t, unsigned int)
NVF_DEFINE_INT_OPS(UINT8, uint8_t, unsigned int)
NVF_DEFINE_INT_OPS(INT16, int16_t, unsigned int)
NVF_DEFINE_INT_OPS(UINT16, uint16_t, unsigned int)
NVF_DEFINE_INT_OPS(INT32, int32_t, uint32_t)
NVF_DEFINE_INT_OPS(UINT32, uint32_t, uint32_t)
NVF_DEFINE_INT_OPS(INT64, int64_t, uint64_t)
NVF_DEFINE_INT_OPS(UINT64, uint64_t, uint64_t)
NVF_DEFINE_FLOAT_OPS(FLOAT, float)
NVF_DEFINE_FLOAT_OPS(DOUBLE, double)
NVF_HD nvf_bool_t nvf_land_BOOL(nvf_bool_t a, nvf_bool_t b)
{
    return a && b;
}
NVF_HD nvf_bool_t nvf_lor_BOOL(nvf_bool_t a, nvf_bool_t b)
{
    return a || b;
}
NVF_HD nvf_bool_t nvf_lxor_BOOL(nvf_bool_t a, nvf_bool_t b)
{
    return !a != !b;
}
NVF_DEFINE_COMPLEX_OPS(FLOAT_COMPLEX, nvf_float_complex_t)
NVF_DEFINE_COMPLEX_OPS(DOUBLE_COMPLEX, nvf_double_complex_t)
NVF_DEFINE_LOC_OPS(FLOAT_INT, nvf_float_int_t)
NVF_DEFINE_LOC_OPS(DOUBLE_INT, nvf_double_int_t)
NVF_DEFINE_LOC_OPS(LONG_INT, nvf_long_int_t)
NVF_DEFINE_LOC_OPS(INT_INT, nvf_int_int_t)
NVF_DEFINE_LOC_OPS(SHORT_INT, nvf_short_int_t)
#ifndef __CUDACC__
NVF_DEFINE_FLOAT_OPS(LONG_DOUBLE, long double)
NVF_DEFINE_COMPLEX_OPS(LONG_DOUBLE_COMPLEX, nvf_long_double_complex_t)
NVF_DEFINE_LOC_OPS(LONG_DOUBLE_INT, nvf_long_double_int_t)
#endif

/* ---- the list of valid pairs -------------------------------------------------------------
 * X(OP, DTYPE, C type, element function). NVF_FOREACH_OP_DTYPE_DEVICE has the pairs a GPU
 * computes; NVF_FOREACH_OP_DTYPE_HOST_ONLY the rest (long double). */
#define NVF_INT_PAIRS(X, ID, T)                                                                    \
    X(SUM, ID, T, nvf_sum_##ID)                                                                    \
    X(PROD, ID, T, nvf_prod_##ID)                                                                  \
    X(MAX, ID, T, nvf_max_##ID)                                                                    \
    X(MIN, ID, T, nvf_min_##ID)                                                                    \
    X(LAND, ID, T, nvf_land_##ID)                                                                  \
    X(LOR, ID, T, nvf_lor_##ID)                                                                    \
    X(LXOR, ID, T, nvf_lxor_##ID)                                                                  \
    X(BAND, ID, T, nvf_band_##ID)                                                                  \
    X(BOR, ID, T, nvf_bor_##ID)                                                                    \
    X(BXOR, ID, T, nvf_bxor_##ID)
#define NVF_FLOAT_PAIRS(X, ID, T)                                                                  \
    X(SUM, ID, T, nvf_sum_##ID)                                                                    \
    X(PROD, ID, T, nvf_prod_##ID)                                                                  \
    X(MAX, ID, T, nvf_max_##ID)                                                                    \
    X(MIN, ID, T, nvf_min_##ID)
#define NVF_COMPLEX_PAIRS(X, ID, T)                                                                \
    X(SUM, ID, T, nvf_sum_##ID)                                                                    \
    X(PROD, ID, T, nvf_prod_##ID)
#define NVF_LOC_PAIRS(X, ID, T)                                                                    \
    X(MAXLOC, ID, T, nvf_maxloc_##ID)                                                              \
    X(MINLOC, ID, T, nvf_minloc_##ID)

#define NVF_FOREACH_OP_DTYPE_DEVICE(X)                                                             \
    NVF_INT_PAIRS(X, INT8, int8_t)                                                                 \
    NVF_INT_PAIRS(X, UINT8, uint8_t)                                                               \
    NVF_INT_PAIRS(X, INT16, int16_t)                                                               \
    NVF_INT_PAIRS(X, UINT16, uint16_t)                                                             \
    NVF_INT_PAIRS(X, INT32, int32_t)                                                               \
    NVF_INT_PAIRS(X, UINT32, uint32_t)                                                             \
    NVF_INT_PAIRS(X, INT64, int64_t)                                                               \
    NVF_INT_PAIRS(X, UINT64, uint64_t)                                                             \
    NVF_FLOAT_PAIRS(X, FLOAT, float)                                                               \
    NVF_FLOAT_PAIRS(X, DOUBLE, double)                                                             \
    X(LAND, BOOL, nvf_bool_t, nvf_land_BOOL)                                                       \
    X(LOR, BOOL, nvf_bool_t, nvf_lor_BOOL)                                                         \
    X(LXOR, BOOL, nvf_bool_t, nvf_lxor_BOOL)                                                       \
    NVF_COMPLEX_PAIRS(X, FLOAT_COMPLEX, nvf_float_complex_t)                                       \
    NVF_COMPLEX_PAIRS(X, DOUBLE_COMPLEX, nvf_double_complex_t)                                     \
    NVF_LOC_PAIRS(X, FLOAT_INT, nvf_float_int_t)                                                   \
    NVF_LOC_PAIRS(X, DOUBLE_INT, nvf_double_int_t)                                                 \
    NVF_LOC_PAIRS(X, LONG_INT, nvf_long_int_t)                                                     \
    NVF_LOC_PAIRS(X, INT_INT, nvf_int_int_t)                                                       \
    NVF_LOC_PAIRS(X, SHORT_INT, nvf_short_int_t)

#define NVF_FOREACH_OP_DTYPE_HOST_ONLY(X)                                                          \
    NVF_FLOAT_PAIRS(X, LONG_DOUBLE, long double)                                                   \
    NVF_COMPLEX_PAIRS(X, LONG_DOUBLE_COMPLEX, nvf_long_double_complex_t)                           \
    NVF_LOC_PAIRS(X, LONG_DOUBLE_INT, nvf_long_double_int_t)

#define NVF_FOREACH_OP_DTYPE(X)                                                                    \
    NVF_FOREACH_OP_DTYPE_DEVICE(X)                                                                 \
    NVF_FOREACH_OP_DTYPE_HOST_ONLY(X)

#endif
