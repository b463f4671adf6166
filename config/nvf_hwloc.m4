# NVF_CHECK_HWLOC: hwloc, used to find the NIC nearest to a GPU and the machine's cores.
# Optional: without it rail choice falls back to the transport UCX picks.
AC_DEFUN([NVF_CHECK_HWLOC], [
  AC_ARG_WITH([hwloc],
    [AS_HELP_STRING([--with-hwloc=DIR|no], [hwloc install prefix (default: pkg-config hwloc, then system)])],
    [], [with_hwloc=check])
  have_hwloc=no
  HWLOC_CPPFLAGS=""; HWLOC_LDFLAGS=""; HWLOC_LIBS=""
  AS_IF([test "$with_hwloc" != no], [
    AS_IF([test "$with_hwloc" = check -o "$with_hwloc" = yes],
      [AS_IF([pkg-config --exists hwloc 2>/dev/null],
        [HWLOC_CPPFLAGS=`pkg-config --cflags hwloc`; HWLOC_LDFLAGS=`pkg-config --libs-only-L hwloc`])],
      [HWLOC_CPPFLAGS="-I$with_hwloc/include"; HWLOC_LDFLAGS="-L$with_hwloc/lib -Wl,-rpath,$with_hwloc/lib"])
    nvf_save_CPPFLAGS="$CPPFLAGS"; nvf_save_LDFLAGS="$LDFLAGS"; nvf_save_LIBS="$LIBS"
    CPPFLAGS="$CPPFLAGS $HWLOC_CPPFLAGS"; LDFLAGS="$LDFLAGS $HWLOC_LDFLAGS"
    AC_CHECK_HEADER([hwloc.h], [AC_CHECK_LIB([hwloc], [hwloc_topology_init], [have_hwloc=yes; HWLOC_LIBS="-lhwloc"])])
    CPPFLAGS="$nvf_save_CPPFLAGS"; LDFLAGS="$nvf_save_LDFLAGS"; LIBS="$nvf_save_LIBS"
    AS_IF([test "$have_hwloc" = no && test "$with_hwloc" != check],
      [AC_MSG_ERROR([--with-hwloc=$with_hwloc given but hwloc.h/libhwloc not found])])
    AS_IF([test "$have_hwloc" = no], [AC_MSG_WARN([hwloc not found (install libhwloc-dev): NIC-to-GPU affinity disabled])])
  ])
  AS_IF([test "$have_hwloc" = yes], [AC_DEFINE([NVF_HAVE_HWLOC], [1], [hwloc available])])
  AM_CONDITIONAL([NVF_HAVE_HWLOC], [test "$have_hwloc" = yes])
  AC_SUBST([HWLOC_CPPFLAGS])
  AC_SUBST([HWLOC_LDFLAGS])
  AC_SUBST([HWLOC_LIBS])
])
