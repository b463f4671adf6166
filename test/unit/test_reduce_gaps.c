/*
 * test_reduce_gaps.c: the bytes of an element that are not part of its value (a pair type's
 * padding, an x87 long double's unused bytes) come out of every host reduction loop defined:
 * each gap byte of the output is what the output held there before, or what one of the inputs
 * held there, never stack garbage. Such bytes go to peers by process_vm_writev and into users'
 * buffers; uninitialised ones are reported by valgrind in every program that uses nvfabric, and
 * differ from rank to rank.
 *
 * For each type with gaps (found from its C layout, test/common/nvf_ref.c) and each op on it:
 * 2 and 5 inputs, counts across the loops' piece size, out of place, in place over the first
 * input and over a later one (the staged loop), and the second destination of
 * nvf_reduce_many2, written plainly and with streaming stores. Inputs' gaps hold 0x51 + input, the
 * outputs' 0xC3 / 0xC4; the stack below the call is filled with 0xEE first. Values are checked
 * against the reference too. Run under valgrind as well (test/mpi/t_valgrind.sh): a gap left
 * uninitialised is an error there even where the stack happened to hold an allowed byte.
 */
#include "coll_nvfabric/nvf_dtype.h"
#include "coll_nvfabric/nvf_reduce.h"
#include "common/nvf_ref.h"
#include "nvf_test.h"

#include <string.h>

#define OUT_GAP 0xC3
#define OUT2_GAP 0xC4
#define IN_GAP(r) (0x51 + (r))
#define MAX_ELEM 64

static unsigned long long case_seed = 7;

/* Leave 0xEE in the stack the reduction's private piece will occupy. */
__attribute__((noinline)) static void scribble_stack(void)
{
    volatile unsigned char junk[64 * 1024];
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = 0xEE;
}

static void set_gaps(void *buf, size_t n, size_t es, const unsigned char *mask, int byte)
{
    for (size_t i = 0; i < n; i++)
        for (size_t b = 0; b < es; b++)
            if (!mask[b])
                ((unsigned char *)buf)[i * es + b] = (unsigned char)byte;
}

/* Every gap byte of buf is `own` or one of the inputs' markers. */
static void check_gaps(nvf_dtype_t dt, nvf_op_t op, const void *buf, size_t n, size_t es,
                       const unsigned char *mask, int own, int nsrc, const char *what)
{
    for (size_t i = 0; i < n; i++)
        for (size_t b = 0; b < es; b++) {
            if (mask[b])
                continue;
            int v = ((const unsigned char *)buf)[i * es + b];
            if (v != own && v != OUT_GAP && !(v >= IN_GAP(0) && v < IN_GAP(nsrc))) {
                CHECK(0, "%s %s n=%zu %s: element %zu gap byte %zu is 0x%02x", nvf_dtype_name(dt),
                      nvf_op_name(op), n, what, i, b, v);
                return;
            }
        }
    CHECK(1, "ok");
}

enum how { OUT_OF_PLACE, OVER_FIRST, OVER_LATER, TWO_OUTPUTS, TWO_OUTPUTS_STREAMED };

static void check_case(nvf_dtype_t dt, nvf_op_t op, const unsigned char *mask, int nsrc, size_t n,
                       enum how how)
{
    static const char *const names[] = {"out of place", "in place over input 0",
                                        "in place over the last input", "second output",
                                        "second output, streamed"};
    const bool two = how == TWO_OUTPUTS || how == TWO_OUTPUTS_STREAMED;
    const size_t es = nvf_ref_size(dt);
    void *src[8], *ref = malloc(n * es), *out = malloc(n * es), *out2 = malloc(n * es);
    for (int r = 0; r < nsrc; r++) {
        src[r] = malloc(n * es);
        nvf_ref_fill(dt, op, NVF_REF_RANDOM, src[r], n, case_seed++);
        set_gaps(src[r], n, es, mask, IN_GAP(r));
    }
    nvf_ref_reduce(dt, op, ref, src, nsrc, n);
    int at = how == OVER_FIRST ? 0 : how == OVER_LATER ? nsrc - 1 : -1;
    void *orig = at >= 0 ? src[at] : NULL;
    if (at >= 0) {
        memcpy(out, src[at], n * es);
        src[at] = out;
    } else {
        memset(out, 0xA5, n * es);
    }
    set_gaps(out, n, es, mask, OUT_GAP);
    memset(out2, 0xA5, n * es);
    set_gaps(out2, n, es, mask, OUT2_GAP);
    const void *const *in = (const void *const *)src;
    scribble_stack();
    if (how == OVER_LATER)
        nvf_reduce_many_over(dt, op, out, in, nsrc, n);
    else if (two)
        nvf_reduce_many2(dt, op, out, out2, in, nsrc, n, how == TWO_OUTPUTS_STREAMED);
    else
        nvf_reduce_many(dt, op, out, in, nsrc, n);
    size_t bad = nvf_ref_first_diff(dt, out, ref, n, true);
    CHECK(bad == n, "%s %s n=%zu %s: element %zu wrong", nvf_dtype_name(dt), nvf_op_name(op), n,
          names[how], bad);
    check_gaps(dt, op, out, n, es, mask, OUT_GAP, nsrc, names[how]);
    if (two) {
        bad = nvf_ref_first_diff(dt, out2, ref, n, true);
        CHECK(bad == n, "%s %s n=%zu %s: element %zu wrong", nvf_dtype_name(dt), nvf_op_name(op), n,
              names[how], bad);
        check_gaps(dt, op, out2, n, es, mask, OUT2_GAP, nsrc, names[how]);
    }
    if (at >= 0)
        src[at] = orig;
    for (int r = 0; r < nsrc; r++)
        free(src[r]);
    free(ref);
    free(out);
    free(out2);
}

int main(void)
{
    const size_t counts[] = {1, 255, 257, 511, 513, 1025, 3001};
    const int nsrcs[] = {2, 5};
    int gapped = 0;
    for (int d = 0; d < NVF_DTYPE_COUNT; d++) {
        nvf_dtype_t dt = (nvf_dtype_t)d;
        unsigned char mask[MAX_ELEM];
        size_t es = nvf_ref_size(dt);
        if (es > MAX_ELEM) {
            CHECK(0, "%s: element of %zu bytes", nvf_dtype_name(dt), es);
            continue;
        }
        nvf_ref_value_bytes(dt, mask);
        bool gaps = memchr(mask, 0, es) != NULL;
        CHECK(nvf_dtype_has_gaps(dt) == gaps, "%s: engine says gaps %d, its C layout %d",
              nvf_dtype_name(dt), nvf_dtype_has_gaps(dt), gaps);
        if (!gaps)
            continue;
        gapped++;
        for (int o = 0; o < NVF_OP_COUNT; o++) {
            nvf_op_t op = (nvf_op_t)o;
            if (!nvf_op_supported(dt, op))
                continue;
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
                for (size_t s = 0; s < sizeof(nsrcs) / sizeof(nsrcs[0]); s++)
                    for (int how = OUT_OF_PLACE; how <= TWO_OUTPUTS_STREAMED; how++)
                        check_case(dt, op, mask, nsrcs[s], counts[c], (enum how)how);
        }
    }
    /* on x86-64: long double, its complex, and the pairs but float-int and int-int */
    CHECK(gapped >= 4, "types with gaps found: %d", gapped);
    return nvf_test_finish("test_reduce_gaps");
}
