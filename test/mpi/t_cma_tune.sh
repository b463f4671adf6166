#!/usr/bin/env bash
# The single-copy window measured at run time (coll_nvfabric_cma_tune): measured once per
# process and node size, at the first call of 64 KiB or more, then reused by later
# communicators; the plans follow what was measured; the choice changes speed, never bits; a
# cma_min or cma_max set by the user is not measured over.
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

# 2. 2 ranks: every call's plan is the one the measured window gives its size
out=$(nvf_mpirun 2 "${host[@]}" --mca coll_nvfabric_verbose 2 "$NVF_BUILD/test/mpi/bitwise" 2>&1) ||
    nvf_fail "bitwise on 2 ranks: $out"
window=$(grep -o 'single copies measured on 2 local ranks.* used [a-z0-9 ]* bytes\|used never' <<<"$out" | head -n1)
[ -n "$window" ] || nvf_fail "no window measured on 2 ranks: $out"
echo "2 ranks: $window"
read -r lo hi < <(sed -n 's/.* used from \([0-9]*\) to \([0-9]*\) bytes.*/\1 \2/p; s/.* used from \([0-9]*\) bytes.*/\1 0/p; s/.* used never.*/-1 -1/p' <<<"$window")
bad=$(awk -v lo="$lo" -v hi="$hi" '
    / rank 0: [0-9]+ x (float|double) [a-z]+: plan host:twoshot/ {
        for (i = 1; i <= NF; i++) if ($i == "x") { n = $(i - 1); t = $(i + 1) }
        bytes = n * (t == "float" ? 4 : 8)
        want = lo >= 0 && bytes >= lo && (hi == 0 || bytes <= hi)
        got = ($0 ~ /plan host:twoshot\+cma,/)
        checked++
        if (want != got) print bytes " B: " $0
    }
    END { if (checked == 0) print "no two-shot call seen" }' <<<"$out")
[ -z "$bad" ] || nvf_fail "plans do not follow the measured window ($lo..$hi): $bad"

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
