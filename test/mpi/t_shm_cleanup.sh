#!/usr/bin/env bash
# Nothing of nvfabric's is left in /dev/shm: after a normal run, and after one rank is killed
# with SIGKILL in the middle of a run (segments are unlinked as soon as every local rank has
# mapped them).
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
echo ok
