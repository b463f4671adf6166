#!/usr/bin/env bash
# Nothing of nvfabric's is left in /dev/shm: after a normal run, and after one rank is killed
# with SIGKILL in the middle of a run (segments are unlinked as soon as every local rank has
# mapped them). Then a /dev/shm too small for the segment with large slots (a private mount of
# 12 MiB, where root may make one): the usual slots, said so, the same result bits.
. "$NVF_SRC/test/lib.sh"
leftovers() { ls /dev/shm 2>/dev/null | grep '^nvfabric-' || true; }
before=$(leftovers)
[ -z "$before" ] || echo "note: leftovers from elsewhere before the test: $before"

nvf_mpirun 4 --mca coll_nvfabric_host on "$NVF_BUILD/test/mpi/stress" 300 || nvf_fail "normal run failed"
after=$(leftovers)
[ "$after" = "$before" ] || nvf_fail "segments left after a normal run: $after"

# a long run; kill one rank once calls are flowing
nvf_mpirun 4 --mca coll_nvfabric_host on "$NVF_BUILD/test/mpi/stress" 1000000 >"$NVF_BUILD/kill.log" 2>&1 &
job=$!
victim=""
for _ in $(seq 1 100); do
    sleep 0.2
    victim=$(pgrep -f "test/mpi/stress 1000000" | grep -v "^$job\$" | while read -r p; do
        [ "$(ps -o comm= -p "$p")" = stress ] && echo "$p"; done | head -1)
    [ -n "$victim" ] && break
done
[ -n "$victim" ] || { kill $job; nvf_fail "stress ranks did not start"; }
sleep 2
kill -9 "$victim"
wait $job
echo "mpirun exited with $? after rank pid $victim was killed"
sleep 1
pgrep -f "test/mpi/stress 1000000" && { pkill -9 -f "test/mpi/stress 1000000"; nvf_fail "ranks left running"; }
after=$(leftovers)
[ "$after" = "$before" ] || nvf_fail "segments left after a killed rank: $after"

small_shm() { # $1: tmpfs size; the rest: mpirun arguments
    local size=$1
    shift
    unshare -m sh -c 'mount -t tmpfs -o size="$0" tmpfs /dev/shm && exec "$@"' "$size" \
        timeout 120 "$NVF_MPIRUN" --oversubscribe --bind-to none "$@"
}
if unshare -m sh -c 'mount -t tmpfs -o size=1m tmpfs /dev/shm' 2>/dev/null; then
    args=(-np 2 --mca coll_nvfabric_host on --mca coll_nvfabric_verbose 1 "$NVF_BUILD/test/mpi/bitwise")
    tight=$(small_shm 12m "${args[@]}" 2>&1) || nvf_fail "2 ranks, /dev/shm of 12 MiB: $tight"
    roomy=$(small_shm 64m "${args[@]}" 2>&1) || nvf_fail "2 ranks, /dev/shm of 64 MiB: $roomy"
    grep -q 'no room for a segment with 1048576-byte slots' <<<"$tight" ||
        nvf_fail "12 MiB: the fallback to the usual slots not said: $(grep 'engine ready' <<<"$tight" | head -1)"
    grep -q 'blocks of 262144 or 1048576 bytes chosen live' <<<"$tight" &&
        nvf_fail "12 MiB: large blocks announced without their segment"
    grep -q 'blocks of 262144 or 1048576 bytes chosen live' <<<"$roomy" ||
        nvf_fail "64 MiB: no large blocks: $(grep 'engine ready' <<<"$roomy" | head -1)"
    d1=$(sed -n 's/.*digest \([0-9a-f]\{16\}\).*/\1/p' <<<"$tight")
    d2=$(sed -n 's/.*digest \([0-9a-f]\{16\}\).*/\1/p' <<<"$roomy")
    echo "small /dev/shm: digests $d1 (usual slots), $d2 (large slots)"
    [ -n "$d1" ] && [ "$d1" = "$d2" ] || nvf_fail "the slot size changed the bits"
else
    echo "note: cannot mount a private /dev/shm here (not root, or no mount namespace): skipped that part"
fi
echo ok
