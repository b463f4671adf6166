#!/usr/bin/env bash
# The device stage's building blocks on a real GPU (test/gpu/gpu_blocks.c): driver and buffer
# classification, every kernel against the reference, flags, CUDA IPC and cross-process flag
# round trips, UUIDs; 2 ranks, then 4 ranks sharing the GPU(s).
. "$NVF_SRC/test/lib.sh"
. "$NVF_SRC/test/gpu/gpu_lib.sh"
nvf_gpu_require
log=$(mktemp)
trap 'rm -f "$log"' EXIT
quick=
[ "${NVF_QUICK:-0}" = 1 ] && quick=--quick
for np in 2 4; do
    echo "== $np ranks"
    NVF_TIMEOUT=${NVF_TIMEOUT:-240} nvf_gpu_run $np "$log" "$NVF_BUILD/test/gpu/gpu_blocks" $quick
    rc=$?
    [ $rc = 77 ] && nvf_skip "$(grep -m1 '^SKIPPED' "$log" | cut -c10-)"
    [ $rc = 0 ] || nvf_fail "gpu_blocks on $np ranks (exit $rc)"
    [ -n "$quick" ] && break
done
echo ok
