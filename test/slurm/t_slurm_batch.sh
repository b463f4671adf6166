#!/usr/bin/env bash
# t_slurm_batch.sh: nvfabric under a real Slurm. Brings up a private one-node Slurm cluster on
# this machine (test/slurm/slurm_cluster.sh), submits examples/slurm/nvfabric_allreduce.sbatch
# with sbatch, unmodified, running pvar_probe (checked allreduces + MPI_T counters) and the
# benchmark (its counters printed at MPI_Finalize by examples/slurm/nvf_counters.c, preloaded),
# launched once by mpirun inside the allocation and once by `srun --mpi=pmix` (if
# this Slurm has the PMIx plugin), with 2 ranks and with 4 ranks on an overcommitted
# allocation. The GPU form, nvfabric_allreduce_gpu.sbatch, runs pvar_probe too, with its
# #SBATCH geometry overridden for this node and no GPU (its wrapper then binds nothing): that
# checks its plumbing, not GPUs. Checks every job's final state and output, then takes the
# cluster down.
#
# Skips when Slurm/munge are not installed or the test does not run as root, unless
# NVF_REQUIRE_SLURM=1 or CI is set (CI installs the packages: there it is a failure).
# NVF_SLURM_JOB_TIMEOUT: seconds all jobs together may take (default 150).
. "$NVF_SRC/test/lib.sh"
. "$NVF_SRC/test/slurm/slurm_cluster.sh"
. "$NVF_SRC/test/slurm/job_checks.sh"

batch_script="$NVF_SRC/examples/slurm/nvfabric_allreduce.sbatch"
gpu_script="$NVF_SRC/examples/slurm/nvfabric_allreduce_gpu.sbatch"
bind_script="$NVF_SRC/examples/slurm/nvf_bind_gpu_nic.sh"
probe="$NVF_BUILD/test/mpi/pvar_probe"
bench="$NVF_BUILD/bench/nvf_allreduce_bench"
probe_calls=3 # MPI_Allreduce calls pvar_probe makes that nvfabric must see (per rank)

required=0
[ "${NVF_REQUIRE_SLURM:-0}" = 1 ] && required=1
[ -n "${CI:-}" ] && [ "${CI}" != false ] && required=1

for f in "$batch_script" "$gpu_script" "$bind_script" "$probe" "$bench" "$NVF_STAGE_COMPDIR/mca_coll_nvfabric.so"; do
    [ -e "$f" ] || nvf_fail "missing $f (build first: test/run-tests.sh builds it)"
done
if ! slurm_cluster_check; then
    [ $required = 1 ] && nvf_fail "Slurm cannot run here: $NVF_SLURM_WHY"
    nvf_skip "$NVF_SLURM_WHY"
fi

# From here on, whatever happens, the cluster goes down and its folder goes away.
finish() {
    local rc=$?
    trap - EXIT
    slurm_cluster_stop || { echo "FAIL: Slurm/munge processes survived the test"; rc=1; }
    exit $rc
}
trap finish EXIT
trap 'echo "interrupted"; exit 1' INT TERM HUP

t0=$SECONDS
slurm_cluster_start || nvf_fail "Slurm did not start: $NVF_SLURM_WHY"

# The jobs find the component the way a user without root does: NVF_COMPONENT_PATH, read by the
# batch script. Nothing from this test's own component setup may leak into them.
unset OMPI_MCA_mca_base_component_path
export NVF_COMPONENT_PATH="$NVF_STAGE_COMPDIR"

# The benchmark's counters come from the PMPI wrapper of the examples, preloaded into its ranks.
counters_lib="$NVF_SLURM_TMP/jobs/libnvf_counters.so"
mpicc=$(dirname "$NVF_MPIRUN")/mpicc
[ -x "$mpicc" ] || mpicc=mpicc
"$mpicc" -shared -fPIC -o "$counters_lib" "$NVF_SRC/examples/slurm/nvf_counters.c" ||
    nvf_fail "cannot build examples/slurm/nvf_counters.c with $mpicc"
preload_mpirun="-x LD_PRELOAD=$counters_lib"
preload_srun="--export=ALL,LD_PRELOAD=$counters_lib"

launchers=(mpirun)
if slurm_cmd timeout 10 srun --mpi=list 2>&1 | grep -qw pmix; then
    launchers+=(srun)
else
    echo "NOTE: srun --mpi=pmix variant skipped: this Slurm has no PMIx plugin (srun --mpi=list:" \
        "$(slurm_cmd timeout 10 srun --mpi=list 2>&1 | tr '\n' ' '))"
fi

# submit NAME SCRIPT LAUNCHER SBATCH_OPTIONS... -- PROGRAM ARGS...: prints the job id
submit() {
    local name=$1 script=$2 launcher=$3
    shift 3
    local opts=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    slurm_cmd env NVF_LAUNCHER="$launcher" timeout 20 sbatch --parsable --job-name="$name" \
        --chdir="$NVF_SLURM_TMP/jobs" --output="$NVF_SLURM_TMP/jobs/$name.out" --time=3 \
        "${opts[@]}" "$script" "$@" | cut -d';' -f1
}

declare -A job_id job_kind job_ranks
for l in "${launchers[@]}"; do
    for spec in "probe 2" "probe 4 --overcommit" "bench 2"; do
        read -r kind n extra <<<"$spec"
        name="$l-$kind-$n"
        # shellcheck disable=SC2054  # the commas belong to the --modules value
        case $kind in
        probe) prog=("$probe") ;;
        bench) prog=("$bench" --modules nvfabric,tuned --max 1048576 --reps 3) ;;
        esac
        pm="" ps=""
        [ "$kind" = bench ] && pm=$preload_mpirun ps=$preload_srun
        # shellcheck disable=SC2086  # extra: sbatch options
        id=$(NVF_MPIRUN_ARGS=$pm NVF_SRUN_ARGS=$ps submit "$name" "$batch_script" "$l" \
            --nodes=1 --ntasks="$n" ${extra:-} -- "${prog[@]}") || nvf_fail "sbatch refused $name"
        [[ "$id" =~ ^[0-9]+$ ]] || nvf_fail "sbatch $name: no job id ($id)"
        job_id[$name]=$id job_kind[$name]=$kind job_ranks[$name]=$n
        echo "submitted $name as job $id"
    done
    # The GPU form on this GPU-less node: 2 ranks, one core each, no GPU; MPI over shared memory
    # (ob1, as for every test here: the UCX PML wants an RDMA device).
    name="$l-gpuform-probe-2"
    id=$(NVF_BIND_SCRIPT="$bind_script" NVF_BIND_VERBOSE=1 OMPI_MCA_osc=^ucx \
        submit "$name" "$gpu_script" "$l" --nodes=1 --ntasks-per-node=2 --cpus-per-task=1 \
        --gpus-per-node=0 -- "$probe") || nvf_fail "sbatch refused $name"
    [[ "$id" =~ ^[0-9]+$ ]] || nvf_fail "sbatch $name: no job id ($id)"
    job_id[$name]=$id job_kind[$name]=gpuform job_ranks[$name]=2
    echo "submitted $name as job $id"
done

# Wait, bounded, until every job has left the queue for good.
limit=${NVF_SLURM_JOB_TIMEOUT:-150}
wait_start=$SECONDS
while :; do
    pending=0
    for name in "${!job_id[@]}"; do
        case $(job_state "${job_id[$name]}") in
        PENDING* | RUNNING* | CONFIGURING* | COMPLETING* | SUSPENDED* | "") pending=$((pending + 1)) ;;
        esac
    done
    [ $pending = 0 ] && break
    if [ $((SECONDS - wait_start)) -ge "$limit" ]; then
        slurm_cmd squeue
        slurm_cluster_logs
        nvf_fail "$pending job(s) not finished after ${limit}s"
    fi
    sleep 1
done
echo "all jobs finished after $((SECONDS - wait_start))s"

failures=()
for name in $(printf '%s\n' "${!job_id[@]}" | sort); do
    out="$NVF_SLURM_TMP/jobs/$name.out"
    echo "==== $name (job ${job_id[$name]}: $(job_state "${job_id[$name]}"))"
    sed 's/^/    /' "$out" 2>/dev/null || echo "    (no output file $out)"
    why=$(check_job_completed "${job_id[$name]}") || { failures+=("$name: $why"); continue; }
    case ${job_kind[$name]} in
    probe) why=$(check_probe_output "$out" "${job_ranks[$name]}" "$probe_calls") ;;
    gpuform) why=$(check_probe_output "$out" 2 "$probe_calls" && check_bind_output "$out" 2) ;;
    bench) why=$(check_bench_output "$out" && check_rank_counters "$out" "${job_ranks[$name]}" 1) ;;
    esac || failures+=("$name: $why")
done

[ ${#launchers[@]} = 2 ] || echo "NOTE: only the mpirun variant ran (see the srun note above)"
echo "launchers: ${launchers[*]}; ${#job_id[@]} jobs; $((SECONDS - t0))s"
if [ ${#failures[@]} -gt 0 ]; then
    printf 'FAIL: %s\n' "${failures[@]}"
    slurm_cluster_logs
    exit 1
fi
echo "ok"
