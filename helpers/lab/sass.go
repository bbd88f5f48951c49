package lab

import (
	"fmt"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/sass"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// SASS compiles src for the real architecture of this env (the GPU's in the GPU mode, the recorded
// GPU's in the no-GPU mode; opts.Arch overrides it, compute_90a for a Hopper-only step) and
// disassembles it with nvdisasm: the machine code, each instruction with its source line. No GPU
// is needed.
func (e *Env) SASS(src compile.Source, opts compile.Options) (*sass.Listing, error) {
	if opts.Arch == "" {
		opts.Arch = e.Arch()
	}
	return sass.Of(src, opts)
}

// sassWhose says whose architecture a listing is for: this GPU's, or the recorded one's.
func (e *Env) sassWhose(l *sass.Listing) string {
	name := e.Device().Name
	if name == "" {
		name = "the recorded GPU"
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
