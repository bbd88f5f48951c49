#!/usr/bin/env bash
# setup.sh: install what this project needs and is missing, on Debian or Ubuntu (also inside docker/).
#
#   bash .ci/setup.sh          (make setup; make notebooks and make test call it first)
#
# It is idempotent and quick when everything is there. What it installs, only when missing:
#   1. CUDA: NVRTC (the newest CUDA found compiles the kernels) and a CUDA 11.x/12.x cuda.h for cgo
#      (gorgonia.org/cu v0.9.6 does not compile against CUDA 13's); .ci/env.sh picks them. Toolkits
#      found are used as they are. With no CUDA: Debian's CUDA 11.8 packages from non-free
#      (nvidia-cuda-dev, libnvrtc, libcuda1), without recommends. With only CUDA 13: 11.x/12.x
#      headers beside it, from NVIDIA's cuda-driver-dev-12-x where that repository is configured,
#      else nvidia-cuda-dev's include folder in /opt/cudalessons/cuda-<version>; or it stops,
#      naming the package to install. nvdisasm (for the SASS views) from the same toolkit or, when
#      none is found, the distribution's nvidia-cuda-toolkit, without recommends.
#   2. Jupyter from the distribution: notebook, nbconvert, nbclient (on Colab, Colab's own Jupyter
#      instead); Chromium (Debian's package chromium), which the notebooks' browser test drives
#      headless; JupyterHub (Debian's package jupyterhub), for the classroom hub (make hub) and
#      its test, and python3-yaml, with which the test of docker/hub/values.yaml reads it.
#   3. Go 1.26 or newer (it refuses an older one: go.mod needs it).
#   4. The GoNB kernel from this module's go.mod (tool github.com/janpfeifer/gonb), goimports and
#      gopls at pinned versions, and the kernel's registration with Jupyter.
#
# On Google Colab (COLAB_RELEASE_TAG or COLAB_GPU in the environment; KERNELS_COLAB=1 or 0 overrides
# the guess) it takes the Colab route: Colab's own CUDA toolkit and pip-installed Jupyter are used as
# they are, and since Colab starts its Jupyter itself (not through .ci/jupyter.sh), the kernel's
# registration carries this project's environment (PATH, the cgo flags, NVRTC's folders, the mode) and
# go, gonb, goimports and gopls are linked into /usr/local/bin.
#
# CUDA_ENV_ROOT (for the tests, as in env.sh) is put in front of the fixed system paths this script
# reads or writes: /etc/os-release, the apt sources file, /usr/local/go, /usr/local/bin, /opt.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sys_root=${CUDA_ENV_ROOT:-}
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

# 1. CUDA: NVRTC for the kernels and, for cgo, a cuda.h gorgonia.org/cu v0.9.6 compiles against (CUDA
#    11.x or 12.x). .ci/env.sh picks each separately; this installs what it did not find.
enable_debian_nonfree() {
  local f=$sys_root/etc/apt/sources.list.d/cuda-nonfree.sources
  [ -f "$f" ] && return 0
  say "enabling Debian contrib/non-free, where Debian's CUDA packages are ($f)"
  $SUDO mkdir -p "$(dirname "$f")"
  printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: %s %s-updates\nComponents: contrib non-free non-free-firmware\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$VERSION_CODENAME" "$VERSION_CODENAME" | $SUDO tee "$f" >/dev/null
  apt_updated=0
}
# cgo_headers_beside: NVRTC comes from a CUDA 13 toolkit, whose cuda.h gorgonia.org/cu does not compile
# against. Put CUDA 11.x/12.x headers beside it; the toolkit and the driver stay as they are.
cgo_headers_beside() {
  say "CUDA $KERNELS_NVRTC_CUDA's NVRTC will compile the kernels, but gorgonia.org/cu v0.9.6 does not compile against its cuda.h: installing CUDA 11.x/12.x headers for cgo beside it, without changing that toolkit"
  local pkg tmp v dest
  if command -v apt-get >/dev/null; then
    [ "$apt_updated" = 1 ] || { $SUDO apt-get update -qq; apt_updated=1; }
    # NVIDIA's repository, where configured: cuda-driver-dev-12-x holds cuda.h and the libcuda stub,
    # in /usr/local/cuda-12.x/targets/<arch>-linux, and depends on no driver.
    pkg=$(apt-cache pkgnames cuda-driver-dev-12- 2>/dev/null | sort -V | tail -n1)
    if [ -n "$pkg" ]; then
      apt_install "$pkg"
      return 0
    fi
    # Debian's (non-free) or Ubuntu's (multiverse) nvidia-cuda-dev. Installing it would also pull the
    # distribution's libcuda1, which must not replace the driver of your CUDA 13: take its headers only.
    [ "${ID:-}" = debian ] && { enable_debian_nonfree; [ "$apt_updated" = 1 ] || { $SUDO apt-get update -qq; apt_updated=1; }; }
    if apt-cache show nvidia-cuda-dev >/dev/null 2>&1; then
      tmp=$(mktemp -d)
      say "downloading Debian/Ubuntu's nvidia-cuda-dev (about 800 MB) to take its include folder only"
      (cd "$tmp" && apt-get download nvidia-cuda-dev >"$tmp/log" 2>&1) || { cat "$tmp/log" >&2; say "downloading nvidia-cuda-dev failed"; exit 1; }
      dpkg-deb --fsys-tarfile "$tmp"/nvidia-cuda-dev_*.deb | tar -x -C "$tmp" ./usr/include
      v=$(_cuda_dotted "$(_cuda_version "$tmp/usr/include/cuda.h")")
      dest=$sys_root/opt/cudalessons/cuda-$v/include
      $SUDO mkdir -p "$dest" && $SUDO cp -r "$tmp/usr/include/." "$dest/"
      rm -rf "$tmp"
      say "put nvidia-cuda-dev's CUDA $v headers in $dest (nothing installed through dpkg; delete the folder to undo)"
      return 0
    fi
  fi
  case "${ID:-}" in
    ubuntu) pkg="cuda-driver-dev-12-9 from NVIDIA's CUDA repository (its cuda-keyring package sets it up), or nvidia-cuda-dev from multiverse" ;;
    debian) pkg="nvidia-cuda-dev from Debian non-free" ;;
    *) pkg="CUDA 12.x's cuda.h (NVIDIA's cuda-driver-dev-12-9 package)" ;;
  esac
  say "no package with CUDA 11.x/12.x headers is reachable: install $pkg, or set CUDA_CGO_INCLUDE to a folder holding CUDA 11.8 or 12.x's cuda.h, then run make setup again"
  exit 1
}
source "$root/.ci/env.sh"
os_release=$sys_root/etc/os-release
[ -f "$os_release" ] && . "$os_release"
# Google Colab: an Ubuntu VM where everything runs as root, with a CUDA 12.x toolkit in /usr/local/cuda
# and its own pip-installed Jupyter, which Colab starts and the kernel must be registered with.
colab=0
if [ -n "${KERNELS_COLAB:-}" ]; then
  [ "$KERNELS_COLAB" = 1 ] && colab=1
elif [ -n "${COLAB_RELEASE_TAG:-}" ] || [ -n "${COLAB_GPU+set}" ]; then
  colab=1
fi
if [ "$colab" = 1 ]; then
  say "Google Colab${COLAB_RELEASE_TAG:+ ($COLAB_RELEASE_TAG)}: taking the Colab route (Colab's CUDA and Jupyter as they are; the Go (gonb) kernel registered with Colab's Jupyter)"
fi
if [ -z "$KERNELS_NVRTC_LIBDIR" ]; then
  # No CUDA at all: the distribution's (Debian: CUDA 11.8; Ubuntu: its nvidia-cuda-dev).
  if [ "${ID:-}" = debian ]; then
    enable_debian_nonfree
    apt_install nvidia-cuda-dev libnvrtc11.2 libnvrtc-builtins11.8 libcuda1
  elif [ "${ID:-}" = ubuntu ]; then
    apt_install nvidia-cuda-dev libcuda1 || apt_install nvidia-cuda-toolkit
  else
    say "no NVRTC found: install a CUDA toolkit (12.8 or newer knows every current GPU) and set CUDA_HOME"; exit 1
  fi
  source "$root/.ci/env.sh"
fi
if [ -z "$KERNELS_CGO_INCLUDE" ] && [ -n "$KERNELS_NVRTC_LIBDIR" ]; then
  cgo_headers_beside
  source "$root/.ci/env.sh"
fi
cuda_env_show | sed 's/^/setup: /' >&2 || { say "CUDA is still incomplete after installing (see above)"; exit 1; }
# nvdisasm, which turns a kernel's cubin into SASS (the machine code the lessons' SASS tables count;
# helpers/sass): from the toolkit whose NVRTC compiles the kernels where it has one (an 11.8 cubin
# wants an 11.8 nvdisasm), else $CUDA_HOME/bin, /usr/local/cuda/bin or PATH. Without one, the
# distribution's nvidia-cuda-toolkit (Debian non-free, Ubuntu multiverse: CUDA 11.8's command-line
# tools, about 84 MB, with a g++ it needs), without recommends (no Nsight, no profiler GUI), when
# NVRTC is the distribution's too; a toolkit without one is named, not changed. Colab's toolkit has
# its own.
have_nvdisasm() {
  local d
  for d in "${KERNELS_NVRTC_INCLUDE:+${KERNELS_NVRTC_INCLUDE%/include}/bin}" "${CUDA_NVRTC_HOME:+$CUDA_NVRTC_HOME/bin}" \
    "${CUDA_HOME:+$CUDA_HOME/bin}" "$sys_root/usr/local/cuda/bin"; do
    [ -n "$d" ] && [ -x "$d/nvdisasm" ] && return 0
  done
  command -v nvdisasm >/dev/null
}
if ! have_nvdisasm; then
  if [ "$colab" = 1 ]; then
    say "Colab: no nvdisasm in its CUDA toolkit; the SASS views will say so (everything else works)"
  elif [ "$KERNELS_NVRTC_INCLUDE" != "$sys_root/usr/include" ]; then
    # NVRTC comes from a CUDA toolkit: the distribution's toolkit would bring its own libcuda1 beside
    # that toolkit's driver, so name the toolkit's own package instead.
    say "no nvdisasm beside CUDA $KERNELS_NVRTC_CUDA (${KERNELS_NVRTC_INCLUDE%/include}): the SASS views need one; install that toolkit's cuda-nvdisasm package (everything else works without it)"
  elif [ "${ID:-}" = debian ] || [ "${ID:-}" = ubuntu ]; then
    [ "${ID:-}" = debian ] && enable_debian_nonfree
    apt_install nvidia-cuda-toolkit || say "installing nvidia-cuda-toolkit failed: the SASS views will say that nvdisasm is missing (everything else works)"
  else
    say "no nvdisasm: the SASS views need one (a CUDA toolkit's bin/); everything else works without it"
  fi
fi

# 2. Jupyter (Debian's packages install into /usr/bin/python3). On Colab, Colab's own Jupyter (pip's)
#    is the one that starts the kernel: a second one from apt would never be used.
if [ "$colab" = 1 ]; then
  if ! command -v jupyter >/dev/null || ! jupyter kernelspec list >/dev/null 2>&1; then
    say "Colab: no working jupyter on PATH (jupyter kernelspec list failed); the kernel must be registered with the Jupyter Colab runs, so none is installed from apt: run this from a cell of a Colab notebook (!bash .ci/setup.sh)"
    exit 1
  fi
  say "Colab: using Colab's Jupyter ($(command -v jupyter)), nothing installed"
elif ! command -v jupyter-nbconvert >/dev/null || ! command -v jupyter-notebook >/dev/null; then
  apt_install jupyter-notebook jupyter-nbconvert jupyter-client python3-nbclient python3-ipykernel
fi
if [ -z "${CHROME:-}" ] && ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null && ! command -v google-chrome >/dev/null; then
  if [ "${ID:-}" = debian ]; then
    apt_install chromium
  elif [ "$colab" = 1 ]; then
    say "Colab: no Chromium or Chrome, and none installed: only make test's browser test needs one, not the notebooks"
  else # Ubuntu's chromium is a snap, which does not run in containers.
    say "no Chromium or Chrome: make test's browser test needs one (install Chrome, or set CHROME to its path)"
  fi
fi

# The classroom hub (make hub) and its test: Debian's JupyterHub; the test of docker/hub/values.yaml
# reads it with Debian's Python's yaml module.
hub_pkgs=()
command -v jupyterhub >/dev/null || hub_pkgs+=(jupyterhub)
"$sys_root/usr/bin/python3" -c 'import yaml' 2>/dev/null || hub_pkgs+=(python3-yaml)
if [ "$colab" != 1 ] && [ ${#hub_pkgs[@]} -gt 0 ]; then
  if [ "${ID:-}" = debian ]; then
    apt_install "${hub_pkgs[@]}"
  else
    say "missing ${hub_pkgs[*]}: make hub and its tests need them (Debian's packages; elsewhere pip's jupyterhub with npm's configurable-http-proxy, and PyYAML)"
  fi
fi

# 3. Go.
need_go=1.26
if ! command -v go >/dev/null; then
  arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
  say "installing Go 1.26.8 into $sys_root/usr/local/go"
  command -v curl >/dev/null || apt_install curl ca-certificates
  $SUDO mkdir -p "$sys_root/usr/local"
  curl -fsSL "https://go.dev/dl/go1.26.8.linux-$arch.tar.gz" | $SUDO tar xz -C "$sys_root/usr/local"
  export PATH=$sys_root/usr/local/go/bin:$PATH
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
jdata=$(jupyter --data-dir 2>/dev/null || echo "$HOME/.local/share/jupyter")
kdir=$jdata/kernels/gonb
if [ ! -f "$kdir/kernel.json" ] || ! grep -q "$gobin/gonb" "$kdir/kernel.json"; then
  say "registering the GoNB kernel with Jupyter"
  JUPYTER_DATA_DIR=$jdata "$gobin/gonb" --install >/dev/null
fi
if [ "$colab" = 1 ]; then
  # Colab starts its Jupyter itself, so the kernel does not inherit what env.sh and .ci/jupyter.sh
  # set: write it into the kernel's registration, and link the tools GoNB runs (go, goimports, gopls)
  # into /usr/local/bin, which is on the PATH Colab gives its kernels, in case a later Colab ignores
  # the registration's env.
  colab_mode=$(bash "$root/.ci/mode.sh")
  colab_goflags=${GOFLAGS:-}
  [ "$colab_mode" = nogpu ] && colab_goflags="-tags=nocuda${colab_goflags:+ $colab_goflags}"
  $SUDO mkdir -p "$sys_root/usr/local/bin"
  for t in "$(command -v go)" "$(command -v gofmt || true)" "$gobin/gonb" "$gobin/goimports" "$gobin/gopls"; do
    [ -n "$t" ] && [ -x "$t" ] || continue
    link=$sys_root/usr/local/bin/$(basename "$t") t=$(readlink -f "$t")
    if [ "$t" != "$(readlink -f "$link")" ]; then $SUDO ln -sf "$t" "$link"; fi
  done
  GOFLAGS=$colab_goflags python3 - "$kdir/kernel.json" <<'PY'
import json, os, sys
path = sys.argv[1]
with open(path) as f:
    spec = json.load(f)
names = ["PATH", "GOFLAGS", "CGO_CFLAGS", "CGO_LDFLAGS", "LD_LIBRARY_PATH", "KERNELS_NVRTC_CUDA",
         "KERNELS_NVRTC_INCLUDE", "KERNELS_NVRTC_LIBDIR", "KERNELS_CGO_CUDA", "KERNELS_CGO_INCLUDE"]
env = spec.get("env") or {}
for name in names:
    env.pop(name, None)
    if os.environ.get(name):
        env[name] = os.environ[name]
spec["env"] = env
with open(path, "w") as f:
    json.dump(spec, f, indent=1)
    f.write("\n")
PY
  specs=$(jupyter kernelspec list 2>/dev/null || true)
  if ! grep -q '^ *gonb ' <<<"$specs"; then
    say "Colab: the gonb kernel was written to $kdir but Colab's Jupyter does not list it (jupyter kernelspec list)"
    exit 1
  fi
  say "Colab: the Go (gonb) kernel is registered with Colab's Jupyter ($kdir), in $colab_mode mode. Next: Runtime > Restart session, then Runtime > Change runtime type > Go (gonb), keeping the GPU"
fi
say "ready: mode $(bash "$root/.ci/mode.sh")"
