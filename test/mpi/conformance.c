/*
 * conformance.c: MPI_Allreduce through whatever coll components are selected, checked element
 * by element against each rank's own sequential reduction, and, through MPI_T, who handled
 * each call.
 *
 * Cases: every predefined datatype x every op MPI defines on it x counts (0, 1, primes, each
 * side of the inline small path's limit, sizes around the component's thresholds, read from
 * its MPI_T control variables, and a few MiB) x in place / out of place x communicators
 * (WORLD, a dup, split by parity, reversed order, all but the last rank). Then calls nvfabric
 * must delegate: a derived datatype, a user-defined op, a non-commutative user op.
 *
 *   --expect engine     predefined calls with count > 0 must be handled by nvfabric's engine
 *                       (run with coll_nvfabric_host=on), the rest delegated;
 *   --expect delegated  every call on a communicator of >= 2 ranks is delegated;
 *   --expect absent     the component is not in use: its counters are missing or never move.
 *   --level quick|full  full adds more counts and every type at the MiB sizes.
 *   --mode exact|random random inputs need a fixed reduction order (single node only).
 * Prints one line per failing case and a summary; exit status 0 only if all passed.
 */
#include "nvf_mpi_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum expect { EXPECT_ENGINE, EXPECT_DELEGATED, EXPECT_ABSENT };

static enum expect expect = EXPECT_ENGINE;
static bool full;
static nvf_ref_mode_t mode = NVF_REF_EXACT;
static long failures, cases, counter_failures;
static int world_rank;

static long skipped_defects;

/* Open MPI 4.1.4 defects this test found, in calls that reach Open MPI's own modules (so when
 * nvfabric delegates them, the result is Open MPI's): MPI_UNSIGNED_LONG MIN/MAX compare as
 * signed; MPI_OFFSET MIN/MAX compare as unsigned; op/avx (AVX-512 CPUs) saturates SUM on 8- and
 * 16-bit unsigned types instead of wrapping. nvfabric's engine gets all of them right; such
 * cases are checked fully when the engine handles them and skipped, counted, when delegated. */
static bool ompi_known_defect(MPI_Datatype t, nvf_op_t op)
{
    if (op == NVF_OP_MIN || op == NVF_OP_MAX)
        return t == MPI_UNSIGNED_LONG || t == MPI_OFFSET;
    if (op == NVF_OP_SUM)
        return t == MPI_UNSIGNED_CHAR || t == MPI_UINT8_T || t == MPI_UNSIGNED_SHORT ||
               t == MPI_UINT16_T;
    return false;
}

/* Runs one case and checks both the result and which path handled it. */
static void run(nvf_case_t *c, bool engine_should_handle, int comm_size)
{
    bool delegated = expect != EXPECT_ENGINE || !engine_should_handle || comm_size < 2;
    if (delegated && ompi_known_defect(c->type, c->ref_op)) {
        skipped_defects++;
        return;
    }
    nvf_pvars_t before, after;
    nvf_pvars_read(&before);
    long bad = nvf_run_case(c);
    nvf_pvars_read(&after);
    cases++;
    if (bad)
        failures++;

    long dh = (long)(after.v[NVF_PV_CALLS_HANDLED] - before.v[NVF_PV_CALLS_HANDLED]);
    long dd = (long)(after.v[NVF_PV_CALLS_DELEGATED] - before.v[NVF_PV_CALLS_DELEGATED]);
    long want_h = 0, want_d = 0;
    /* nvfabric declines communicators of one rank; MPI_Allreduce returns before reaching any
     * coll module when count is 0 */
    bool covered = comm_size >= 2 && c->count > 0;
    switch (expect) {
    case EXPECT_ENGINE:
        want_h = covered && engine_should_handle;
        want_d = covered && !engine_should_handle;
        break;
    case EXPECT_DELEGATED:
        want_d = covered;
        break;
    case EXPECT_ABSENT:
        break;
    }
    bool ok = (expect == EXPECT_ABSENT && !after.present) || (dh == want_h && dd == want_d);
    if (!ok) {
        counter_failures++;
        if (counter_failures <= 10)
            fprintf(stderr,
                    "FAIL rank %d: counters on %s %s op=%s count=%zu: handled +%ld (want %ld), "
                    "delegated +%ld (want %ld)\n",
                    world_rank, c->comm_name, c->type_name, nvf_ref_op_name(c->ref_op), c->count,
                    dh, want_h, dd, want_d);
    }
}

/* A user-defined sum, on MPI_INT or on contiguous(3, MPI_INT) (Open MPI 4.1 allows
 * predefined ops only on predefined datatypes). */
static void user_sum_int(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int per = 1;
    if (*dt != MPI_INT)
        MPI_Type_size(*dt, &per), per /= (int)sizeof(int);
    for (int i = 0; i < *len * per; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

/* Non-commutative: a o b = a (so the result must be rank 0's input). */
static void user_first(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    memcpy(inout, in, (size_t)*len * sizeof(int));
}

static void run_comm(MPI_Comm comm, const char *name, unsigned long one_shot_max,
                     unsigned long block)
{
    int size;
    MPI_Comm_size(comm, &size);
    static unsigned long long seed = 1;
    if (getenv("NVF_CONF_DEBUG"))
        fprintf(stderr, "rank %d: %s starts at seed %llu\n", world_rank, name, seed);

    for (int t = 0; t < nvf_mpi_ntypes; t++) {
        const nvf_mpi_type_t *ty = &nvf_mpi_types[t];
        const size_t es = nvf_ref_size(ty->dt);
        int mpi_size;
        MPI_Type_size(ty->type, &mpi_size);
        if (mpi_size == 0)
            continue;
        /* counts: small and prime, each side of the one-shot switch and of one pipeline block,
         * and a few MiB (every type at full level, one per element size otherwise) */
        size_t counts[32];
        int nc = 0;
        const size_t small[] = {0, 1, 2, 3, 5, 7, 13, 31, 61, 127, 509, 1021, 4093};
        for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++)
            counts[nc++] = small[i];
        size_t os = one_shot_max / es, bl = block / es;
        /* each side of the inline small path's limit (NVF_SMALL_MAX_BYTES, 2032 bytes) */
        counts[nc++] = 2032 / es;
        counts[nc++] = 2032 / es + 1;
        counts[nc++] = os > 1 ? os - 1 : 1;
        counts[nc++] = os;
        counts[nc++] = os + 1;
        counts[nc++] = bl + 1;
        counts[nc++] = (size_t)size * bl + 3;
        const int first_big = nc; /* from here: the MiB sizes */
        bool big = full || t == 0 || ty->dt == NVF_DTYPE_INT16 || ty->dt == NVF_DTYPE_FLOAT ||
                   ty->dt == NVF_DTYPE_DOUBLE || ty->dt == NVF_DTYPE_DOUBLE_INT;
        if (big && (ty->type == MPI_SIGNED_CHAR || ty->type == MPI_SHORT || ty->type == MPI_FLOAT ||
                    ty->type == MPI_DOUBLE || ty->type == MPI_DOUBLE_INT || full))
            counts[nc++] = (3u << 20) / es + 17;
        if (full) {
            counts[nc++] = 65537;
            counts[nc++] = (9u << 20) / es + 1;
        }
        for (int o = 0; o < NVF_OP_COUNT; o++) {
            nvf_op_t op = (nvf_op_t)o;
            if (!nvf_ref_mpi_defines(ty->dt, op))
                continue;
            if (ty->type == MPI_BYTE &&
                !(op == NVF_OP_BAND || op == NVF_OP_BOR || op == NVF_OP_BXOR))
                continue;
            if ((ty->type == MPI_AINT || ty->type == MPI_OFFSET || ty->type == MPI_COUNT) &&
                (op == NVF_OP_LAND || op == NVF_OP_LOR || op == NVF_OP_LXOR))
                continue;
            for (int k = 0; k < nc; k++) {
                /* the MiB sizes: two ops per type are enough (decided by position, not value:
                 * every rank must run the same cases on every communicator) */
                if (k >= first_big && !full && op != NVF_OP_SUM && op != NVF_OP_MAXLOC &&
                    op != NVF_OP_BXOR)
                    continue;
                for (int ip = 0; ip < 2; ip++) {
                    nvf_case_t c = {comm,           name, ty->type,  ty->name, ty->dt, 1,
                                    nvf_mpi_op(op), op,   counts[k], ip == 1,  mode,   seed++};
                    run(&c, counts[k] > 0, size);
                }
            }
        }
    }

    /* What nvfabric must delegate, still checked for results. */
    MPI_Datatype tri;
    MPI_Type_contiguous(3, MPI_INT, &tri);
    MPI_Type_commit(&tri);
    MPI_Op usum, ufirst;
    MPI_Op_create(user_sum_int, 1, &usum);
    MPI_Op_create(user_first, 0, &ufirst);
    const size_t dcounts[] = {1, 7, 1000, 70000};
    for (size_t k = 0; k < sizeof(dcounts) / sizeof(dcounts[0]); k++) {
        for (int ip = 0; ip < 2; ip++) {
            nvf_case_t derived = {comm,
                                  name,
                                  tri,
                                  "contiguous(3,MPI_INT)",
                                  NVF_DTYPE_INT32,
                                  3,
                                  usum,
                                  NVF_OP_SUM,
                                  dcounts[k],
                                  ip == 1,
                                  mode,
                                  seed++};
            run(&derived, false, size);
            nvf_case_t user = {comm, name,  MPI_INT,    "MPI_INT/user-op", NVF_DTYPE_INT32,
                               1,    usum,  NVF_OP_SUM, dcounts[k],        ip == 1,
                               mode, seed++};
            run(&user, false, size);
        }
        /* the non-commutative op: every rank must end with rank 0's input */
        int rank;
        MPI_Comm_rank(comm, &rank);
        int n = (int)dcounts[k];
        int *buf = malloc((size_t)n * sizeof(int)), *res = malloc((size_t)n * sizeof(int));
        for (int i = 0; i < n; i++)
            buf[i] = rank * 1000003 + i;
        memset(res, 0xA5, (size_t)n * sizeof(int));
        nvf_pvars_t before, after;
        nvf_pvars_read(&before);
        MPI_Allreduce(buf, res, n, MPI_INT, ufirst, comm);
        nvf_pvars_read(&after);
        long bad = 0;
        for (int i = 0; i < n; i++)
            bad += res[i] != i;
        cases++;
        if (bad) {
            failures++;
            fprintf(stderr, "FAIL rank %d: %s non-commutative op count=%d: %ld wrong\n", world_rank,
                    name, n, bad);
        }
        if (after.present && size >= 2 && expect != EXPECT_ABSENT &&
            (after.v[NVF_PV_CALLS_HANDLED] != before.v[NVF_PV_CALLS_HANDLED] ||
             after.v[NVF_PV_CALLS_DELEGATED] != before.v[NVF_PV_CALLS_DELEGATED] + 1)) {
            counter_failures++;
            fprintf(stderr, "FAIL rank %d: %s non-commutative op not delegated exactly once\n",
                    world_rank, name);
        }
        free(buf);
        free(res);
    }
    MPI_Op_free(&usum);
    MPI_Op_free(&ufirst);
    MPI_Type_free(&tri);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    int world_size;
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--expect") && i + 1 < argc) {
            const char *e = argv[++i];
            expect = !strcmp(e, "engine")      ? EXPECT_ENGINE
                     : !strcmp(e, "delegated") ? EXPECT_DELEGATED
                                               : EXPECT_ABSENT;
        } else if (!strcmp(argv[i], "--level") && i + 1 < argc) {
            full = !strcmp(argv[++i], "full");
        } else if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
            mode = !strcmp(argv[++i], "random") ? NVF_REF_RANDOM : NVF_REF_EXACT;
        }
    }
    nvf_pvars_open();
    nvf_pvars_t probe;
    nvf_pvars_read(&probe);
    if (expect != EXPECT_ABSENT && !probe.present) {
        if (world_rank == 0)
            fprintf(stderr, "FAIL: nvfabric's MPI_T counters are missing: component not loaded\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    unsigned long one_shot_max = 16384, block = 262144;
    nvf_cvar_read_ulong("coll_nvfabric_one_shot_max", &one_shot_max);
    nvf_cvar_read_ulong("coll_nvfabric_shm_block_size", &block);

    run_comm(MPI_COMM_WORLD, "MPI_COMM_WORLD", one_shot_max, block);

    MPI_Comm dup, parity, reversed, subset;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    run_comm(dup, "dup(WORLD)", one_shot_max, block);
    MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &parity);
    run_comm(parity, "split(parity)", one_shot_max, block);
    MPI_Comm_split(MPI_COMM_WORLD, 0, world_size - world_rank, &reversed);
    run_comm(reversed, "reversed(WORLD)", one_shot_max, block);
    MPI_Comm_split(MPI_COMM_WORLD, world_rank == world_size - 1 ? MPI_UNDEFINED : 0, world_rank,
                   &subset);
    if (subset != MPI_COMM_NULL)
        run_comm(subset, "all-but-last", one_shot_max, block);

    long total_fail = nvf_sum_world(failures), total_cases = nvf_sum_world(cases),
         total_cnt = nvf_sum_world(counter_failures);
    long total_skipped = nvf_sum_world(skipped_defects);
    if (world_rank == 0) {
        printf("conformance: %d ranks, %ld case-runs, %ld wrong results, %ld counter mismatches\n",
               world_size, total_cases, total_fail, total_cnt);
        if (total_skipped)
            printf("conformance: %ld delegated case-runs skipped: known Open MPI 4.1.4 defects "
                   "(UNSIGNED_LONG/OFFSET min/max, op/avx saturating 8/16-bit unsigned sums)\n",
                   total_skipped);
    }
    if (subset != MPI_COMM_NULL)
        MPI_Comm_free(&subset);
    MPI_Comm_free(&reversed);
    MPI_Comm_free(&parity);
    MPI_Comm_free(&dup);
    nvf_pvars_close();
    MPI_Finalize();
    return (total_fail || total_cnt) ? 1 : 0;
}
