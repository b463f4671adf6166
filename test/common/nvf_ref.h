/*
 * nvf_ref.h: the tests' own reference reduction, independent of the engine.
 *
 * Inputs are generated here and reduced sequentially, in rank order, with C's operators on the
 * C type. The only thing borrowed from the engine is the numbering of types and ops
 * (nvf_dtype_t, nvf_op_t), which carries no behaviour.
 *
 * Two kinds of input:
 *   NVF_REF_EXACT   values whose reduction is exact in any order (small integers, also in
 *                   floating point), safe for up to NVF_REF_MAX_RANKS inputs: any correct
 *                   allreduce, whatever its reduction order, must match bit for bit;
 *   NVF_REF_RANDOM  full-range random values (fractions, large integers): only an allreduce
 *                   that reduces in rank order matches bit for bit.
 */
#ifndef NVF_REF_H
#define NVF_REF_H

#include "coll_nvfabric/nvf_dtype.h"

#include <stdbool.h>
#include <stddef.h>

#define NVF_REF_MAX_RANKS 16

typedef enum { NVF_REF_EXACT, NVF_REF_RANDOM } nvf_ref_mode_t;

/* MPI-4.0 section 6.9.2 written out: whether MPI defines op on this kind of type. */
bool nvf_ref_mpi_defines(nvf_dtype_t dt, nvf_op_t op);
/* The C sizeof of one element. */
size_t nvf_ref_size(nvf_dtype_t dt);
/* mask[b] = 1 where byte b of an element is part of its value, 0 in its gaps (a pair type's
 * padding, an x87 long double's unused bytes); mask holds nvf_ref_size(dt) bytes. */
void nvf_ref_value_bytes(nvf_dtype_t dt, unsigned char *mask);
/* Fill n elements from the stream `seed` (same seed, same values, on every rank). */
void nvf_ref_fill(nvf_dtype_t dt, nvf_op_t op, nvf_ref_mode_t mode, void *buf, size_t n,
                  unsigned long long seed);
/* ref[i] = ((src[0][i] op src[1][i]) op src[2][i]) ... */
void nvf_ref_reduce(nvf_dtype_t dt, nvf_op_t op, void *ref, void *const *src, int nsrc, size_t n);
/* Element i of a and b are equal, padding bytes ignored. bitwise: floating-point parts must
 * have the same bits; otherwise they must compare equal (so -0 == +0: in EXACT mode the sign of
 * a zero product legitimately depends on the reduction order). */
bool nvf_ref_same(nvf_dtype_t dt, const void *a, const void *b, size_t i, bool bitwise);
/* Index of the first element that differs, or n. */
size_t nvf_ref_first_diff(nvf_dtype_t dt, const void *a, const void *b, size_t n, bool bitwise);
/* Write a printable form of element i of buf into out. */
void nvf_ref_format(nvf_dtype_t dt, const void *buf, size_t i, char *out, size_t outlen);

unsigned long long nvf_ref_rand(unsigned long long *state);
const char *nvf_ref_op_name(nvf_op_t op);

#endif
