#!/usr/bin/env bash
# jupyter.sh: starts Jupyter on notebooks/ with the GoNB kernel, in this machine's mode (.ci/mode.sh:
# without a GPU the kernel builds every cell with -tags=nocuda). `make notebooks` and the notebooks'
# browser test (notebooks/browser_test.go) both start the server through this script, so the test
# runs what a reader runs.
#
#   bash .ci/jupyter.sh --ip=127.0.0.1 --port=8888 [more jupyter notebook options]
#
# The server replaces this shell (exec): the script's process id is the server's, and stopping that
# process stops the server and its kernels. JUPYTER_TOKEN, when set, is the login token.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/.ci/env.sh"
mode=$(bash "$root/.ci/mode.sh")
# The kernel inherits GOFLAGS, so every cell builds in this mode.
[ "$mode" = nogpu ] && export GOFLAGS="-tags=nocuda ${GOFLAGS:-}"
as_root=(); [ "$(id -u)" = 0 ] && as_root=(--allow-root)
echo "jupyter.sh: $mode mode" >&2
cd "$root/notebooks"
exec jupyter notebook --no-browser "${as_root[@]}" "$@"
