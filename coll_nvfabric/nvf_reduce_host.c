/*
 * nvf_reduce_host.c: the host reduction loops, one pair of functions per valid (type, op),
 * generated from the operator list in nvf_op_defs.h. The loops are plain and restrict-qualified
 * so that the compiler vectorises them (check with -fopt-info-vec); nothing else lives here.
 */
#include "nvf_reduce.h"
#include "nvf_op_defs.h"
#include "nvf_copy.h"

#include <stdbool.h>
#include <string.h>

#define NVF_DEFINE_LOOPS(op, dt, T, fn)                                                            \
    static void nvf_red_##op##_##dt(void *acc_, const void *x_, size_t n)                          \
    {                                                                                              \
        T *restrict acc = (T *)acc_;                                                               \
        const T *restrict x = (const T *)x_;                                                       \
        for (size_t i = 0; i < n; i++)                                                             \
            acc[i] = fn(acc[i], x[i]);                                                             \
    }                                                                                              \
    static void nvf_red_rev_##op##_##dt(void *acc_, const void *x_, size_t n)                      \
    {                                                                                              \
        T *restrict acc = (T *)acc_;                                                               \
        const T *restrict x = (const T *)x_;                                                       \
        for (size_t i = 0; i < n; i++)                                                             \
            acc[i] = fn(x[i], acc[i]);                                                             \
    }                                                                                              \
    static void nvf_red3_##op##_##dt(void *out_, const void *a_, const void *b_, size_t n)         \
    {                                                                                              \
        if (out_ == a_) {                                                                          \
            nvf_red_##op##_##dt(out_, b_, n);                                                      \
            return;                                                                                \
        }                                                                                          \
        T *restrict out = (T *)out_;                                                               \
        const T *restrict a = (const T *)a_;                                                       \
        const T *restrict b = (const T *)b_;                                                       \
        for (size_t i = 0; i < n; i++)                                                             \
            out[i] = fn(a[i], b[i]);                                                               \
    }
NVF_FOREACH_OP_DTYPE(NVF_DEFINE_LOOPS)
#undef NVF_DEFINE_LOOPS

static const nvf_reduce_fn_t nvf_reduce_table[NVF_OP_COUNT][NVF_DTYPE_COUNT] = {
#define NVF_ENTRY(op, dt, T, fn) [NVF_OP_##op][NVF_DTYPE_##dt] = nvf_red_##op##_##dt,
    NVF_FOREACH_OP_DTYPE(NVF_ENTRY)
#undef NVF_ENTRY
};

static const nvf_reduce_fn_t nvf_reduce_rev_table[NVF_OP_COUNT][NVF_DTYPE_COUNT] = {
#define NVF_ENTRY(op, dt, T, fn) [NVF_OP_##op][NVF_DTYPE_##dt] = nvf_red_rev_##op##_##dt,
    NVF_FOREACH_OP_DTYPE(NVF_ENTRY)
#undef NVF_ENTRY
};

static const nvf_reduce3_fn_t nvf_reduce3_table[NVF_OP_COUNT][NVF_DTYPE_COUNT] = {
#define NVF_ENTRY(op, dt, T, fn) [NVF_OP_##op][NVF_DTYPE_##dt] = nvf_red3_##op##_##dt,
    NVF_FOREACH_OP_DTYPE(NVF_ENTRY)
#undef NVF_ENTRY
};

nvf_reduce_fn_t nvf_reduce_fn(nvf_dtype_t dt, nvf_op_t op)
{
    return nvf_op_supported(dt, op) ? nvf_reduce_table[op][dt] : NULL;
}

nvf_reduce_fn_t nvf_reduce_rev_fn(nvf_dtype_t dt, nvf_op_t op)
{
    return nvf_op_supported(dt, op) ? nvf_reduce_rev_table[op][dt] : NULL;
}

nvf_reduce3_fn_t nvf_reduce3_fn(nvf_dtype_t dt, nvf_op_t op)
{
    return nvf_op_supported(dt, op) ? nvf_reduce3_table[op][dt] : NULL;
}

/* Piece size for nvf_reduce_many: small enough that the partial result stays in L1. */
#define NVF_REDUCE_PIECE_BYTES 8192

/* out2: NULL or a second destination (stream2: written with streaming stores). staged: each piece
 * is reduced into a private buffer and copied to out from there (out may then be any of the
 * sources). The loops write only value bytes, so for types with gaps the private piece starts as a
 * copy of out's: the gaps copied back are out's own, never whatever the stack held (uninitialised
 * bytes that would then go to peers through process_vm_writev, and differ between ranks). */
static void reduce_pieces(nvf_dtype_t dt, nvf_op_t op, void *out, void *out2, bool stream2,
                          const void *const *src, int n, size_t count, bool staged)
{
    _Alignas(64) char piece_buf[NVF_REDUCE_PIECE_BYTES];
    const size_t esize = nvf_dtype_size(dt);
    nvf_reduce_fn_t red = nvf_reduce_table[op][dt];
    nvf_reduce3_fn_t red3 = nvf_reduce3_table[op][dt];
    size_t piece = NVF_REDUCE_PIECE_BYTES / esize;
    if (piece == 0)
        piece = 1;
    const bool seed_gaps = staged && nvf_dtype_has_gaps(dt);
    for (size_t first = 0; first < count; first += piece) {
        size_t len = count - first < piece ? count - first : piece;
        size_t off = first * esize;
        char *o = staged ? piece_buf : (char *)out + off;
        if (seed_gaps)
            memcpy(o, (char *)out + off, len * esize);
        if (n == 1) {
            if (o != (const char *)src[0] + off)
                memcpy(o, (const char *)src[0] + off, len * esize);
        } else {
            red3(o, (const char *)src[0] + off, (const char *)src[1] + off, len);
            for (int r = 2; r < n; r++)
                red(o, (const char *)src[r] + off, len);
        }
        if (staged)
            memcpy((char *)out + off, o, len * esize);
        if (out2 != NULL && stream2)
            nvf_copy_stream((char *)out2 + off, o, len * esize);
        else if (out2 != NULL)
            memcpy((char *)out2 + off, o, len * esize);
    }
}

void nvf_reduce_many(nvf_dtype_t dt, nvf_op_t op, void *out, const void *const *src, int n,
                     size_t count)
{
    reduce_pieces(dt, op, out, NULL, false, src, n, count, false);
}

void nvf_reduce_many2(nvf_dtype_t dt, nvf_op_t op, void *out, void *out2, const void *const *src,
                      int n, size_t count, bool stream2)
{
    reduce_pieces(dt, op, out, out2, stream2, src, n, count, false);
}

void nvf_reduce_many_over(nvf_dtype_t dt, nvf_op_t op, void *out, const void *const *src, int n,
                          size_t count)
{
    bool aliased = false;
    for (int k = 1; k < n; k++)
        aliased = aliased || out == src[k];
    reduce_pieces(dt, op, out, NULL, false, src, n, count, aliased);
}
