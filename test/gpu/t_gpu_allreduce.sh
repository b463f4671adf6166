#!/usr/bin/env bash
# MPI_Allreduce on cudaMalloc, cudaMallocAsync, managed and pinned host buffers (test/gpu/
# gpu_allreduce.c), every element checked, 2 to 4 ranks sharing the GPU(s); one run per buffer
# kind, so that one that crashes does not hide the others. NVF_GPU_EXPECT_DEVICE=1: every call on
# device buffers must be handled by nvfabric's device stage (its cuda_calls counter).
. "$NVF_SRC/test/lib.sh"
. "$NVF_SRC/test/gpu/gpu_lib.sh"
nvf_gpu_require
log=$(mktemp)
trap 'rm -f "$log"' EXIT
level=full nps="2 3 4"
[ "${NVF_QUICK:-0}" = 1 ] && level=quick nps="2 3"
failed=
for kind in pinned managed device async; do
    extra=
    [ "${NVF_GPU_EXPECT_DEVICE:-0}" = 1 ] && [ $kind = device -o $kind = async ] && extra=--expect-device
    for np in $nps; do
        echo "== $kind buffers, $np ranks"
        NVF_TIMEOUT=${NVF_TIMEOUT:-300} nvf_gpu_run $np "$log" "$NVF_BUILD/test/gpu/gpu_allreduce" \
            --kind $kind --level $level $extra
        rc=$?
        [ $rc = 77 ] && nvf_skip "$(grep -m1 '^SKIPPED' "$log" | cut -c10-)"
        [ $rc = 0 ] || { failed="$failed $kind/$np"; echo "FAILED: $kind buffers on $np ranks (exit $rc)"; }
    done
done
[ -z "$failed" ] || nvf_fail "failed:$failed"
echo ok
