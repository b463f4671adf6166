/*
 * nvf_cma.h: cross-memory attach (process_vm_readv / process_vm_writev) between the ranks of a
 * node: the single-copy intra-node path reads a peer's input straight from its buffer and writes
 * its part of the result straight into the peer's receive buffer. Needs ptrace access to the
 * peer (same user; kernel.yama.ptrace_scope 0, or CAP_SYS_PTRACE): probed at setup.
 */
#ifndef NVF_CMA_H
#define NVF_CMA_H

#include "nvf.h"

#include <stdint.h>
#include <sys/types.h>

/* Copies len bytes from address `remote` of process pid into local (read) or from local to
 * `remote` (write), looping over partial transfers. NVF_ERR_SYSTEM with errno kept on failure. */
nvf_status_t nvf_cma_read(pid_t pid, void *local, uint64_t remote, size_t len);
nvf_status_t nvf_cma_write(pid_t pid, uint64_t remote, const void *local, size_t len);

#endif
