#!/usr/bin/env bash
# test.sh: the whole test suite (make test). In the no-GPU mode:
#   1. gofmt, and go vet on the default build (this type-checks the cgo GPU path against cuda.h)
#      and on the nocuda build;
#   2. go test in the mode's build (with a GPU, the GPU tests run: kernels against references);
#   3. every notebook run as a reader runs it (notebooks/browser_test.go): Jupyter started by
#      .ci/jupyter.sh as `make notebooks` starts it, each notebook opened in headless Chromium,
#      outputs cleared, Run All, the page checked, and .ci/check_notebook.py run on the executed
#      copy in .scratch/browser/ (the notebooks themselves are never saved); then the test's own
#      fault cases (no server, missing notebook, dead kernel, hung cell, broken cell). The executed
#      copies fail on any error output or a folder of this machine named in an output, and the
#      committed notebooks are checked for those too;
#   4. the classroom hub (notebooks/hub_test.go): make hub's JupyterHub with three students whose
#      system accounts the test makes and removes (as root; skipped otherwise), each logged in
#      through the browser running notebook 00 at the same time, then graded from the roster.
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
KERNELS_BROWSER_TEST=0 go test $tags -count=1 ./...
/usr/bin/python3 .ci/test_check_notebook.py # the path rule, and the committed notebooks checked by it

echo "test: every notebook in headless Chromium, then the classroom hub (screenshots and executed copies in .scratch/browser/)"
KERNELS_BROWSER_TEST=1 go test $tags -count=1 -timeout 75m -v -run 'TestNotebooksInBrowser|TestBrowserFaults|TestClassroomHub' ./notebooks
echo "test: all passed"
