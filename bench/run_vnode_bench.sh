#!/usr/bin/env bash
# run_vnode_bench.sh: the inter-node stage on one machine: 4 ranks as 2 virtual nodes x 2 and as
# 4 x 1, nvfabric beside Open MPI's tuned in the same run, over TCP (UCX_TLS=tcp for nvfabric's
# inter-node stage, Open MPI's tcp BTL for tuned: both cross "nodes" through the network stack)
# and over shared memory (UCX shared-memory transports, Open MPI's vader BTL). The model(us)
# column is the cost model's prediction for the plans nvfabric ran, with the parameters
# bench/nvf_calibrate measured on the same layout and transport: calibration-<transport>-<layout>.conf
# (e.g. calibration-tcp-4x1.conf) in the calibration directory, where present (the model's
# defaults otherwise). On one machine the layouts share its cores, so the levels' measured
# speeds differ per layout: each is calibrated on its own. Host buffers are taken over at every
# size (host=on) so that the table measures the engine itself.
#   bench/run_vnode_bench.sh [build dir] [calibration directory (default: bench/results)]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
out=${NVF_RESULTS:-$src/bench/results}
cal=${2:-$src/bench/results}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The calibration's "name = value" lines as --mca options. Not mca_base_param_files: that
# replaces Open MPI's list of parameter files, and with it the system file (Debian's excludes
# pml ucx and mtl ofi: without it tuned ran over libfabric instead of the BTL named here).
run() { # name btl ucx_tls vnode
    local pf=() key value
    if [ -f "$cal/calibration-$1.conf" ]; then
        while IFS='=' read -r key value; do
            [ -n "$key" ] && [ "${key#\#}" = "$key" ] && pf+=(--mca "$key" "$value")
        done < <(sed 's/ *= */=/' "$cal/calibration-$1.conf")
    fi
    echo "== $1: 4 ranks, virtual nodes of $4, UCX_TLS=$3, Open MPI btl $2"
    OMPI_MCA_btl=$2 UCX_TLS=$3 mpirun --oversubscribe --bind-to none -np 4 -x UCX_TLS "${pf[@]}" \
        --mca coll_nvfabric_virtual_node_size "$4" --mca coll_nvfabric_host on "$build/bench/nvf_allreduce_bench" \
        --modules nvfabric,tuned --min 8 --max 16777216 --reps 5 --csv "$out/vnode-$1.csv" 2>&1 |
        grep -v '^\['
}
run tcp-2x2 tcp,self tcp 2
run tcp-4x1 tcp,self tcp 1
run sm-2x2 self,vader posix,sysv,cma,self 2
run sm-4x1 self,vader posix,sysv,cma,self 1
