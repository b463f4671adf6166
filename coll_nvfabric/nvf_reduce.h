/*
 * nvf_reduce.h: host reduction loops over arrays of elements.
 *
 * The only place that turns a (type, op) pair into arithmetic on the host. Callers pass
 * byte pointers and element counts; buffers either coincide exactly or do not overlap.
 */
#ifndef NVF_REDUCE_H
#define NVF_REDUCE_H

#include "nvf_dtype.h"
#include <stdbool.h>
#include <stddef.h>

/* acc[i] = op(acc[i], x[i]) for i < count. acc and x must not overlap. */
typedef void (*nvf_reduce_fn_t)(void *acc, const void *x, size_t count);
/* out[i] = op(a[i], b[i]). out may be a itself; otherwise no two of them overlap. */
typedef void (*nvf_reduce3_fn_t)(void *out, const void *a, const void *b, size_t count);

/* NULL when the pair is not supported (see nvf_op_supported). */
nvf_reduce_fn_t nvf_reduce_fn(nvf_dtype_t dt, nvf_op_t op);
/* The same with the operands the other way round: acc[i] = op(x[i], acc[i]) (the operand order
 * matters for the bits: NaN payloads, and the order a fixed reduction tree must keep). */
nvf_reduce_fn_t nvf_reduce_rev_fn(nvf_dtype_t dt, nvf_op_t op);
nvf_reduce3_fn_t nvf_reduce3_fn(nvf_dtype_t dt, nvf_op_t op);

/* out = src[0] op src[1] op ... op src[n-1], in that order (a fixed order: every caller that
 * passes the same inputs gets the same bits). out may equal src[0]; n >= 1. Works in
 * cache-sized pieces so that the partial result stays in L1 while the inputs stream. */
void nvf_reduce_many(nvf_dtype_t dt, nvf_op_t op, void *out, const void *const *src, int n,
                     size_t count);

/* nvf_reduce_many into out, and the same bits into out2 as well (copied piece by piece while
 * they are in L1: cheaper than a second pass; stream2: with streaming stores, nvf_copy_stream).
 * out2 must not overlap anything. */
void nvf_reduce_many2(nvf_dtype_t dt, nvf_op_t op, void *out, void *out2, const void *const *src,
                      int n, size_t count, bool stream2);

/* nvf_reduce_many where out may also be one of src[1..n-1] (an in-place result over a later
 * operand): each piece is reduced into a small private buffer, then copied to out. */
void nvf_reduce_many_over(nvf_dtype_t dt, nvf_op_t op, void *out, const void *const *src, int n,
                          size_t count);

#endif
