# env.sh: sourced by setup.sh and the Makefile's commands. Finds the CUDA headers and libraries and
# exports what cgo (gorgonia.org/cu) needs. It sets:
#   CUDA_INCLUDE          folder holding cuda.h (empty when none is found)
#   CUDA_LIBDIR           folder holding libnvrtc.so
#   CUDA_HEADER_VERSION   the headers' CUDA version, for example 11.8
#   CGO_CFLAGS, CGO_LDFLAGS
CUDA_INCLUDE=""
for d in "${CUDA_HOME:-/nonexistent}/include" /usr/local/cuda/include /usr/include; do
  if [ -f "$d/cuda.h" ]; then CUDA_INCLUDE=$d; break; fi
done
CUDA_LIBDIR=""
for d in "${CUDA_HOME:-/nonexistent}/lib64" /usr/local/cuda/lib64 /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64; do
  if ls "$d"/libnvrtc.so* >/dev/null 2>&1; then CUDA_LIBDIR=$d; break; fi
done
CUDA_HEADER_VERSION=""
if [ -n "$CUDA_INCLUDE" ]; then
  v=$(sed -n 's/^#define CUDA_VERSION \([0-9]*\).*/\1/p' "$CUDA_INCLUDE/cuda.h" | head -n1)
  [ -n "$v" ] && CUDA_HEADER_VERSION="$((v / 1000)).$(((v % 1000) / 10))"
fi
export CUDA_INCLUDE CUDA_LIBDIR CUDA_HEADER_VERSION
export CGO_CFLAGS="${CGO_CFLAGS:-} -I${CUDA_INCLUDE:-/usr/include}"
export CGO_LDFLAGS="${CGO_LDFLAGS:-} -L${CUDA_LIBDIR:-/usr/lib} ${CUDA_LIBDIR:+-L$CUDA_LIBDIR/stubs}"
[ -x /usr/local/go/bin/go ] && case ":$PATH:" in *:/usr/local/go/bin:*) ;; *) PATH=/usr/local/go/bin:$PATH ;; esac
export PATH="$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin:$PATH"
