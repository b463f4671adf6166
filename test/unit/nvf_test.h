/*
 * nvf_test.h: a minimal harness for the engine's unit tests. Each CHECK that fails prints
 * where and why; main() returns the number of failed checks (0 = pass).
 */
#ifndef NVF_TEST_H
#define NVF_TEST_H

#include <stdio.h>
#include <stdlib.h>

static int nvf_test_failures;
static int nvf_test_checks;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        nvf_test_checks++;                                                                         \
        if (!(cond)) {                                                                             \
            nvf_test_failures++;                                                                   \
            if (nvf_test_failures <= 20) {                                                         \
                fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);           \
                fprintf(stderr, __VA_ARGS__);                                                      \
                fputc('\n', stderr);                                                               \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static inline int nvf_test_finish(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, nvf_test_checks, nvf_test_failures);
    return nvf_test_failures ? 1 : 0;
}

/* xorshift64*: reproducible inputs from a printed seed. */
static inline unsigned long long nvf_test_rand(unsigned long long *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

#endif
