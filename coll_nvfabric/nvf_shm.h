/*
 * nvf_shm.h: the shared-memory segment of one node-local group: layout, creation, attachment.
 *
 * Layout: a header, one control block per local rank (its flags, each on its own cache line),
 * then `nsets` buffer sets; a set holds one input slot per local rank and one result slot, each
 * `block_bytes` long. The scheduler decides what goes where; this file only maps memory.
 * A segment is created by the node's first rank with mode 0600 and unlinked as soon as every
 * local rank has mapped it, so that nothing is left in /dev/shm even if a rank dies later.
 * A group of one rank gets a private (not shared) segment of the same layout.
 */
#ifndef NVF_SHM_H
#define NVF_SHM_H

#include "nvf.h"
#include "cuda/nvf_cuda.h"

#include <stdatomic.h>
#include <stdint.h>

#define NVF_CACHE_LINE 128 /* two lines: adjacent-line prefetch must not false-share */

typedef struct nvf_flag {
    _Atomic uint64_t v;
    char pad[NVF_CACHE_LINE - sizeof(uint64_t)];
} nvf_flag_t;

/* Per local rank. Sequence numbers of pipeline blocks, monotonic per communicator. */
/* What a rank says about itself for the single-copy (CMA) path: written before `seq` is
 * published (release), read after it is seen (acquire). */
typedef struct nvf_shm_call {
    _Atomic uint64_t seq; /* the first block of the call this describes */
    uint64_t in_addr;     /* my send buffer (my receive buffer when in place), my address */
    uint64_t out_addr;    /* my receive buffer */
    int32_t pid;
    uint32_t host; /* 1: both buffers are host memory (the call may use CMA) */
    char pad[NVF_CACHE_LINE - 32];
} nvf_shm_call_t;

/* The input of one of my small calls (nvf_small.c), right after the number that publishes it:
 * a peer that sees `seq` has the first 48 bytes in the same miss, and the rest in the lines
 * that follow (which the hardware prefetches). 2032 bytes: a 2 KiB slot; inline beat the
 * scheduler's one-shot up to 1 KiB on 2 ranks (2026-12-07, AMD VM), and tied at 2 KiB. */
#define NVF_SMALL_MAX_BYTES 2032
typedef struct nvf_small_slot {
    _Atomic uint64_t seq; /* my small call of this number has its input in data */
    uint64_t unused;      /* data 16-byte aligned (long double, complex) */
    unsigned char data[NVF_SMALL_MAX_BYTES];
} nvf_small_slot_t;

/* My buffers for a call on the CUDA IPC path (nvf_ipc.c), and how far I am in it. */
typedef struct nvf_shm_ipc {
    _Atomic uint64_t seq; /* 4 x (my IPC call's number) + the step I finished (nvf_ipc.c) */
    uint32_t ok;          /* step 1: my buffers are exported, my device runs this (type, op) */
    uint32_t go;          /* step 2: every rank said ok, and my device reaches every peer's */
    nvf_cuda_ipc_desc_t in, out;
} nvf_shm_ipc_t;

typedef struct nvf_shm_ctrl {
    nvf_flag_t in_seq;         /* my input of this block is in my input slot */
    nvf_flag_t res_seq;        /* my part of this block's result is in the result slot */
    nvf_flag_t done_seq;       /* I have copied this block's result out (its set may be reused) */
    nvf_shm_call_t call;       /* my buffers for the current call (single-copy path) */
    nvf_small_slot_t small[2]; /* small calls by parity of their number */
    nvf_shm_ipc_t ipc;         /* the CUDA IPC path */
} nvf_shm_ctrl_t;

typedef struct nvf_shm_header {
    uint64_t magic;
    uint32_t nlocal;
    uint32_t nsets;
    uint64_t block_bytes;
    uint64_t total_bytes;
    _Atomic uint32_t attached;
    _Atomic uint32_t failed; /* a rank failed during a call: waiters give up */
    _Atomic uint64_t path;   /* local rank 0's choice of two-shot path for the call whose first
                              * block is seq: seq << 1 | (1: single copies) (nvf_comm.c) */
    char pad[NVF_CACHE_LINE - 48];
} nvf_shm_header_t;

typedef struct nvf_shm {
    void *base;
    size_t size;
    bool shared; /* false: private memory of a one-rank group */
    bool unlinked;
    char name[64];
    nvf_shm_header_t *hdr;
    nvf_shm_ctrl_t *ctrl; /* [nlocal] */
    char *data;
    size_t set_stride;
    size_t block_bytes;
    int nlocal;
    int nsets;
} nvf_shm_t;

/* The largest segment made to give single-node calls a choice of larger blocks (the
 * segment's pages are reserved at creation). */
#define NVF_SHM_LARGE_MAX ((size_t)64 << 20)

/* Bytes a segment with these dimensions needs. */
size_t nvf_shm_bytes(int nlocal, int nsets, size_t block_bytes);
/* Node leader: create, size (reserving the pages: no SIGBUS later) and map. `name` is chosen
 * here, unique, and returned in s->name for the other ranks. */
nvf_status_t nvf_shm_create(nvf_shm_t *s, int nlocal, int nsets, size_t block_bytes, char *err,
                            size_t errlen);
/* Other local ranks: map the leader's segment and check its header. */
nvf_status_t nvf_shm_attach(nvf_shm_t *s, const char *name, int nlocal, int nsets,
                            size_t block_bytes, char *err, size_t errlen);
/* One-rank groups: the same layout in private memory. */
nvf_status_t nvf_shm_private(nvf_shm_t *s, int nsets, size_t block_bytes, char *err, size_t errlen);
/* Leader, once every local rank has attached: remove the name. Idempotent. */
void nvf_shm_unlink(nvf_shm_t *s);
/* Unmap (and unlink if still named and this rank created it). */
void nvf_shm_detach(nvf_shm_t *s);

static inline char *nvf_shm_in(const nvf_shm_t *s, int set, int local)
{
    return s->data + (size_t)set * s->set_stride + (size_t)local * s->block_bytes;
}

static inline char *nvf_shm_res(const nvf_shm_t *s, int set)
{
    return s->data + (size_t)set * s->set_stride + (size_t)s->nlocal * s->block_bytes;
}

#endif
