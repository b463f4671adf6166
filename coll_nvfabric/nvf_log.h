/*
 * nvf_log.h: engine-internal logging. Messages at a level above the configured verbosity cost
 * one comparison. Must not be used on the per-element paths.
 */
#ifndef NVF_LOG_H
#define NVF_LOG_H

#include "nvf.h"

#if defined(__GNUC__)
#define NVF_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define NVF_PRINTF(a, b)
#endif

void nvf_log_emit(int level, const char *fmt, ...) NVF_PRINTF(2, 3);

#define nvf_log(level, ...)                                                                        \
    do {                                                                                           \
        if ((level) <= nvf_log_level())                                                            \
            nvf_log_emit((level), __VA_ARGS__);                                                    \
    } while (0)

/* Errors are always emitted. */
#define nvf_error(...) nvf_log_emit(0, __VA_ARGS__)

#endif
