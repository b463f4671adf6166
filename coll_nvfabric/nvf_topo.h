/*
 * nvf_topo.h: a communicator's nodes, local ranks and rails, computed from one host key per
 * rank (and the virtual node size). Pure functions: no communication, no OS calls except
 * nvf_host_key().
 */
#ifndef NVF_TOPO_H
#define NVF_TOPO_H

#include "nvf.h"

#define NVF_HOST_KEY_LEN 128

/* Identifies the shared-memory domain this process lives in: host name, boot id and IPC
 * namespace. Two ranks with equal keys can share a POSIX shared-memory segment. */
void nvf_host_key(char key[NVF_HOST_KEY_LEN]);

typedef struct nvf_topo {
    int size; /* ranks in the communicator */
    int rank; /* my rank */
    int nnodes;
    int node;        /* my node, 0..nnodes-1 (nodes ordered by their lowest rank) */
    int local_rank;  /* my index within my node (members ordered by rank) */
    int local_size;  /* ranks on my node */
    int *node_of;    /* [size] node of each rank */
    int *local_of;   /* [size] local index of each rank */
    int *node_size;  /* [nnodes] ranks per node */
    int *node_first; /* [nnodes] offset of each node's members in `members` */
    int *members;    /* [size] ranks grouped by node, each node's in rank order */
    int max_local;   /* ranks on the largest node (the same on every rank) */
    bool uniform;    /* every node has the same number of ranks */
} nvf_topo_t;

/* keys: size * NVF_HOST_KEY_LEN bytes, rank order. vnode_size > 0 cuts each host's ranks (in
 * rank order) into consecutive groups of that many. */
nvf_status_t nvf_topo_build(nvf_topo_t *t, int rank, int size, const char *keys, int vnode_size);
void nvf_topo_free(nvf_topo_t *t);

/* Rank of the member with local index `local` on node `node` (-1 if there is none). */
static inline int nvf_topo_member(const nvf_topo_t *t, int node, int local)
{
    return local < t->node_size[node] ? t->members[t->node_first[node] + local] : -1;
}

#endif
