# NVF_CHECK_OMPI: find the Open MPI whose coll framework the component plugs into.
#
# --with-ompi=DIR  DIR is an Open MPI prefix (DIR/include/mpi.h, DIR/lib/libmpi.so) or its
#                  include directory (DIR/mpi.h, DIR/../lib). Default: what `mpicc --showme` says.
# Sets OMPI_CPPFLAGS (as -isystem: Open MPI's internal headers are not ours to warn about),
# OMPI_LDFLAGS, OMPI_LIBS, OMPI_VERSION, ompi_componentdir. A missing Open MPI is an error.
AC_DEFUN([NVF_CHECK_OMPI], [
  AC_ARG_WITH([ompi],
    [AS_HELP_STRING([--with-ompi=DIR], [Open MPI prefix or include directory (default: from mpicc)])],
    [], [with_ompi=check])
  AC_ARG_WITH([ompi-component-dir],
    [AS_HELP_STRING([--with-ompi-component-dir=DIR],
      [where to install mca_coll_nvfabric.so (default: the pkglibdir of the Open MPI found)])],
    [], [with_ompi_component_dir=check])

  nvf_ompi_incdir=""
  nvf_ompi_libdir=""
  AS_CASE(["$with_ompi"],
    [no], [AC_MSG_ERROR([nvfabric is an Open MPI component: --without-ompi makes no sense])],
    [check|yes], [
      AC_PATH_PROGS([MPICC], [mpicc mpicc.openmpi], [])
      AS_IF([test -z "$MPICC"],
        [AC_MSG_ERROR([Open MPI not found: no mpicc on PATH. Install libopenmpi-dev openmpi-bin, or pass --with-ompi=DIR])])
      for d in `$MPICC --showme:incdirs 2>/dev/null`; do
        AS_IF([test -z "$nvf_ompi_incdir" && test -f "$d/mpi.h"], [nvf_ompi_incdir="$d"])
      done
      nvf_ompi_libdir=`$MPICC --showme:libdirs 2>/dev/null | awk '{print $[1]}'`
    ],
    [
      AS_IF([test -f "$with_ompi/include/mpi.h"], [nvf_ompi_incdir="$with_ompi/include"; nvf_ompi_libdir="$with_ompi/lib"],
            [test -f "$with_ompi/mpi.h"], [nvf_ompi_incdir="$with_ompi"; nvf_ompi_libdir=`cd "$with_ompi/../lib" 2>/dev/null && pwd`],
            [AC_MSG_ERROR([--with-ompi=$with_ompi: neither $with_ompi/include/mpi.h nor $with_ompi/mpi.h exists])])
    ])
  AS_IF([test -z "$nvf_ompi_incdir"], [AC_MSG_ERROR([Open MPI's mpi.h not found (mpicc --showme:incdirs)])])
  AS_IF([test ! -f "$nvf_ompi_incdir/openmpi/ompi/mca/coll/coll.h"],
    [AC_MSG_ERROR([Open MPI's internal headers are missing ($nvf_ompi_incdir/openmpi/ompi/mca/coll/coll.h): install libopenmpi-dev])])

  OMPI_CPPFLAGS="-isystem $nvf_ompi_incdir -isystem $nvf_ompi_incdir/openmpi"
  OMPI_LDFLAGS="-L$nvf_ompi_libdir -Wl,-rpath,$nvf_ompi_libdir"
  OMPI_LIBS="-lmpi -lopen-rte -lopen-pal"

  nvf_save_CPPFLAGS="$CPPFLAGS"; CPPFLAGS="$CPPFLAGS $OMPI_CPPFLAGS"
  AC_COMPUTE_INT([nvf_ompi_major], [OMPI_MAJOR_VERSION], [#include <mpi.h>], [nvf_ompi_major=0])
  AC_COMPUTE_INT([nvf_ompi_minor], [OMPI_MINOR_VERSION], [#include <mpi.h>], [nvf_ompi_minor=0])
  AC_COMPUTE_INT([nvf_ompi_release], [OMPI_RELEASE_VERSION], [#include <mpi.h>], [nvf_ompi_release=0])
  CPPFLAGS="$nvf_save_CPPFLAGS"
  OMPI_VERSION="$nvf_ompi_major.$nvf_ompi_minor.$nvf_ompi_release"
  AS_IF([test "$nvf_ompi_major" != 4],
    [AC_MSG_ERROR([Open MPI $OMPI_VERSION found in $nvf_ompi_incdir; this version of nvfabric supports Open MPI 4.x (the 5.0 shim is not written yet)])])

  nvf_save_LDFLAGS="$LDFLAGS"; LDFLAGS="$LDFLAGS $OMPI_LDFLAGS"
  AC_CHECK_LIB([mpi], [MPI_Init], [], [AC_MSG_ERROR([cannot link libmpi from $nvf_ompi_libdir])], [-lopen-rte -lopen-pal])
  LIBS=`echo "$LIBS" | sed 's/-lmpi//'`
  LDFLAGS="$nvf_save_LDFLAGS"

  AS_IF([test "$with_ompi_component_dir" != check], [ompi_componentdir="$with_ompi_component_dir"], [
    ompi_componentdir=""
    AC_PATH_PROGS([OMPI_INFO], [ompi_info], [], [`dirname "$MPICC" 2>/dev/null`:$PATH])
    AS_IF([test -n "$OMPI_INFO" && test "$with_ompi" = check -o "$with_ompi" = yes],
      [ompi_componentdir=`$OMPI_INFO --parsable --path pkglibdir 2>/dev/null | sed -n 's/^path:pkglibdir://p'`])
    AS_IF([test -z "$ompi_componentdir"], [
      for d in "$nvf_ompi_libdir/openmpi3" "$nvf_ompi_libdir/openmpi"; do
        AS_IF([test -z "$ompi_componentdir" && test -d "$d"], [ompi_componentdir="$d"])
      done])
    AS_IF([test -z "$ompi_componentdir"], [ompi_componentdir="$nvf_ompi_libdir/openmpi"])
  ])
  AC_PATH_PROGS([MPIRUN], [mpirun orterun mpirun.openmpi], [mpirun], [`dirname "$MPICC" 2>/dev/null`:$PATH])
  AC_SUBST([OMPI_CPPFLAGS])
  AC_SUBST([OMPI_LDFLAGS])
  AC_SUBST([OMPI_LIBS])
  AC_SUBST([OMPI_VERSION])
  AC_SUBST([ompi_componentdir])
  nvf_ompi_summary="Open MPI $OMPI_VERSION, headers $nvf_ompi_incdir/openmpi"
])
