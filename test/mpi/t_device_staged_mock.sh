#!/usr/bin/env bash
# The staged device path without a GPU: "device" buffers from the mock CUDA driver, 2 and 3
# ranks, one node and two virtual nodes (see mock_device.c); then the CUDA IPC path, the device
# stage off, and small calls delegated. Every run with the mock's copies landing late
# (NVF_MOCK_DEFER_COPIES=1): a block used before its copy completed would give wrong results.
. "$NVF_SRC/test/lib.sh"
export NVF_MOCK_DEFER_COPIES=1
prog="$NVF_BUILD/test/mpi/mock_device"
mockdir="$NVF_BUILD/test/unit/mock_cuda"
[ -x "$prog" ] || nvf_skip "built without the CUDA toolkit: no device stage"
make -s -C "$NVF_BUILD" test/unit/mock_cuda/libcuda.so.1 >/dev/null || nvf_fail "cannot build the mock driver"
for np in 2 3; do
    LD_LIBRARY_PATH="$mockdir:${LD_LIBRARY_PATH:-}" nvf_mpirun $np -x LD_LIBRARY_PATH -x NVF_MOCK_DEFER_COPIES "$prog" \
        --expect-registered || nvf_fail "$np ranks"
    LD_LIBRARY_PATH="$mockdir:${LD_LIBRARY_PATH:-}" UCX_TLS=tcp nvf_mpirun $np -x LD_LIBRARY_PATH -x NVF_MOCK_DEFER_COPIES \
        --mca coll_nvfabric_virtual_node_size 1 "$prog" --expect-pinned || nvf_fail "$np ranks, virtual nodes of 1"
done
# the driver refuses to page-lock the segment: the staged copies go on through pageable memory
LD_LIBRARY_PATH="$mockdir:${LD_LIBRARY_PATH:-}" nvf_mpirun 2 -x LD_LIBRARY_PATH -x NVF_MOCK_DEFER_COPIES "$prog" \
    --register-fails || nvf_fail "2 ranks, cuMemHostRegister refused"
# the CUDA IPC path (peers' buffers mapped, kernels), and its fallback to the staged path
for np in 2 3; do
    LD_LIBRARY_PATH="$mockdir:${LD_LIBRARY_PATH:-}" nvf_mpirun $np -x LD_LIBRARY_PATH -x NVF_MOCK_DEFER_COPIES \
        --mca coll_nvfabric_cuda_ipc true "$prog" --ipc || nvf_fail "$np ranks, CUDA IPC path"
done
# the device stage switched off: host copies through the host path, 3 ranks (mixed kinds included)
LD_LIBRARY_PATH="$mockdir:${LD_LIBRARY_PATH:-}" nvf_mpirun 3 -x LD_LIBRARY_PATH -x NVF_MOCK_DEFER_COPIES \
    --mca coll_nvfabric_cuda false "$prog" --cuda-off || nvf_fail "3 ranks, coll_nvfabric_cuda false"
# small calls to Open MPI's module on every rank, whatever memory it passes (mixed kinds: no hang)
LD_LIBRARY_PATH="$mockdir:${LD_LIBRARY_PATH:-}" nvf_mpirun 3 -x LD_LIBRARY_PATH -x NVF_MOCK_DEFER_COPIES \
    --mca coll_nvfabric_host_auto_min 5000 "$prog" --auto-min 5000 ||
    nvf_fail "3 ranks, coll_nvfabric_host_auto_min 5000"
echo ok
