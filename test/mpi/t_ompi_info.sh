#!/usr/bin/env bash
# ompi_info lists the component, every parameter with a one-line description, and every MPI_T
# counter; a parameter set through the environment is seen with its source.
. "$NVF_SRC/test/lib.sh"
out=$(ompi_info --param coll nvfabric --level 9 2>&1) || nvf_fail "ompi_info failed: $out"
echo "$out"
ompi_info | grep -q 'MCA coll: nvfabric' || nvf_fail "ompi_info does not list coll nvfabric"
for p in priority verbose host host_auto_min virtual_node_size one_shot_max shm_block_size shm_block_large \
    shm_nsets pipeline_depth spin_before_yield inter inter_rd_max inter_algorithm inter_slot_size \
    intra_alpha intra_bw inter_alpha inter_bw reduce_bw cache_speedup cuda cuda_ipc cma cma_oversubscribed cma_min cma_max cma_tune \
    stream stream_min; do
    line=$(echo "$out" | grep -A1 "parameter \"coll_nvfabric_$p\"") || nvf_fail "parameter coll_nvfabric_$p missing"
    desc=$(echo "$line" | sed -n 2p | sed 's/^ *//')
    [ ${#desc} -ge 15 ] || nvf_fail "coll_nvfabric_$p has no description"
done
for v in calls_handled calls_delegated bytes_handled bytes_delegated inter_calls cuda_calls predicted_ns; do
    echo "$out" | grep -q "performance \"coll_nvfabric_$v\"" || nvf_fail "MPI_T variable coll_nvfabric_$v missing"
done
src=$(OMPI_MCA_coll_nvfabric_one_shot_max=4096 ompi_info --param coll nvfabric --level 9 --parsable |
    grep 'coll_nvfabric_one_shot_max:source') || nvf_fail "no source line"
echo "$src" | grep -q environment || nvf_fail "environment value not seen: $src"
echo "ok"
