/*
 * nvf_topo.c: nodes, local ranks and rails of a communicator from the ranks' host keys.
 */
#include "nvf_topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void nvf_host_key(char key[NVF_HOST_KEY_LEN])
{
    char host[64] = "", boot[48] = "";
    struct stat ipc;
    gethostname(host, sizeof(host) - 1);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f != NULL) {
        if (fgets(boot, sizeof(boot), f) == NULL)
            boot[0] = '\0';
        fclose(f);
        boot[strcspn(boot, "\n")] = '\0';
    }
    unsigned long long ipc_ns =
        stat("/proc/self/ns/ipc", &ipc) == 0 ? (unsigned long long)ipc.st_ino : 0;
    memset(key, 0, NVF_HOST_KEY_LEN);
    snprintf(key, NVF_HOST_KEY_LEN, "%s|%s|%llx", host, boot, ipc_ns);
}

void nvf_topo_free(nvf_topo_t *t)
{
    free(t->node_of);
    free(t->local_of);
    free(t->node_size);
    free(t->node_first);
    free(t->members);
    memset(t, 0, sizeof(*t));
}

nvf_status_t nvf_topo_build(nvf_topo_t *t, int rank, int size, const char *keys, int vnode_size)
{
    memset(t, 0, sizeof(*t));
    if (size < 1 || rank < 0 || rank >= size || vnode_size < 0)
        return NVF_ERR_INVALID;
    const size_t n = (size_t)size;
    t->size = size;
    t->rank = rank;
    t->node_of = malloc(sizeof(int) * n);
    t->local_of = malloc(sizeof(int) * n);
    t->node_size = calloc(n, sizeof(int));
    t->node_first = calloc(n, sizeof(int));
    t->members = malloc(sizeof(int) * n);
    /* scratch: host of each rank, first rank of each host, ranks seen and current node per host */
    int *scratch = malloc(sizeof(int) * 4 * n);
    if (!t->node_of || !t->local_of || !t->node_size || !t->node_first || !t->members || !scratch) {
        free(scratch);
        nvf_topo_free(t);
        return NVF_ERR_NOMEM;
    }
    int *host_of = scratch, *host_rep = scratch + n, *host_seen = scratch + 2 * n,
        *host_node = scratch + 3 * n;

    /* hosts, numbered in order of their lowest rank (O(size x hosts): setup only) */
    int nhosts = 0;
    for (int r = 0; r < size; r++) {
        int h = 0;
        while (h < nhosts &&
               memcmp(keys + (size_t)r * NVF_HOST_KEY_LEN,
                      keys + (size_t)host_rep[h] * NVF_HOST_KEY_LEN, NVF_HOST_KEY_LEN) != 0)
            h++;
        if (h == nhosts) {
            host_rep[nhosts] = r;
            host_seen[nhosts] = 0;
            host_node[nhosts] = -1;
            nhosts++;
        }
        host_of[r] = h;
    }
    /* nodes: each host's ranks in rank order, cut into groups of vnode_size (all of them when
     * 0); nodes numbered in order of their lowest rank */
    int nnodes = 0;
    for (int r = 0; r < size; r++) {
        int h = host_of[r];
        int pos = host_seen[h]++;
        if (host_node[h] < 0 || (vnode_size > 0 && pos % vnode_size == 0))
            host_node[h] = nnodes++;
        t->node_of[r] = host_node[h];
        t->local_of[r] = t->node_size[host_node[h]]++;
    }
    t->nnodes = nnodes;
    for (int k = 1; k < nnodes; k++)
        t->node_first[k] = t->node_first[k - 1] + t->node_size[k - 1];
    for (int r = 0; r < size; r++)
        t->members[t->node_first[t->node_of[r]] + t->local_of[r]] = r;
    t->node = t->node_of[rank];
    t->local_rank = t->local_of[rank];
    t->local_size = t->node_size[t->node];
    t->uniform = true;
    t->max_local = 0;
    for (int k = 0; k < nnodes; k++) {
        if (t->node_size[k] != t->node_size[0])
            t->uniform = false;
        if (t->node_size[k] > t->max_local)
            t->max_local = t->node_size[k];
    }
    free(scratch);
    return NVF_OK;
}
