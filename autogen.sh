#!/bin/sh
# autogen.sh: generate ./configure and the Makefile.in files from configure.ac and Makefile.am.
set -e
cd "$(dirname "$0")"
autoreconf --install --force --warnings=all,no-portability >/dev/null
echo "autogen.sh: done; now run ./configure"
