package torch

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"
)

//go:embed worker.py
var workerLoop string

// endOfReply starts the line with which worker.py ends a reply.
const endOfReply = "\x1e"

// Worker runs baseline scripts in one Python process, one after another: importing torch and
// torch.compile's first compilation (seconds each) are paid once, not once per script, which is
// most of a small problem's time when a run has dozens of them (cmd/kernelbench). A script behaves
// as under Run: the prelude, its arguments as ARGS, its result the JSON on the last line it prints.
// Between scripts the worker drops the script's names and empties PyTorch's caches, so the GPU's
// memory is free again for the Go side. A script that fails leaves the worker running; one that
// runs over its time limit gets the process killed, and the next script starts a new one.
//
// A Worker is safe for use by several goroutines; scripts still run one at a time. Close it when
// done.
type Worker struct {
	prelude string

	mu      sync.Mutex
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	replies chan workerReply
	stderr  *tailBuffer
	exited  chan struct{}
}

// workerReply is one script's output (its lines) and the worker's status line, or why the worker's
// output ended.
type workerReply struct {
	lines  []string
	status workerStatus
	err    error
}

// workerStatus is the JSON line ending a reply.
type workerStatus struct {
	OK      bool   `json:"ok"`
	Error   string `json:"error"`
	Trace   string `json:"trace"`
	Cleanup string `json:"cleanup"`
}

// NewWorker returns a worker for the suite's baseline scripts (after the prelude); its Python
// process starts with the first script.
func NewWorker() *Worker { return &Worker{prelude: prelude} }

// Run runs script (after the prelude) with args as ARGS and decodes the JSON it emits into result,
// as Run does with a process of its own. A script that runs longer than timeout is stopped with
// its worker.
func (w *Worker) Run(script string, args, result any, timeout time.Duration) error {
	in, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("encoding the baseline's arguments: %w", err)
	}
	req, err := json.Marshal(struct {
		Source string          `json:"source"`
		Args   json.RawMessage `json:"args"`
	}{w.prelude + "\n" + script, in})
	if err != nil {
		return fmt.Errorf("encoding the baseline's request: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.start(); err != nil {
		return err
	}
	w.stderr.reset()
	if _, err := w.stdin.Write(append(req, '\n')); err != nil {
		w.stop()
		return fmt.Errorf("sending the baseline to the PyTorch worker: %w", err)
	}
	var rep workerReply
	select {
	case rep = <-w.replies:
	case <-time.After(timeout):
		w.stop()
		return fmt.Errorf("the PyTorch baseline ran over %v (its worker was stopped)", timeout)
	}
	if rep.err != nil {
		msg := strings.TrimSpace(w.stderr.String())
		w.stop()
		return fmt.Errorf("the PyTorch worker ended (%v): %s\n%s", rep.err, lastLine(msg), tail(msg, 2000))
	}
	if !rep.status.OK {
		return fmt.Errorf("the PyTorch baseline failed: %s\n%s", rep.status.Error, tail(rep.status.Trace, 2000))
	}
	last := ""
	for i := len(rep.lines) - 1; i >= 0 && last == ""; i-- {
		last = strings.TrimSpace(rep.lines[i])
	}
	if err := json.Unmarshal([]byte(last), result); err != nil {
		return fmt.Errorf("reading the baseline's result %q: %w", tail(last, 200), err)
	}
	return nil
}

// Close stops the worker's process, if it runs.
func (w *Worker) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stop()
	return nil
}

// start starts the Python process unless it runs; w.mu is held.
func (w *Worker) start() error {
	if w.cmd != nil {
		select {
		case <-w.exited:
			w.stop() // it died between scripts: start another
		default:
			return nil
		}
	}
	cmd := exec.Command(Python(), "-u", "-c", workerLoop)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("the PyTorch worker's stdin: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("the PyTorch worker's stdout: %w", err)
	}
	w.stderr = &tailBuffer{max: 8 << 10}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the PyTorch worker (%s): %w", Python(), err)
	}
	w.cmd, w.stdin, w.replies, w.exited = cmd, stdin, make(chan workerReply, 1), make(chan struct{})
	go readReplies(stdout, w.replies, w.exited, cmd)
	return nil
}

// stop kills the process and waits for its reader; w.mu is held.
func (w *Worker) stop() {
	if w.cmd == nil {
		return
	}
	w.stdin.Close()
	w.cmd.Process.Kill()
	<-w.exited
	w.cmd = nil
}

// readReplies reads the worker's stdout into replies, one per script, until it ends; then it
// waits for the process and closes exited.
func readReplies(stdout io.Reader, replies chan<- workerReply, exited chan<- struct{}, cmd *exec.Cmd) {
	defer close(exited)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var lines []string
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, endOfReply) {
			lines = append(lines, line)
			continue
		}
		var st workerStatus
		if err := json.Unmarshal([]byte(line[len(endOfReply):]), &st); err != nil {
			st = workerStatus{Error: fmt.Sprintf("an unreadable status line %q: %v", tail(line, 200), err)}
		}
		replies <- workerReply{lines: lines, status: st}
		lines = nil
	}
	err := sc.Err()
	werr := cmd.Wait()
	if err == nil {
		err = werr
	}
	if err == nil {
		err = errors.New("its output ended")
	}
	select {
	case replies <- workerReply{err: err}:
	default:
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

func (t *tailBuffer) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = t.b[:0]
}

func lastLine(s string) string {
	if i := strings.LastIndex(s, "\n"); i >= 0 {
		return s[i+1:]
	}
	return s
}
