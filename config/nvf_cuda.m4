# NVF_CHECK_CUDA: the CUDA toolkit, for the device stage. Optional.
#
# --with-cuda=DIR|no. Default: the toolkit that holds the nvcc found on PATH (or $CUDA_HOME/bin/nvcc).
# Only cuda.h (driver API types) and nvcc are used at build time. Nothing is linked: libcuda is
# opened with dlopen at run time and the kernels are embedded as a fatbin loaded through the driver
# API, so mca_coll_nvfabric.so loads on machines without CUDA.
AC_DEFUN([NVF_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda=DIR|no], [CUDA toolkit (default: the one holding nvcc on PATH)])],
    [], [with_cuda=check])
  AC_ARG_VAR([NVCC_GENCODE], [nvcc -gencode flags (default: sm_80, sm_90 and compute_90 PTX)])
  have_cuda=no
  CUDA_CPPFLAGS=""; NVCC=""
  AS_IF([test "$with_cuda" != no], [
    AS_IF([test "$with_cuda" = check -o "$with_cuda" = yes], [
      AC_PATH_PROG([NVCC], [nvcc], [], [$PATH${CUDA_HOME:+:$CUDA_HOME/bin}])
      AS_IF([test -n "$NVCC"], [nvf_cuda_dir=`dirname "$NVCC"`; nvf_cuda_dir=`cd "$nvf_cuda_dir/.." && pwd`])
    ], [
      nvf_cuda_dir="$with_cuda"
      AS_IF([test -x "$with_cuda/bin/nvcc"], [NVCC="$with_cuda/bin/nvcc"])
    ])
    AS_IF([test -n "$NVCC" && test -f "$nvf_cuda_dir/include/cuda.h"], [
      CUDA_CPPFLAGS="-isystem $nvf_cuda_dir/include"
      AC_MSG_CHECKING([whether $NVCC compiles a kernel])
      AS_IF([test -z "$NVCC_GENCODE"],
        [NVCC_GENCODE="-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90"])
      cat > conftest.cu <<'NVF_EOF'
extern "C" __global__ void nvf_conftest(float *x) { x[[threadIdx.x]] += 1.0f; }
NVF_EOF
      AS_IF([$NVCC $NVCC_GENCODE --fatbin -o conftest.fatbin conftest.cu >&AS_MESSAGE_LOG_FD 2>&1],
        [have_cuda=yes; AC_MSG_RESULT([yes])], [AC_MSG_RESULT([no])])
      rm -f conftest.cu conftest.fatbin
    ])
    AS_IF([test "$have_cuda" = no && test "$with_cuda" != check],
      [AC_MSG_ERROR([--with-cuda=$with_cuda given but no working nvcc and cuda.h there])])
    AS_IF([test "$have_cuda" = no],
      [AC_MSG_WARN([no usable CUDA toolkit (nvcc on PATH with cuda.h beside it, and a kernel that compiles; see config.log): the device stage is not built, device buffers are delegated])])
  ])
  AS_IF([test "$have_cuda" = yes], [AC_DEFINE([NVF_HAVE_CUDA], [1], [device stage built])])
  AM_CONDITIONAL([NVF_HAVE_CUDA], [test "$have_cuda" = yes])
  AC_SUBST([CUDA_CPPFLAGS])
  AC_SUBST([NVCC])
  AC_SUBST([NVCC_GENCODE])
])
