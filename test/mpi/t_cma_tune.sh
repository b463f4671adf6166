#!/usr/bin/env bash
# The single-copy path measured at run time (coll_nvfabric_cma_tune): measured once per process
# and node size, at the first call of 64 KiB or more, then reused by later communicators; from
# then on local rank 0 picks each call's path (the ranks agree, both paths run); the choice
# changes speed, never bits; a cma_min or cma_max set by the user is not measured over.
. "$NVF_SRC/test/lib.sh"
digest() { sed -n 's/.*digest \([0-9a-f]\{16\}\).*/\1/p' <<<"$1"; }
host=(--mca coll_nvfabric_host on)

# 1. 3 ranks (with 2 ranks a + b == b + a, so the order of a reduction could not show): the
# same bits with the window measured, with single copies forced from 1 KiB, and without them
over=("${host[@]}" --mca coll_nvfabric_cma_oversubscribed 1)
measured=$(nvf_mpirun 3 "${over[@]}" --mca coll_nvfabric_verbose 1 "$NVF_BUILD/test/mpi/bitwise" 2>&1) ||
    nvf_fail "bitwise, window measured: $measured"
grep -q 'single copies measured on 3 local ranks' <<<"$measured" || nvf_fail "not measured: $measured"
forced=$(nvf_mpirun 3 "${over[@]}" --mca coll_nvfabric_cma_min 1024 --mca coll_nvfabric_verbose 1 \
    "$NVF_BUILD/test/mpi/bitwise" 2>&1) || nvf_fail "bitwise, single copies forced: $forced"
grep -q 'single copies measured' <<<"$forced" && nvf_fail "measured although cma_min was set: $forced"
off=$(nvf_mpirun 3 "${host[@]}" --mca coll_nvfabric_cma 0 "$NVF_BUILD/test/mpi/bitwise" 2>&1) ||
    nvf_fail "bitwise, no single copies: $off"
d1=$(digest "$measured") d2=$(digest "$forced") d3=$(digest "$off")
echo "digests: measured $d1, forced $d2, off $d3"
[ -n "$d1" ] && [ "$d1" = "$d2" ] && [ "$d2" = "$d3" ] || nvf_fail "the single-copy choice changed the bits"

out=$(nvf_mpirun 2 "${host[@]}" --mca coll_nvfabric_cma_max 0 --mca coll_nvfabric_verbose 1 \
    "$NVF_BUILD/test/mpi/bitwise" 2>&1) || nvf_fail "bitwise, cma_max set: $out"
grep -q 'single copies measured' <<<"$out" && nvf_fail "measured although cma_max was set: $out"

# 2. 2 ranks, many calls of one size: local rank 0 picks each call's path, every rank runs the
# same one (the sequence of plans is the same on both ranks), both paths run (one call in 16
# tries the other), and every result is right (the benchmark checks each batch)
out=$(nvf_mpirun 2 "${host[@]}" --mca coll_nvfabric_verbose 2 "$NVF_BUILD/bench/nvf_allreduce_bench" \
    --modules nvfabric --min 1048576 --max 1048576 --reps 3 --time 0.05 2>&1) ||
    nvf_fail "benchmark on 2 ranks: $out"
grep -q 'single copies measured on 2 local ranks' <<<"$out" || nvf_fail "not measured on 2 ranks: $out"
plans() { grep -o " rank $1: 262144 x float sum: plan host:twoshot[+a-z]*" <<<"$out" | sed 's/.*plan //'; }
p0=$(plans 0) p1=$(plans 1)
n0=$(grep -c . <<<"$p0") ncma=$(grep -c '+cma' <<<"$p0")
echo "2 ranks: $n0 calls of 1 MiB, $ncma by single copies"
[ "$n0" -ge 32 ] || nvf_fail "only $n0 calls of 1 MiB seen: $out"
[ "$p0" = "$p1" ] || nvf_fail "the ranks ran different plans: $(diff <(echo "$p0") <(echo "$p1") | head)"
[ "$ncma" -ge 1 ] && [ "$ncma" -lt "$n0" ] || nvf_fail "not both paths ran ($ncma of $n0 by single copies)"
grep -v '^\[' <<<"$out" | awk '$1 == 1048576 && $9 == 0 {ok = 1} END {exit !ok}' ||
    nvf_fail "benchmark reports wrong results: $out"

# 3. several communicators, freed and re-created: measured once per process, then taken over
# by the later ones (every result checked by the stress program itself)
out=$(nvf_mpirun 2 "${host[@]}" --mca coll_nvfabric_verbose 1 "$NVF_BUILD/test/mpi/stress" 600 2>&1) ||
    nvf_fail "stress on 2 ranks: $out"
n=$(grep -c 'single copies measured on 2 local ranks' <<<"$out")
[ "$n" = 1 ] || nvf_fail "measured $n times, not once: $out"
grep -q 'single copies [a-z0-9 ]* (measured before on 2 local ranks)' <<<"$out" ||
    nvf_fail "later communicators measured again or said nothing: $out"
grep '^stress:' <<<"$out"
echo ok
