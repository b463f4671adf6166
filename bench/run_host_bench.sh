#!/usr/bin/env bash
# run_host_bench.sh: the host-buffer allreduce benchmark, nvfabric beside Open MPI's tuned, han
# and sm in the same run (each on its own communicator), on 2 and 4 ranks of this machine; one
# table per rank count with the ratio per size, plus this machine's memory-copy bandwidth.
# CSV files go to bench/results/ (or $NVF_RESULTS).
#   bench/run_host_bench.sh [build dir] [rank counts...]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
shift || true
nps=("$@")
[ ${#nps[@]} -eq 0 ] && nps=(2 4)
out=${NVF_RESULTS:-$src/bench/results}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for np in "${nps[@]}"; do
    echo "== $np ranks, host buffers ($(nproc) cores, $(date -u +%Y-%m-%d))"
    mpirun --oversubscribe --bind-to none -np "$np" "$build/bench/nvf_allreduce_bench" \
        --modules nvfabric,tuned,han,sm --min 8 --max 67108864 --reps 5 \
        --csv "$out/host-${np}ranks.csv" 2>&1 | grep -v '^\['
done
