#!/usr/bin/env bash
# quickstart.sh: set nvfabric up on a fresh Debian 12 machine and run the main job.
#
#   1. installs the Debian packages the build and the tests need (apt-get, as root or via sudo);
#   2. builds in ./build (autogen, configure --enable-werror, make) and installs the component
#      into Open MPI's component directory (as root) or ~/.openmpi/components (otherwise);
#   3. runs the allreduce benchmark on 4 ranks of this machine through the installed component,
#      beside Open MPI's own tuned, han and sm modules in the same run.
#
#   ./quickstart.sh [--no-bench]        --no-bench: stop after installing (used by CI)
set -euo pipefail
cd "$(dirname "$0")"
src=$(pwd)
bench=1
[ "${1:-}" = --no-bench ] && bench=0

packages=(build-essential autoconf automake libtool pkg-config
    libopenmpi-dev openmpi-bin libucx-dev ucx-utils libhwloc-dev
    valgrind clang-format
    slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge iproute2 procps)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing: ${missing[*]}"
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The CUDA toolkit is optional: configure builds the device stage if nvcc is on PATH.

echo "== building in $src/build"
[ -x configure ] || ./autogen.sh
mkdir -p build
cd build
confargs=(--enable-werror)
if [ "$(id -u)" -ne 0 ]; then
    mkdir -p "$HOME/.openmpi/components"
    confargs+=(--with-ompi-component-dir="$HOME/.openmpi/components")
fi
[ -f Makefile ] || "$src/configure" "${confargs[@]}" | tail -n 9
make -j"$(nproc)" >/dev/null
make -j"$(nproc)" check-programs-build >/dev/null
make install >/dev/null
compdir=$(make -s print-compdir | tail -n1)
echo "== installed $compdir/mca_coll_nvfabric.so"
ompi_info | grep 'MCA coll: nvfabric' || { echo "ompi_info does not list the component"; exit 1; }

[ $bench = 1 ] || exit 0
echo "== benchmark: 4 ranks on this machine, nvfabric beside Open MPI's tuned, han and sm"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun --oversubscribe --bind-to none -np 4 ./bench/nvf_allreduce_bench \
    --modules nvfabric,tuned,han,sm --min 8 --max 67108864 --reps 5
