# NVF_CHECK_UCX: UCX for the inter-node stage. Optional: without it the component still builds and
# every call that would need an inter-node stage is delegated (a plan never names it).
# --with-ucx=DIR|no. Default: pkg-config ucx, then the system headers.
AC_DEFUN([NVF_CHECK_UCX], [
  AC_ARG_WITH([ucx],
    [AS_HELP_STRING([--with-ucx=DIR|no], [UCX install prefix (default: pkg-config ucx, then system)])],
    [], [with_ucx=check])
  have_ucx=no
  UCX_CPPFLAGS=""; UCX_LDFLAGS=""; UCX_LIBS=""
  AS_IF([test "$with_ucx" != no], [
    AS_IF([test "$with_ucx" = check -o "$with_ucx" = yes],
      [AS_IF([pkg-config --exists ucx 2>/dev/null],
        [UCX_CPPFLAGS=`pkg-config --cflags ucx`; UCX_LDFLAGS=`pkg-config --libs-only-L ucx`])],
      [UCX_CPPFLAGS="-I$with_ucx/include"; UCX_LDFLAGS="-L$with_ucx/lib -Wl,-rpath,$with_ucx/lib"])
    nvf_save_CPPFLAGS="$CPPFLAGS"; nvf_save_LDFLAGS="$LDFLAGS"; nvf_save_LIBS="$LIBS"
    CPPFLAGS="$CPPFLAGS $UCX_CPPFLAGS"; LDFLAGS="$LDFLAGS $UCX_LDFLAGS"
    AC_CHECK_HEADER([ucp/api/ucp.h],
      [AC_CHECK_LIB([ucp], [ucp_put_nbx], [have_ucx=yes; UCX_LIBS="-lucp -lucs"], [], [-lucs])])
    CPPFLAGS="$nvf_save_CPPFLAGS"; LDFLAGS="$nvf_save_LDFLAGS"; LIBS="$nvf_save_LIBS"
    AS_IF([test "$have_ucx" = no && test "$with_ucx" != check],
      [AC_MSG_ERROR([--with-ucx=$with_ucx given but ucp/api/ucp.h or libucp (>= 1.10, ucp_put_nbx) not found])])
    AS_IF([test "$have_ucx" = no],
      [AC_MSG_WARN([UCX not found (install libucx-dev): the inter-node stage is disabled, multi-node calls are delegated])])
  ])
  AS_IF([test "$have_ucx" = yes], [AC_DEFINE([NVF_HAVE_UCX], [1], [UCX inter-node stage built])])
  AM_CONDITIONAL([NVF_HAVE_UCX], [test "$have_ucx" = yes])
  AC_SUBST([UCX_CPPFLAGS])
  AC_SUBST([UCX_LDFLAGS])
  AC_SUBST([UCX_LIBS])
])
