#!/bin/bash
# examples/slurm/nvf_bind_gpu_nic.sh: per-rank wrapper for GPU nodes. Gives the MPI rank it
# starts one GPU of its node (CUDA_VISIBLE_DEVICES), the RDMA NIC nearest to that GPU on the PCIe
# tree (UCX_NET_DEVICES), optionally the CPUs and memory of the GPU's NUMA node (numactl), and
# then execs the program, unchanged.
#
#   srun --mpi=pmix [...] nvf_bind_gpu_nic.sh PROGRAM [ARGS...]
#   mpirun [...] nvf_bind_gpu_nic.sh PROGRAM [ARGS...]
#
# Which GPU: the node-local rank (OMPI_COMM_WORLD_LOCAL_RANK under mpirun, else SLURM_LOCALID
# under srun; mpirun's ranks inherit the batch step's SLURM_LOCALID=0, so Open MPI's comes first)
# indexes the GPUs this job may use on the node: CUDA_VISIBLE_DEVICES as Slurm set it
# (--gpus-per-node), else every GPU nvidia-smi lists. Local rank i gets GPU i (modulo their
# number: more ranks than GPUs share, which CUDA IPC allows). If Slurm already gave each task
# exactly one GPU (srun --gpus-per-task=1, --gpu-bind=single:1), that one is kept. The chosen GPU
# is named by its UUID, so CUDA's device order does not matter; the numbers Slurm writes into
# CUDA_VISIBLE_DEVICES are read in PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID, set here unless
# already set), the order nvidia-smi and Slurm's gres/gpu use.
#
# Every rank then sees one GPU, as device 0: device ordinals are no longer the same GPU in two
# ranks. nvfabric does not rely on them: it identifies the GPUs of its peers itself.
#
# Which NIC: of /sys/class/infiniband/*, the one whose PCIe path shares the most bridges with the
# GPU's (same switch beats same root complex beats same socket); ties are spread over the local
# ranks. UCX_NET_DEVICES=<nic>:<first active port>. An explicitly set UCX_NET_DEVICES is kept.
#
#   NVF_BIND_NIC=auto|off      pick the nearest NIC (default auto)
#   NVF_BIND_NUMA=0|1          also run under numactl --cpunodebind/--preferred of the GPU's NUMA
#                              node (default 0: leave CPU binding to srun --cpu-bind / mpirun)
#   NVF_BIND_VERBOSE=1         one line per rank saying what it got
#   NVF_SYSFS, NVF_NVIDIA_SMI  where sysfs is and which nvidia-smi to run (for testing)
#
# Without a GPU (or without nvidia-smi) it changes nothing and runs the program.
set -u

if [ $# -eq 0 ]; then
    echo "usage: $0 PROGRAM [ARGS...]" >&2
    exit 2
fi
sysfs=${NVF_SYSFS:-/sys}
smi=${NVF_NVIDIA_SMI:-nvidia-smi}
local_rank=${OMPI_COMM_WORLD_LOCAL_RANK:-${MPI_LOCALRANKID:-${SLURM_LOCALID:-0}}}
export CUDA_DEVICE_ORDER=${CUDA_DEVICE_ORDER:-PCI_BUS_ID}
say() { [ "${NVF_BIND_VERBOSE:-0}" = 1 ] && echo "nvf-bind: $(hostname -s) local rank $local_rank: $*" >&2; return 0; }

# --- the GPU ------------------------------------------------------------------------------------
# index, uuid, pci.bus_id of every GPU of the node (empty without a GPU or nvidia-smi)
gpus=$("$smi" --query-gpu=index,uuid,pci.bus_id --format=csv,noheader 2>/dev/null | tr -d ' ')
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
    IFS=, read -r -a visible <<<"$CUDA_VISIBLE_DEVICES"
elif [ -n "$gpus" ]; then
    mapfile -t visible < <(echo "$gpus" | cut -d, -f1)
else
    say "no GPU visible, nothing to bind"
    exec "$@"
fi
if [ ${#visible[@]} -eq 0 ] || [ "${visible[0]}" = NoDevFiles ]; then
    say "no GPU allocated to this job (CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-}), nothing to bind"
    exec "$@"
fi
gpu=${visible[$((local_rank % ${#visible[@]}))]}
[ "$local_rank" -ge ${#visible[@]} ] && say "more ranks than GPUs on this node: sharing GPU $gpu"

# its UUID and PCI address, matching the entry as an index or as a UUID (MIG instances: neither)
info=$(echo "$gpus" | awk -F, -v g="$gpu" '$1 == g || $2 == g { print; exit }')
uuid=$(echo "$info" | cut -s -d, -f2)
bdf=$(echo "$info" | cut -s -d, -f3 | tr 'A-F' 'a-f')
bdf=${bdf: -12} # 00000000:1b:00.0 -> 0000:1b:00.0
export CUDA_VISIBLE_DEVICES=${uuid:-$gpu}

# --- the NIC --------------------------------------------------------------------------------------
# _common_depth A B: how many leading path components A and B share
_common_depth() {
    local IFS=/ n=0 i
    read -r -a a <<<"$1"
    read -r -a b <<<"$2"
    for ((i = 0; i < ${#a[@]} && i < ${#b[@]}; i++)); do
        [ "${a[$i]}" = "${b[$i]}" ] || break
        n=$((n + 1))
    done
    echo $n
}
nic=""
gpu_path=""
[ -n "$bdf" ] && gpu_path=$(readlink -f "$sysfs/bus/pci/devices/$bdf" 2>/dev/null)
if [ -n "${UCX_NET_DEVICES:-}" ]; then
    nic="$UCX_NET_DEVICES (set by the user)"
elif [ "${NVF_BIND_NIC:-auto}" != off ] && [ -n "$gpu_path" ] && [ -d "$sysfs/class/infiniband" ]; then
    best=-1
    ties=()
    for dev in "$sysfs"/class/infiniband/*; do
        [ -e "$dev/device" ] || continue
        d=$(_common_depth "$gpu_path" "$(readlink -f "$dev/device")")
        if [ "$d" -gt "$best" ]; then
            best=$d
            ties=("$(basename "$dev")")
        elif [ "$d" -eq "$best" ]; then
            ties+=("$(basename "$dev")")
        fi
    done
    if [ ${#ties[@]} -gt 0 ]; then
        name=${ties[$((local_rank % ${#ties[@]}))]}
        port=1
        for p in "$sysfs/class/infiniband/$name"/ports/*; do
            grep -q ACTIVE "$p/state" 2>/dev/null && { port=$(basename "$p"); break; }
        done
        export UCX_NET_DEVICES="$name:$port"
        nic=$UCX_NET_DEVICES
    fi
fi

# --- NUMA ------------------------------------------------------------------------------------------
numa=-1
[ -n "$bdf" ] && [ -r "$sysfs/bus/pci/devices/$bdf/numa_node" ] && numa=$(cat "$sysfs/bus/pci/devices/$bdf/numa_node")
say "GPU $gpu${uuid:+ ($uuid, $bdf, NUMA node $numa)} -> CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES; NIC ${nic:-none}"
if [ "${NVF_BIND_NUMA:-0}" = 1 ] && [ "$numa" -ge 0 ] && command -v numactl >/dev/null 2>&1; then
    exec numactl --cpunodebind="$numa" --preferred="$numa" "$@"
fi
exec "$@"
