#!/usr/bin/env bash
# sanitize.sh: the GPU tests under NVIDIA's compute-sanitizer (make sanitize), on a machine with a GPU.
# For every package with GPU tests (test files that the nocuda build leaves out, so a new lesson's
# are picked up by themselves) it builds the test binary (go test -c) and runs it in -short mode
# under three tools:
#   memcheck   out-of-bounds and misaligned device memory accesses, errors of CUDA calls
#   racecheck  shared-memory data races between threads of a block
#   synccheck  barriers (__syncthreads, __syncwarp) used where not every thread reaches them
# then prints one line per package and tool: errors (hazards for racecheck; memcheck also counts CUDA
# calls that fail, so tests skip the checks that make one fail on purpose when KERNELS_SANITIZER is
# set) and the tests' result. It exits with 1 on any error, hazard, failed test or unfinished run.
#
#   bash .ci/sanitize.sh [packages...]        default: every package with GPU tests
#   SANITIZE_TOOLS="memcheck racecheck"       the tools to run (default: all three)
#   SANITIZE_JOBS=4                           runs at once (default 1; they share the GPU)
#   SANITIZE_TIMEOUT=900                      seconds each run may take
#   SANITIZE_RUN='TestA|TestB'                only the tests that match (go test's -run)
#   COMPUTE_SANITIZER=/path/to/it             which compute-sanitizer (default: the newest CUDA's)
# Each run's full output is in .scratch/sanitize/<package>.<tool>.log.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source .ci/env.sh
say() { printf 'sanitize: %s\n' "$*"; }

# compute-sanitizer: the newest CUDA's (an older one may not attach on a newer driver).
looked=()
sanitizer=${COMPUTE_SANITIZER:-}
if [ -z "$sanitizer" ]; then
  dirs=()
  [ -n "$KERNELS_NVRTC_INCLUDE" ] && dirs+=("$(dirname "$KERNELS_NVRTC_INCLUDE")/bin")
  [ -n "${CUDA_HOME:-}" ] && dirs+=("$CUDA_HOME/bin")
  for d in $(ls -d /usr/local/cuda-*/bin 2>/dev/null | sort -rV) /usr/local/cuda/bin; do dirs+=("$d"); done
  for d in "${dirs[@]}"; do
    looked+=("$d")
    if [ -x "$d/compute-sanitizer" ]; then sanitizer=$d/compute-sanitizer; break; fi
  done
  [ -n "$sanitizer" ] || sanitizer=$(command -v compute-sanitizer || true)
fi
problems=0
if [ -z "$sanitizer" ] || [ ! -x "$sanitizer" ]; then
  say "compute-sanitizer not found (looked in ${looked[*]:-COMPUTE_SANITIZER} and PATH): it comes with the CUDA toolkit, in its bin folder; use the toolkit that matches your driver (CUDA 13 for driver 580) or set COMPUTE_SANITIZER to its path"
  problems=1
fi
if [ "$(bash .ci/mode.sh)" != gpu ]; then
  say "no GPU answers nvidia-smi: the sanitizers watch the GPU tests run, so they need a GPU"
  problems=1
fi
[ "$problems" = 0 ] || exit 1

# The packages with GPU tests: a test file that the nocuda build leaves out.
export GOFLAGS="${GOFLAGS:-}"
GOFLAGS=${GOFLAGS//-tags=nocuda/}
testfiles() { go list "$@" -f '{{.ImportPath}}{{range .TestGoFiles}} {{.}}{{end}}{{range .XTestGoFiles}} {{.}}{{end}}' ./...; }
if [ $# -gt 0 ]; then
  pkgs=$(go list "$@")
else
  pkgs=$(awk 'NR == FNR { for (i = 2; i <= NF; i++) nocuda[$1 " " $i] = 1; next }
              { for (i = 2; i <= NF; i++) if (!(($1 " " $i) in nocuda)) { print $1; break } }' \
           <(testfiles -tags=nocuda) <(testfiles))
fi
[ -n "$pkgs" ] || { say "no package with GPU tests found"; exit 1; }
module=$(go list -m)
tools=${SANITIZE_TOOLS:-memcheck racecheck synccheck}
logs=.scratch/sanitize
bins=$(mktemp -d)
trap 'rm -rf "$bins"' EXIT
rm -rf "$logs" && mkdir -p "$logs"
say "$("$sanitizer" --version | grep -m1 -o 'Version.*' || true) at $sanitizer; packages: $(echo "$pkgs" | sed "s|$module/||" | tr '\n' ' ')"

for p in $pkgs; do
  name=$(echo "${p#"$module"/}" | tr / .)
  go test -c -o "$bins/$name.test" "$p"
done

# run PACKAGE TOOL: runs one binary under one tool from its package's folder, then prints its line.
run() {
  local p=$1 tool=$2 name dir log rc=0 start summary errors hazards api verdict tests
  name=$(echo "${p#"$module"/}" | tr / .)
  dir=$(go list -f '{{.Dir}}' "$p")
  log=$root/$logs/$name.$tool.log
  start=$SECONDS
  (cd "$dir" && KERNELS_SANITIZER=$tool timeout "${SANITIZE_TIMEOUT:-900}" "$sanitizer" --tool "$tool" \
    --error-exitcode 1 "$bins/$name.test" -test.short -test.count=1 -test.v ${SANITIZE_RUN:+-test.run "$SANITIZE_RUN"} >"$log" 2>&1) || rc=$?
  errors=$(sed -n 's/^========= ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$log" | tail -n1)
  hazards=$(sed -n 's/^========= RACECHECK SUMMARY: \([0-9]*\) hazard.*/\1/p' "$log" | tail -n1)
  # racecheck: "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"
  [ -n "$errors" ] || errors=$(sed -n 's/^========= RACECHECK SUMMARY: .*(\([0-9]*\) error.*/\1/p' "$log" | tail -n1)
  tests=$(grep -E '^(PASS|FAIL)$' "$log" | tail -n1 || true)
  api=$(grep -c '^========= Program hit CUDA_ERROR' "$log" || true)
  case "$tool" in
    racecheck) summary="${hazards:-?} hazards, ${errors:-?} errors" ;;
    *) summary="${errors:-?} errors${api:+ ($api failed CUDA calls)}" ;;
  esac
  [ "$api" = 0 ] && summary=${summary% (0 failed CUDA calls)}
  verdict=ok
  if [ "$rc" = 124 ]; then
    verdict="FAILED: timed out after ${SANITIZE_TIMEOUT:-900} s"
  elif [ -z "$errors$hazards" ]; then
    verdict="FAILED: no sanitizer summary (did it attach? see $logs/$name.$tool.log)"
  elif [ "${errors:-0}" != 0 ] || [ "${hazards:-0}" != 0 ] || [ "$rc" != 0 ] || [ "$tests" != PASS ]; then
    verdict="FAILED (exit $rc; see $logs/$name.$tool.log)"
  fi
  printf '%-20s %-10s %-34s tests %-4s %5d s  %s\n' "${p#"$module"/}" "$tool" "$summary" "${tests:-none}" $((SECONDS - start)) "$verdict" >"$log.line"
}

jobs_max=${SANITIZE_JOBS:-1}
say "$(($(echo "$pkgs" | wc -w) * $(echo "$tools" | wc -w))) runs, $jobs_max at once, each up to ${SANITIZE_TIMEOUT:-900} s"
for p in $pkgs; do
  for tool in $tools; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
    run "$p" "$tool" &
  done
done
wait
cat "$logs"/*.line
failed=$(cat "$logs"/*.line | grep -c FAILED || true)
total=$(cat "$logs"/*.line | wc -l)
if [ "$failed" != 0 ]; then
  say "$failed of $total runs failed"
  exit 1
fi
say "all $total runs clean"
