/*
 * bitwise.c: on random (non-integer) floating-point inputs, whose sum depends on the order of
 * reduction, every rank must end with bitwise the same result, and the same call repeated must
 * give the same bits. Values are also checked against the rank-order sequential reduction
 * within a relative bound (n * eps * sum of magnitudes), which any reduction order satisfies.
 * Sizes cover the one-shot, two-shot and pipelined plans; float and double SUM and PROD. With
 * --large also 4194307 elements (16-32 MiB: the direct plan's pieces, nvf_sched.c).
 * Prints a digest of every result, so that runs with different settings can be compared: where
 * a setting may change only speed (the single-copy path or not), the digests must be equal.
 */
#include "nvf_mpi_test.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    nvf_pvars_open();
    const size_t counts[] = {1, 3, 100, 1000, 4099, 70001, 1000003, 4194307};
    const size_t ncounts =
        sizeof(counts) / sizeof(counts[0]) - (argc > 1 && strcmp(argv[1], "--large") == 0 ? 0 : 1);
    const nvf_dtype_t dts[] = {NVF_DTYPE_FLOAT, NVF_DTYPE_DOUBLE};
    const MPI_Datatype types[] = {MPI_FLOAT, MPI_DOUBLE};
    const nvf_op_t ops[] = {NVF_OP_SUM, NVF_OP_PROD};
    long failures = 0, runs = 0;
    unsigned long long seed = 99;
    uint64_t digest = 0;
    nvf_pvars_t before, after;
    nvf_pvars_read(&before);
    for (int t = 0; t < 2; t++)
        for (int o = 0; o < 2; o++)
            for (size_t k = 0; k < ncounts; k++) {
                size_t n = counts[k], es = nvf_ref_size(dts[t]);
                void **in = malloc(sizeof(void *) * (size_t)size);
                for (int r = 0; r < size; r++) {
                    in[r] = malloc(n * es);
                    nvf_ref_fill(dts[t], ops[o], NVF_REF_RANDOM, in[r], n,
                                 seed * 7919 + (unsigned)r);
                }
                seed++;
                void *ref = malloc(n * es), *out = malloc(n * es);
                nvf_ref_reduce(dts[t], ops[o], ref, in, size, n);
                uint64_t first = 0;
                for (int rep = 0; rep < 3; rep++) {
                    memset(out, 0xA5, n * es);
                    MPI_Allreduce(in[rank], out, (int)n, types[t], nvf_mpi_op(ops[o]),
                                  MPI_COMM_WORLD);
                    uint64_t h = fnv1a(out, n * es), h0 = h;
                    MPI_Bcast(&h0, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
                    runs++;
                    if (h != h0) {
                        failures++;
                        fprintf(stderr,
                                "FAIL rank %d: %s %s n=%zu rep %d: result differs from rank 0's\n",
                                rank, types[t] == MPI_FLOAT ? "float" : "double",
                                nvf_ref_op_name(ops[o]), n, rep);
                    }
                    if (rep == 0) {
                        first = h;
                        digest = digest * 1099511628211ULL ^ h;
                    } else if (h != first) {
                        failures++;
                        fprintf(stderr, "FAIL rank %d: n=%zu: repeat %d gave other bits\n", rank, n,
                                rep);
                    }
                }
                /* values: within the rounding any order may introduce */
                long bad = 0;
                for (size_t i = 0; i < n; i++) {
                    double got = dts[t] == NVF_DTYPE_FLOAT ? ((float *)out)[i] : ((double *)out)[i];
                    double want =
                        dts[t] == NVF_DTYPE_FLOAT ? ((float *)ref)[i] : ((double *)ref)[i];
                    double mag = 0;
                    for (int r = 0; r < size; r++)
                        mag += fabs(dts[t] == NVF_DTYPE_FLOAT ? ((float *)in[r])[i]
                                                              : ((double *)in[r])[i]);
                    double eps = dts[t] == NVF_DTYPE_FLOAT ? FLT_EPSILON : DBL_EPSILON;
                    double bound = ops[o] == NVF_OP_SUM ? 2.0 * size * eps * mag
                                                        : 4.0 * size * eps * fabs(want);
                    if (!(fabs(got - want) <= bound))
                        bad++;
                }
                if (bad) {
                    failures++;
                    fprintf(stderr,
                            "FAIL rank %d: n=%zu: %ld elements outside the rounding bound\n", rank,
                            n, bad);
                }
                for (int r = 0; r < size; r++)
                    free(in[r]);
                free(in);
                free(ref);
                free(out);
            }
    nvf_pvars_read(&after);
    long total = nvf_sum_world(failures);
    unsigned long long handled = after.v[NVF_PV_CALLS_HANDLED] - before.v[NVF_PV_CALLS_HANDLED];
    if (rank == 0)
        printf("bitwise: %d ranks, %ld checked calls, %ld failures, %llu calls handled by "
               "nvfabric, digest %016llx\n",
               size, runs, total, handled, (unsigned long long)digest);
    nvf_pvars_close();
    MPI_Finalize();
    return total ? 1 : 0;
}
