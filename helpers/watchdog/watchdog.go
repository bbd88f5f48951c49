// Package watchdog ends a process whose GPU work runs past a deadline, and one that is interrupted,
// so that the driver frees the GPU at once.
//
// A kernel that never ends (a grid-stride loop whose stride is 0, a __syncthreads that some
// threads never reach) blocks its process in the driver for ever: no Go code of that goroutine
// runs again, and the process keeps its GPU context, and the GPU busy, until it is killed. The only
// remedy is to end the process; the driver then tears down the context. A watch runs beside the
// blocked work on its own goroutine:
//
//	w := watchdog.Arm(limit, func(ran time.Duration) { show the reader which kernel, how long })
//	err := runTheReadersKernel()
//	w.Disarm()
//
// When limit passes before Disarm, the watch calls its report and ends the process with ExitCode.
// In a notebook each cell is its own process, so the next cell starts with a fresh GPU context.
package watchdog

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// ExitCode is the exit status of a process the watchdog ended at a deadline.
const ExitCode = 3

// InterruptCode is the exit status of a process the watchdog ended on SIGINT or SIGTERM (128 + 2,
// as a shell reports an interrupted command).
const InterruptCode = 130

// exit ends the process; a variable only so that the package's own test can watch a watch expire
// without dying (the process-level behaviour is tested in a child process).
var exit = os.Exit

// Watch is one armed deadline.
type Watch struct {
	start  time.Time
	limit  time.Duration
	timer  *time.Timer
	mu     sync.Mutex
	done   bool // disarmed, or fired
	report func(ran time.Duration)
}

// Arm starts a watch: unless Disarm comes first, after limit it calls report with the time since
// Arm (report should show what ran and why it may not end, and must not block on the GPU), then
// ends the process with ExitCode.
func Arm(limit time.Duration, report func(ran time.Duration)) *Watch {
	w := &Watch{start: time.Now(), limit: limit, report: report}
	w.timer = time.AfterFunc(limit, w.fire)
	return w
}

func (w *Watch) fire() {
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return
	}
	w.done = true
	w.mu.Unlock()
	if w.report != nil {
		w.report(time.Since(w.start))
	}
	exit(ExitCode)
}

// Disarm stops the watch and returns how long the watched work took. It reports false when the
// watch had already fired (the process is then ending). A nil Watch disarms as a no-op.
func (w *Watch) Disarm() (time.Duration, bool) {
	if w == nil {
		return 0, true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return time.Since(w.start), false
	}
	w.done = true
	w.timer.Stop()
	return time.Since(w.start), true
}

// Limit is the watch's deadline.
func (w *Watch) Limit() time.Duration { return w.limit }

// Deadline is the limit for work that normally takes typical: factor times typical, but never
// less than floor. A reader's kernel that is slower than the original but correct finishes well
// inside it; one that never ends is stopped after a time the reader can wait for.
func Deadline(typical time.Duration, factor float64, floor time.Duration) time.Duration {
	return max(floor, time.Duration(float64(typical)*factor))
}

// OnInterrupt makes SIGINT (Jupyter's interrupt, which GoNB forwards to the cell's process) and
// SIGTERM end the process at once with InterruptCode, after calling report (which should say what
// was running). The process ends even while its main goroutine is blocked in the driver, and its
// GPU context goes with it. The returned stop undoes it.
func OnInterrupt(report func(sig os.Signal)) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	quit := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			if report != nil {
				report(sig)
			}
			exit(InterruptCode)
		case <-quit:
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			close(quit)
		})
	}
}
