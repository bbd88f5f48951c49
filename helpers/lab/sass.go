package lab

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/sass"
	"github.com/cudalessons/cudalessons/helpers/show"
	"github.com/cudalessons/cudalessons/results"
)

// SASS compiles src for the real architecture of this env (the GPU's in the GPU mode, the recorded
// GPU's in the no-GPU mode; opts.Arch overrides it, compute_90a for a Hopper-only step) and
// disassembles it with nvdisasm: the machine code, each instruction with its source line. No GPU
// is needed. Where this NVRTC cannot compile for the architecture (compile.ArchError: NVRTC 11.8
// and compute_90a), it is the recorded listing of exactly this source and these options
// (results/sass, cmd/profile -sass), its Recorded receipt set; without one, the error.
func (e *Env) SASS(src compile.Source, opts compile.Options) (*sass.Listing, error) {
	if opts.Arch == "" {
		opts.Arch = e.Arch()
	}
	l, err := sass.Of(src, opts)
	if err == nil {
		if e.keptSASS != nil {
			*e.keptSASS = append(*e.keptSASS, sass.NewRecord(src, opts, l))
		}
		return l, nil
	}
	var ae *compile.ArchError
	if !errors.As(err, &ae) {
		return nil, err
	}
	files, lerr := recordedSASS()
	if lerr != nil {
		return nil, fmt.Errorf("%w (and the recorded SASS cannot be read: %v)", err, lerr)
	}
	rec, ok, ferr := sass.Find(files, src, opts)
	if ferr != nil {
		return nil, fmt.Errorf("%w (and its recorded SASS is damaged: %v)", err, ferr)
	}
	if !ok {
		return nil, err
	}
	rec.Unbuildable = ae
	return rec, nil
}

// recordedSASS are the recorded listings, results/sass/*.json (a variable: tests read others).
var recordedSASS = sync.OnceValues(func() ([]sass.File, error) {
	sub, err := fs.Sub(results.SASS, "sass")
	if err != nil {
		return nil, err
	}
	return sass.Load(sub)
})

// KeepSASS makes every listing SASS compiles from now on kept (KeptSASS), forgetting those kept
// before: how cmd/profile -sass records what the lessons' Walk cells ask for.
func (e *Env) KeepSASS() { e.keptSASS = new([]sass.Record) }

// KeptSASS are the records of the listings SASS compiled since KeepSASS, in order, each once.
func (e *Env) KeptSASS() []sass.Record {
	if e.keptSASS == nil {
		return nil
	}
	var out []sass.Record
	seen := map[sass.Key]bool{}
	for _, r := range *e.keptSASS {
		if !seen[r.Key] {
			seen[r.Key] = true
			out = append(out, r)
		}
	}
	return out
}

// sassWhose says whose architecture a listing is for: this GPU's, or the recorded one's; and, for a
// recorded listing, with which NVRTC and when it was recorded, and why it was not compiled here.
func (e *Env) sassWhose(l *sass.Listing) string {
	name := e.Device().Name
	if name == "" {
		name = "the recorded GPU"
	}
	if r := l.Recorded; r != nil {
		why := "this machine's NVRTC cannot compile it"
		if ae := l.Unbuildable; ae != nil {
			why = fmt.Sprintf("this machine's NVRTC %s cannot compile for %s", ae.NVRTC, ae.Arch)
		}
		return fmt.Sprintf("recorded with NVRTC %s for %s on %s: %s", r.NVRTC, l.Arch, r.Day(), why)
	}
	if e.GPU() {
		return fmt.Sprintf("for this GPU (%s, %s)", name, l.Arch)
	}
	return fmt.Sprintf("for the recorded GPU (%s, %s): %s, no GPU needed", name, l.Arch, e.Mode)
}

// ShowSASS shows the SASS of src (Env.SASS): the count table of what the lessons talk about (global
// loads and stores by width, shared memory, FFMA, tensor-core instructions, barriers, spills, ...),
// then the listing, collapsed, each run of instructions under its source line.
func (e *Env) ShowSASS(src compile.Source, opts compile.Options) error {
	l, err := e.SASS(src, opts)
	if err != nil {
		return err
	}
	show.Note(show.Info, "Machine code of "+src.Name+" "+e.sassWhose(l)+".")
	l.Display()
	return nil
}

// ShowSASSCollapsed is ShowSASS folded into one line the reader opens: how Walk and Try show the
// step's machine code. It never fails the cell: a source that cannot be disassembled (no nvdisasm,
// a step this architecture cannot build) says why in place of the listing.
func (e *Env) ShowSASSCollapsed(src compile.Source, opts compile.Options) {
	l, err := e.SASS(src, opts)
	if err != nil {
		if _, refused := compile.IsNeed(err); refused {
			return // the step's refusal is said by the cell already
		}
		show.Note(show.Warning, "No SASS for "+src.Name+": "+firstLine(err.Error()))
		return
	}
	n := 0
	for _, k := range l.Kernels {
		_, runs := sass.Counts(k)
		n += runs
	}
	summary := fmt.Sprintf("SASS of %s %s: %d instructions, counted by kind", src.Name, e.sassWhose(l), n)
	if l.Recorded != nil {
		summary = fmt.Sprintf("SASS of %s, %d instructions counted by kind, %s", src.Name, n, e.sassWhose(l))
	}
	show.HTML(l.HTML(summary), "--- "+summary+"\n"+sass.CountTable(l).Text())
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// showBuiltSASS shows, collapsed, the SASS of every source built since mark (Try: the reader's
// code as the trial compiled it).
func (e *Env) showBuiltSASS(mark int) {
	seen := map[string]bool{}
	for _, p := range e.built[mark:] {
		key := p.Source.Name + "\x00" + p.Source.Code
		if seen[key] {
			continue
		}
		seen[key] = true
		opts := p.opts
		opts.Arch = p.Compiled.Arch
		e.ShowSASSCollapsed(p.Source, opts)
	}
}
