#!/usr/bin/env bash
# The component never links the CUDA driver or runtime: no libcuda/libcudart in its NEEDED entries
# or in ldd, no undefined CUDA symbol, nothing exported but the component struct; with the device
# stage built, the kernels' fatbin is embedded. Then it loads and runs where no driver exists, and
# where a driver exists but the program never initialised CUDA (the mock driver): every call is
# classified (host) and delegated (coll_nvfabric_host=off keeps this independent of the engine).
. "$NVF_SRC/test/lib.sh"
so="$NVF_STAGE_COMPDIR/mca_coll_nvfabric.so"
[ -f "$so" ] || nvf_fail "staged component missing: $so"
echo "== $so"
needed=$(readelf -d "$so" | grep NEEDED)
echo "$needed"
echo "$needed" | grep -Eiq 'libcuda|libcudart|libnvrtc|libnvidia' && nvf_fail "links a CUDA library"
deps=$(ldd "$so")
echo "$deps" | grep -q 'not found' && nvf_fail "unresolved dependency: $(echo "$deps" | grep 'not found')"
echo "$deps" | grep -Eiq 'libcuda|libcudart' && nvf_fail "ldd shows a CUDA library"
undef=$(nm -D --undefined-only "$so" | awk '{print $2}' | grep -E '^(cu|cuda)[A-Z]' || true)
[ -z "$undef" ] || nvf_fail "undefined CUDA symbols: $undef"
exported=$(nm -D --defined-only "$so" | awk '$2 ~ /[TDBR]/ {print $3}' | sort -u | tr '\n' ' ')
echo "exported: $exported"
[ "$exported" = "mca_coll_nvfabric_component " ] || nvf_fail "exports more than the component: $exported"
if grep -q '^#define NVF_HAVE_CUDA 1' "$NVF_BUILD/nvf_config.h" 2>/dev/null; then
    nm "$so" | grep -q ' nvf_cuda_fatbin$' || nvf_fail "device stage built but no embedded fatbin"
    size_hex=$(nm -S "$so" | awk '$4 == "nvf_cuda_fatbin" {print $2}')
    echo "embedded fatbin: $((16#$size_hex)) bytes"
fi

prog="$NVF_BUILD/test/mpi/conformance"
[ -x "$prog" ] || nvf_skip "test/mpi/conformance not built"
empty=$(mktemp -d)
trap 'rm -rf "$empty"' EXIT
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1 '; then
    echo "== 2 ranks, no CUDA driver on this machine"
    LD_LIBRARY_PATH="$empty:${LD_LIBRARY_PATH:-}" nvf_mpirun 2 --mca coll_nvfabric_host off \
        --mca coll_nvfabric_verbose 1 "$prog" --expect delegated --level quick >"$empty/out" 2>&1 ||
        { cat "$empty/out"; nvf_fail "without a driver"; }
    grep -m2 'cuda' "$empty/out" || true
fi
mock="$NVF_BUILD/test/unit/mock_cuda"
if [ -f "$mock/libcuda.so.1" ]; then
    echo "== 2 ranks, a CUDA driver (the mock) that the program never initialises"
    LD_LIBRARY_PATH="$mock:${LD_LIBRARY_PATH:-}" nvf_mpirun 2 -x LD_LIBRARY_PATH \
        --mca coll_nvfabric_host off --mca coll_nvfabric_verbose 1 "$prog" --expect delegated \
        --level quick >"$empty/out" 2>&1 || { cat "$empty/out"; nvf_fail "with an uninitialised driver"; }
    grep -m2 'cuda' "$empty/out" || true
fi
echo ok
