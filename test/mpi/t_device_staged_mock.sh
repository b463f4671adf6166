#!/usr/bin/env bash
# The staged device path without a GPU: "device" buffers from the mock CUDA driver, 2 and 3
# ranks, one node and two virtual nodes (see mock_device.c).
. "$NVF_SRC/test/lib.sh"
prog="$NVF_BUILD/test/mpi/mock_device"
mockdir="$NVF_BUILD/test/unit/mock_cuda"
[ -x "$prog" ] || nvf_skip "built without the CUDA toolkit: no device stage"
make -s -C "$NVF_BUILD" test/unit/mock_cuda/libcuda.so.1 >/dev/null || nvf_fail "cannot build the mock driver"
for np in 2 3; do
    LD_LIBRARY_PATH="$mockdir:${LD_LIBRARY_PATH:-}" nvf_mpirun $np -x LD_LIBRARY_PATH "$prog" ||
        nvf_fail "$np ranks"
    LD_LIBRARY_PATH="$mockdir:${LD_LIBRARY_PATH:-}" UCX_TLS=tcp nvf_mpirun $np -x LD_LIBRARY_PATH \
        --mca coll_nvfabric_virtual_node_size 1 "$prog" || nvf_fail "$np ranks, virtual nodes of 1"
done
echo ok
