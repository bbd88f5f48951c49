#!/usr/bin/env bash
# test.sh: the whole test suite (make test). In the no-GPU mode:
#   1. gofmt, and go vet on the default build (this type-checks the cgo GPU path against cuda.h)
#      and on the nocuda build;
#   2. go test in the mode's build (with a GPU, the GPU tests run: kernels against references);
#   3. every notebook executed headless with nbconvert into .scratch/ (never over the committed
#      ones), failing on any error output or a folder of this machine named in an output (the
#      committed notebooks are checked for those too).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source .ci/env.sh
mode=$(bash .ci/mode.sh)
tags=""; [ "$mode" = nogpu ] && tags="-tags=nocuda"
echo "test: $mode mode"
cuda_env_show | sed 's/^/test: /' || { echo "test: CUDA is incomplete (above): run bash .ci/setup.sh"; exit 1; }

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.device/*'))
if [ -n "$unformatted" ]; then echo "gofmt needed:"; echo "$unformatted"; exit 1; fi
go vet ./...
go vet -tags=nocuda ./...
go test $tags -count=1 ./...
/usr/bin/python3 .ci/test_check_notebook.py # the path rule, and the committed notebooks checked by it

mkdir -p .scratch
export GOFLAGS="$tags ${GOFLAGS:-}"
for nb in notebooks/*.ipynb; do
  out=.scratch/$(basename "$nb")
  echo "test: executing $nb"
  # The kernel inherits GOFLAGS, so every cell builds in this mode.
  (cd notebooks && jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=900 \
      --output "$root/$out" "$(basename "$nb")") > .scratch/nbconvert.log 2>&1 || { tail -40 .scratch/nbconvert.log; exit 1; }
  /usr/bin/python3 .ci/check_notebook.py "$out"
done
echo "test: all passed"
