#!/usr/bin/env bash
# run_vnode_calibration.sh: bench/nvf_calibrate on the four layouts of run_vnode_bench.sh (4 ranks
# as 2 virtual nodes x 2 and as 4 x 1, over UCX_TLS=tcp and over UCX's shared-memory transports),
# each with the environment the benchmark gives it, writing calibration-<transport>-<layout>.conf
# into the calibration directory, where run_vnode_bench.sh reads them.
#   bench/run_vnode_calibration.sh [build dir] [calibration directory (default: bench/results)]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
cal=${2:-$src/bench/results}
mkdir -p "$cal"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
calibrate() { # name btl ucx_tls vnode
    echo "== $1: 4 ranks, virtual nodes of $4, UCX_TLS=$3, Open MPI btl $2"
    OMPI_MCA_btl=$2 UCX_TLS=$3 mpirun --oversubscribe --bind-to none -np 4 -x UCX_TLS \
        --mca coll_nvfabric_virtual_node_size "$4" --mca coll_nvfabric_host on \
        "$build/bench/nvf_calibrate" --out "$cal/calibration-$1.conf" 2>&1 | grep -v '^\['
}
calibrate tcp-2x2 tcp,self tcp 2
calibrate tcp-4x1 tcp,self tcp 1
calibrate sm-2x2 self,vader posix,sysv,cma,self 2
calibrate sm-4x1 self,vader posix,sysv,cma,self 1
