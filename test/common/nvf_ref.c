/*
 * nvf_ref.c: input generation and the sequential reference reduction for the tests.
 * Written with C's own operators, one case per type; shares no code with the engine.
 */
#include "nvf_ref.h"

#include <complex.h>
#include <float.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    float v;
    int k;
} f_i;
typedef struct {
    double v;
    int k;
} d_i;
typedef struct {
    long v;
    int k;
} l_i;
typedef struct {
    int v;
    int k;
} i_i;
typedef struct {
    short v;
    int k;
} s_i;
typedef struct {
    long double v;
    int k;
} ld_i;

unsigned long long nvf_ref_rand(unsigned long long *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

bool nvf_ref_mpi_defines(nvf_dtype_t dt, nvf_op_t op)
{
    bool is_int = dt >= NVF_DTYPE_INT8 && dt <= NVF_DTYPE_UINT64;
    bool is_float = dt == NVF_DTYPE_FLOAT || dt == NVF_DTYPE_DOUBLE || dt == NVF_DTYPE_LONG_DOUBLE;
    bool is_complex = dt == NVF_DTYPE_FLOAT_COMPLEX || dt == NVF_DTYPE_DOUBLE_COMPLEX ||
                      dt == NVF_DTYPE_LONG_DOUBLE_COMPLEX;
    bool is_bool = dt == NVF_DTYPE_BOOL;
    bool is_pair = dt >= NVF_DTYPE_FLOAT_INT && dt <= NVF_DTYPE_LONG_DOUBLE_INT;
    switch (op) {
    case NVF_OP_SUM:
    case NVF_OP_PROD:
        return is_int || is_float || is_complex;
    case NVF_OP_MAX:
    case NVF_OP_MIN:
        return is_int || is_float;
    case NVF_OP_LAND:
    case NVF_OP_LOR:
    case NVF_OP_LXOR:
        return is_int || is_bool;
    case NVF_OP_BAND:
    case NVF_OP_BOR:
    case NVF_OP_BXOR:
        return is_int;
    case NVF_OP_MAXLOC:
    case NVF_OP_MINLOC:
        return is_pair;
    default:
        return false;
    }
}

size_t nvf_ref_size(nvf_dtype_t dt)
{
    switch (dt) {
    case NVF_DTYPE_INT8:
    case NVF_DTYPE_UINT8:
        return 1;
    case NVF_DTYPE_INT16:
    case NVF_DTYPE_UINT16:
        return 2;
    case NVF_DTYPE_INT32:
    case NVF_DTYPE_UINT32:
        return 4;
    case NVF_DTYPE_INT64:
    case NVF_DTYPE_UINT64:
        return 8;
    case NVF_DTYPE_FLOAT:
        return sizeof(float);
    case NVF_DTYPE_DOUBLE:
        return sizeof(double);
    case NVF_DTYPE_LONG_DOUBLE:
        return sizeof(long double);
    case NVF_DTYPE_BOOL:
        return sizeof(_Bool);
    case NVF_DTYPE_FLOAT_COMPLEX:
        return sizeof(float _Complex);
    case NVF_DTYPE_DOUBLE_COMPLEX:
        return sizeof(double _Complex);
    case NVF_DTYPE_LONG_DOUBLE_COMPLEX:
        return sizeof(long double _Complex);
    case NVF_DTYPE_FLOAT_INT:
        return sizeof(f_i);
    case NVF_DTYPE_DOUBLE_INT:
        return sizeof(d_i);
    case NVF_DTYPE_LONG_INT:
        return sizeof(l_i);
    case NVF_DTYPE_INT_INT:
        return sizeof(i_i);
    case NVF_DTYPE_SHORT_INT:
        return sizeof(s_i);
    case NVF_DTYPE_LONG_DOUBLE_INT:
        return sizeof(ld_i);
    default:
        return 0;
    }
}

/* Value bytes of one long double from its format: x87 (64-bit significand) uses 10. */
static size_t ldbl_value_bytes(void)
{
    return LDBL_MANT_DIG == 64 ? 10 : sizeof(long double);
}

#define MARK_PAIR(T)                                                                               \
    do {                                                                                           \
        memset(mask + offsetof(T, v), 1, sizeof(((T *)0)->v));                                     \
        memset(mask + offsetof(T, k), 1, sizeof(((T *)0)->k));                                     \
    } while (0)

void nvf_ref_value_bytes(nvf_dtype_t dt, unsigned char *mask)
{
    size_t size = nvf_ref_size(dt);
    memset(mask, 0, size);
    switch (dt) {
    case NVF_DTYPE_LONG_DOUBLE:
        memset(mask, 1, ldbl_value_bytes());
        break;
    case NVF_DTYPE_LONG_DOUBLE_COMPLEX:
        memset(mask, 1, ldbl_value_bytes());
        memset(mask + sizeof(long double), 1, ldbl_value_bytes());
        break;
    case NVF_DTYPE_FLOAT_INT:
        MARK_PAIR(f_i);
        break;
    case NVF_DTYPE_DOUBLE_INT:
        MARK_PAIR(d_i);
        break;
    case NVF_DTYPE_LONG_INT:
        MARK_PAIR(l_i);
        break;
    case NVF_DTYPE_INT_INT:
        MARK_PAIR(i_i);
        break;
    case NVF_DTYPE_SHORT_INT:
        MARK_PAIR(s_i);
        break;
    case NVF_DTYPE_LONG_DOUBLE_INT:
        memset(mask + offsetof(ld_i, v), 1, ldbl_value_bytes());
        memset(mask + offsetof(ld_i, k), 1, sizeof(int));
        break;
    default:
        memset(mask, 1, size);
    }
}
#undef MARK_PAIR

/* Uniform in [lo, hi], computed in unsigned arithmetic (hi - lo may not fit a long long). */
static long long rnd_range(unsigned long long *s, long long lo, long long hi)
{
    unsigned long long span = (unsigned long long)hi - (unsigned long long)lo + 1;
    unsigned long long r = span ? nvf_ref_rand(s) % span : nvf_ref_rand(s);
    return (long long)((unsigned long long)lo + r);
}

/* A real value: exact mode small integers (powers of two for PROD), random mode fractions. */
static double rnd_real(unsigned long long *s, nvf_op_t op, nvf_ref_mode_t mode)
{
    static const double pow2[] = {-2.0, -1.0, -0.5, 0.5, 1.0, 2.0};
    if (mode == NVF_REF_EXACT)
        return op == NVF_OP_PROD ? pow2[rnd_range(s, 0, 5)] : (double)rnd_range(s, -1000, 1000);
    /* never zero (keeps min/max of +0/-0 out of it); products stay in range */
    double mag = op == NVF_OP_PROD ? 0.5 + (double)rnd_range(s, 0, 1 << 20) / (1 << 20)
                                   : (double)rnd_range(s, 1, 1 << 30) / (1 << 20);
    return rnd_range(s, 0, 1) ? mag : -mag;
}

/* A small Gaussian integer for complex PROD in exact mode: never zero. */
static void rnd_gauss(unsigned long long *s, double *re, double *im)
{
    do {
        *re = (double)rnd_range(s, -1, 1);
        *im = (double)rnd_range(s, -1, 1);
    } while (*re == 0 && *im == 0);
}

void nvf_ref_fill(nvf_dtype_t dt, nvf_op_t op, nvf_ref_mode_t mode, void *buf, size_t n,
                  unsigned long long seed)
{
    unsigned long long st = seed * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL;
    unsigned long long *s = &st;
    bool logical = op == NVF_OP_LAND || op == NVF_OP_LOR || op == NVF_OP_LXOR;
    memset(buf, 0, n * nvf_ref_size(dt)); /* defined padding bytes */
    /* Signed integers never overflow the reference: SUM of up to 16 values in [-7,7], PROD of
     * {-1,1} (8 and 16 bit) or {-2,-1,1,2}. */
#define FILL_SIGNED(T, MIN, MAX, PRODLO)                                                           \
    for (size_t i = 0; i < n; i++) {                                                               \
        long long v;                                                                               \
        if (op == NVF_OP_PROD) {                                                                   \
            v = rnd_range(s, PRODLO, -PRODLO);                                                     \
            if (v == 0)                                                                            \
                v = 1;                                                                             \
        } else if (op == NVF_OP_SUM) {                                                             \
            v = mode == NVF_REF_EXACT ? rnd_range(s, -7, 7)                                        \
                                      : rnd_range(s, (MIN) / 16, (MAX) / 16);                      \
        } else {                                                                                   \
            v = rnd_range(s, MIN, MAX);                                                            \
        }                                                                                          \
        if (logical && rnd_range(s, 0, 2) == 0)                                                    \
            v = 0;                                                                                 \
        ((T *)buf)[i] = (T)v;                                                                      \
    }
#define FILL_UNSIGNED(T)                                                                           \
    for (size_t i = 0; i < n; i++) {                                                               \
        T v = (T)nvf_ref_rand(s);                                                                  \
        if (logical && rnd_range(s, 0, 2) == 0)                                                    \
            v = 0;                                                                                 \
        ((T *)buf)[i] = v;                                                                         \
    }
#define FILL_PAIR(T)                                                                               \
    for (size_t i = 0; i < n; i++) {                                                               \
        ((T *)buf)[i].v = rnd_range(s, 0, 3); /* many ties */                                      \
        ((T *)buf)[i].k = (int)rnd_range(s, -1000, 1000);                                          \
    }
#define FILL_COMPLEX(T, R)                                                                         \
    for (size_t i = 0; i < n; i++) {                                                               \
        double re, im;                                                                             \
        if (mode == NVF_REF_EXACT && op == NVF_OP_PROD) {                                          \
            rnd_gauss(s, &re, &im);                                                                \
        } else {                                                                                   \
            re = rnd_real(s, op, mode);                                                            \
            im = rnd_real(s, op, mode);                                                            \
        }                                                                                          \
        ((T *)buf)[i] = (R)re + (R)im * I;                                                         \
    }
    switch (dt) {
    case NVF_DTYPE_INT8:
        FILL_SIGNED(int8_t, INT8_MIN, INT8_MAX, -1);
        break;
    case NVF_DTYPE_INT16:
        FILL_SIGNED(int16_t, INT16_MIN, INT16_MAX, -1);
        break;
    case NVF_DTYPE_INT32:
        FILL_SIGNED(int32_t, INT32_MIN, INT32_MAX, -2);
        break;
    case NVF_DTYPE_INT64:
        FILL_SIGNED(int64_t, INT64_MIN / 2, INT64_MAX / 2, -2);
        break;
    case NVF_DTYPE_UINT8:
        FILL_UNSIGNED(uint8_t);
        break;
    case NVF_DTYPE_UINT16:
        FILL_UNSIGNED(uint16_t);
        break;
    case NVF_DTYPE_UINT32:
        FILL_UNSIGNED(uint32_t);
        break;
    case NVF_DTYPE_UINT64:
        FILL_UNSIGNED(uint64_t);
        break;
    case NVF_DTYPE_FLOAT:
        for (size_t i = 0; i < n; i++)
            ((float *)buf)[i] = (float)rnd_real(s, op, mode);
        break;
    case NVF_DTYPE_DOUBLE:
        for (size_t i = 0; i < n; i++)
            ((double *)buf)[i] = rnd_real(s, op, mode);
        break;
    case NVF_DTYPE_LONG_DOUBLE:
        for (size_t i = 0; i < n; i++)
            ((long double *)buf)[i] =
                (long double)rnd_real(s, op, mode) / (mode == NVF_REF_EXACT ? 1 : 3);
        break;
    case NVF_DTYPE_BOOL:
        for (size_t i = 0; i < n; i++)
            ((_Bool *)buf)[i] = rnd_range(s, 0, 1);
        break;
    case NVF_DTYPE_FLOAT_COMPLEX:
        FILL_COMPLEX(float _Complex, float);
        break;
    case NVF_DTYPE_DOUBLE_COMPLEX:
        FILL_COMPLEX(double _Complex, double);
        break;
    case NVF_DTYPE_LONG_DOUBLE_COMPLEX:
        FILL_COMPLEX(long double _Complex, long double);
        break;
    case NVF_DTYPE_FLOAT_INT:
        FILL_PAIR(f_i);
        break;
    case NVF_DTYPE_DOUBLE_INT:
        FILL_PAIR(d_i);
        break;
    case NVF_DTYPE_LONG_INT:
        FILL_PAIR(l_i);
        break;
    case NVF_DTYPE_INT_INT:
        FILL_PAIR(i_i);
        break;
    case NVF_DTYPE_SHORT_INT:
        FILL_PAIR(s_i);
        break;
    case NVF_DTYPE_LONG_DOUBLE_INT:
        FILL_PAIR(ld_i);
        break;
    default:
        break;
    }
}

#define REF_LOOP(T, EXPR)                                                                          \
    for (size_t i = 0; i < n; i++) {                                                               \
        T acc = ((const T *)src[0])[i];                                                            \
        for (int r = 1; r < nsrc; r++) {                                                           \
            T x = ((const T *)src[r])[i];                                                          \
            acc = (EXPR);                                                                          \
        }                                                                                          \
        ((T *)ref)[i] = acc;                                                                       \
    }
#define REF_LOGIC(T)                                                                               \
    switch (op) {                                                                                  \
    case NVF_OP_LAND:                                                                              \
        REF_LOOP(T, (T)(acc && x));                                                                \
        break;                                                                                     \
    case NVF_OP_LOR:                                                                               \
        REF_LOOP(T, (T)(acc || x));                                                                \
        break;                                                                                     \
    case NVF_OP_LXOR:                                                                              \
        REF_LOOP(T, (T)((acc != 0) != (x != 0)));                                                  \
        break;                                                                                     \
    case NVF_OP_BAND:                                                                              \
        REF_LOOP(T, (T)(acc & x));                                                                 \
        break;                                                                                     \
    case NVF_OP_BOR:                                                                               \
        REF_LOOP(T, (T)(acc | x));                                                                 \
        break;                                                                                     \
    case NVF_OP_BXOR:                                                                              \
        REF_LOOP(T, (T)(acc ^ x));                                                                 \
        break;                                                                                     \
    default:                                                                                       \
        break;                                                                                     \
    }
/* UT: the type the product is computed in (unsigned types wrap as C defines). */
#define REF_INT(T, UT)                                                                             \
    switch (op) {                                                                                  \
    case NVF_OP_SUM:                                                                               \
        REF_LOOP(T, (T)(acc + x));                                                                 \
        break;                                                                                     \
    case NVF_OP_PROD:                                                                              \
        REF_LOOP(T, (T)((UT)acc * x));                                                             \
        break;                                                                                     \
    case NVF_OP_MAX:                                                                               \
        REF_LOOP(T, x > acc ? x : acc);                                                            \
        break;                                                                                     \
    case NVF_OP_MIN:                                                                               \
        REF_LOOP(T, x < acc ? x : acc);                                                            \
        break;                                                                                     \
    default:                                                                                       \
        REF_LOGIC(T);                                                                              \
        break;                                                                                     \
    }
#define REF_REAL(T)                                                                                \
    switch (op) {                                                                                  \
    case NVF_OP_SUM:                                                                               \
        REF_LOOP(T, acc + x);                                                                      \
        break;                                                                                     \
    case NVF_OP_PROD:                                                                              \
        REF_LOOP(T, acc *x);                                                                       \
        break;                                                                                     \
    case NVF_OP_MAX:                                                                               \
        REF_LOOP(T, x > acc ? x : acc);                                                            \
        break;                                                                                     \
    case NVF_OP_MIN:                                                                               \
        REF_LOOP(T, x < acc ? x : acc);                                                            \
        break;                                                                                     \
    default:                                                                                       \
        break;                                                                                     \
    }
#define REF_COMPLEX(T)                                                                             \
    switch (op) {                                                                                  \
    case NVF_OP_SUM:                                                                               \
        REF_LOOP(T, acc + x);                                                                      \
        break;                                                                                     \
    case NVF_OP_PROD:                                                                              \
        REF_LOOP(T, acc *x);                                                                       \
        break;                                                                                     \
    default:                                                                                       \
        break;                                                                                     \
    }
/* MPI: the larger (smaller) value wins; equal values keep the smaller index. */
#define REF_LOC(T)                                                                                 \
    if (op == NVF_OP_MAXLOC) {                                                                     \
        REF_LOOP(T, (x.v > acc.v   ? x                                                             \
                     : x.v < acc.v ? acc                                                           \
                                   : (T){acc.v, x.k < acc.k ? x.k : acc.k}));                      \
    } else {                                                                                       \
        REF_LOOP(T, (x.v < acc.v   ? x                                                             \
                     : x.v > acc.v ? acc                                                           \
                                   : (T){acc.v, x.k < acc.k ? x.k : acc.k}));                      \
    }

void nvf_ref_reduce(nvf_dtype_t dt, nvf_op_t op, void *ref, void *const *src, int nsrc, size_t n)
{
    memset(ref, 0, n * nvf_ref_size(dt));
    switch (dt) {
    case NVF_DTYPE_INT8:
        REF_INT(int8_t, int);
        break;
    case NVF_DTYPE_UINT8:
        REF_INT(uint8_t, unsigned);
        break;
    case NVF_DTYPE_INT16:
        REF_INT(int16_t, int);
        break;
    case NVF_DTYPE_UINT16:
        REF_INT(uint16_t, unsigned);
        break;
    case NVF_DTYPE_INT32:
        REF_INT(int32_t, int32_t);
        break;
    case NVF_DTYPE_UINT32:
        REF_INT(uint32_t, uint32_t);
        break;
    case NVF_DTYPE_INT64:
        REF_INT(int64_t, int64_t);
        break;
    case NVF_DTYPE_UINT64:
        REF_INT(uint64_t, uint64_t);
        break;
    case NVF_DTYPE_FLOAT:
        REF_REAL(float);
        break;
    case NVF_DTYPE_DOUBLE:
        REF_REAL(double);
        break;
    case NVF_DTYPE_LONG_DOUBLE:
        REF_REAL(long double);
        break;
    case NVF_DTYPE_BOOL:
        REF_LOGIC(_Bool);
        break;
    case NVF_DTYPE_FLOAT_COMPLEX:
        REF_COMPLEX(float _Complex);
        break;
    case NVF_DTYPE_DOUBLE_COMPLEX:
        REF_COMPLEX(double _Complex);
        break;
    case NVF_DTYPE_LONG_DOUBLE_COMPLEX:
        REF_COMPLEX(long double _Complex);
        break;
    case NVF_DTYPE_FLOAT_INT:
        REF_LOC(f_i);
        break;
    case NVF_DTYPE_DOUBLE_INT:
        REF_LOC(d_i);
        break;
    case NVF_DTYPE_LONG_INT:
        REF_LOC(l_i);
        break;
    case NVF_DTYPE_INT_INT:
        REF_LOC(i_i);
        break;
    case NVF_DTYPE_SHORT_INT:
        REF_LOC(s_i);
        break;
    case NVF_DTYPE_LONG_DOUBLE_INT:
        REF_LOC(ld_i);
        break;
    default:
        break;
    }
}

bool nvf_ref_same(nvf_dtype_t dt, const void *a, const void *b, size_t i, bool bitwise)
{
#define SAME_PAIR(T)                                                                               \
    return ((const T *)a)[i].k == ((const T *)b)[i].k &&                                           \
           (bitwise                                                                                \
                ? memcmp(&((const T *)a)[i].v, &((const T *)b)[i].v,                               \
                         sizeof(((const T *)a)[i].v) > 10 ? 10 : sizeof(((const T *)a)[i].v)) == 0 \
                : ((const T *)a)[i].v == ((const T *)b)[i].v)
#define SAME_REALS(R, NPARTS, BYTES)                                                               \
    do {                                                                                           \
        const R *x = (const R *)a + (NPARTS)*i, *y = (const R *)b + (NPARTS)*i;                    \
        for (int p = 0; p < (NPARTS); p++)                                                         \
            if (bitwise ? memcmp(&x[p], &y[p], BYTES) != 0 : x[p] != y[p])                         \
                return false;                                                                      \
        return true;                                                                               \
    } while (0)
    switch (dt) {
    case NVF_DTYPE_FLOAT:
        SAME_REALS(float, 1, sizeof(float));
    case NVF_DTYPE_DOUBLE:
        SAME_REALS(double, 1, sizeof(double));
    case NVF_DTYPE_LONG_DOUBLE:
        SAME_REALS(long double, 1, 10); /* x87: 10 bytes of 16 */
    case NVF_DTYPE_FLOAT_COMPLEX:
        SAME_REALS(float, 2, sizeof(float));
    case NVF_DTYPE_DOUBLE_COMPLEX:
        SAME_REALS(double, 2, sizeof(double));
    case NVF_DTYPE_LONG_DOUBLE_COMPLEX:
        SAME_REALS(long double, 2, 10);
    case NVF_DTYPE_BOOL: /* any non-zero byte is true */
        return (((const unsigned char *)a)[i] != 0) == (((const unsigned char *)b)[i] != 0);
    case NVF_DTYPE_FLOAT_INT:
        SAME_PAIR(f_i);
    case NVF_DTYPE_DOUBLE_INT:
        SAME_PAIR(d_i);
    case NVF_DTYPE_LONG_INT:
        SAME_PAIR(l_i);
    case NVF_DTYPE_INT_INT:
        SAME_PAIR(i_i);
    case NVF_DTYPE_SHORT_INT:
        SAME_PAIR(s_i);
    case NVF_DTYPE_LONG_DOUBLE_INT:
        SAME_PAIR(ld_i);
    default: {
        size_t es = nvf_ref_size(dt);
        return memcmp((const char *)a + i * es, (const char *)b + i * es, es) == 0;
    }
    }
}

size_t nvf_ref_first_diff(nvf_dtype_t dt, const void *a, const void *b, size_t n, bool bitwise)
{
    for (size_t i = 0; i < n; i++)
        if (!nvf_ref_same(dt, a, b, i, bitwise))
            return i;
    return n;
}

void nvf_ref_format(nvf_dtype_t dt, const void *buf, size_t i, char *out, size_t len)
{
#define FMT_PAIR(T, F)                                                                             \
    snprintf(out, len, "(" F ",%d)", ((const T *)buf)[i].v, ((const T *)buf)[i].k);                \
    break
    switch (dt) {
    case NVF_DTYPE_INT8:
        snprintf(out, len, "%d", ((const int8_t *)buf)[i]);
        break;
    case NVF_DTYPE_UINT8:
        snprintf(out, len, "%u", ((const uint8_t *)buf)[i]);
        break;
    case NVF_DTYPE_INT16:
        snprintf(out, len, "%d", ((const int16_t *)buf)[i]);
        break;
    case NVF_DTYPE_UINT16:
        snprintf(out, len, "%u", ((const uint16_t *)buf)[i]);
        break;
    case NVF_DTYPE_INT32:
        snprintf(out, len, "%d", ((const int32_t *)buf)[i]);
        break;
    case NVF_DTYPE_UINT32:
        snprintf(out, len, "%u", ((const uint32_t *)buf)[i]);
        break;
    case NVF_DTYPE_INT64:
        snprintf(out, len, "%lld", (long long)((const int64_t *)buf)[i]);
        break;
    case NVF_DTYPE_UINT64:
        snprintf(out, len, "%llu", (unsigned long long)((const uint64_t *)buf)[i]);
        break;
    case NVF_DTYPE_FLOAT:
        snprintf(out, len, "%.9g", ((const float *)buf)[i]);
        break;
    case NVF_DTYPE_DOUBLE:
        snprintf(out, len, "%.17g", ((const double *)buf)[i]);
        break;
    case NVF_DTYPE_LONG_DOUBLE:
        snprintf(out, len, "%.21Lg", ((const long double *)buf)[i]);
        break;
    case NVF_DTYPE_BOOL:
        snprintf(out, len, "%d", ((const unsigned char *)buf)[i]);
        break;
    case NVF_DTYPE_FLOAT_COMPLEX: {
        float _Complex z = ((const float _Complex *)buf)[i];
        snprintf(out, len, "%.9g%+.9gi", crealf(z), cimagf(z));
        break;
    }
    case NVF_DTYPE_DOUBLE_COMPLEX: {
        double _Complex z = ((const double _Complex *)buf)[i];
        snprintf(out, len, "%.17g%+.17gi", creal(z), cimag(z));
        break;
    }
    case NVF_DTYPE_LONG_DOUBLE_COMPLEX: {
        long double _Complex z = ((const long double _Complex *)buf)[i];
        snprintf(out, len, "%.21Lg%+.21Lgi", creall(z), cimagl(z));
        break;
    }
    case NVF_DTYPE_FLOAT_INT:
        FMT_PAIR(f_i, "%.9g");
    case NVF_DTYPE_DOUBLE_INT:
        FMT_PAIR(d_i, "%.17g");
    case NVF_DTYPE_LONG_INT:
        FMT_PAIR(l_i, "%ld");
    case NVF_DTYPE_INT_INT:
        FMT_PAIR(i_i, "%d");
    case NVF_DTYPE_SHORT_INT:
        FMT_PAIR(s_i, "%d");
    case NVF_DTYPE_LONG_DOUBLE_INT:
        FMT_PAIR(ld_i, "%.21Lg");
    default:
        snprintf(out, len, "?");
        break;
    }
}

const char *nvf_ref_op_name(nvf_op_t op)
{
    static const char *const names[NVF_OP_COUNT] = {
        "MPI_SUM",  "MPI_PROD", "MPI_MAX", "MPI_MIN",  "MPI_LAND",   "MPI_LOR",
        "MPI_LXOR", "MPI_BAND", "MPI_BOR", "MPI_BXOR", "MPI_MAXLOC", "MPI_MINLOC",
    };
    return op >= 0 && op < NVF_OP_COUNT ? names[op] : "?";
}
