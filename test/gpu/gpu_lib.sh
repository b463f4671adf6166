# test/gpu/gpu_lib.sh: sourced by the GPU test scripts after test/lib.sh: skips (exit 77, with the
# reason) where there is no GPU or no device stage, and builds the GPU programs on demand.
nvf_gpu_require() {
    command -v nvidia-smi >/dev/null 2>&1 || nvf_skip "no GPU: nvidia-smi not found"
    nvidia-smi -L 2>/dev/null | grep -q '^GPU ' || nvf_skip "no GPU: nvidia-smi lists no device"
    grep -q '^#define NVF_HAVE_CUDA 1' "$NVF_BUILD/nvf_config.h" 2>/dev/null ||
        nvf_skip "built without the CUDA toolkit (configure found no nvcc)"
    make -C "$NVF_BUILD" -s gpu-programs >/dev/null 2>"$NVF_BUILD/gpu-programs.err" ||
        { cat "$NVF_BUILD/gpu-programs.err"; nvf_fail "make gpu-programs failed"; }
}

# nvf_gpu_run NP LOG program args...: 0 pass, 77 skipped (the program said SKIPPED), else fail.
nvf_gpu_run() {
    local np=$1 log=$2
    shift 2
    nvf_mpirun "$np" --mca coll_nvfabric_cuda 1 "$@" >"$log" 2>&1
    local rc=$?
    cat "$log"
    grep -q '^SKIPPED' "$log" && return 77
    return $rc
}
