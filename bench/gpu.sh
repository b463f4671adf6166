#!/usr/bin/env bash
# bench/gpu.sh: the one prepared script for a lent GPU machine (see ../shared/GPU-MACHINE.md):
# unpacks Open MPI and its dependencies from the Debian packages in .gpu-root/debs into a scratch
# folder, builds nvfabric against them for sm_90, runs the device stage's unit tests, the GPU tests
# and the GPU benchmark, and writes a summary table and every log under $OUT, with the card, the
# driver and the date. Steps run in order of importance, each under a timeout, and the whole run
# stays inside a deadline (NVF_GPU_DEADLINE seconds, default 360), skipping what no longer fits.
# Without a GPU the GPU steps say SKIPPED: run it on the build machine first.
#
#   bench/gpu.sh --prepare   build machine: fetch the .debs if missing and pack the generated
#                            autotools files into .gpu-root/gen.tar (the GPU machine may lack
#                            autoconf); then carry .gpu-root with the working tree
#   bench/gpu.sh             GPU machine (or a dry run here): OUT (default ./gpu-out),
#                            NVF_GPU_WORK (scratch, default /tmp/nvf-gpu), NVF_GPU_GENCODE,
#                            NVF_GPU_NO_AUTOTOOLS=1 (use gen.tar even where autoreconf exists)
#
# Must not install anything outside NVF_GPU_WORK and OUT, nor touch the machine's GPU settings.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
DEBS="$SRC/.gpu-root/debs"
GEN="$SRC/.gpu-root/gen.tar"
PKGS="openmpi-bin libopenmpi3 libopenmpi-dev openmpi-common libucx0 libhwloc15 libhwloc-plugins
  libpmix2 libevent-core-2.1-7 libevent-pthreads-2.1-7 libfabric1 libpsm2-2 libpsm-infinipath1
  libibverbs1 ibverbs-providers librdmacm1 libnl-3-200 libnl-route-3-200 libmunge2 libnuma1"
GENERATED="configure aclocal.m4 Makefile.in nvf_config.h.in config/aux config/libtool.m4
  config/ltoptions.m4 config/ltsugar.m4 config/ltversion.m4 config/lt~obsolete.m4"

# A digest of what the generated files are made from.
gen_stamp() {
    (cd "$SRC" && cat configure.ac Makefile.am $(ls */Makefile.inc */*/Makefile.inc 2>/dev/null) \
        $(ls config/nvf_*.m4) | sha256sum | cut -c1-16)
}

if [ "${1:-}" = "--prepare" ]; then
    mkdir -p "$DEBS"
    if [ "$(ls "$DEBS"/*.deb 2>/dev/null | wc -l)" -lt 20 ]; then
        (cd "$DEBS" && apt-get download $PKGS) || { echo "apt-get download failed"; exit 1; }
    fi
    (cd "$SRC" && ./autogen.sh) || exit 1
    (cd "$SRC" && tar -cf "$GEN" $GENERATED) || exit 1
    gen_stamp >"$GEN.stamp"
    echo "prepared: $(ls "$DEBS" | wc -l) packages, $GEN ($(du -h "$GEN" | cut -f1)), stamp $(cat "$GEN.stamp")"
    echo "carry .gpu-root with the working tree, then run bench/gpu.sh there"
    exit 0
fi

OUT=${OUT:-$PWD/gpu-out}
WORK=${NVF_GPU_WORK:-/tmp/nvf-gpu}
DEADLINE=${NVF_GPU_DEADLINE:-360}
GENCODE=${NVF_GPU_GENCODE:--gencode arch=compute_90,code=sm_90}
JOBS=$(nproc 2>/dev/null || echo 4)
mkdir -p "$OUT" "$WORK"
exec > >(tee "$OUT/gpu.log") 2>&1
TEE_PID=$!
# Ends the run once tee has written the log's last lines.
finish() {
    exec >&- 2>&-
    wait "$TEE_PID" 2>/dev/null
    exit "$1"
}
START=$SECONDS
SUMMARY="$OUT/summary.md"
: >"$OUT/steps.txt"

left() { echo $((DEADLINE - (SECONDS - START))); }
# step NAME LIMIT_S NEEDS_S command...: runs the command with its output in $OUT/NAME.log, under
# min(LIMIT, time left); skipped when less than NEEDS is left. Records the outcome.
step() {
    local name=$1 limit=$2 needs=$3
    shift 3
    local l
    l=$(left)
    if [ "$l" -lt "$needs" ]; then
        echo "SKIP  $name: ${l}s left, needs ${needs}s"
        printf '%s|skipped (out of time)|0|\n' "$name" >>"$OUT/steps.txt"
        return 99
    fi
    [ "$limit" -gt "$l" ] && limit=$l
    echo "----- $name (limit ${limit}s, ${l}s left)"
    local t0=$SECONDS
    # through bash: the steps are mostly this script's (exported) functions
    timeout --kill-after=10 "$limit" bash -c '"$@"' step "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    local dt=$((SECONDS - t0)) status
    case $rc in
    0) status=pass ;;
    77) status="skipped: $(grep -m1 'SKIPPED' "$OUT/$name.log" | sed 's/.*SKIPPED: *//')" ;;
    124 | 137) status="TIMEOUT after ${limit}s" ;;
    *) status="FAIL (exit $rc)" ;;
    esac
    echo "$status ($dt s): $name"
    tail -n 25 "$OUT/$name.log" | sed 's/^/    | /'
    printf '%s|%s|%s|%s.log\n' "$name" "$status" "$dt" "$name" >>"$OUT/steps.txt"
    return $rc
}

# ---- the machine ---------------------------------------------------------------------------
# decided here, not inside the block below: the first part of a pipeline runs in a subshell
have_gpu=0
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU ' && have_gpu=1
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "host: $(uname -srm)"
    if [ $have_gpu = 1 ]; then
        nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_cap,pci.bus_id \
            --format=csv
        nvidia-smi -L
        nvidia-smi topo -m 2>/dev/null
        # kernels of different processes share the GPU by time slices unless MPS runs
        nvidia-smi -q -d COMPUTE 2>/dev/null | grep -i 'compute mode'
        pgrep -l nvidia-cuda-mps >/dev/null 2>&1 && echo "MPS: running" || echo "MPS: not running"
    else
        echo "no GPU (nvidia-smi missing or lists no device): GPU steps will be skipped"
    fi
    command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -n 2
    gcc --version | head -n 1
    echo "cpus: $JOBS"
} | tee "$OUT/machine.txt"
CARD=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)

# ---- Open MPI from the packages, relocated -------------------------------------------------
R="$WORK/root"
unpack() {
    rm -rf "$R" && mkdir -p "$R" || return 1
    local n=0
    for f in "$DEBS"/*.deb; do
        [ -e "$f" ] || { echo "no packages in $DEBS (run bench/gpu.sh --prepare first)"; return 1; }
        if command -v dpkg >/dev/null 2>&1; then
            dpkg -x "$f" "$R" || return 1
        else
            local data
            data=$(ar t "$f" | grep '^data\.tar') || return 1
            case $data in
            *.xz) ar p "$f" "$data" | tar -xJ -C "$R" ;;
            *.zst) ar p "$f" "$data" | zstd -dc | tar -x -C "$R" ;;
            *.gz) ar p "$f" "$data" | tar -xz -C "$R" ;;
            *) ar p "$f" "$data" | tar -x -C "$R" ;;
            esac || return 1
        fi
        n=$((n + 1))
    done
    # Debian's mpirun/mpicc are update-alternatives links that dpkg -x does not make
    ln -sf orterun "$R/usr/bin/mpirun"
    ln -sf orterun "$R/usr/bin/mpiexec"
    ln -sf mpicc.openmpi "$R/usr/bin/mpicc"
    echo "unpacked $n packages into $R"
}
export R DEBS SRC GEN GENERATED GENCODE JOBS OUT
export -f unpack gen_stamp
step unpack 60 20 unpack || echo "cannot unpack Open MPI"
export OPAL_PREFIX=$R/usr PATH=$R/usr/bin:$PATH
export LD_LIBRARY_PATH=$R/usr/lib/x86_64-linux-gnu:$R/usr/lib/x86_64-linux-gnu/openmpi/lib:$R/usr/lib/x86_64-linux-gnu/pmix2/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPAL_LIBDIR=$R/usr/lib/x86_64-linux-gnu/openmpi/lib
export OMPI_MCA_mca_base_component_path=$R/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
export PMIX_MCA_mca_base_component_path=$R/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# nvcc: PATH first, then the usual toolkit folders (configure takes the first nvcc on PATH)
if ! command -v nvcc >/dev/null 2>&1; then
    for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
        [ -x "$d/nvcc" ] && { export PATH=$PATH:$d; break; }
    done
fi

check_ldd() {
    local bad=0
    for f in "$R/usr/lib/x86_64-linux-gnu/libmpi.so.40" "$R/usr/bin/orterun" \
        "$R/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_pml_ob1.so" \
        "$R/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_btl_vader.so" "$@"; do
        [ -e "$f" ] || { echo "missing: $f"; bad=1; continue; }
        local nf
        nf=$(ldd "$f" 2>&1 | grep 'not found')
        if [ -n "$nf" ]; then
            echo "$f:"
            echo "$nf"
            bad=1
        fi
    done
    [ $bad = 0 ] && echo "no unresolved libraries"
    return $bad
}
export -f check_ldd
step ldd-mpi 30 5 check_ldd
step mpi-hello 60 20 bash -c 'orterun --oversubscribe -np 2 hostname && ompi_info | head -n 5'

# ---- build ---------------------------------------------------------------------------------
B="$WORK/build"
generated() {
    cd "$SRC" || return 1
    if [ -x configure ] && [ ! -f "$GEN.stamp" -o "$(gen_stamp)" = "$(cat "$GEN.stamp" 2>/dev/null)" ]; then
        echo "configure present"
        return 0
    fi
    if [ -z "${NVF_GPU_NO_AUTOTOOLS:-}" ] && command -v autoreconf >/dev/null 2>&1 &&
        command -v libtoolize >/dev/null 2>&1; then
        ./autogen.sh
        return
    fi
    [ -f "$GEN" ] || { echo "no autotools here and no $GEN (run bench/gpu.sh --prepare)"; return 1; }
    [ "$(gen_stamp)" = "$(cat "$GEN.stamp" 2>/dev/null)" ] ||
        echo "warning: $GEN was made from other build files than these (rerun --prepare)"
    tar -xf "$GEN" || return 1
    # newer than their sources, in dependency order, so that make does not try to regenerate them
    touch aclocal.m4 && sleep 1 && touch configure config/aux/* && sleep 1 &&
        touch Makefile.in nvf_config.h.in
    echo "generated files from $GEN"
}
build() {
    rm -rf "$B" && mkdir -p "$B" && cd "$B" || return 1
    "$SRC/configure" --with-ompi="$R/usr/lib/x86_64-linux-gnu/openmpi" NVCC_GENCODE="$GENCODE" \
        >configure.out 2>&1 || { tail -n 40 configure.out; return 1; }
    tail -n 9 configure.out
    # configure only warns without a usable toolkit; here that would waste the lease
    grep -q '^#define NVF_HAVE_CUDA 1' nvf_config.h ||
        { echo "configure found no usable CUDA toolkit:"; grep -iA3 'nvcc' config.log | tail -n 30; return 1; }
    make -j"$JOBS" >make.out 2>&1 || { grep -B2 -A8 -m5 'error' make.out; return 1; }
    make -j"$JOBS" gpu-programs check-programs-build >>make.out 2>&1 ||
        { grep -B2 -A8 -m5 'error' make.out; return 1; }
    make install DESTDIR="$B/stage" >>make.out 2>&1 || return 1
    echo "built and staged: $(find "$B/stage" -name mca_coll_nvfabric.so)"
}
# The component and the GPU programs resolve every library; the component needs no CUDA library.
ldd_component() {
    local so
    so=$(find "$B/stage" -name mca_coll_nvfabric.so | head -n 1)
    check_ldd "$so" "$B/test/gpu/gpu_blocks" "$B/test/gpu/gpu_allreduce" "$B/bench/nvf_gpu_bench" ||
        return 1
    readelf -d "$so" | grep NEEDED
    ! readelf -d "$so" | grep -Eiq 'NEEDED.*(libcuda|libcudart)'
}
# The device stage's unit tests (mock driver and, where one is present, the real driver).
unit_cuda() {
    make -C "$B" -s check TESTS="$(make -C "$B" -s print-cuda-unit-tests)"
}
export B
export -f generated build ldd_component unit_cuda
step autotools 90 30 generated && step build 240 60 build
built=$([ -f "$B/.libs/mca_coll_nvfabric.so" ] && echo 1 || echo 0)
[ "$built" = 1 ] && step ldd-component 30 5 ldd_component

# ---- tests and benchmark, most important first --------------------------------------------
export NVF_SRC=$SRC NVF_BUILD=$B
# mpirun as the test scripts run it (test/lib.sh: the staged component first on the path).
mpirun_gpu() { # np program args...
    local np=$1
    shift
    . "$SRC/test/lib.sh" && NVF_TIMEOUT=600 nvf_mpirun "$np" --mca coll_nvfabric_cuda 1 "$@"
}
export -f mpirun_gpu
if [ "$built" = 1 ]; then
    step unit-cuda 90 20 unit_cuda
    step gpu-blocks-2 120 30 mpirun_gpu 2 "$B/test/gpu/gpu_blocks" --quick
    step allreduce-device-2 90 30 mpirun_gpu 2 "$B/test/gpu/gpu_allreduce" --kind device --level quick
    # the CUDA IPC path (off by default until this run checks it)
    step allreduce-ipc-2 90 30 mpirun_gpu 2 --mca coll_nvfabric_cuda_ipc true \
        "$B/test/gpu/gpu_allreduce" --kind device --level quick
    step bench-2 150 60 mpirun_gpu 2 "$B/bench/nvf_gpu_bench" --max $((256 << 20)) \
        --csv "$OUT/bench-2.csv"
    step bench-2-ipc 120 60 mpirun_gpu 2 --mca coll_nvfabric_cuda_ipc true \
        "$B/bench/nvf_gpu_bench" --max $((256 << 20)) --paths nvfabric,d2d --csv "$OUT/bench-2-ipc.csv"
    if [ -f "$OUT/bench-2.log" ] && ! grep -q '^ *268435456' "$OUT/bench-2.log" && [ $have_gpu = 1 ]; then
        # nvfabric's path died or hung: keep at least the baselines
        step bench-2-baselines 120 60 mpirun_gpu 2 "$B/bench/nvf_gpu_bench" --paths staged,d2d \
            --csv "$OUT/bench-2-baselines.csv"
    fi
    for kind in pinned managed async; do
        step allreduce-$kind-2 90 30 mpirun_gpu 2 "$B/test/gpu/gpu_allreduce" --kind $kind --level quick
    done
    step gpu-blocks-4 120 40 mpirun_gpu 4 "$B/test/gpu/gpu_blocks" --quick
    step allreduce-device-3 90 40 mpirun_gpu 3 "$B/test/gpu/gpu_allreduce" --kind device --level quick
    step bench-4 120 70 mpirun_gpu 4 "$B/bench/nvf_gpu_bench" --max $((64 << 20)) --csv "$OUT/bench-4.csv"
    if command -v compute-sanitizer >/dev/null 2>&1; then
        step sanitizer-kernels 120 60 compute-sanitizer --tool memcheck --error-exitcode 1 \
            "$B/test/gpu/gpu_blocks" --quick --section kernels
    fi
fi

# ---- summary -------------------------------------------------------------------------------
{
    echo "# nvfabric GPU run"
    echo
    echo "- card / driver: ${CARD:-none}"
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'), $(left)s of the ${DEADLINE}s deadline left"
    echo "- source: $(cd "$SRC" && git rev-parse --short HEAD 2>/dev/null || echo '?')$(cd "$SRC" && git status --porcelain 2>/dev/null | grep -q . && echo ' (with local changes)')"
    echo "- build: $GENCODE"
    echo
    echo "| step | result | s | log |"
    echo "| --- | --- | --- | --- |"
    awk -F'|' '{ printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }' "$OUT/steps.txt"
    for f in gpu-blocks-2 gpu-blocks-4; do
        [ -f "$OUT/$f.log" ] || continue
        echo
        echo "## $f"
        echo '```'
        grep -E '^\[|^  |gpu_blocks:|SKIPPED' "$OUT/$f.log" | grep -Ev 'Process name|Exit code'

        echo '```'
    done
    for f in bench-2 bench-2-ipc bench-2-baselines bench-4; do
        [ -f "$OUT/$f.log" ] || continue
        echo
        echo "## $f"
        echo '```'
        grep -E '^#|^ *[0-9]+ ' "$OUT/$f.log"
        echo '```'
    done
    for f in "$OUT"/allreduce-*.log; do
        [ -f "$f" ] && grep -h '^gpu_allreduce:' "$f" | sed "s|^|- $(basename "$f" .log): |"
    done
} >"$SUMMARY"
cp -f "$B/config.log" "$OUT/config.log" 2>/dev/null
cat "$SUMMARY"
echo "total $((SECONDS - START)) s; logs in $OUT"
grep -q 'FAIL\|TIMEOUT' "$OUT/steps.txt" && finish 1
finish 0
