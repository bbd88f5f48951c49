package lab

import (
	"fmt"
	"time"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/record"
	"github.com/cudalessons/cudalessons/helpers/show"
)

// Program is a compiled source and, in the GPU mode, its loaded kernels.
type Program struct {
	Source   compile.Source
	Compiled *compile.Result
	Kernels  map[string]*gpu.Kernel // empty in the no-GPU mode
	env      *Env
	module   *gpu.Module
	opts     compile.Options // as built, for its SASS
}

// Build compiles src with NVRTC for the env's architecture and, in the GPU mode, loads it and looks
// up the named kernels. A compile error is a *compile.Error with the log and the source lines.
func (e *Env) Build(src compile.Source, kernels ...string) (*Program, error) {
	return e.BuildWith(src, compile.Options{}, kernels...)
}

// BuildWith is Build with compile options; an empty opts.Arch means the env's architecture. A
// source built before with the same options in this env is not loaded again: its Program is reused
// (and the kernels it lacks are looked up), so measuring in a loop does not pile up modules.
func (e *Env) BuildWith(src compile.Source, opts compile.Options, kernels ...string) (*Program, error) {
	if opts.Arch == "" {
		opts.Arch = e.Arch()
	}
	key := fmt.Sprintf("%s\x00%s\x00%#v", src.Name, src.Code, opts)
	p, ok := e.programs[key]
	if !ok {
		res, err := compile.PTX(src, opts)
		if err != nil {
			return nil, err
		}
		if e.reader {
			if err := e.preflight(src, opts); err != nil {
				return nil, err
			}
		}
		p = &Program{Source: src, Compiled: res, Kernels: map[string]*gpu.Kernel{}, env: e, opts: opts}
		if e.GPU() {
			if p.module, err = e.Session.Load(res.PTX); err != nil {
				return nil, e.loadError(src, opts, err)
			}
			p.module.Source = src.Name
		}
		if e.programs == nil {
			e.programs = map[string]*Program{}
		}
		e.programs[key] = p
	}
	e.built = append(e.built, p)
	if !e.GPU() {
		// The driver would look the kernels up; without it the PTX says whether they exist, so
		// that a wrong name gets the same message in both modes.
		for _, name := range kernels {
			if _, err := compile.Instructions(p.Compiled.PTX, name); err != nil {
				return nil, fmt.Errorf("%s: kernel %q not found in the module (declare it extern \"C\" so its name is not mangled): %w", src.Name, name, err)
			}
		}
		return p, nil
	}
	mod := p.module
	for _, name := range kernels {
		if _, ok := p.Kernels[name]; ok {
			continue
		}
		k, err := mod.Kernel(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src.Name, err)
		}
		p.Kernels[name] = k
	}
	return p, nil
}

// Kernel returns a loaded kernel by name.
func (p *Program) Kernel(name string) (*gpu.Kernel, error) {
	if !p.env.GPU() {
		return nil, fmt.Errorf("kernel %s compiled, but it cannot run in the %s", name, p.env.Mode)
	}
	k, ok := p.Kernels[name]
	if !ok {
		return nil, fmt.Errorf("kernel %s was not asked for when %s was built", name, p.Source.Name)
	}
	return k, nil
}

// Report is the compile report of a kernel at a launch's block size and dynamic shared memory:
// registers, shared and local memory from the driver and the occupancy it allows. In the no-GPU mode
// only the static shared memory is known (from the PTX); the rest needs the driver's JIT.
func (p *Program) Report(kernel string, blockThreads, dynShared int) record.KernelReport {
	r := record.KernelReport{Kernel: kernel, Source: p.Source.Name, Arch: p.Compiled.Arch, Block: blockThreads, DynamicShared: dynShared}
	k, ok := p.Kernels[kernel]
	if !ok {
		r.StaticSharedBytes = compile.StaticSharedBytes(p.Compiled.PTX)
		return r
	}
	r.Measured = true
	r.Registers, r.StaticSharedBytes, r.LocalBytes, r.MaxThreadsPerBlock =
		k.Attrs.Registers, k.Attrs.StaticSharedBytes, k.Attrs.LocalBytes, k.Attrs.MaxThreadsPerBlock
	occ, err := k.Occupancy(blockThreads, dynShared)
	if err != nil {
		r.Limiter = "unknown: " + err.Error()
		return r
	}
	r.BlocksPerSM, r.Occupancy, r.Limiter = occ.BlocksPerSM, occ.Fraction, occ.Limiter
	return r
}

// CompileNote says how p was compiled, for a line under a cell: NVRTC's version and the
// architecture, compiled now (and how long it took) or taken from the PTX cache, and the PTX's size.
func (p *Program) CompileNote() string {
	c := p.Compiled
	how := fmt.Sprintf("compiled in %v", c.Duration.Round(time.Millisecond))
	if c.Cached {
		how = "from the PTX cache"
	}
	return fmt.Sprintf("NVRTC %s for %s, %s, %d bytes of PTX", c.NVRTC, c.Arch, how, len(c.PTX))
}

// CompileFiles compiles the named files of a lesson's kernel folder (each with every set of
// defines that defines returns for it; nil: once, without) and shows one line per build, so that a
// reader sees at once that NVRTC works and that every step compiles. A source that needs more than
// this GPU has is not compiled and says so on its line; a compile error stops it, with the
// compiler's log.
func (e *Env) CompileFiles(dir compile.Files, files []string, defines func(file string) [][]string) error {
	for _, f := range files {
		src, err := dir.Source(f)
		if err != nil {
			return err
		}
		sets := [][]string{nil}
		if defines != nil {
			if d := defines(f); len(d) > 0 {
				sets = d
			}
		}
		for _, d := range sets {
			name := f
			if d != nil {
				name = fmt.Sprintf("%s %v", f, d)
			}
			prog, err := e.BuildWith(src, compile.Options{Defines: d})
			if IsRefusal(err) {
				show.Note(show.Warning, name+": not compiled for this GPU: "+err.Error())
				continue
			}
			if err != nil {
				return err
			}
			show.Note(show.Success, name+": "+prog.CompileNote())
		}
	}
	return nil
}

// ShowSource displays one file of a lesson's kernel folder with line numbers.
func ShowSource(dir compile.Files, file string) error {
	src, err := dir.Source(file)
	if err != nil {
		return err
	}
	show.Source(src.Name, src.Code)
	return nil
}
