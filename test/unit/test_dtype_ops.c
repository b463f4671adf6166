/*
 * test_dtype_ops.c: every (datatype, op) pair of the host reduction loops against the tests'
 * own sequential reference (test/common/nvf_ref.c).
 *
 * For each pair: the engine's table of valid pairs equals MPI's; then for several counts
 * (around the engine's 8 KiB piece size too) and 1, 2 and 5 inputs, out of place and in place
 * (the output being the first input, or a later one: nvf_reduce_many_over), every element of a
 * poisoned output is compared with the reference. Random full-range inputs:
 * the loops reduce in input order, so floating point must match bit for bit.
 */
#include "coll_nvfabric/nvf_dtype.h"
#include "coll_nvfabric/nvf_reduce.h"
#include "common/nvf_ref.h"
#include "nvf_test.h"

#include <string.h>

static unsigned long long case_seed = 1;

/* Every element of got against ref; `what` names the case in the message. */
static void check_result(nvf_dtype_t dt, nvf_op_t op, const void *got, const void *ref, size_t n,
                         const char *what, unsigned long long seed)
{
    size_t bad = nvf_ref_first_diff(dt, got, ref, n, true);
    if (bad < n) {
        char g[96], w[96];
        nvf_ref_format(dt, got, bad, g, sizeof(g));
        nvf_ref_format(dt, ref, bad, w, sizeof(w));
        CHECK(0, "%s %s n=%zu %s seed=%llu: element %zu is %s, expected %s", nvf_dtype_name(dt),
              nvf_op_name(op), n, what, seed, bad, g, w);
    } else {
        CHECK(1, "ok");
    }
}

/* out_is: -1 out of place, else the output buffer is input out_is (in place: input 0 through
 * nvf_reduce_many, a later input through nvf_reduce_many_over). over: reduce with
 * nvf_reduce_many_over (out of place: its unstaged branch). */
static void check_case(nvf_dtype_t dt, nvf_op_t op, int nsrc, size_t n, int out_is, bool over)
{
    size_t es = nvf_dtype_size(dt);
    void *src[8], *ref = malloc(n * es), *out = malloc(n * es);
    unsigned long long seed0 = case_seed;
    for (int r = 0; r < nsrc; r++) {
        src[r] = malloc(n * es);
        nvf_ref_fill(dt, op, NVF_REF_RANDOM, src[r], n, case_seed++);
    }
    nvf_ref_reduce(dt, op, ref, src, nsrc, n);
    void *orig = out_is >= 0 ? src[out_is] : NULL;
    if (out_is >= 0) {
        memcpy(out, src[out_is], n * es);
        src[out_is] = out; /* that input is read from the output buffer */
    } else {
        memset(out, 0xA5, n * es);
    }
    if (over)
        nvf_reduce_many_over(dt, op, out, (const void *const *)src, nsrc, n);
    else
        nvf_reduce_many(dt, op, out, (const void *const *)src, nsrc, n);
    char what[64];
    snprintf(what, sizeof(what), "inputs=%d output=%s%d%s", nsrc, out_is >= 0 ? "input " : "",
             out_is, over ? " (over)" : "");
    check_result(dt, op, out, ref, n, what, seed0);
    if (out_is >= 0)
        src[out_is] = orig;
    for (int r = 0; r < nsrc; r++)
        free(src[r]);
    free(ref);
    free(out);
}

/* The reversed accumulate loop, acc = x op acc, against the reference reduction of (x, acc) in
 * that order. */
static void check_reversed(nvf_dtype_t dt, nvf_op_t op, size_t n)
{
    size_t es = nvf_dtype_size(dt);
    void *src[2] = {malloc(n * es), malloc(n * es)}, *ref = malloc(n * es), *acc = malloc(n * es);
    unsigned long long seed0 = case_seed;
    nvf_ref_fill(dt, op, NVF_REF_RANDOM, src[0], n, case_seed++);
    nvf_ref_fill(dt, op, NVF_REF_RANDOM, src[1], n, case_seed++);
    nvf_ref_reduce(dt, op, ref, src, 2, n);
    memcpy(acc, src[1], n * es);
    nvf_reduce_rev_fn(dt, op)(acc, src[0], n);
    check_result(dt, op, acc, ref, n, "reversed", seed0);
    free(src[0]);
    free(src[1]);
    free(ref);
    free(acc);
}

int main(void)
{
    const size_t counts[] = {1, 2, 3, 7, 31, 257, 1023, 1024, 1025, 2047, 2049, 8191, 12289, 40000};
    const int nsrcs[] = {1, 2, 5};
    int pairs = 0;
    for (int d = 0; d < NVF_DTYPE_COUNT; d++) {
        nvf_dtype_t dt = (nvf_dtype_t)d;
        CHECK(nvf_dtype_size(dt) == nvf_ref_size(dt), "%s: engine size %zu, C size %zu",
              nvf_dtype_name(dt), nvf_dtype_size(dt), nvf_ref_size(dt));
        for (int o = 0; o < NVF_OP_COUNT; o++) {
            nvf_op_t op = (nvf_op_t)o;
            bool valid = nvf_ref_mpi_defines(dt, op);
            CHECK(nvf_op_supported(dt, op) == valid, "%s %s: engine says %d, MPI says %d",
                  nvf_dtype_name(dt), nvf_op_name(op), !valid, valid);
            CHECK((nvf_reduce_fn(dt, op) != NULL) == valid, "%s %s: loop presence",
                  nvf_dtype_name(dt), nvf_op_name(op));
            CHECK((nvf_reduce_rev_fn(dt, op) != NULL) == valid, "%s %s: reversed loop presence",
                  nvf_dtype_name(dt), nvf_op_name(op));
            if (!valid)
                continue;
            pairs++;
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
                for (size_t s = 0; s < sizeof(nsrcs) / sizeof(nsrcs[0]); s++) {
                    int k = nsrcs[s];
                    check_case(dt, op, k, counts[c], -1, false);
                    check_case(dt, op, k, counts[c], -1, true);
                    check_case(dt, op, k, counts[c], 0, false);
                    if (k > 1) /* a later input as the output: the middle one, the last one */
                        check_case(dt, op, k, counts[c], k / 2, true);
                    if (k - 1 > k / 2)
                        check_case(dt, op, k, counts[c], k - 1, true);
                }
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
                check_reversed(dt, op, counts[c]);
        }
    }
    /* 8 integer types x 10 ops, 3 real x 4, bool x 3, 3 complex x 2, 6 pairs x 2 */
    CHECK(pairs == 80 + 12 + 3 + 6 + 12, "pairs tested: %d", pairs);
    CHECK(!nvf_op_supported(NVF_DTYPE_INVALID, NVF_OP_SUM), "invalid dtype accepted");
    CHECK(!nvf_op_supported(NVF_DTYPE_INT32, NVF_OP_INVALID), "invalid op accepted");
    CHECK(!nvf_op_supported_on_device(NVF_DTYPE_LONG_DOUBLE, NVF_OP_SUM), "long double on device");
    CHECK(nvf_op_supported_on_device(NVF_DTYPE_FLOAT, NVF_OP_SUM), "float not on device");
    return nvf_test_finish("test_dtype_ops");
}
