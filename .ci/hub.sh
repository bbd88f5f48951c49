#!/usr/bin/env bash
# hub.sh: JupyterHub serving the suite to a class on this machine (make hub). Run as root: the hub
# starts each student's server as that student's own system account.
#
#   sudo make hub ROSTER=students.txt                 # http://127.0.0.1:8000, PAM logins
#   sudo make hub ROSTER=students.txt IP=0.0.0.0 PORT=8000
#
# The roster is a plain file (helpers/classroom.Format): one student per line, their user name and
# optionally their GPU; "instructor NAME" lines for the hub's admins. Students log in with their
# system account's password (PAM). HUB_AUTH=shared-password HUB_PASSWORD=... lets every roster name
# log in with one shared password instead: anyone who knows it can be any student, so only for a
# room you trust; the hub says so when it starts.
#
# What it prepares in HUB_DIR (default /opt/cudalessons-hub), readable by every student:
#   project/   a copy of this checkout (tracked and untracked-not-ignored files), replaced on every
#              start; students' servers find the project through KERNELS_ROOT, and get copies of
#              its notebooks/ in ~/cudalessons (copied when missing, never overwritten)
#   go/        the Go toolchain, where the instructor's is not readable by other accounts
#   bin/       gonb, goimports and gopls, built by .ci/setup.sh, and classroom (cmd/classroom)
#   gomod/     the module cache every student's cells build from (offline: GOPROXY=off)
#   share/jupyter/kernels/gonb   the Go kernel, for every student's Jupyter (JUPYTER_PATH)
#   seats.json, student-env.json what the hub's configuration (.ci/hub/jupyterhub_config.py) reads
#   state/     the hub's database, cookie secret and pid files (root only)
# Ports: PORT (the hub), HUB_API_PORT (8081) and HUB_PROXY_API_PORT (8001) on 127.0.0.1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
say() { printf 'hub: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
source "$root/.ci/env.sh"

[ "$(id -u)" = 0 ] || die "run it as root (sudo make hub ROSTER=...): JupyterHub starts each student's server as the student's own account, which only root can do"
[ -n "${ROSTER:-}" ] || die "no roster: make hub ROSTER=students.txt, a file with one student's user name per line (and optionally their GPU: see docs/INSTRUCTORS.md)"
[ -f "$ROSTER" ] || die "the roster $ROSTER does not exist (a file with one student's user name per line: docs/INSTRUCTORS.md)"
roster=$(cd "$(dirname "$ROSTER")" && pwd)/$(basename "$ROSTER")
command -v jupyterhub >/dev/null || die "no jupyterhub on PATH: .ci/setup.sh installs Debian's (apt-get install jupyterhub)"
command -v configurable-http-proxy >/dev/null || die "no configurable-http-proxy on PATH (Debian: node-configurable-http-proxy, which jupyterhub depends on)"
hub_dir=${HUB_DIR:-/opt/cudalessons-hub}
mode=$(bash "$root/.ci/mode.sh")
case "${HUB_AUTH:-pam}" in
  pam) ;;
  shared-password)
    [ -n "${HUB_PASSWORD:-}" ] || die "HUB_AUTH=shared-password needs HUB_PASSWORD"
    say "WARNING: HUB_AUTH=shared-password: every student on the roster logs in with the same password, so anyone who knows it can log in as any student. Use PAM (the default) for a real class." ;;
  *) die "HUB_AUTH=$HUB_AUTH: want pam (the default) or shared-password" ;;
esac

# The seats first: a roster mistake stops here, before anything is copied.
mkdir -p "$hub_dir/bin"
chmod 755 "$hub_dir" "$hub_dir/bin"
(cd "$root" && go build -o "$hub_dir/bin/classroom" ./cmd/classroom)
"$hub_dir/bin/classroom" -roster "$roster" -o "$hub_dir/seats.json.new" >&2 || die "the roster $ROSTER was not taken (above); nothing was started"
mv "$hub_dir/seats.json.new" "$hub_dir/seats.json"

# readable_by_all PATH: every folder on the way can be entered by others and PATH read by them.
readable_by_all() {
  local p=$1
  while [ "$p" != / ] && [ -n "$p" ]; do
    case "$(stat -c %A "$p")" in
      d????????[xt]|-??????r??) ;;
      *) return 1 ;;
    esac
    p=$(dirname "$p")
  done
}

# The project, copied whole each start (a class sees what the instructor's checkout has now).
say "copying the project into $hub_dir/project"
rm -rf "$hub_dir/project.new"
mkdir -p "$hub_dir/project.new"
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
  (cd "$root" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$hub_dir/project.new"
else
  (cd "$root" && tar --exclude=./.scratch --exclude=./out --exclude=./.device --exclude=./.git -cf - .) | tar -xf - -C "$hub_dir/project.new"
fi
chmod -R u+rwX,go+rX,go-w "$hub_dir/project.new"
rm -rf "$hub_dir/project.old"
[ -d "$hub_dir/project" ] && mv "$hub_dir/project" "$hub_dir/project.old"
mv "$hub_dir/project.new" "$hub_dir/project"
rm -rf "$hub_dir/project.old"

# Go, and the tools GoNB runs, where every student's account can run them.
goroot=$(go env GOROOT)
if ! readable_by_all "$goroot/bin/go"; then
  if [ ! -x "$hub_dir/go/bin/go" ] || [ "$("$hub_dir/go/bin/go" env GOVERSION)" != "$(go env GOVERSION)" ]; then
    say "copying Go ($goroot is not readable by other accounts) into $hub_dir/go"
    rm -rf "$hub_dir/go" && cp -a "$goroot" "$hub_dir/go" && chmod -R go+rX,go-w "$hub_dir/go"
  fi
  goroot=$hub_dir/go
fi
gobin=$(go env GOPATH)/bin
for t in gonb goimports gopls; do
  [ -x "$gobin/$t" ] || die "no $gobin/$t: run .ci/setup.sh (make setup) first"
  install -m 755 "$gobin/$t" "$hub_dir/bin/$t"
done

# The module cache the students build from, filled from this machine's own cache (offline) and the
# proxy for anything missing, then checked: both builds must need nothing more.
say "filling the students' module cache $hub_dir/gomod"
own_cache=$(go env GOMODCACHE)
(cd "$hub_dir/project" && GOMODCACHE=$hub_dir/gomod GOFLAGS=-mod=readonly \
  GOPROXY="file://$own_cache/cache/download,$(go env GOPROXY)" go mod download)
(cd "$hub_dir/project" && GOMODCACHE=$hub_dir/gomod GOPROXY=off GOFLAGS=-mod=readonly go list -deps ./... >/dev/null &&
  GOMODCACHE=$hub_dir/gomod GOPROXY=off GOFLAGS=-mod=readonly go list -tags=nocuda -deps ./... >/dev/null) ||
  die "the module cache $hub_dir/gomod is missing a module the notebooks need (above)"
chmod -R go+rX "$hub_dir/gomod"

# The Go kernel, registered for every student's Jupyter through JUPYTER_PATH.
kdir=$hub_dir/share/jupyter/kernels/gonb
mkdir -p "$kdir"
printf '{"argv": ["%s", "--kernel", "{connection_file}", "--logtostderr"], "display_name": "Go (gonb)", "language": "go", "interrupt_mode": "message", "env": {}}\n' \
  "$hub_dir/bin/gonb" >"$kdir/kernel.json"
chmod -R go+rX "$hub_dir/share"

# What every student's server gets (the seat comes from seats.json): the toolchain and module
# cache above, the cgo and NVRTC choices of .ci/env.sh, the mode, the project.
goflags=${GOFLAGS:-}
[ "$mode" = nogpu ] && goflags="-tags=nocuda${goflags:+ $goflags}"
HUB_GOFLAGS=$goflags HUB_GOROOT=$goroot HUB_MODE=$mode HUB_DIR=$hub_dir /usr/bin/python3 - "$hub_dir/student-env.json" <<'PY'
import json, os, sys
d = os.environ["HUB_DIR"]
env = {
    "PATH": ":".join([d + "/bin", os.environ["HUB_GOROOT"] + "/bin", "/usr/local/bin", "/usr/bin", "/bin"]),
    "GOMODCACHE": d + "/gomod", "GOPROXY": "off", "GOTOOLCHAIN": "local", "GOFLAGS": os.environ["HUB_GOFLAGS"],
    "KERNELS_MODE": os.environ["HUB_MODE"], "KERNELS_ROOT": d + "/project", "JUPYTER_PATH": d + "/share/jupyter",
}
for name in ["CGO_CFLAGS", "CGO_LDFLAGS", "LD_LIBRARY_PATH", "KERNELS_NVRTC_CUDA", "KERNELS_NVRTC_INCLUDE",
             "KERNELS_NVRTC_LIBDIR", "KERNELS_CGO_CUDA", "KERNELS_CGO_INCLUDE", "CUDA_HOME"]:
    if os.environ.get(name):
        env[name] = os.environ[name]
with open(sys.argv[1], "w") as f:
    json.dump(env, f, indent=1)
    f.write("\n")
PY

# Debian's configurable-http-proxy finds its modules (commander, http-proxy, ...) in /usr/share/nodejs,
# where Debian's node looks; a node from elsewhere first on PATH (NodeSource's) does not look there.
[ -d /usr/share/nodejs ] && export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}

mkdir -p "$hub_dir/state"
chmod 700 "$hub_dir/state"
cd "$hub_dir/state"
say "$mode mode; JupyterHub on http://${IP:-127.0.0.1}:${PORT:-8000} (state in $hub_dir/state)"
export HUB_DIR=$hub_dir HUB_IP=${IP:-127.0.0.1} HUB_PORT=${PORT:-8000}
exec jupyterhub -f "$root/.ci/hub/jupyterhub_config.py"
