# test/lib.sh: sourced by every test script. Sets up the environment that runs MPI programs
# through the freshly built, DESTDIR-staged component (found first on mca_base_component_path,
# ahead of any copy installed in Open MPI's own directory).
#
# Exit codes of a test script: 0 pass, 1 fail, 77 skipped (with the reason on stdout).

set -u
: "${NVF_SRC:?run through test/run-tests.sh}"
: "${NVF_BUILD:?run through test/run-tests.sh}"
NVF_COMPDIR=$(cd "$NVF_BUILD" && make -s print-compdir 2>/dev/null | tail -n1)
NVF_STAGE_COMPDIR="$NVF_BUILD/stage$NVF_COMPDIR"
export OMPI_MCA_mca_base_component_path="$NVF_STAGE_COMPDIR:$NVF_COMPDIR:$HOME/.openmpi/components"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Keep runs on one machine quiet and fast: no network probing by the BTLs.
export OMPI_MCA_btl="self,vader"
export OMPI_MCA_pml=ob1
NVF_MPIRUN=$(cd "$NVF_BUILD" && make -s print-mpirun 2>/dev/null | tail -n1)

# nvf_mpirun NP [mpirun options...] -- program args...
nvf_mpirun() {
    local np=$1
    shift
    timeout --kill-after=10 "${NVF_TIMEOUT:-300}" "$NVF_MPIRUN" --oversubscribe --bind-to none -np "$np" "$@"
}

nvf_fail() {
    echo "FAIL: $*"
    exit 1
}

nvf_skip() {
    echo "SKIPPED: $*"
    exit 77
}
