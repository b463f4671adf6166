/*
 * nvf_shm.c: create, attach, unlink and unmap node-local shared-memory segments.
 * No synchronisation protocol here (see nvf_sched.c); only memory and its header.
 */
#include "nvf_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NVF_SHM_MAGIC 0x6e7666616272696bULL /* "nvfabrik" */
#define NVF_PAGE 4096

static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

static size_t ctrl_bytes(int nlocal)
{
    return round_up(sizeof(nvf_shm_header_t) + (size_t)nlocal * sizeof(nvf_shm_ctrl_t), NVF_PAGE);
}

size_t nvf_shm_bytes(int nlocal, int nsets, size_t block_bytes)
{
    return ctrl_bytes(nlocal) + (size_t)nsets * (size_t)(nlocal + 1) * block_bytes;
}

static void layout(nvf_shm_t *s, int nlocal, int nsets, size_t block_bytes)
{
    s->nlocal = nlocal;
    s->nsets = nsets;
    s->block_bytes = block_bytes;
    s->set_stride = (size_t)(nlocal + 1) * block_bytes;
    s->hdr = (nvf_shm_header_t *)s->base;
    s->ctrl = (nvf_shm_ctrl_t *)((char *)s->base + sizeof(nvf_shm_header_t));
    s->data = (char *)s->base + ctrl_bytes(nlocal);
}

static void init_header(nvf_shm_t *s)
{
    /* the flags start at 0: sequence numbers start at 1 */
    memset(s->base, 0, ctrl_bytes(s->nlocal));
    s->hdr->nlocal = (uint32_t)s->nlocal;
    s->hdr->nsets = (uint32_t)s->nsets;
    s->hdr->block_bytes = s->block_bytes;
    s->hdr->total_bytes = s->size;
    atomic_store_explicit(&s->hdr->attached, 1, memory_order_relaxed);
    atomic_store_explicit(&s->hdr->failed, 0, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    s->hdr->magic = NVF_SHM_MAGIC;
}

nvf_status_t nvf_shm_create(nvf_shm_t *s, int nlocal, int nsets, size_t block_bytes, char *err,
                            size_t errlen)
{
    static unsigned counter;
    memset(s, 0, sizeof(*s));
    s->size = nvf_shm_bytes(nlocal, nsets, block_bytes);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    snprintf(s->name, sizeof(s->name), "/nvfabric-%d-%u-%lx", (int)getpid(), counter++,
             (unsigned long)ts.tv_nsec);
    int fd = shm_open(s->name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "shm_open(%s) failed: %s", s->name, strerror(errno));
        return NVF_ERR_SYSTEM;
    }
    int rc = ftruncate(fd, (off_t)s->size);
    if (rc == 0)
        rc = posix_fallocate(fd, 0, (off_t)s->size); /* ENOSPC now, not SIGBUS later */
    else
        rc = errno;
    if (rc != 0) {
        snprintf(err, errlen, "cannot size %zu-byte segment %s in /dev/shm: %s", s->size, s->name,
                 strerror(rc));
        close(fd);
        shm_unlink(s->name);
        return NVF_ERR_SYSTEM;
    }
    s->base = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (s->base == MAP_FAILED) {
        s->base = NULL;
        snprintf(err, errlen, "mmap of %s failed: %s", s->name, strerror(errno));
        shm_unlink(s->name);
        return NVF_ERR_SYSTEM;
    }
    s->shared = true;
    layout(s, nlocal, nsets, block_bytes);
    init_header(s);
    return NVF_OK;
}

nvf_status_t nvf_shm_attach(nvf_shm_t *s, const char *name, int nlocal, int nsets,
                            size_t block_bytes, char *err, size_t errlen)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "%s", name);
    s->size = nvf_shm_bytes(nlocal, nsets, block_bytes);
    int fd = shm_open(s->name, O_RDWR, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "shm_open(%s) of the node leader's segment failed: %s", s->name,
                 strerror(errno));
        return NVF_ERR_SYSTEM;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size != s->size) {
        snprintf(err, errlen, "segment %s has %lld bytes, expected %zu", s->name,
                 (long long)st.st_size, s->size);
        close(fd);
        return NVF_ERR_SYSTEM;
    }
    s->base = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (s->base == MAP_FAILED) {
        s->base = NULL;
        snprintf(err, errlen, "mmap of %s failed: %s", s->name, strerror(errno));
        return NVF_ERR_SYSTEM;
    }
    s->shared = true;
    s->unlinked = true; /* not ours to unlink */
    layout(s, nlocal, nsets, block_bytes);
    atomic_thread_fence(memory_order_acquire);
    if (s->hdr->magic != NVF_SHM_MAGIC || s->hdr->nlocal != (uint32_t)nlocal ||
        s->hdr->nsets != (uint32_t)nsets || s->hdr->block_bytes != block_bytes) {
        snprintf(err, errlen,
                 "segment %s has an unexpected header (different parameters on "
                 "different ranks?)",
                 s->name);
        munmap(s->base, s->size);
        s->base = NULL;
        return NVF_ERR_INVALID;
    }
    atomic_fetch_add_explicit(&s->hdr->attached, 1, memory_order_acq_rel);
    return NVF_OK;
}

nvf_status_t nvf_shm_private(nvf_shm_t *s, int nsets, size_t block_bytes, char *err, size_t errlen)
{
    memset(s, 0, sizeof(*s));
    s->size = nvf_shm_bytes(1, nsets, block_bytes);
    s->base = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (s->base == MAP_FAILED) {
        s->base = NULL;
        snprintf(err, errlen, "mmap of %zu private bytes failed: %s", s->size, strerror(errno));
        return NVF_ERR_NOMEM;
    }
    s->unlinked = true;
    layout(s, 1, nsets, block_bytes);
    init_header(s);
    return NVF_OK;
}

void nvf_shm_unlink(nvf_shm_t *s)
{
    if (s->shared && !s->unlinked) {
        shm_unlink(s->name);
        s->unlinked = true;
    }
}

void nvf_shm_detach(nvf_shm_t *s)
{
    nvf_shm_unlink(s);
    if (s->base != NULL)
        munmap(s->base, s->size);
    memset(s, 0, sizeof(*s));
}
