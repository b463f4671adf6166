/*
 * nvf_test_ucx.h: what the UCX glue's tests share (include after nvf_test.h):
 *   - a fork bootstrap: run a test body in n forked processes, with an allgather and a barrier
 *     relayed by the parent over socketpairs (no MPI). The parent does no work of its own: it
 *     relays rounds, enforces a deadline (killing the children it forked, by pid) and reports
 *     each child's exit status; a round in which a child exits without contributing fails the
 *     group instead of hanging it. The parent must not initialise UCX (children inherit it);
 *   - message contents that depend on (sender, receiver, sequence number), mesh setup over the
 *     bootstrap, and the glue's counters at rest.
 */
#ifndef NVF_TEST_UCX_H
#define NVF_TEST_UCX_H

#include "ucx_glue/nvf_ucx.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NVF_TF_MAX 8

typedef struct nvf_tf {
    int rank, size;
    int fd; /* this child's end of its socketpair with the parent */
} nvf_tf_t;

static inline int nvf_tf_write_full(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static inline int nvf_tf_read_full(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t r = read(fd, p, len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        len -= (size_t)r;
    }
    return 0;
}

/* Every process contributes len bytes; rbuf gets size * len bytes in rank order. 0 on success. */
static inline int nvf_tf_allgather(nvf_tf_t *tf, const void *sbuf, void *rbuf, size_t len)
{
    uint64_t l = len;
    if (nvf_tf_write_full(tf->fd, &l, sizeof(l)) || nvf_tf_write_full(tf->fd, sbuf, len))
        return -1;
    return nvf_tf_read_full(tf->fd, rbuf, len * (size_t)tf->size);
}

static inline int nvf_tf_barrier(nvf_tf_t *tf)
{
    char c = 0, all[NVF_TF_MAX];
    return nvf_tf_allgather(tf, &c, all, 1);
}

static inline double nvf_tf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Multiplier for every deadline and long loop: NVF_TEST_SLOW=10 under valgrind, say. */
static inline double nvf_tf_slow(void)
{
    const char *s = getenv("NVF_TEST_SLOW");
    double f = s != NULL ? atof(s) : 1.0;
    return f >= 1.0 ? f : 1.0;
}

typedef int (*nvf_tf_body_t)(nvf_tf_t *tf, void *arg);

/* Parent: relays rounds until every child has exited. Returns 0, or -1 after a stuck round or
 * the deadline (then the remaining children are killed). */
static inline int nvf_tf_relay(int n, const int *fds, const pid_t *pids, double deadline,
                               const char *name)
{
    bool open[NVF_TF_MAX], have[NVF_TF_MAX];
    char *data[NVF_TF_MAX];
    uint64_t len[NVF_TF_MAX];
    int nopen = n, nhave = 0, ret = 0;
    for (int i = 0; i < n; i++) {
        open[i] = true;
        have[i] = false;
        data[i] = NULL;
    }
    while (nopen > 0) {
        /* a round that cannot complete: a child exited while others wait in it */
        if (nhave > 0 && nhave + (n - nopen) >= n && nhave < n) {
            fprintf(stderr, "%s: a process exited in the middle of a bootstrap round\n", name);
            ret = -1;
            break;
        }
        double left = deadline - nvf_tf_now();
        if (left <= 0) {
            fprintf(stderr, "%s: deadline passed, killing the processes\n", name);
            ret = -1;
            break;
        }
        struct pollfd pfd[NVF_TF_MAX];
        for (int i = 0; i < n; i++) {
            pfd[i].fd = open[i] && !have[i] ? fds[i] : -1;
            pfd[i].events = POLLIN;
            pfd[i].revents = 0;
        }
        int pr = poll(pfd, (nfds_t)n, (int)(left * 1000) + 1);
        if (pr < 0 && errno != EINTR) {
            ret = -1;
            break;
        }
        for (int i = 0; i < n && pr > 0; i++) {
            if (pfd[i].revents == 0)
                continue;
            if (nvf_tf_read_full(fds[i], &len[i], sizeof(len[i])) != 0) {
                open[i] = false; /* exited */
                nopen--;
                continue;
            }
            data[i] = malloc(len[i] ? len[i] : 1);
            if (data[i] == NULL || nvf_tf_read_full(fds[i], data[i], len[i]) != 0) {
                ret = -1;
                nopen = 0;
                break;
            }
            have[i] = true;
            nhave++;
        }
        if (nhave == n) {
            for (int i = 0; i < n; i++) {
                for (int j = 0; j < n && ret == 0; j++) {
                    if (len[j] != len[0]) {
                        fprintf(stderr, "%s: allgather lengths differ (%llu, %llu)\n", name,
                                (unsigned long long)len[0], (unsigned long long)len[j]);
                        ret = -1;
                    }
                }
                for (int j = 0; j < n && ret == 0; j++)
                    nvf_tf_write_full(fds[i], data[j], len[j]);
            }
            for (int i = 0; i < n; i++) {
                free(data[i]);
                data[i] = NULL;
                have[i] = false;
            }
            nhave = 0;
            if (ret != 0)
                break;
        }
    }
    for (int i = 0; i < n; i++)
        free(data[i]);
    if (ret != 0)
        for (int i = 0; i < n; i++)
            kill(pids[i], SIGKILL);
    return ret;
}

/* Runs body in n processes (rank 0..n-1); each exits with body's return value (0 = pass).
 * status[i] receives rank i's wait status (status may be NULL: then every process must exit
 * with 0, and the others are reported). Returns the number of processes that did not exit
 * with 0. */
static inline int nvf_tf_run_status(const char *name, int n, double timeout_s, nvf_tf_body_t body,
                                    void *arg, int *status_out)
{
    int fds[NVF_TF_MAX];
    pid_t pids[NVF_TF_MAX];
    if (n < 1 || n > NVF_TF_MAX)
        return n;
    fflush(stdout);
    fflush(stderr);
    signal(SIGPIPE, SIG_IGN); /* a child that died must not kill the relay */
    for (int i = 0; i < n; i++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
            perror("socketpair");
            exit(2);
        }
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            exit(2);
        }
        if (pid == 0) {
            close(sv[0]);
            for (int j = 0; j < i; j++)
                close(fds[j]);
            nvf_tf_t tf = {i, n, sv[1]};
            int rc = body(&tf, arg);
            close(sv[1]);
            fflush(stdout);
            exit(rc == 0 ? 0 : 1);
        }
        close(sv[1]);
        fds[i] = sv[0];
        pids[i] = pid;
    }
    nvf_tf_relay(n, fds, pids, nvf_tf_now() + timeout_s * nvf_tf_slow(), name);
    int failed = 0;
    for (int i = 0; i < n; i++) {
        int status;
        close(fds[i]);
        while (waitpid(pids[i], &status, 0) < 0 && errno == EINTR)
            ;
        if (status_out != NULL)
            status_out[i] = status;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
            continue;
        failed++;
        if (status_out != NULL)
            continue;
        if (WIFSIGNALED(status))
            fprintf(stderr, "%s: rank %d of %d killed by signal %d\n", name, i, n,
                    WTERMSIG(status));
        else
            fprintf(stderr, "%s: rank %d of %d exited with %d\n", name, i, n, WEXITSTATUS(status));
    }
    return failed;
}

static inline int nvf_tf_run(const char *name, int n, double timeout_s, nvf_tf_body_t body,
                             void *arg)
{
    return nvf_tf_run_status(name, n, timeout_s, body, arg, NULL);
}

/* ---- UCX glue helpers ------------------------------------------------------------------ */

static inline uint64_t tu_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static inline uint64_t tu_msg_seed(int from, int to, uint64_t k)
{
    return tu_mix(((uint64_t)(unsigned)from << 48) ^ ((uint64_t)(unsigned)to << 32) ^ k);
}

/* Message k from `from` to `to`: full slots, 1-byte messages and everything in between. */
static inline size_t tu_msg_len(int from, int to, uint64_t k, size_t slot_bytes)
{
    switch (k % 5) {
    case 0:
        return slot_bytes;
    case 1:
        return 1;
    default:
        return 1 + (size_t)(tu_msg_seed(from, to, k) % slot_bytes);
    }
}

static inline unsigned char tu_msg_byte(uint64_t seed, size_t i)
{
    return (unsigned char)((seed >> ((i & 7) * 8)) + (i >> 3) * 0x9d);
}

static inline void tu_msg_fill(unsigned char *buf, size_t len, int from, int to, uint64_t k)
{
    uint64_t seed = tu_msg_seed(from, to, k);
    for (size_t i = 0; i < len; i++)
        buf[i] = tu_msg_byte(seed, i);
}

/* Every byte of message k; a mismatch names the message and the first bad byte. */
static inline bool tu_msg_check(const void *data, size_t len, int from, int to, uint64_t k,
                                const char *what)
{
    const unsigned char *d = data;
    uint64_t seed = tu_msg_seed(from, to, k);
    for (size_t i = 0; i < len; i++) {
        if (d[i] != tu_msg_byte(seed, i)) {
            CHECK(false,
                  "%s: message %llu from %d to %d (%zu bytes): byte %zu is 0x%02x, expected "
                  "0x%02x",
                  what, (unsigned long long)k, from, to, len, i, d[i], tu_msg_byte(seed, i));
            return false;
        }
    }
    return true;
}

/* The protocol every mesh a test sets up sends with (set before forking). */
static nvf_ucx_protocol_t tu_protocol = NVF_UCX_PROTO_AUTO;
static inline const char *tu_protocol_name(nvf_ucx_protocol_t p)
{
    return p == NVF_UCX_PROTO_PUT ? "put" : p == NVF_UCX_PROTO_AM ? "am" : "auto";
}

/* Creates a mesh, exchanges blobs (fixed size: blob_max, all lists of equal total length) and
 * connects to every peer of both lists. NULL after a failed CHECK. */

static inline nvf_ucx_mesh_t *tu_mesh_setup(nvf_tf_t *tf, nvf_ucx_ctx_t *ctx, const int *send_to,
                                            int nsend, const int *recv_from, int nrecv, int nslots,
                                            size_t slot_bytes, const char *what)
{
    nvf_ucx_mesh_params_t p = {tf->rank, send_to, nsend,      recv_from,
                               nrecv,    nslots,  slot_bytes, tu_protocol};
    nvf_ucx_mesh_t *mesh = NULL;
    const void *blob = NULL;
    size_t blob_len = 0;
    nvf_status_t st = nvf_ucx_mesh_create(ctx, &p, &mesh, &blob, &blob_len);
    CHECK(st == NVF_OK, "%s: mesh_create on rank %d: %s: %s", what, tf->rank, nvf_status_str(st),
          nvf_ucx_last_error());
    size_t max = nvf_ucx_mesh_blob_max(ctx, nsend, nrecv);
    if (st != NVF_OK)
        blob_len = 0;
    CHECK(st != NVF_OK || blob_len == max, "%s: blob has %zu bytes, blob_max %zu", what, blob_len,
          max);
    unsigned char *mine = calloc(1, max), *all = malloc(max * (size_t)tf->size);
    if (blob_len > 0 && blob_len <= max)
        memcpy(mine, blob, blob_len);
    CHECK(nvf_tf_allgather(tf, mine, all, max) == 0, "%s: bootstrap allgather failed", what);
    bool ok = st == NVF_OK;
    for (int list = 0; list < 2 && ok; list++) {
        const int *ids = list == 0 ? send_to : recv_from;
        int n = list == 0 ? nsend : nrecv;
        for (int i = 0; i < n && ok; i++) {
            bool dup = false; /* a peer in both lists is connected once */
            for (int j = 0; list == 1 && j < nsend; j++)
                dup = dup || send_to[j] == ids[i];
            if (dup)
                continue;
            st = nvf_ucx_mesh_connect(mesh, ids[i], all + (size_t)ids[i] * max, max);
            CHECK(st == NVF_OK, "%s: rank %d connect to %d: %s: %s", what, tf->rank, ids[i],
                  nvf_status_str(st), nvf_ucx_last_error());
            ok = st == NVF_OK;
        }
    }
    free(mine);
    free(all);
    if (!ok && mesh != NULL) {
        nvf_ucx_mesh_destroy(mesh);
        mesh = NULL;
    }
    return mesh;
}

/* After every mesh is destroyed: no registration, rkey or request is left. */
static inline void tu_check_no_mesh_state(const char *what)
{
    nvf_ucx_counters_t c;
    nvf_ucx_get_counters(&c);
    CHECK(c.meshes == 0 && c.mem_maps == 0 && c.rkeys == 0 && c.requests == 0,
          "%s: left behind: %ld meshes, %ld mem_maps, %ld rkeys, %ld requests", what, c.meshes,
          c.mem_maps, c.rkeys, c.requests);
}

/* After the last context release: nothing at all. */
static inline void tu_check_nothing_left(const char *what)
{
    nvf_ucx_counters_t c;
    nvf_ucx_get_counters(&c);
    tu_check_no_mesh_state(what);
    CHECK(c.contexts == 0 && c.endpoints == 0 && c.failed_endpoints == 0,
          "%s: left behind: %ld contexts, %ld endpoints (%ld failed)", what, c.contexts,
          c.endpoints, c.failed_endpoints);
}

#endif
