#!/usr/bin/env bash
# record.sh: records what the suite shows, in one run at one commit on this machine's GPUs: every
# notebook executed (each measuring its own lesson: the pages' outputs and results/), KernelBench's
# problems, the GPU profile matrix and the sanitizer pass. `make record` calls it.
#
#   bash .ci/record.sh OUT [task ...]
#   bash .ci/record.sh --list            (the default tasks, one a line; no GPU needed)
#
# A task is nb:<notebook>[+<notebook>...] (notebooks of one lesson together, so they share its run),
# kb:<k/n> or kb:<problems> (cmd/kernelbench -part or -problems), gpus:<profiles>:<notebooks>
# (cmd/gpus, a part of its own; no notebooks named: every one), sass:<lessons> (cmd/profile -sass: the SASS
# records the notebooks show without a GPU) or sanitize.
# Without tasks: every notebook, KernelBench's catalog in three parts, the sanitizer pass, lesson 08's
# SASS records and the GPU matrix (every notebook under each of cmd/gpus's default profiles, a task
# per profile).
# Tasks are taken in order by SLOTS (default 2) workers per GPU (every GPU nvidia-smi lists, or
# CUDA_VISIBLE_DEVICES's); the workers of one GPU take turns at it through a lock of its own
# (KERNELS_GPU_LOCK), so no two time kernels at once on one GPU, while a notebook's cells compile
# beside another's measurements. A finished task leaves OUT/done/<task>, and running again with the
# same OUT skips it: a run stopped part way resumes, and a task that failed is tried again.
#
# What it leaves in OUT: notebooks/ (the executed copies, each checked), runs/ (the lessons' runs,
# for results/), kb/ and gpus/ (KernelBench's and the matrix's parts), sass/, sanitize.json, logs/
# (one per task) and status.log (when each task started and ended, on which GPU). Then, here or on
# any machine: .ci/adopt.sh OUT joins the parts, copies everything over notebooks/ and results/ and
# regenerates the report, figures and the README's tables from them.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

# default_tasks prints the tasks of a run given none: KernelBench in three parts, then every
# notebook, the longest first, those of one lesson (the same two digits: 04_softmax and
# 04b_layernorm) in one task so that they share its run; then the sanitizer pass, the SASS records
# (sm_90a: the no-GPU mode's only way to show lesson 08's) and the matrix, a task per profile (its
# notebooks' cells take turns with the timed notebooks', so it goes last).
default_tasks() {
  local nbs
  nbs=$(cd "$root/notebooks" && ls [0-9][0-9]*_*.ipynb)
  printf '%s\n' kb:1/3 kb:2/3 kb:3/3
  printf '%s\n' $nbs | awk -v longest="08 03 05" '
    { n = substr($0, 1, 2); if (n in task) task[n] = task[n] "+" $0; else { task[n] = $0; order[++count] = n } }
    END {
      first = split(longest, lead, " ")
      for (i = 1; i <= first; i++) if (lead[i] in task) { print "nb:" task[lead[i]]; delete task[lead[i]] }
      for (i = 1; i <= count; i++) if (order[i] in task) print "nb:" task[order[i]]
    }'
  echo sanitize
  echo sass:08_hopper
  printf 'gpus:%s:\n' $matrix_profiles
}

# matrix_profiles are cmd/gpus's default profiles (lessons/matrix.Defaults; a test keeps them equal).
matrix_profiles="t4 a100-80 a10 l4 h100-sxm"
if [ "${1:-}" = --list ]; then
  default_tasks
  exit 0
fi
out=${1:?usage: bash .ci/record.sh OUT [task ...] (or --list)}
shift
source "$root/.ci/env.sh"
if [ "$(bash "$root/.ci/mode.sh")" != gpu ]; then
  echo "record.sh: no GPU here: the records are measured on a GPU (the no-GPU mode shows results/)" >&2
  exit 2
fi
mkdir -p "$out" && out=$(cd "$out" && pwd)
cd "$root"
if [ -z "${KERNELS_COMMIT:-}" ]; then # as execute.sh and record.ProjectCommit name it
  KERNELS_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || true)
fi
export KERNELS_COMMIT

if [ $# -eq 0 ]; then
  mapfile -t defaults < <(default_tasks)
  set -- "${defaults[@]}"
fi
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  IFS=, read -ra gpus <<<"$CUDA_VISIBLE_DEVICES"
else
  mapfile -t gpus < <(nvidia-smi --query-gpu=index --format=csv,noheader)
fi
slots=${SLOTS:-2}
mkdir -p "$out"/{done,claimed,failed,logs,notebooks,runs,kb,bin,work}
printf '%s\n' "$@" >"$out/tasks"
: >>"$out/status.log"
echo "record.sh: ${#gpus[@]} GPU(s) (${gpus[*]}), $slots task(s) at a time on each, $# task(s) into $out, commit $KERNELS_COMMIT" | tee -a "$out/status.log"

# The commands, built once for every task.
for c in kernelbench gpus; do
  go build -o "$out/bin/$c" "./cmd/$c" || { echo "record.sh: building cmd/$c failed" >&2; exit 1; }
done

name() { printf '%s' "$1" | tr -c 'A-Za-z0-9_.-' '_'; }
now() { date -u +%H:%M:%S; }

# holding LOCK CMD... runs CMD holding LOCK exclusively, its children not asked to lock again: for
# tasks whose processes would otherwise time their work beside another task's on the same GPU.
holding() {
  local lock=$1
  shift
  if command -v flock >/dev/null; then
    env -u KERNELS_GPU_LOCK flock "$lock" "$@"
  else
    env -u KERNELS_GPU_LOCK python3 -c 'import fcntl, subprocess, sys
f = open(sys.argv[1], "a"); fcntl.flock(f, fcntl.LOCK_EX); sys.exit(subprocess.call(sys.argv[2:]))' "$lock" "$@"
  fi
}

# claim prints the next task not yet claimed or done, and claims it (mkdir is the lock: atomic).
claim() {
  until mkdir "$out/claiming" 2>/dev/null; do sleep 0.2; done
  local t n
  while read -r t; do
    n=$(name "$t")
    if [ ! -e "$out/done/$n" ] && [ ! -e "$out/claimed/$n" ] && [ ! -e "$out/failed/$n" ]; then
      : >"$out/claimed/$n"
      printf '%s\n' "$t"
      break
    fi
  done <"$out/tasks"
  rmdir "$out/claiming"
}

# run_task GPU TASK runs one task on one GPU; its status is the task's.
run_task() {
  local gpu=$1 task=$2 n work
  n=$(name "$task")
  work="$out/work/$n"
  export CUDA_VISIBLE_DEVICES=$gpu KERNELS_GPU_LOCK="$out/gpu$gpu.lock"
  case $task in
  nb:*)
    local list
    IFS=+ read -ra list <<<"${task#nb:}"
    JOBS=${#list[@]} LIMIT=${LIMIT:-25m} bash .ci/execute.sh "$work" "${list[@]}" || return 1
    cp "$work"/*.ipynb "$out/notebooks/" && cp "$work"/runs/*.json "$out/runs/" 2>/dev/null
    rm -rf "$work/cache"
    ;;
  kb:*)
    local pick=(-problems "${task#kb:}")
    [[ ${task#kb:} =~ ^[0-9]+/[0-9]+$ ]] && pick=(-part "${task#kb:}")
    holding "$KERNELS_GPU_LOCK" "$out/bin/kernelbench" "${pick[@]}" -out "$out/kb/$n.json"
    ;;
  gpus:*) # a part of its own (tasks on two GPUs run at once), which adopt.sh joins. Its notebooks'
    # cells take the GPU's lock one at a time, as a notebook task's do: holding it for the whole matrix
    # (minutes) kept the notebook beside it waiting (notebook 05 took 911 s beside the matrix, 04 over 17 minutes).
    local spec=${task#gpus:}
    mkdir -p "$out/gpus"
    "$out/bin/gpus" -profiles "${spec%%:*}" -notebooks "${spec#*:}" -jobs 5 \
      -results "$out/gpus/$n.json" -docs "$work/GPUS.md" -work "$work"
    ;;
  sass:*) # NVRTC and nvdisasm only: no turn at the GPU
    go run ./cmd/profile -sass "$out/sass" -lessons "${task#sass:}"
    ;;
  sanitize)
    holding "$KERNELS_GPU_LOCK" go run ./cmd/sanitize -out "$out" -logs "$work"
    ;;
  *)
    echo "record.sh: unknown task $task (nb:, kb:, gpus:, sass: or sanitize)" >&2
    return 2
    ;;
  esac
}

worker() {
  local gpu=$1 task n start status
  while task=$(claim) && [ -n "$task" ]; do
    n=$(name "$task")
    start=$(date +%s)
    echo "$(now) GPU $gpu: $task started" >>"$out/status.log"
    run_task "$gpu" "$task" >"$out/logs/$n.log" 2>&1
    status=$?
    if [ $status -eq 0 ]; then : >"$out/done/$n"; else : >"$out/failed/$n"; fi
    rm -f "$out/claimed/$n"
    echo "$(now) GPU $gpu: $task $([ $status -eq 0 ] && echo done || echo "FAILED (exit $status)") in $(($(date +%s) - start)) s" | tee -a "$out/status.log"
  done
}

rm -rf "$out"/claimed/* "$out"/failed/* "$out/claiming" # a new run tries the failed tasks again
for g in "${gpus[@]}"; do
  for ((s = 0; s < slots; s++)); do
    worker "$g" &
    sleep 1
  done
done
wait

fail=0
while read -r t; do
  [ -e "$out/done/$(name "$t")" ] || { echo "record.sh: not done: $t (see $out/logs/$(name "$t").log)"; fail=1; }
done <"$out/tasks"
[ $fail -eq 0 ] && echo "record.sh: every task done; .ci/adopt.sh $out puts the records in place"
exit $fail
