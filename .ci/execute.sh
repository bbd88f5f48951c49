#!/usr/bin/env bash
# execute.sh: runs every notebook (or those named) top to bottom on this machine, in its mode, and
# writes the executed copies to an output folder, each checked by .ci/check_notebook.py: how the
# committed notebooks get the outputs of a real run. `make execute` calls it.
#
#   bash .ci/execute.sh OUT [notebook.ipynb ...]        (names under notebooks/; default: all)
#
# On a GPU every notebook measures its own lesson (the run on its page: the cache folder, OUT/cache,
# starts empty, and notebooks of one lesson share its run), several notebooks run at once (JOBS, default 4) and their cells take turns at
# the GPU (KERNELS_GPU_LOCK), so no two time kernels at once. The runs the notebooks measured are
# left in OUT/runs/<lesson>.json, receipts included, for results/ when they are to be recorded.
# Without a GPU the cells build with -tags=nocuda and show the recorded runs. A notebook that takes
# longer than LIMIT (default 20m) is stopped and reported; the others go on.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: bash .ci/execute.sh OUT [notebook.ipynb ...]}
shift
mkdir -p "$out" && out=$(cd "$out" && pwd)
source "$root/.ci/env.sh"
mode=$(bash "$root/.ci/mode.sh")
[ "$mode" = nogpu ] && export GOFLAGS="-tags=nocuda ${GOFLAGS:-}"
jobs=${JOBS:-4}
[ "$mode" = nogpu ] && jobs=${JOBS:-2}
limit=${LIMIT:-20m}
cache="$out/cache"
mkdir -p "$cache" "$out/runs"
# A lock given from outside (.ci/record.sh: other work shares this GPU) is kept.
export KERNELS_CACHE_DIR="$cache" KERNELS_GPU_LOCK="${KERNELS_GPU_LOCK:-$out/gpu.lock}"
if [ -z "${KERNELS_COMMIT:-}" ]; then
  KERNELS_COMMIT=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || true)
  export KERNELS_COMMIT
fi

if [ $# -eq 0 ]; then
  set -- $(cd "$root/notebooks" && ls [0-9][0-9]*_*.ipynb)
fi
# run_one executes one notebook (run from notebooks/, as Jupyter does) into OUT, stopped after LIMIT.
run_one() {
  local out=$1 nb=$2 start status cmd
  start=$(date +%s)
  if command -v nbrun >/dev/null; then
    cmd=(nbrun -allow-errors -timeout 10m -o "$out/$nb" "$nb")
  else
    cmd=(jupyter nbconvert --to notebook --execute --allow-errors --ExecutePreprocessor.timeout=600 --output "$out/$nb" "$nb")
  fi
  if timeout "$LIMIT" "${cmd[@]}" >"$out/${nb%.ipynb}.log" 2>&1; then status=ran; else status="stopped or failed (exit $?)"; fi
  echo "$nb: $status in $(( $(date +%s) - start )) s"
}
export -f run_one
export LIMIT=$limit
echo "execute.sh: $mode mode, $jobs at a time, $# notebook(s) into $out" >&2
cd "$root/notebooks"
printf '%s\n' "$@" | xargs -P "$jobs" -I{} bash -c 'run_one "$0" "$1"' "$out" {}
cp "$cache"/runs/*.json "$out/runs/" 2>/dev/null
fail=0
for nb in "$@"; do
  if [ ! -f "$out/$nb" ]; then
    echo "$nb: no executed copy (see $out/${nb%.ipynb}.log)" >&2
    fail=1
  elif ! /usr/bin/python3 "$root/.ci/check_notebook.py" "$out/$nb"; then
    fail=1
  fi
done
exit $fail
