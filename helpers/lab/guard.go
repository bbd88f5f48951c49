package lab

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/rerun"
	"github.com/cudalessons/cudalessons/helpers/show"
	"github.com/cudalessons/cudalessons/helpers/watchdog"
)

// SanitizeHint says how to run a Try cell's code under compute-sanitizer.
const SanitizeHint = "replace Try with Sanitize in this cell (the same arguments) and run it again."

// A reader's kernel runs under a deadline: DeadlineFactor times what the original step took in the
// same cell (its check and timing, on this GPU), and never less than DeadlineFloor.
const (
	DeadlineFactor = 100
	DeadlineFloor  = 10 * time.Second
)

// Deadline is the time one wait for the GPU may take when it waits for launches of a kernel whose
// original takes origMS per launch (0 when unknown: the floor).
func Deadline(origMS float64, launches int) time.Duration {
	typical := time.Duration(origMS * float64(max(1, launches)) * float64(time.Millisecond))
	return watchdog.Deadline(typical, DeadlineFactor, DeadlineFloor)
}

// Guarded runs f, the reader's code for step (its check and timing), with a deadline on every
// wait for the GPU: Deadline(origMS, the launches waited for), origMS being the original's median
// per launch measured in the same cell (0 when unknown). When a wait passes it, the cell shows
// which kernel was running, for how long, what the original takes and the likely causes, then the
// process ends (watchdog.ExitCode): the driver frees the GPU and the next cell starts with a
// fresh context. In the no-GPU mode f just runs.
//
// The sources f builds are taken as the reader's (AsReader).
func (e *Env) Guarded(step string, origMS float64, f func() error) error {
	if e.Session == nil {
		return e.AsReader(f)
	}
	restore := e.Session.GuardWaits(func(n int) time.Duration { return Deadline(origMS, n) },
		func(pending []gpu.LaunchInfo, waited, limit time.Duration) {
			show.Note(show.Failure, TimeoutMessage(step, waited, origMS, pending))
			show.Flush()
		})
	defer restore()
	return e.AsReader(f)
}

// ShowFault shows the fault err reports, when it reports one of the reader's kernels (FaultMessage,
// with hint saying how to run the code under compute-sanitizer, or none when empty), and reports
// whether it did: a lesson's own Try shows any other error its own way.
func ShowFault(step string, err error, hint string) bool {
	var fe *gpu.FaultError
	if !errors.As(err, &fe) {
		return false
	}
	show.Note(show.Failure, FaultMessage(step, fe, hint))
	return true
}

// TimeoutMessage is what a cell shows when the reader's step ran past its deadline: waited is how
// long the wait for the GPU lasted, pending the launches it waited for.
func TimeoutMessage(step string, waited time.Duration, origMS float64, pending []gpu.LaunchInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Your %s did not finish: the GPU was still running it after %s, its deadline", step, roundSec(waited))
	if origMS > 0 {
		n := max(1, len(pending))
		fmt.Fprintf(&b, " (the larger of %s and %d times what the original %s takes for the %d %s waited for: %s per launch, measured in this cell)",
			roundSec(DeadlineFloor), DeadlineFactor, step, n, plural(n, "launch"), fmtMS(origMS))
	}
	b.WriteString(". ")
	if n := len(pending); n > 0 {
		fmt.Fprintf(&b, "Still running: kernel %s. ", pending[n-1])
	}
	b.WriteString("Likely causes: a loop that never ends, such as a grid-stride loop whose stride is 0 " +
		"(for (i = ...; i < n; i += stride) with a stride that came out 0); a __syncthreads() that not every thread " +
		"of the block reaches (inside an if or a loop that some threads leave early), which waits for ever. " +
		"This cell's process ends now, so that the GPU is freed; the next cell starts with a fresh GPU context.")
	return b.String()
}

// FaultMessage is what a cell shows when the reader's step faulted on the GPU.
func FaultMessage(step string, fe *gpu.FaultError, sanitize string) string {
	var b strings.Builder
	if l, ok := fe.Suspect(); ok {
		fmt.Fprintf(&b, "Your %s faulted on the GPU: %s in kernel %s (grid %v, block %v, %d bytes of dynamic shared memory). ",
			step, fe.Kind, l.Kernel, l.Config.Grid, l.Config.Block, l.Config.SharedBytes)
	} else {
		fmt.Fprintf(&b, "Your %s faulted on the GPU: %s. ", step, fe.Kind)
	}
	fmt.Fprintf(&b, "The driver reported %v. This cell's GPU context is lost: nothing more runs on the GPU in this cell, "+
		"and the next cell starts with a fresh one.", fe.Err)
	if sanitize != "" {
		fmt.Fprintf(&b, " To see the source line, the thread and the block of the bad access, run it once under compute-sanitizer: %s", sanitize)
	}
	return b.String()
}

// LimitError is a kernel that asks for more than the GPU gives a block, found before any launch.
type LimitError struct {
	Source string
	Kernel string
	Why    string
	Log    string // ptxas's report, for the record
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s: kernel %s cannot run: %s\n\nptxas (the GPU's assembler) said:\n%s", e.Source, e.Kernel, e.Why, e.Log)
}

// SharedLimit says why static shared memory of r is refused, with the GPU's limits.
func SharedLimit(r compile.Resources, d gpu.DeviceInfo) string {
	s := fmt.Sprintf("it declares %s of static shared memory (__shared__ arrays), and a block may have at most %s of static shared memory",
		compile.KiB(r.SharedBytes), compile.KiB(max(r.SharedMax, 48*1024)))
	if d.MaxSharedPerBlockOptin > 0 {
		s += fmt.Sprintf("; the %s gives a block up to %s as dynamic shared memory (extern __shared__, sized at the launch, which the suite opts in to) and has %s per SM",
			d.Name, compile.KiB(d.MaxSharedPerBlockOptin), compile.KiB(d.MaxSharedPerSM))
	}
	if d.MaxSharedPerSM > 0 && r.SharedBytes > d.MaxSharedPerSM {
		s += ": no block of this kernel fits on an SM at all. Shrink the array (a tile of the data, not all of it)"
	} else {
		s += ". Shrink the array, or make it dynamic shared memory"
	}
	return s + "."
}

// preflight assembles a reader's source for the GPU's real architecture before it is loaded, so
// that what the driver's JIT would refuse (static shared memory over 48 KiB) is named with its
// figure and the limit, in the GPU and the no-GPU mode alike.
func (e *Env) preflight(src compile.Source, opts compile.Options) error {
	res, err := compile.Inspect(src, opts)
	var ce *compile.Error
	if err == nil || !errors.As(err, &ce) {
		return nil // a source ptxas takes (or an Inspect that could not run: the build itself will say)
	}
	for _, r := range res {
		if r.SharedOver {
			return &LimitError{Source: src.Name, Kernel: r.Kernel, Why: SharedLimit(r, e.Device()), Log: strings.TrimSpace(ce.Log)}
		}
	}
	return err // ptxas refused something else: its log, with the source lines it names
}

// loadError explains a module the driver could not load: the driver's error says little
// (InvalidPtx), so the source is assembled for the GPU's real architecture, whose log says why.
func (e *Env) loadError(src compile.Source, opts compile.Options, err error) error {
	if perr := e.preflight(src, opts); perr != nil {
		return fmt.Errorf("%s: the driver could not load it (%v): %w", src.Name, err, perr)
	}
	return fmt.Errorf("%s: %w", src.Name, err)
}

func roundSec(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

func fmtMS(ms float64) string {
	if ms < 1 {
		return fmt.Sprintf("%.3f ms", ms)
	}
	return fmt.Sprintf("%.1f ms", ms)
}

// interrupted is what a cell shows when Jupyter interrupts it.
func interrupted(sig os.Signal) {
	rerun.StopAll() // a cell's Sanitize child, and the program it runs under compute-sanitizer
	show.Note(show.Warning, fmt.Sprintf("Interrupted (%v): this cell's process ends now, and with it its GPU context; the next cell starts with a fresh one.", sig))
	show.Flush()
}
