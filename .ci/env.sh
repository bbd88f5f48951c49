# env.sh: sourced (by bash) by setup.sh, test.sh and the Makefile's commands. It picks two
# things separately, because one CUDA install often cannot serve both:
#
#   NVRTC, which compiles the kernels: the newest CUDA found, so that it knows the GPU's architecture
#     (NVRTC 11.8 stops at compute_90; NVRTC 13 knows Blackwell but no longer takes Volta).
#   The cuda.h that cgo builds gorgonia.org/cu v0.9.6 against: CUDA 11.x or 12.x (it does not compile
#     against CUDA 13's cuda.h). A binary built against them runs on newer drivers.
#
# Where it looks:
#   NVRTC (a folder with cuda.h, nvrtc.h and cuda_fp16.h, and libnvrtc.so beside it): $CUDA_NVRTC_HOME
#     alone when set; else $CUDA_HOME, $CUDA_PATH, /usr/local/cuda, /usr/local/cuda-*, /opt/cuda, and the
#     system's (/usr/include with /usr/lib/<arch>: Debian's nvidia-cuda-dev). The newest wins; on a tie
#     the first in this order.
#   cgo headers (a cuda.h of CUDA 11.x or 12.x): $CUDA_CGO_INCLUDE alone when set; else
#     $CUDA_HOME/include, the include folders of those toolkits, /opt/cudalessons/cuda-*/include (where setup.sh puts headers beside a
#     CUDA 13 toolkit), /usr/local/cuda-*/targets/*/include (NVIDIA's cuda-driver-dev-12-x package),
#     then /usr/include. The first found wins. /usr/include is skipped when one of the folders that
#     gorgonia.org/cu's own #cgo lines put first (/usr/local/cuda/include, ...) holds another cuda.h:
#     the compiler would read that one instead.
#
# It exports:
#   KERNELS_NVRTC_CUDA, KERNELS_NVRTC_INCLUDE, KERNELS_NVRTC_LIBDIR  NVRTC's version and folders
#   KERNELS_CGO_CUDA, KERNELS_CGO_INCLUDE                           the cgo headers' version and folder
#   CGO_CFLAGS, CGO_LDFLAGS   replaced: these headers first, libnvrtc from NVRTC's folder (also as rpath)
#   LD_LIBRARY_PATH           NVRTC's folder first (unless it is the loader's own, /usr/lib/<arch>), so
#                             the process loads the libnvrtc it was linked with
# and defines cuda_env_show, which prints the selection and what is missing. Each of the five is empty
# when nothing fits. CUDA_ENV_ROOT (for the tests) is put in front of every fixed path above, and of
# /usr/local/go/bin, which it puts on PATH when Go is there.

_cuda_r=${CUDA_ENV_ROOT:-}

# _cuda_version FILE: the CUDA_VERSION a cuda.h defines (for example 11080), or nothing.
_cuda_version() {
  [ -f "$1" ] && sed -n 's/^#define CUDA_VERSION \([0-9][0-9]*\).*/\1/p' "$1" | head -n1
  return 0
}
# _cuda_dotted 11080 -> 11.8
_cuda_dotted() { [ -n "$1" ] && echo "$(($1 / 1000)).$((($1 % 1000) / 10))"; return 0; }

# _cuda_glob PATTERN: the existing paths that match, newest version first.
_cuda_glob() {
  local p
  for p in $1; do if [ -e "$p" ]; then echo "$p"; fi; done | sort -rV
}

# The toolkits, as "include-folder library-folder" lines, in the order of the comment above.
_cuda_toolkits() {
  local roots=() r inc lib
  if [ -n "${CUDA_NVRTC_HOME:-}" ]; then
    roots=("$CUDA_NVRTC_HOME")
  else
    [ -n "${CUDA_HOME:-}" ] && roots+=("$CUDA_HOME")
    [ -n "${CUDA_PATH:-}" ] && roots+=("$CUDA_PATH")
    roots+=("$_cuda_r/usr/local/cuda")
    for r in $(_cuda_glob "$_cuda_r/usr/local/cuda-*"); do roots+=("$r"); done
    roots+=("$_cuda_r/opt/cuda")
  fi
  for r in "${roots[@]}"; do
    for inc in "$r/include" "$r"/targets/*/include; do
      [ -f "$inc/cuda.h" ] || continue
      for lib in "$r/lib64" "$r/lib" "${inc%/include}/lib"; do
        [ -e "$lib/libnvrtc.so" ] && { echo "$inc $lib"; break; }
      done
      break
    done
  done
  if [ -z "${CUDA_NVRTC_HOME:-}" ]; then
    for lib in "$_cuda_r"/usr/lib/x86_64-linux-gnu "$_cuda_r"/usr/lib/aarch64-linux-gnu "$_cuda_r"/usr/lib64; do
      [ -e "$lib/libnvrtc.so" ] && { echo "$_cuda_r/usr/include $lib"; break; }
    done
  fi
  return 0
}

# The folders that may hold cgo headers, in the order of the comment above.
_cuda_cgo_candidates() {
  local inc lib
  if [ -n "${CUDA_CGO_INCLUDE:-}" ]; then echo "$CUDA_CGO_INCLUDE"; return 0; fi
  [ -n "${CUDA_HOME:-}" ] && echo "$CUDA_HOME/include"
  _cuda_toolkits | while read -r inc lib; do if [ "$inc" != "$_cuda_r/usr/include" ]; then echo "$inc"; fi; done
  _cuda_glob "$_cuda_r/opt/cudalessons/cuda-*/include"
  _cuda_glob "$_cuda_r/usr/local/cuda-*/targets/*/include"
  for inc in /usr/local/cuda/include /usr/local/cuda-11.0/targets/x86_64-linux/include /usr/local/cuda-10.2/include; do
    [ -f "$_cuda_r$inc/cuda.h" ] && return 0 # gorgonia.org/cu's -I flags would shadow /usr/include
  done
  echo "$_cuda_r/usr/include"
}

# NVRTC: the newest toolkit.
KERNELS_NVRTC_INCLUDE="" KERNELS_NVRTC_LIBDIR="" KERNELS_NVRTC_CUDA=""
_cuda_best=0
while read -r _cuda_inc _cuda_lib; do
  [ -n "$_cuda_inc" ] || continue
  [ -f "$_cuda_inc/nvrtc.h" ] && [ -f "$_cuda_inc/cuda_fp16.h" ] || continue
  _cuda_v=$(_cuda_version "$_cuda_inc/cuda.h")
  if [ -n "$_cuda_v" ] && [ "$_cuda_v" -gt "$_cuda_best" ]; then
    _cuda_best=$_cuda_v KERNELS_NVRTC_INCLUDE=$_cuda_inc KERNELS_NVRTC_LIBDIR=$_cuda_lib
  fi
done < <(_cuda_toolkits)
KERNELS_NVRTC_CUDA=$(_cuda_dotted "${_cuda_best#0}")

# cgo headers: the first CUDA 11.x or 12.x cuda.h.
KERNELS_CGO_INCLUDE="" KERNELS_CGO_CUDA="" _cuda_cgo_rejected=""
while read -r _cuda_inc; do
  _cuda_v=$(_cuda_version "$_cuda_inc/cuda.h")
  [ -n "$_cuda_v" ] || continue
  if [ "$_cuda_v" -ge 11000 ] && [ "$_cuda_v" -lt 13000 ]; then
    KERNELS_CGO_INCLUDE=$_cuda_inc KERNELS_CGO_CUDA=$(_cuda_dotted "$_cuda_v")
    break
  fi
  _cuda_cgo_rejected="$_cuda_cgo_rejected $_cuda_inc (CUDA $(_cuda_dotted "$_cuda_v"))"
done < <(_cuda_cgo_candidates | awk '!seen[$0]++')
export KERNELS_NVRTC_CUDA KERNELS_NVRTC_INCLUDE KERNELS_NVRTC_LIBDIR KERNELS_CGO_CUDA KERNELS_CGO_INCLUDE

# cgo flags: the chosen cuda.h first; nvrtc.h from NVRTC's folder only after every other folder (gcc's
# -idirafter), so that its cuda.h never shadows the chosen one. libnvrtc from NVRTC's folder, also as
# the binary's rpath; the stubs folders let the link find libcuda.so where only the driver's
# libcuda.so.1 is installed (the real one is loaded at run time).
CGO_CFLAGS="-O2 -g${KERNELS_CGO_INCLUDE:+ -I$KERNELS_CGO_INCLUDE}"
if [ -n "$KERNELS_NVRTC_INCLUDE" ] && [ ! -f "${KERNELS_CGO_INCLUDE:-/nonexistent}/nvrtc.h" ]; then
  CGO_CFLAGS="$CGO_CFLAGS -idirafter $KERNELS_NVRTC_INCLUDE"
fi
CGO_LDFLAGS="-O2 -g"
if [ -n "$KERNELS_NVRTC_LIBDIR" ]; then
  CGO_LDFLAGS="$CGO_LDFLAGS -L$KERNELS_NVRTC_LIBDIR"
  case "$KERNELS_NVRTC_LIBDIR" in
    /usr/lib/*-linux-gnu | /usr/lib64) ;; # the loader's own folders
    *)
      CGO_LDFLAGS="$CGO_LDFLAGS -Wl,-rpath,$KERNELS_NVRTC_LIBDIR"
      case ":${LD_LIBRARY_PATH:-}:" in
        ":$KERNELS_NVRTC_LIBDIR:"*) ;;
        *) export LD_LIBRARY_PATH="$KERNELS_NVRTC_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
      esac
      ;;
  esac
  [ -d "$KERNELS_NVRTC_LIBDIR/stubs" ] && CGO_LDFLAGS="$CGO_LDFLAGS -L$KERNELS_NVRTC_LIBDIR/stubs"
fi
export CGO_CFLAGS CGO_LDFLAGS
unset _cuda_best _cuda_inc _cuda_lib _cuda_v

# cuda_env_show prints what was picked and why, or what is missing; it returns 1 when something is.
cuda_env_show() {
  local ok=0
  if [ -n "$KERNELS_NVRTC_LIBDIR" ]; then
    echo "cuda: NVRTC $KERNELS_NVRTC_CUDA compiles the kernels: $KERNELS_NVRTC_LIBDIR/libnvrtc.so, headers $KERNELS_NVRTC_INCLUDE (the newest CUDA found${CUDA_NVRTC_HOME:+; CUDA_NVRTC_HOME is set})"
  else
    echo "cuda: no NVRTC found (looked for libnvrtc.so with nvrtc.h and cuda_fp16.h in ${CUDA_NVRTC_HOME:-\$CUDA_HOME, \$CUDA_PATH, /usr/local/cuda*, /opt/cuda and /usr})"
    ok=1
  fi
  if [ -n "$KERNELS_CGO_INCLUDE" ]; then
    echo "cuda: cgo builds gorgonia.org/cu against CUDA $KERNELS_CGO_CUDA's cuda.h in $KERNELS_CGO_INCLUDE${CUDA_CGO_INCLUDE:+ (CUDA_CGO_INCLUDE is set)}"
  else
    echo "cuda: no cuda.h of CUDA 11.x or 12.x for cgo (gorgonia.org/cu v0.9.6 does not compile against CUDA 13's)${_cuda_cgo_rejected:+; found only:$_cuda_cgo_rejected}"
    ok=1
  fi
  return $ok
}

[ -x "$_cuda_r/usr/local/go/bin/go" ] && case ":$PATH:" in *:"$_cuda_r/usr/local/go/bin":*) ;; *) PATH=$_cuda_r/usr/local/go/bin:$PATH ;; esac
export PATH="$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin:$PATH"
