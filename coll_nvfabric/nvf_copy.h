/*
 * nvf_copy.h: copies into memory that nobody reads soon (a receive buffer being filled with a
 * result): non-temporal stores, which write whole lines without reading them first and do not
 * push the caller's other data out of the cache. Only for destinations this process does not
 * read back before the call returns; small copies and other machines fall back to memcpy.
 */
#ifndef NVF_COPY_H
#define NVF_COPY_H

#include <stddef.h>

/* memcpy(dst, src, n) with streaming stores where the machine has them. dst and src must not
 * overlap. Call nvf_copy_stream_fence() before another process may read dst. */
void nvf_copy_stream(void *dst, const void *src, size_t n);
void nvf_copy_stream_fence(void);

/* The size of this host's last-level cache in bytes (0: unknown). */
size_t nvf_llc_bytes(void);

#endif
