#!/usr/bin/env bash
# Every datatype x op x count x in-place x communicator on 1 to 4 ranks, against each rank's own
# sequential reduction, with the counters saying which path handled each call.
. "$NVF_SRC/test/lib.sh"
prog="$NVF_BUILD/test/mpi/conformance"
# the full level on 3 ranks (oversubscribed on a 2-core machine) takes 280-320 s: the deadlock
# guard of each run is 10 minutes here, not the default 5
export NVF_TIMEOUT=${NVF_TIMEOUT:-600}
for np in 1 2 3 4; do
    # full level on 4 ranks (oversubscribed on a 2-core machine) takes over 6 minutes: quick
    # there (still every type x op at every small and threshold count, and MiB sizes)
    level=full
    { [ "$NVF_QUICK" = 1 ] || [ $np = 4 ]; } && level=quick
    echo "== $np ranks, host=on (engine handles predefined calls), $level level"
    nvf_mpirun $np --mca coll_nvfabric_host on "$prog" --expect engine --level $level || nvf_fail "$np ranks, engine"
done
echo "== 3 and 4 ranks, the single-copy (CMA) path forced on from 1 KiB despite oversubscription"
for np in 3 4; do
    nvf_mpirun $np --mca coll_nvfabric_host on --mca coll_nvfabric_cma_oversubscribed 1 \
        --mca coll_nvfabric_cma_min 1024 "$prog" --expect engine --level quick || nvf_fail "$np ranks, CMA"
done
echo "== 2 and 3 ranks, results streamed into recvbuf at every two-shot size (stream_min 1)"
for np in 2 3; do
    out=$(nvf_mpirun $np --mca coll_nvfabric_host on --mca coll_nvfabric_cma 0 \
        --mca coll_nvfabric_stream_min 1 --mca coll_nvfabric_verbose 1 "$prog" --expect engine \
        --level quick 2>&1) || nvf_fail "$np ranks, streamed: $out"
    n=$(echo "$out" | grep -c 'results streamed into recvbuf from 1 bytes')
    [ "$n" -ge $np ] || nvf_fail "$np ranks: streaming not on ($n ranks say so): $out"
done
echo "== 2 ranks, streaming off"
nvf_mpirun 2 --mca coll_nvfabric_host on --mca coll_nvfabric_stream 0 "$prog" --expect engine \
    --level quick || nvf_fail "2 ranks, streaming off"
if [ "$(nproc)" -ge 2 ]; then
    # each rank bound to its own core sees one CPU in its own mask; the node's ranks together
    # are not oversubscribed, so the single-copy path must be on (and give the same results)
    echo "== 2 ranks bound one per core (mpirun's default binding for 2 ranks): single-copy path on"
    out=$(nvf_mpirun 2 --bind-to core --mca coll_nvfabric_host on --mca coll_nvfabric_verbose 1 \
        --mca coll_nvfabric_cma_min 1024 "$prog" --expect engine --level quick 2>&1) || nvf_fail "2 ranks bound to cores: $out"
    n=$(echo "$out" | grep -c 'single-copy (CMA) path available')
    [ "$n" -ge 2 ] || nvf_fail "2 ranks bound to cores: single-copy path not on ($n ranks): $out"
fi
echo "== 4 ranks, host=off (everything on host buffers delegated)"
nvf_mpirun 4 --mca coll_nvfabric_host off "$prog" --expect delegated --level quick || nvf_fail "host=off"
echo "== 3 ranks, without nvfabric"
nvf_mpirun 3 --mca coll ^nvfabric "$prog" --expect absent --level quick || nvf_fail "without nvfabric"
echo ok
