/*
 * nvf_cma.c: process_vm_readv / process_vm_writev with the partial transfers handled.
 */
#include "nvf_cma.h"

#include <errno.h>
#include <sys/uio.h>

static nvf_status_t cma(pid_t pid, void *local, uint64_t remote, size_t len, int write)
{
    char *l = local;
    while (len > 0) {
        struct iovec lv = {l, len}, rv = {(void *)(uintptr_t)remote, len};
        ssize_t n = write ? process_vm_writev(pid, &lv, 1, &rv, 1, 0)
                          : process_vm_readv(pid, &lv, 1, &rv, 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return NVF_ERR_SYSTEM;
        l += n;
        remote += (uint64_t)n;
        len -= (size_t)n;
    }
    return NVF_OK;
}

nvf_status_t nvf_cma_read(pid_t pid, void *local, uint64_t remote, size_t len)
{
    return cma(pid, local, remote, len, 0);
}

nvf_status_t nvf_cma_write(pid_t pid, uint64_t remote, const void *local, size_t len)
{
    return cma(pid, (void *)local, remote, len, 1);
}
