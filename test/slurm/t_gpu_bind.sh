#!/usr/bin/env bash
# t_gpu_bind.sh: examples/slurm/nvf_bind_gpu_nic.sh, the per-rank GPU/NIC wrapper of the GPU batch
# script, on a made-up node (a fake sysfs with two GPUs and two NICs on two PCIe root complexes,
# and a fake nvidia-smi), so that its choices are checked on machines without GPUs: which GPU each
# local rank gets (named by UUID), under srun and mpirun numbering, with Slurm's own
# CUDA_VISIBLE_DEVICES (several GPUs, or one per task), the nearest NIC and its active port, and
# that it changes nothing where there is no GPU.
. "$NVF_SRC/test/lib.sh"
wrapper="$NVF_SRC/examples/slurm/nvf_bind_gpu_nic.sh"
[ -x "$wrapper" ] || nvf_fail "$wrapper missing or not executable"

fake=$(mktemp -d /tmp/nvf-bind.XXXXXX) || nvf_fail "mktemp"
trap 'rm -rf "$fake"' EXIT

# pci_dev PATH NUMA: a PCI device at /sys/devices/PATH, with its /sys/bus/pci/devices link
pci_dev() {
    mkdir -p "$fake/sys/devices/$1" "$fake/sys/bus/pci/devices"
    echo "$2" >"$fake/sys/devices/$1/numa_node"
    ln -s "../../../devices/$1" "$fake/sys/bus/pci/devices/$(basename "$1")"
}
# ib_dev NAME PCI_PATH PORT_STATES...: an RDMA device on that PCI function
ib_dev() {
    local name=$1 path=$2 i=1
    shift 2
    mkdir -p "$fake/sys/class/infiniband/$name"
    ln -s "../../../devices/$path" "$fake/sys/class/infiniband/$name/device"
    for s in "$@"; do
        mkdir -p "$fake/sys/class/infiniband/$name/ports/$i"
        echo "$s" >"$fake/sys/class/infiniband/$name/ports/$i/state"
        i=$((i + 1))
    done
}
pci_dev pci0000:00/0000:00:01.0/0000:01:00.0 0 # GPU 0, behind the switch at 00:01.0
pci_dev pci0000:00/0000:00:01.0/0000:02:00.0 0 # mlx5_0, same switch
pci_dev pci0000:00/0000:00:02.0/0000:03:00.0 0 # mlx5_2, same root complex, other switch
pci_dev pci0000:80/0000:80:01.0/0000:81:00.0 1 # GPU 1
pci_dev pci0000:80/0000:80:01.0/0000:82:00.0 1 # mlx5_1, same switch as GPU 1
ib_dev mlx5_0 pci0000:00/0000:00:01.0/0000:02:00.0 "4: ACTIVE"
ib_dev mlx5_1 pci0000:80/0000:80:01.0/0000:82:00.0 "1: DOWN" "4: ACTIVE"
ib_dev mlx5_2 pci0000:00/0000:00:02.0/0000:03:00.0 "4: ACTIVE"
cat >"$fake/nvidia-smi" <<'EOF'
#!/bin/sh
printf '0, GPU-aaaa, 00000000:01:00.0\n1, GPU-bbbb, 00000000:81:00.0\n'
EOF
printf '#!/bin/sh\nexit 9\n' >"$fake/no-gpu-smi"
chmod +x "$fake/nvidia-smi" "$fake/no-gpu-smi"

# bind ENV=VALUE...: the wrapper's CUDA_VISIBLE_DEVICES and UCX_NET_DEVICES, as "cvd nic"
# shellcheck disable=SC2016  # expanded by the program the wrapper runs
bind() {
    env -u CUDA_VISIBLE_DEVICES -u UCX_NET_DEVICES -u SLURM_LOCALID -u OMPI_COMM_WORLD_LOCAL_RANK \
        NVF_SYSFS="$fake/sys" NVF_NVIDIA_SMI="$fake/nvidia-smi" "$@" \
        "$wrapper" sh -c 'echo "${CUDA_VISIBLE_DEVICES:--} ${UCX_NET_DEVICES:--}"'
}
expect() { # WANT ENV=VALUE...
    local want=$1 got
    shift
    got=$(bind "$@") || nvf_fail "wrapper failed with $*"
    [ "$got" = "$want" ] || nvf_fail "with $*: got '$got', want '$want'"
    echo "ok: $* -> $got"
}

expect "GPU-aaaa mlx5_0:1" SLURM_LOCALID=0
expect "GPU-bbbb mlx5_1:2" SLURM_LOCALID=1
expect "GPU-bbbb mlx5_1:2" OMPI_COMM_WORLD_LOCAL_RANK=3         # 4 ranks share 2 GPUs
expect "GPU-bbbb mlx5_1:2" OMPI_COMM_WORLD_LOCAL_RANK=1 SLURM_LOCALID=0 # mpirun in a batch job
expect "GPU-bbbb mlx5_1:2" SLURM_LOCALID=0 CUDA_VISIBLE_DEVICES=1 # Slurm gave this task GPU 1
expect "GPU-aaaa mlx5_0:1" SLURM_LOCALID=1 CUDA_VISIBLE_DEVICES=1,0
expect "GPU-bbbb mlx5_1:2" SLURM_LOCALID=0 CUDA_VISIBLE_DEVICES=GPU-bbbb,GPU-aaaa
expect "GPU-aaaa mlx5_9:1" SLURM_LOCALID=0 UCX_NET_DEVICES=mlx5_9:1 # the user's choice stays
expect "GPU-aaaa -" SLURM_LOCALID=0 NVF_BIND_NIC=off
expect "- -" SLURM_LOCALID=0 NVF_NVIDIA_SMI="$fake/no-gpu-smi"      # no GPU: nothing changes
expect "MIG-x -" SLURM_LOCALID=0 CUDA_VISIBLE_DEVICES=MIG-x          # unknown to nvidia-smi: kept
out=$(bind SLURM_LOCALID=1 NVF_BIND_VERBOSE=1 2>&1 >/dev/null)
echo "$out" | grep -q 'local rank 1: GPU 1 (GPU-bbbb, 0000:81:00.0, NUMA node 1)' ||
    nvf_fail "verbose line: $out"
echo "ok"
