/*
 * nvf_cuda_peer.c: device identity across processes (UUIDs: ordinals differ between ranks with
 * different CUDA_VISIBLE_DEVICES) and peer access between this process's devices.
 *
 * Must not enable peer access by itself: IPC mappings are opened with lazy peer access.
 */
#include "nvf_cuda_dev.h"

#include <stdio.h>
#include <string.h>

nvf_status_t nvf_cuda_device_uuid(int ordinal, nvf_cuda_uuid_t *uuid)
{
    memset(uuid, 0, sizeof(*uuid));
    if (!nvf_cuda_available())
        return NVF_ERR_UNSUPPORTED;
    CUdevice dev;
    nvf_status_t st = NVF_CU(cuDeviceGet, &dev, ordinal);
    CUuuid u;
    if (st == NVF_OK)
        st = NVF_CU(cuDeviceGetUuid, &u, dev);
    if (st == NVF_OK)
        memcpy(uuid->bytes, u.bytes, sizeof(uuid->bytes));
    return st;
}

bool nvf_cuda_uuid_equal(const nvf_cuda_uuid_t *a, const nvf_cuda_uuid_t *b)
{
    return memcmp(a->bytes, b->bytes, sizeof(a->bytes)) == 0;
}

void nvf_cuda_uuid_format(const nvf_cuda_uuid_t *uuid, char *out, size_t outlen)
{
    const unsigned char *b = uuid->bytes;
    snprintf(out, outlen,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
             b[15]);
}

nvf_status_t nvf_cuda_device_by_uuid(const nvf_cuda_uuid_t *uuid, int *ordinal)
{
    *ordinal = -1;
    if (!nvf_cuda_available())
        return NVF_ERR_UNSUPPORTED;
    int n = 0;
    nvf_status_t st = NVF_CU(cuDeviceGetCount, &n);
    for (int i = 0; st == NVF_OK && i < n; i++) {
        nvf_cuda_uuid_t u;
        st = nvf_cuda_device_uuid(i, &u);
        if (st == NVF_OK && nvf_cuda_uuid_equal(&u, uuid)) {
            *ordinal = i;
            return NVF_OK;
        }
    }
    return st == NVF_OK ? NVF_ERR_UNSUPPORTED : st;
}

nvf_status_t nvf_cuda_peer_capable(int a, int b, bool *can)
{
    *can = false;
    if (!nvf_cuda_available())
        return NVF_ERR_UNSUPPORTED;
    if (a == b) {
        *can = true;
        return NVF_OK;
    }
    CUdevice da, db;
    nvf_status_t st = NVF_CU(cuDeviceGet, &da, a);
    if (st == NVF_OK)
        st = NVF_CU(cuDeviceGet, &db, b);
    int v = 0;
    if (st == NVF_OK)
        st = NVF_CU(cuDeviceCanAccessPeer, &v, da, db);
    *can = st == NVF_OK && v != 0;
    return st;
}

nvf_status_t nvf_cuda_peer_reachable(nvf_cuda_dev_t *d, const nvf_cuda_uuid_t *peer, bool *can,
                                     bool *same_device)
{
    *can = false;
    *same_device = nvf_cuda_uuid_equal(&d->uuid, peer);
    if (*same_device) {
        *can = true;
        return NVF_OK;
    }
    int ordinal;
    nvf_status_t st = nvf_cuda_device_by_uuid(peer, &ordinal);
    if (st == NVF_ERR_UNSUPPORTED)
        return NVF_OK; /* not visible here: no peer access can be established from this process */
    if (st != NVF_OK)
        return st;
    return nvf_cuda_peer_capable(d->ordinal, ordinal, can);
}
