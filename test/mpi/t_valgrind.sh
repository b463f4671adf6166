#!/usr/bin/env bash
# The component under valgrind (memcheck) on 2, 3 and 4 ranks (the last as 2 x 2 virtual nodes): no invalid access, no use of
# uninitialised memory, and no definite leak in nvfabric's code (Open MPI's own reports are
# not ours and are ignored: only records with an nvfabric frame count).
. "$NVF_SRC/test/lib.sh"
command -v valgrind >/dev/null || nvf_fail "valgrind is not installed"
logdir="$NVF_BUILD/valgrind"
rm -rf "$logdir"
mkdir -p "$logdir"
vg="valgrind --leak-check=full --show-leak-kinds=definite --num-callers=30 --log-file=$logdir/vg.%p.log"
# the host reduction loops alone: every byte they write defined, gaps of padded types included
valgrind -q --error-exitcode=9 "$NVF_BUILD/test/unit/test_reduce_gaps" >"$logdir/reduce_gaps.out" 2>&1 ||
    { cat "$logdir/reduce_gaps.out"; nvf_fail "test_reduce_gaps under valgrind failed"; }
NVF_TIMEOUT=900 nvf_mpirun 2 --mca coll_nvfabric_host on $vg "$NVF_BUILD/test/mpi/stress" 150 20000 ||
    nvf_fail "stress under valgrind failed"
# the same calls with single copies forced from 1 KiB (the measured window depends on timings,
# which valgrind distorts): results written into peers' buffers by process_vm_writev, whose
# every byte valgrind checks (in place over a padded type this once sent stack garbage)
NVF_TIMEOUT=900 nvf_mpirun 2 --mca coll_nvfabric_host on --mca coll_nvfabric_cma_min 1024 $vg \
    "$NVF_BUILD/test/mpi/stress" 150 20000 || nvf_fail "stress with single copies under valgrind failed"
# 3 ranks (oversubscribed: through the segment), results streamed into recvbuf at every size
NVF_TIMEOUT=900 nvf_mpirun 3 --mca coll_nvfabric_host on --mca coll_nvfabric_stream_min 1 $vg \
    "$NVF_BUILD/test/mpi/pvar_probe" || nvf_fail "pvar_probe under valgrind failed"
# the hierarchical plan (2 x 2 virtual nodes, UCX over tcp) with its intra-node stage by single
# copies, forced on, its results streamed: the plan must be named in the verbose output
out=$(UCX_TLS=tcp NVF_TIMEOUT=900 nvf_mpirun 4 --mca coll_nvfabric_host on \
    --mca coll_nvfabric_virtual_node_size 2 --mca coll_nvfabric_cma_oversubscribed 1 \
    --mca coll_nvfabric_cma_min 1024 --mca coll_nvfabric_stream_min 1 --mca coll_nvfabric_verbose 2 $vg \
    "$NVF_BUILD/test/mpi/stress" 60 20000 2>&1) || nvf_fail "hierarchical stress under valgrind failed: $out"
echo "$out" | grep -q 'plan hier:even+cma' || nvf_fail "hierarchical single copies not used: $out"
echo "$out" | grep '^stress:'
# one valgrind record = lines between blank lines of the same pid's log; it is ours if a frame
# is in the component (its .so, or a source file of mca/, coll_nvfabric/ or ucx_glue/)
ours='mca_coll_nvfabric[.]so|[(](coll_nvfabric_[a-z_]+|nvf_(comm|sched|shm|topo|plan|inter|rail|reduce_host|copy|dtype|config|log|memkind|cma|cma_tune|stage)|nvf_ucx[a-z_]*|nvf_cuda[a-z_]*)[.]c:'
bad=0
for f in "$logdir"/vg.*.log; do
    n=$(awk -v ours="$ours" '/^==[0-9]+== *$/ { if (rec ~ ours && rec ~ /(Invalid|uninitialised|definitely lost|Conditional|Syscall param)/) { print rec; c++ } rec=""; next } { rec = rec "\n" $0 } END { print c+0 > "/dev/stderr" }' "$f" 2>"$f.count" >"$f.ours")
    c=$(cat "$f.count")
    if [ "$c" != 0 ]; then
        echo "== $f: $c record(s) in nvfabric's code"
        head -60 "$f.ours"
        bad=$((bad + c))
    fi
done
[ $bad -eq 0 ] || nvf_fail "$bad valgrind record(s) in nvfabric's code"
grep -h 'ERROR SUMMARY' "$logdir"/vg.*.log | head -5
echo ok
