#!/usr/bin/env bash
# adopt.sh: puts a recorded run (.ci/record.sh OUT) in place, on any machine, no GPU needed: the
# executed notebooks over notebooks/; the lessons' runs into results/ with their tables, figures and
# report made again from them (cmd/reproduce -from; a lesson the run lacks keeps its record); and,
# where the run has them, KernelBench's record, the GPU matrix with docs/GPUS.md, the SASS records,
# the sanitizer pass with its lines in the README; then the README's generated tables.
# `make adopt OUT=...` calls it.
#
#   bash .ci/adopt.sh OUT
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(cd "${1:?usage: bash .ci/adopt.sh OUT (a folder .ci/record.sh wrote)}" && pwd)
source "$root/.ci/env.sh"
export GOFLAGS="-tags=nocuda ${GOFLAGS:-}"
cd "$root"

if compgen -G "$out/notebooks/*.ipynb" >/dev/null; then
  cp "$out"/notebooks/*.ipynb notebooks/
  echo "adopt.sh: notebooks: $(cd "$out/notebooks" && ls *.ipynb | paste -sd' ')"
fi
if compgen -G "$out/runs/*.json" >/dev/null; then
  runs=$(mktemp -d)
  trap 'rm -rf "$runs"' EXIT
  cp results/[0-9][0-9]_*.json "$runs/"
  cp "$out"/runs/*.json "$runs/"
  go run ./cmd/reproduce -from "$runs" -out results >/dev/null
  echo "adopt.sh: lessons' runs: $(cd "$out/runs" && ls *.json | paste -sd' '); results/ tables, figures and report made again"
fi
# KernelBench's and the matrix's parts (record.sh's kb/ and gpus/) are joined here, so a run
# collected before its end still gives one record of the parts it finished.
if compgen -G "$out/kb/*.json" >/dev/null; then
  go run ./cmd/kernelbench -merge "$(ls "$out"/kb/*.json | paste -sd,)" -out results/kernelbench.json >/dev/null
  echo "adopt.sh: results/kernelbench.json from $(ls "$out"/kb/*.json | wc -l) part(s)"
fi
if compgen -G "$out/gpus/*.json" >/dev/null; then
  go run ./cmd/gpus -merge "$(ls "$out"/gpus/*.json | paste -sd,)"
  echo "adopt.sh: the GPU matrix's parts joined into results/gpus.json, docs/GPUS.md"
fi
if compgen -G "$out/sass/*.json" >/dev/null; then
  cp "$out"/sass/*.json results/sass/
  echo "adopt.sh: results/sass: $(cd "$out/sass" && ls *.json | paste -sd' ')"
fi
if [ -f "$out/sanitize.json" ]; then
  cp "$out/sanitize.json" results/sanitize.json
  go run ./cmd/sanitize -summary results/sanitize.json | /usr/bin/env python3 -c '
import re, sys
lines = ["- " + l for l in sys.stdin.read().splitlines() if l.strip()]
readme = open("README.md").read()
block = re.compile(r"^- memcheck:.*\n(?:- .*\n)*?- the whole pass:.*\n", re.M)
if not block.search(readme):
    sys.exit("adopt.sh: the README has no sanitizer lines (- memcheck: ... - the whole pass:) to replace")
open("README.md", "w").write(block.sub(lambda m: "\n".join(lines) + "\n", readme, count=1))
'
  echo "adopt.sh: results/sanitize.json and its README lines"
fi
go run ./cmd/reproduce -readme README.md
echo "adopt.sh: README's generated tables written; run make test before committing"
