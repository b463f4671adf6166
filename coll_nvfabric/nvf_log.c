/*
 * nvf_log.c: the engine's message sink and the names of its status codes and memory kinds.
 */
#include "nvf_log.h"

#include <stdarg.h>
#include <stdio.h>

static nvf_log_sink_t nvf_sink;
static int nvf_verbose;

void nvf_log_set_sink(nvf_log_sink_t sink, int verbose)
{
    nvf_sink = sink;
    nvf_verbose = verbose;
}

int nvf_log_level(void)
{
    return nvf_verbose;
}

void nvf_log_emit(int level, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (nvf_sink != NULL)
        nvf_sink(level, msg);
    else
        fprintf(stderr, "nvfabric: %s\n", msg);
}

const char *nvf_status_str(nvf_status_t st)
{
    switch (st) {
    case NVF_OK:
        return "success";
    case NVF_ERR_UNSUPPORTED:
        return "not handled by the engine";
    case NVF_ERR_NOMEM:
        return "out of memory";
    case NVF_ERR_SYSTEM:
        return "system call failed";
    case NVF_ERR_UCX:
        return "UCX error";
    case NVF_ERR_CUDA:
        return "CUDA error";
    case NVF_ERR_PEER:
        return "another rank failed";
    case NVF_ERR_INVALID:
        return "invalid argument";
    }
    return "unknown status";
}

const char *nvf_memkind_name(nvf_memkind_t kind)
{
    switch (kind) {
    case NVF_MEM_HOST:
        return "host";
    case NVF_MEM_HOST_PINNED:
        return "pinned-host";
    case NVF_MEM_DEVICE:
        return "device";
    case NVF_MEM_MANAGED:
        return "managed";
    case NVF_MEM_MIXED:
        return "mixed";
    case NVF_MEM_KIND_COUNT:
        break;
    }
    return "invalid";
}
