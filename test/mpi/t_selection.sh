#!/usr/bin/env bash
# How users select the component: by default (priority above tuned), named in a list, excluded
# with ^nvfabric, selected alone (one clear message, no start), with a bad parameter value (one
# clear message, programs still run correctly on the other components), and which host calls
# coll_nvfabric_host=off and coll_nvfabric_host_auto_min leave to Open MPI's module.
. "$NVF_SRC/test/lib.sh"
probe="$NVF_BUILD/test/mpi/pvar_probe"

field() { echo "$1" | sed -n "s/^$2=//p"; }

out=$(nvf_mpirun 2 "$probe" 2>&1) || nvf_fail "default selection: $out"
echo "$out"
calls=$(( $(field "$out" coll_nvfabric_calls_handled) + $(field "$out" coll_nvfabric_calls_delegated) ))
[ "$calls" -ge 3 ] || nvf_fail "default selection: nvfabric saw $calls of the 3 calls"

out=$(nvf_mpirun 4 --mca coll nvfabric,tuned,basic,self,libnbc "$probe" 2>&1) || nvf_fail "explicit list: $out"
calls=$(( $(field "$out" coll_nvfabric_calls_handled) + $(field "$out" coll_nvfabric_calls_delegated) ))
[ "$calls" -ge 3 ] || nvf_fail "explicit list: nvfabric saw $calls calls"

out=$(nvf_mpirun 2 --mca coll ^nvfabric "$probe" 2>&1) || nvf_fail "^nvfabric: $out"
echo "$out" | grep -q 'coll_nvfabric=absent' || nvf_fail "^nvfabric: component still loaded: $out"
echo "$out" | grep -q 'wrong_results=0' || nvf_fail "^nvfabric: wrong results"

out=$(OMPI_MCA_coll=^nvfabric nvf_mpirun 2 "$probe" 2>&1) || nvf_fail "OMPI_MCA_coll=^nvfabric: $out"
echo "$out" | grep -q 'coll_nvfabric=absent' || nvf_fail "OMPI_MCA_coll=^nvfabric: still loaded"

out=$(nvf_mpirun 2 --mca coll nvfabric "$probe" 2>&1) && nvf_fail "--mca coll nvfabric alone started: $out"
echo "$out"
[ "$(echo "$out" | grep -c 'selected alone')" -eq 1 ] || nvf_fail "alone: expected the help message exactly once: $out"
echo "$out" | grep -q 'mpirun --mca coll nvfabric,tuned,basic,libnbc,self' || nvf_fail "alone: no working form shown"
echo "$out" | grep -q 'none of them said' && nvf_fail "alone: Open MPI's own cryptic message leaked"

out=$(nvf_mpirun 2 --mca coll_nvfabric_host sometimes "$probe" 2>&1) || nvf_fail "bad value: program failed: $out"
echo "$out"
echo "$out" | grep -q 'coll_nvfabric_host=sometimes: must be auto, on or off' || nvf_fail "bad value: no clear message"
echo "$out" | grep -q 'wrong_results=0' || nvf_fail "bad value: wrong results"
[ "$(field "$out" coll_nvfabric_calls_delegated)" = 0 ] || nvf_fail "bad value: component was still used"

# coll_nvfabric_host: pvar_probe makes a 4-byte and a 400000-byte int sum and a user-op call
out=$(nvf_mpirun 2 --mca coll_nvfabric_host_auto_min 1000 "$probe" 2>&1) || nvf_fail "auto_min: $out"
echo "$out" | grep -q 'wrong_results=0' || nvf_fail "auto_min: wrong results"
[ "$(field "$out" coll_nvfabric_calls_handled)" = 1 ] && [ "$(field "$out" coll_nvfabric_calls_delegated)" = 2 ] ||
    nvf_fail "auto_min 1000: expected the small call delegated, the large one handled: $out"
out=$(nvf_mpirun 2 --mca coll_nvfabric_host off "$probe" 2>&1) || nvf_fail "host off: $out"
echo "$out" | grep -q 'wrong_results=0' || nvf_fail "host off: wrong results"
[ "$(field "$out" coll_nvfabric_calls_handled)" = 0 ] && [ "$(field "$out" coll_nvfabric_calls_delegated)" = 3 ] ||
    nvf_fail "host off: expected every call delegated: $out"

out=$(OMPI_MCA_coll_nvfabric_pipeline_depth=0 nvf_mpirun 2 "$probe" 2>&1) || nvf_fail "bad depth: $out"
[ "$(echo "$out" | grep -c 'pipeline_depth=0: must be')" -eq 1 ] ||
    nvf_fail "bad depth: expected one clear message, got: $out"
echo "ok"
