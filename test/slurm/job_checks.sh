# test/slurm/job_checks.sh: sourced by the Slurm tests. Judges a finished batch job: its final
# state in Slurm, and what its programs printed (correct results, nvfabric's MPI_T counters).
# Each check prints one line saying what was wrong and returns 1, or returns 0 silently.
#
#   job_state JOBID                          "STATE EXITCODE" as slurmctld reports them
#   check_job_completed JOBID                state COMPLETED and exit code 0:0
#   check_probe_output FILE NRANKS NCALLS    pvar_probe's output: all results right, counters
#                                            account for every call (see check_counters)
#   check_bench_output FILE                  nvf_allreduce_bench's output: a full table, no WRONG
#   check_rank_counters FILE NRANKS NCALLS   the counters examples/slurm/nvf_counters.c printed
#                                            at MPI_Finalize, for every rank (see check_counters)
#   check_bind_output FILE NRANKS            nvf_bind_gpu_nic.sh (NVF_BIND_VERBOSE=1) ran for
#                                            every rank and each saw its own local rank
#
# NVF_EXPECT_HANDLED (default 1): also require that nvfabric's engine ran some of the calls
# itself (calls_handled > 0, bench "handled" column above 0%); 0: only that nvfabric saw them.
# shellcheck shell=bash
set -u

_field() { sed -n "s/^$2=//p" "$1" | tail -n 1; }

job_state() {
    local info
    info=$(slurm_cmd timeout 10 scontrol show job -o "$1" 2>/dev/null) || return 1
    echo "$(echo "$info" | sed -n 's/.* JobState=\([^ ]*\).*/\1/p') $(echo "$info" | sed -n 's/.* ExitCode=\([^ ]*\).*/\1/p')"
}

check_job_completed() {
    local s
    s=$(job_state "$1") || { echo "job $1: slurmctld does not know it"; return 1; }
    [ "$s" = "COMPLETED 0:0" ] || { echo "job $1: ended $s (want COMPLETED 0:0)"; return 1; }
}

# check_counters HANDLED DELEGATED NCALLS: nvfabric saw every call (it either ran it or handed
# it on), and, when NVF_EXPECT_HANDLED=1, ran at least one itself.
check_counters() {
    local handled=$1 delegated=$2 ncalls=$3
    if [ $((handled + delegated)) -lt "$ncalls" ]; then
        echo "nvfabric saw $((handled + delegated)) of $ncalls calls (handled $handled + delegated $delegated)"
        return 1
    fi
    if [ "${NVF_EXPECT_HANDLED:-1}" = 1 ] && [ "$handled" -eq 0 ]; then
        echo "nvfabric handled none of the calls (NVF_EXPECT_HANDLED=1; delegated $delegated)"
        return 1
    fi
}

check_probe_output() {
    local f=$1 nranks=$2 ncalls=$3 h d msg
    grep -q '^ranks=' "$f" || { echo "$f: no result line from pvar_probe"; return 1; }
    grep -qx "ranks=$nranks wrong_results=0" "$f" ||
        { echo "$f: want 'ranks=$nranks wrong_results=0', got '$(grep -m1 '^ranks=' "$f")'"; return 1; }
    grep -qx 'coll_nvfabric=absent' "$f" && { echo "$f: coll/nvfabric was not loaded in the job"; return 1; }
    h=$(_field "$f" coll_nvfabric_calls_handled)
    d=$(_field "$f" coll_nvfabric_calls_delegated)
    if [ -z "$h" ] || [ -z "$d" ]; then
        echo "$f: no nvfabric MPI_T counters"
        return 1
    fi
    msg=$(check_counters "$h" "$d" "$ncalls") || { echo "$f: $msg"; return 1; }
}

check_bind_output() {
    local f=$1 nranks=$2 r
    for ((r = 0; r < nranks; r++)); do
        grep -q "^nvf-bind: .* local rank $r: " "$f" ||
            { echo "$f: the GPU wrapper did not report local rank $r"; return 1; }
    done
}

check_rank_counters() {
    local f=$1 nranks=$2 ncalls=$3 r h d msg
    for ((r = 0; r < nranks; r++)); do
        grep -qx "rank $r: coll_nvfabric=absent" "$f" && { echo "$f: rank $r: coll/nvfabric not loaded"; return 1; }
        h=$(_field "$f" "rank $r: coll_nvfabric_calls_handled")
        d=$(_field "$f" "rank $r: coll_nvfabric_calls_delegated")
        if [ -z "$h" ] || [ -z "$d" ]; then
            echo "$f: rank $r printed no counters at MPI_Finalize (was nvf_counters preloaded?)"
            return 1
        fi
        msg=$(check_counters "$h" "$d" "$ncalls") || { echo "$f: rank $r: $msg"; return 1; }
    done
}

check_bench_output() {
    local f=$1 rows
    grep -q '^# nvf_allreduce_bench:' "$f" || { echo "$f: no benchmark header"; return 1; }
    grep -q 'WRONG' "$f" && { echo "$f: the benchmark saw wrong results: $(grep -m1 WRONG "$f")"; return 1; }
    rows=$(grep -cE '^ +[0-9]+ +[0-9]+ ' "$f")
    [ "$rows" -ge 1 ] || { echo "$f: no measurement rows"; return 1; }
    # a row: size count type op | nvfabric: time algbw busbw #wrong | ... | speed-ups handled% model
    # | line rtt (the handled share is the one field ending in %)
    if awk -F'|' '/^ +[0-9]+ +[0-9]+ / { split($2, a, " "); if (a[4] != 0) bad = 1 } END { exit !bad }' "$f"; then
        echo "$f: nonzero #wrong in nvfabric's column"
        return 1
    fi
    if [ "${NVF_EXPECT_HANDLED:-1}" = 1 ] &&
        ! awk '/^ +[0-9]+ +[0-9]+ / { for (i = 1; i <= NF; i++) if ($i ~ /%$/ && $i + 0 > 0) any = 1 }
            END { exit !any }' "$f"; then
        echo "$f: nvfabric handled none of the benchmark's calls (NVF_EXPECT_HANDLED=1)"
        return 1
    fi
}
