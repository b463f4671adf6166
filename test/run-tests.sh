#!/usr/bin/env bash
# test/run-tests.sh: the whole test suite. Builds what is missing, stages the component with
# `make install DESTDIR=<build>/stage`, then runs every suite and prints one line per test and a
# final "N passed, N failed" line. Exit status 0 only if nothing failed.
#
#   test/run-tests.sh [--quick] [suite...]      suites: unit asan mpi gpu slurm (default: all)
#
# Environment: NVF_BUILD (default <src>/build), NVF_JOBS (make -j, default 2).
set -u
NVF_SRC=$(cd "$(dirname "$0")/.." && pwd)
NVF_BUILD=${NVF_BUILD:-$NVF_SRC/build}
export NVF_SRC NVF_BUILD
NVF_QUICK=0
suites=()
for a in "$@"; do
    case "$a" in
    --quick) NVF_QUICK=1 ;;
    *) suites+=("$a") ;;
    esac
done
export NVF_QUICK
[ ${#suites[@]} -eq 0 ] && suites=(unit asan mpi gpu slurm)
jobs=${NVF_JOBS:-2}
logdir="$NVF_BUILD/test-logs"

build() {
    if [ ! -f "$NVF_BUILD/Makefile" ]; then
        (cd "$NVF_SRC" && [ -x configure ] || ./autogen.sh) &&
            mkdir -p "$NVF_BUILD" && (cd "$NVF_BUILD" && "$NVF_SRC/configure" --enable-werror) >"$NVF_BUILD.configure.log" 2>&1 ||
            { echo "configure failed: see $NVF_BUILD.configure.log"; exit 1; }
    fi
    # in sequence: one make for both would build shared objects twice at once
    { make -C "$NVF_BUILD" -j"$jobs" all && make -C "$NVF_BUILD" -j"$jobs" check-programs-build; } \
        >/dev/null 2>"$NVF_BUILD/make.err" || { cat "$NVF_BUILD/make.err"; echo "build failed"; exit 1; }
    rm -rf "$NVF_BUILD/stage"
    make -C "$NVF_BUILD" install DESTDIR="$NVF_BUILD/stage" >/dev/null 2>&1 ||
        { echo "make install DESTDIR failed"; exit 1; }
}

passed=0 failed=0 skipped=0
failed_names=()
run_one() { # name command...
    local name=$1
    shift
    local log="$logdir/${name//\//_}.log" t0=$SECONDS rc
    "$@" >"$log" 2>&1
    rc=$?
    local dt=$((SECONDS - t0))
    case $rc in
    0) passed=$((passed + 1)); printf 'PASS     %-44s %4ss\n' "$name" "$dt" ;;
    77) skipped=$((skipped + 1)); printf 'SKIPPED  %-44s %4ss  %s\n' "$name" "$dt" "$(grep -m1 '^SKIPPED' "$log" | cut -c10-)" ;;
    *) failed=$((failed + 1)); failed_names+=("$name"); printf 'FAIL     %-44s %4ss  (log: %s)\n' "$name" "$dt" "$log"
       tail -n 15 "$log" | sed 's/^/    | /' ;;
    esac
}

build
mkdir -p "$logdir"
for s in "${suites[@]}"; do
    case "$s" in
    unit)
        for t in $(make -s -C "$NVF_BUILD" print-unit-tests); do
            run_one "unit/$(basename "$t")" "$NVF_BUILD/$t"
        done ;;
    asan)
        run_one "asan/unit-tests-under-sanitizers" bash "$NVF_SRC/test/unit/run-sanitized.sh" ;;
    mpi | gpu | slurm)
        for t in "$NVF_SRC"/test/"$s"/t_*.sh; do
            [ -e "$t" ] || continue
            run_one "$s/$(basename "$t" .sh)" bash "$t"
        done ;;
    *) echo "unknown suite $s"; exit 2 ;;
    esac
done
echo
[ $failed -gt 0 ] && echo "failed: ${failed_names[*]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
