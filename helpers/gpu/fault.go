package gpu

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/cudalessons/cudalessons/helpers/watchdog"
)

// LaunchInfo is one launch of a kernel: which kernel, from which source, and its configuration.
type LaunchInfo struct {
	Kernel string
	Source string
	Config Config
}

func (l LaunchInfo) String() string {
	s := fmt.Sprintf("%s (grid %v, block %v, %d bytes of dynamic shared memory)", l.Kernel, l.Config.Grid, l.Config.Block, l.Config.SharedBytes)
	if l.Source != "" {
		s += " from " + l.Source
	}
	return s
}

// maxPending bounds the launches a session remembers between two synchronisations.
const maxPending = 16

// FaultError is a kernel's fault, as the driver reports it at the next synchronisation, copy or
// launch: an illegal or misaligned address, an illegal instruction, a failed launch. The fault
// leaves the CUDA context unusable: every later call of the process fails the same way.
type FaultError struct {
	Kind string // what went wrong, in words: "an illegal memory address"
	// Launches are the launches queued since the last successful synchronisation, oldest first:
	// the fault happened in one of them (in the last, when there is one).
	Launches []LaunchInfo
	Err      error // the driver's error
}

// Suspect is the launch that most likely faulted: the last one queued since the last successful
// synchronisation. ok is false when the session launched nothing since.
func (e *FaultError) Suspect() (LaunchInfo, bool) {
	if len(e.Launches) == 0 {
		return LaunchInfo{}, false
	}
	return e.Launches[len(e.Launches)-1], true
}

func (e *FaultError) Error() string {
	l, ok := e.Suspect()
	if !ok {
		return fmt.Sprintf("the GPU reported %s (%v)", e.Kind, e.Err)
	}
	s := fmt.Sprintf("kernel %s faulted: %s (%v)", l, e.Kind, e.Err)
	if n := len(e.Launches); n > 1 {
		var others []string
		for _, o := range e.Launches[:n-1] {
			others = append(others, o.Kernel)
		}
		s += fmt.Sprintf("; %d earlier launches since the last synchronisation (%s) may be the one", n-1, strings.Join(compact(others), ", "))
	}
	return s
}

func (e *FaultError) Unwrap() error { return e.Err }

// faultLine finds what FaultError.Error writes about the faulting launch: the kernel's name and the
// fault's kind, up to its explanation in parentheses.
var faultLine = regexp.MustCompile(`kernel (\S+) \(grid .*? faulted: (?:an? )?([^(]+?) \(`)

// FaultVerdict reads a fault out of a message that carries a FaultError's text, however wrapped,
// and says it in a few words, the kind before the kernel: "illegal memory address in mul_mine".
// ok is false when the message names no kernel's fault. A grader uses it for a verdict from a
// child process, which hands back text rather than the error itself.
func FaultVerdict(msg string) (verdict string, ok bool) {
	m := faultLine.FindStringSubmatch(msg)
	if m == nil {
		return "", false
	}
	return m[2] + " in " + m[1], true
}

// compact drops repeats of the same name in a row.
func compact(names []string) []string {
	var out []string
	for _, n := range names {
		if len(out) == 0 || out[len(out)-1] != n {
			out = append(out, n)
		}
	}
	return out
}

// faultKinds maps the driver's names of a kernel's faults (gorgonia.org/cu's and cuGetErrorName's)
// to words a reader knows.
var faultKinds = []struct {
	names []string
	kind  string
}{
	{[]string{"IllegalAddress", "CUDA_ERROR_ILLEGAL_ADDRESS"}, "an illegal memory address (a load or store outside every allocation: a null pointer, an index past the end)"},
	{[]string{"MisalignedAddress", "CUDA_ERROR_MISALIGNED_ADDRESS"}, "a misaligned address (a vector load or store of 8 or 16 bytes at an address that is not a multiple of its size)"},
	{[]string{"IllegalInstruction", "CUDA_ERROR_ILLEGAL_INSTRUCTION"}, "an illegal instruction (an instruction this GPU cannot run, or a barrier not every thread reached)"},
	{[]string{"HardwareStackError", "CUDA_ERROR_HARDWARE_STACK_ERROR"}, "a hardware stack error (a recursion too deep, or a stack corrupted by an out-of-bounds local array)"},
	{[]string{"InvalidPc", "CUDA_ERROR_INVALID_PC"}, "an invalid program counter (a jump through a corrupted pointer)"},
	{[]string{"Assert", "CUDA_ERROR_ASSERT"}, "a failed assert() in device code"},
	{[]string{"LaunchTimeout", "CUDA_ERROR_LAUNCH_TIMEOUT"}, "a kernel stopped by the display watchdog (it ran too long)"},
	{[]string{"LaunchFailed", "CUDA_ERROR_LAUNCH_FAILED"}, "a failed launch (an exception while the kernel ran)"},
}

// FaultKind names the kernel fault err reports, in words; ok is false when err is not a fault of
// a kernel (an out-of-memory error, a bad argument: those leave the context usable).
func FaultKind(err error) (kind string, ok bool) {
	if err == nil {
		return "", false
	}
	msg := err.Error()
	for _, f := range faultKinds {
		for _, n := range f.names {
			if strings.HasSuffix(msg, n) || strings.Contains(msg, n+" (") || strings.Contains(msg, n+":") {
				return f.kind, true
			}
		}
	}
	return "", false
}

// noteLaunch remembers a launch until the next successful synchronisation.
func (s *Session) noteLaunch(k *Kernel, cfg Config) {
	if len(s.pending) == maxPending {
		s.pending = append(s.pending[:0], s.pending[1:]...)
	}
	s.pending = append(s.pending, LaunchInfo{Kernel: k.Name, Source: k.Source, Config: cfg})
	s.queued++
}

// synced forgets the launches that completed: a synchronising call succeeded.
func (s *Session) synced() { s.pending, s.queued = s.pending[:0], 0 }

// Pending is the launches queued since the last successful synchronisation, oldest first (the
// last 16 of them): while the process waits on the GPU, the kernel it waits for is among them
// (the last, usually).
func (s *Session) Pending() []LaunchInfo { return append([]LaunchInfo(nil), s.pending...) }

// fault turns a driver error that reports a kernel's fault into a *FaultError naming the launches
// since the last successful synchronisation; the first fault is kept, since every later call fails
// the same way. Any other error comes back as it is.
func (s *Session) fault(err error) error {
	if err == nil {
		return nil
	}
	var fe *FaultError
	if errors.As(err, &fe) {
		return err
	}
	if s.faulted != nil {
		return &FaultError{Kind: s.faulted.Kind, Launches: s.faulted.Launches, Err: err}
	}
	kind, ok := FaultKind(err)
	if !ok {
		return err
	}
	s.faulted = &FaultError{Kind: kind, Launches: s.Pending(), Err: err}
	return s.faulted
}

// Faulted is the session's first kernel fault, nil while none happened.
func (s *Session) Faulted() *FaultError { return s.faulted }

// WaitReport is told about a wait on the GPU that ran past the session's wait deadline: the
// launches it waited for (oldest first), how long it had waited and the deadline.
type WaitReport func(pending []LaunchInfo, waited, limit time.Duration)

// WaitLimit is the deadline of one wait for the GPU that waits for the given number of launches.
type WaitLimit func(launches int) time.Duration

// GuardWaits puts a deadline on every wait of the session for the GPU (a synchronisation, a copy
// that waits for the kernels before it, the timing events, a free): when one lasts longer than
// limit says for the launches it waits for, report is called and the process ends
// (watchdog.ExitCode), which is the only way to stop a kernel that never ends; the driver frees the
// GPU with the process. restore puts back the guard that was there before (none at first). A nil
// limit turns the guard off.
func (s *Session) GuardWaits(limit WaitLimit, report WaitReport) (restore func()) {
	prevLimit, prevReport := s.waitLimit, s.waitReport
	s.waitLimit, s.waitReport = limit, report
	return func() { s.waitLimit, s.waitReport = prevLimit, prevReport }
}

// wait runs f, a driver call that waits for queued work, under the session's wait deadline.
func (s *Session) wait(f func() error) error {
	if s.waitLimit == nil {
		return f()
	}
	pending, report := s.Pending(), s.waitReport
	limit := s.waitLimit(s.queued)
	w := watchdog.Arm(limit, func(waited time.Duration) {
		if report != nil {
			report(pending, waited, limit)
		}
	})
	defer w.Disarm()
	return f()
}
