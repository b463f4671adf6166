#!/usr/bin/env bash
# run-sanitized.sh: build the engine and its unit tests with AddressSanitizer and UBSan in their
# own build tree (<build>-asan) and run them (`make check`). Open MPI is not instrumented, so the
# MPI programs are not part of this.
set -eu
: "${NVF_SRC:?}" "${NVF_BUILD:?}"
b="$NVF_BUILD-asan"
if [ ! -f "$b/Makefile" ]; then
    mkdir -p "$b"
    (cd "$b" && "$NVF_SRC/configure" --enable-werror --enable-sanitizers --with-cuda=no) >"$b.configure.log" 2>&1
fi
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
make -C "$b" -j"${NVF_JOBS:-2}" check
