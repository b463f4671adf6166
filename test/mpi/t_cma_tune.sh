#!/usr/bin/env bash
# The single-copy path measured at run time (coll_nvfabric_cma_tune): measured once per process
# and node size, at the first call of 64 KiB or more, then reused by later communicators; from
# then on local rank 0 picks each call's path (the ranks agree, every path runs: the segment,
# single copies, the segment in large blocks); the choice changes speed, never bits; a cma_min or
# cma_max set by the user is not measured over. Without single copies (more ranks than CPUs) the
# live choice is between the block sizes.
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
# (large blocks of 384 KiB, allowed from 3 MiB: bitwise's largest calls, 4 and 8 MB, qualify)
off=$(nvf_mpirun 3 "${host[@]}" --mca coll_nvfabric_cma 0 --mca coll_nvfabric_shm_block_large 393216 \
    --mca coll_nvfabric_verbose 2 "$NVF_BUILD/test/mpi/bitwise" 2>&1) ||
    nvf_fail "bitwise, no single copies: $off"
grep -q 'plan host:twoshot+large' <<<"$off" || nvf_fail "bitwise: no call in large blocks"
small=$(nvf_mpirun 3 "${host[@]}" --mca coll_nvfabric_cma 0 --mca coll_nvfabric_shm_block_large 0 \
    "$NVF_BUILD/test/mpi/bitwise" 2>&1) || nvf_fail "bitwise, no single copies, no large blocks: $small"
d1=$(digest "$measured") d2=$(digest "$forced") d3=$(digest "$off") d4=$(digest "$small")
echo "digests: measured $d1, forced $d2, off $d3, no large blocks $d4"
[ -n "$d1" ] && [ "$d1" = "$d2" ] && [ "$d2" = "$d3" ] && [ "$d3" = "$d4" ] ||
    nvf_fail "the choice of path or block size changed the bits"

out=$(nvf_mpirun 2 "${host[@]}" --mca coll_nvfabric_cma_max 0 --mca coll_nvfabric_verbose 1 \
    "$NVF_BUILD/test/mpi/bitwise" 2>&1) || nvf_fail "bitwise, cma_max set: $out"
grep -q 'single copies measured' <<<"$out" && nvf_fail "measured although cma_max was set: $out"

# 2. 2 ranks, many calls of one size (8 MiB: large blocks need 8 of them): local rank 0 picks
# each call's path, every rank runs the same one (the sequence of plans is the same on both
# ranks), all three paths run (the large blocks, unmeasured, first; then one call in 16 tries
# another, the two others in turn), and every result is right (the benchmark checks each batch)
out=$(nvf_mpirun 2 "${host[@]}" --mca coll_nvfabric_verbose 2 "$NVF_BUILD/bench/nvf_allreduce_bench" \
    --modules nvfabric --min 8388608 --max 8388608 --reps 3 --time 0.1 2>&1) ||
    nvf_fail "benchmark on 2 ranks: $out"
grep -q 'single copies measured on 2 local ranks' <<<"$out" || nvf_fail "not measured on 2 ranks: $out"
plans() { grep -o " rank $1: 2097152 x float sum: plan host:twoshot[+a-z]*" <<<"$out" | sed 's/.*plan //'; }
p0=$(plans 0) p1=$(plans 1)
n0=$(grep -c . <<<"$p0") ncma=$(grep -c '+cma' <<<"$p0") nlarge=$(grep -c '+large' <<<"$p0")
echo "2 ranks: $n0 calls of 8 MiB, $ncma by single copies, $nlarge in large blocks"
[ "$n0" -ge 32 ] || nvf_fail "only $n0 calls of 8 MiB seen: $out"
[ "$p0" = "$p1" ] || nvf_fail "the ranks ran different plans: $(diff <(echo "$p0") <(echo "$p1") | head)"
[ "$ncma" -ge 1 ] && [ "$nlarge" -ge 1 ] && [ $((ncma + nlarge)) -lt "$n0" ] ||
    nvf_fail "not every path ran ($ncma of $n0 by single copies, $nlarge in large blocks)"
grep -v '^\[' <<<"$out" | awk '$1 == 8388608 && $9 == 0 {ok = 1} END {exit !ok}' ||
    nvf_fail "benchmark reports wrong results: $out"

# 2b. 4 ranks on this machine's CPUs (more ranks than CPUs: no single copies): the live choice
# between the block sizes (8 MiB calls), the same plans on every rank, both sizes run (the
# unmeasured one first), results right
out=$(nvf_mpirun 4 "${host[@]}" --mca coll_nvfabric_verbose 2 "$NVF_BUILD/bench/nvf_allreduce_bench" \
    --modules nvfabric --min 8388608 --max 8388608 --reps 3 --time 0.1 2>&1) ||
    nvf_fail "benchmark on 4 ranks: $out"
grep -q 'blocks of 262144 or 1048576 bytes chosen live' <<<"$out" ||
    nvf_fail "4 ranks: no live choice of block size announced: $(grep 'engine ready' <<<"$out" | head -1)"
plans() { grep -o " rank $1: 2097152 x float sum: plan host:twoshot[+a-z]*" <<<"$out" | sed 's/.*plan //'; }
p0=$(plans 0)
n0=$(grep -c . <<<"$p0") nlarge=$(grep -c '+large' <<<"$p0")
echo "4 ranks: $n0 calls of 8 MiB, $nlarge in large blocks"
[ "$n0" -ge 16 ] || nvf_fail "only $n0 calls of 8 MiB seen on 4 ranks: $out"
for r in 1 2 3; do
    [ "$(plans $r)" = "$p0" ] || nvf_fail "ranks 0 and $r ran different plans"
done
[ "$nlarge" -ge 1 ] && [ "$nlarge" -lt "$n0" ] ||
    nvf_fail "not both block sizes ran on 4 ranks ($nlarge of $n0 in large blocks)"
grep -v '^\[' <<<"$out" | awk '$1 == 8388608 && $9 == 0 {ok = 1} END {exit !ok}' ||
    nvf_fail "benchmark reports wrong results on 4 ranks: $out"

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
