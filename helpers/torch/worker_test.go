package torch

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// standIn is a prelude without torch (not installed here): the tests exercise the worker's loop and
// its Go side with python3; the real baselines run through it on the GPU machine.
const standIn = `import json, os, sys
def emit(result):
    sys.stdout.write("\n" + json.dumps(result) + "\n")
`

func newTestWorker(t *testing.T) *Worker {
	t.Helper()
	if _, err := exec.LookPath(Python()); err != nil {
		t.Skipf("no %s: %v", Python(), err)
	}
	w := &Worker{prelude: standIn}
	t.Cleanup(func() { w.Close() })
	return w
}

type pidResult struct {
	PID  int  `json:"pid"`
	N    int  `json:"n"`
	Seen bool `json:"seen"`
}

const echoScript = `print("noise before the result")
emit({"pid": os.getpid(), "n": ARGS["n"] * 2, "seen": "LEFT" in globals()})
LEFT = 1
`

func TestWorkerRunsScriptsInOneProcess(t *testing.T) {
	w := newTestWorker(t)
	var a, b pidResult
	if err := w.Run(echoScript, map[string]int{"n": 3}, &a, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := w.Run(echoScript, map[string]int{"n": 5}, &b, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if a.N != 6 || b.N != 10 {
		t.Errorf("results %+v and %+v, want n 6 and 10", a, b)
	}
	if a.PID != b.PID {
		t.Errorf("two scripts ran in processes %d and %d, want one worker", a.PID, b.PID)
	}
	if b.Seen {
		t.Error("the second script saw a name the first one left: each script needs a fresh namespace")
	}
}

func TestWorkerReportsAFailureAndGoesOn(t *testing.T) {
	w := newTestWorker(t)
	var first, after pidResult
	if err := w.Run(echoScript, map[string]int{"n": 1}, &first, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`raise ValueError("shape (3, 4) is too small")`, `sys.exit(4)`} {
		err := w.Run(bad, nil, &after, 30*time.Second)
		if err == nil || !strings.Contains(err.Error(), "baseline failed") {
			t.Errorf("%q gave %v, want the baseline's failure", bad, err)
		}
	}
	err := w.Run(`raise ValueError("shape (3, 4) is too small")`, nil, &after, 30*time.Second)
	if err == nil || !strings.Contains(strings.Split(err.Error(), "\n")[0], "shape (3, 4) is too small") {
		t.Errorf("the error's first line should carry the exception's message: %v", err)
	}
	if err := w.Run(echoScript, map[string]int{"n": 2}, &after, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if after.PID != first.PID {
		t.Errorf("a failed script restarted the worker (%d, then %d)", first.PID, after.PID)
	}
	if err := w.Run(`print("no result")`, nil, &after, 30*time.Second); err == nil || !strings.Contains(err.Error(), "reading the baseline's result") {
		t.Errorf("a script without a result gave %v", err)
	}
}

func TestWorkerStopsAScriptOverItsTimeAndStartsAnother(t *testing.T) {
	w := newTestWorker(t)
	var first, after pidResult
	if err := w.Run(echoScript, map[string]int{"n": 1}, &first, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := w.Run("import time\ntime.sleep(60)", nil, &after, 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "ran over 500ms") {
		t.Errorf("a script over its time gave %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("stopping the worker took %v", d)
	}
	if err := w.Run(echoScript, map[string]int{"n": 2}, &after, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if after.PID == first.PID || after.N != 4 {
		t.Errorf("after a stop: %+v (the stopped worker was %d), want a new process", after, first.PID)
	}
	// A worker that dies mid-script says so with its stderr, and the next script gets a new one.
	err = w.Run(`sys.stderr.write("out of memory, goodbye\n"); sys.stderr.flush(); os._exit(3)`, nil, &after, 30*time.Second)
	if err == nil || !strings.Contains(err.Error(), "worker ended") || !strings.Contains(err.Error(), "out of memory, goodbye") {
		t.Errorf("a worker that exits gave %v", err)
	}
	if err := w.Run(echoScript, map[string]int{"n": 3}, &after, 30*time.Second); err != nil || after.N != 6 {
		t.Errorf("after the worker died: %+v, %v", after, err)
	}
}
