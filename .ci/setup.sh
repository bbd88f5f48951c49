#!/usr/bin/env bash
# setup.sh: install what this project needs and is missing, on Debian or Ubuntu (also inside docker/).
#
#   bash .ci/setup.sh          (make setup; make notebooks and make test call it first)
#
# It is idempotent and quick when everything is there. What it installs, only when missing:
#   1. CUDA headers and NVRTC: cuda.h, nvrtc.h and cuda_fp16.h for cgo and for compiling kernels.
#      A CUDA toolkit (CUDA_HOME, /usr/local/cuda) is used as is; otherwise Debian's CUDA 11.8
#      packages from non-free (nvidia-cuda-dev, libnvrtc, libcuda1), without recommends.
#   2. Jupyter from the distribution: notebook, nbconvert, nbclient; Chromium (Debian's package
#      chromium), which the notebooks' browser test drives headless.
#   3. Go 1.26 or newer (it refuses an older one: go.mod needs it).
#   4. The GoNB kernel from this module's go.mod (tool github.com/janpfeifer/gonb), goimports and
#      gopls at pinned versions, and the kernel's registration with Jupyter.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
say() { printf 'setup: %s\n' "$*" >&2; }
SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { say "run as root or install sudo: installing packages needs one of them"; exit 1; }
  SUDO="sudo"
fi
apt_updated=0
apt_install() {
  if ! command -v apt-get >/dev/null; then
    say "need $*, and this is not a Debian/Ubuntu system: install them by hand"; exit 1
  fi
  [ "$apt_updated" = 1 ] || { $SUDO apt-get update -qq; apt_updated=1; }
  say "apt-get install $*"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# 1. CUDA headers and NVRTC.
source "$root/.ci/env.sh"
if [ -z "$CUDA_INCLUDE" ] || ! ls "$CUDA_LIBDIR"/libnvrtc.so* >/dev/null 2>&1; then
  . /etc/os-release
  if [ "${ID:-}" = debian ]; then
    f=/etc/apt/sources.list.d/cuda-nonfree.sources
    if [ ! -f "$f" ]; then
      say "enabling Debian contrib/non-free for CUDA 11.8 ($f)"
      printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: %s %s-updates\nComponents: contrib non-free non-free-firmware\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "$VERSION_CODENAME" "$VERSION_CODENAME" | $SUDO tee "$f" >/dev/null
      apt_updated=0
    fi
    apt_install nvidia-cuda-dev libnvrtc11.2 libnvrtc-builtins11.8 libcuda1
  elif [ "${ID:-}" = ubuntu ]; then
    apt_install nvidia-cuda-dev libcuda1 || apt_install nvidia-cuda-toolkit
  else
    say "no CUDA headers found (looked in \$CUDA_HOME, /usr/local/cuda, /usr/include); install a CUDA 11.8 or 12.x toolkit"; exit 1
  fi
  source "$root/.ci/env.sh"
fi
[ -n "$CUDA_INCLUDE" ] || { say "CUDA headers still missing after install"; exit 1; }
say "CUDA headers: $CUDA_INCLUDE (CUDA $CUDA_HEADER_VERSION); libraries: $CUDA_LIBDIR"
case "$CUDA_HEADER_VERSION" in
  13.*) say "warning: gorgonia.org/cu v0.9.6 does not compile against CUDA 13 headers; set CUDA_HOME to a 12.x or 11.8 toolkit for the GPU build" ;;
esac

# 2. Jupyter (Debian's packages install into /usr/bin/python3).
if ! command -v jupyter-nbconvert >/dev/null || ! command -v jupyter-notebook >/dev/null; then
  apt_install jupyter-notebook jupyter-nbconvert jupyter-client python3-nbclient python3-ipykernel
fi
if [ -z "${CHROME:-}" ] && ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null && ! command -v google-chrome >/dev/null; then
  . /etc/os-release
  if [ "${ID:-}" = debian ]; then
    apt_install chromium
  else # Ubuntu's chromium is a snap, which does not run in containers.
    say "no Chromium or Chrome: make test's browser test needs one (install Chrome, or set CHROME to its path)"
  fi
fi

# 3. Go.
need_go=1.26
if ! command -v go >/dev/null; then
  arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
  say "installing Go 1.26.8 into /usr/local/go"
  command -v curl >/dev/null || apt_install curl ca-certificates
  curl -fsSL "https://go.dev/dl/go1.26.8.linux-$arch.tar.gz" | $SUDO tar xz -C /usr/local
  export PATH=/usr/local/go/bin:$PATH
fi
have=$(go env GOVERSION | sed -E 's/^go([0-9]+\.[0-9]+).*/\1/')
if [ "$(printf '%s\n%s\n' "$need_go" "$have" | sort -V | head -n1)" != "$need_go" ]; then
  say "Go $have is older than $need_go, which go.mod needs"; exit 1
fi
gobin=$(go env GOPATH)/bin
export PATH=$gobin:$PATH

# 4. GoNB, goimports, gopls, and the kernel registration.
gonb_version=$(cd "$root" && go list -m -f '{{.Version}}' github.com/janpfeifer/gonb)
stamp=$gobin/.gonb-$gonb_version
if [ ! -x "$gobin/gonb" ] || [ ! -f "$stamp" ]; then
  say "building GoNB $gonb_version from go.mod"
  (cd "$root" && go install github.com/janpfeifer/gonb)
  touch "$stamp"
fi
install_pinned() { # name package version
  [ -x "$gobin/$1" ] && return 0
  say "building $1 ($2@$3)"
  tmp=$(mktemp -d)
  (cd "$tmp" && go mod init "setup$1" >/dev/null 2>&1 && go get "$2@$3" && go install "$2")
  rm -rf "$tmp"
}
install_pinned goimports golang.org/x/tools/cmd/goimports v0.52.0
install_pinned gopls golang.org/x/tools/gopls v0.21.1
kdir=$(jupyter --data-dir 2>/dev/null || echo "$HOME/.local/share/jupyter")/kernels/gonb
if [ ! -f "$kdir/kernel.json" ] || ! grep -q "$gobin/gonb" "$kdir/kernel.json"; then
  say "registering the GoNB kernel with Jupyter"
  "$gobin/gonb" --install >/dev/null
fi
say "ready: mode $(bash "$root/.ci/mode.sh")"
