#!/usr/bin/env bash
# Bitwise agreement across ranks and across repeats on order-dependent inputs, then thousands
# of random calls over several communicators at once, freed and re-created.
. "$NVF_SRC/test/lib.sh"
for np in 2 3 4; do
    nvf_mpirun $np --mca coll_nvfabric_host on "$NVF_BUILD/test/mpi/bitwise" || nvf_fail "bitwise on $np ranks"
done
calls=4000
[ "$NVF_QUICK" = 1 ] && calls=1000
nvf_mpirun 4 --mca coll_nvfabric_host on "$NVF_BUILD/test/mpi/stress" $calls || nvf_fail "stress on 4 ranks"
nvf_mpirun 3 --mca coll_nvfabric_host on --mca coll_nvfabric_shm_block_size 8192 \
    --mca coll_nvfabric_one_shot_max 1024 "$NVF_BUILD/test/mpi/stress" $((calls / 2)) 50000 ||
    nvf_fail "stress with small blocks"
nvf_mpirun 4 --mca coll_nvfabric_host on --mca coll_nvfabric_cma_oversubscribed 1 \
    --mca coll_nvfabric_cma_min 1024 "$NVF_BUILD/test/mpi/stress" $((calls / 2)) ||
    nvf_fail "stress with the single-copy path"
echo ok
