package oneflow

import (
	"fmt"

	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/record"
	ko "github.com/cudalessons/cudalessons/kernels/oneflow"
)

// Trial is one step of the lesson as the notebook lets a reader edit it: code (the step's file
// with the same kernel names and parameters) compiled, checked on NaN-poisoned outputs against the
// float64 reference, and timed against the original step in the same run, on the article's
// problem. step is an elementwise step ("naive", "packed", "in flight"), an atomics step (its name
// in AtomicSteps) or an upsample step ("generic", "pack2x"). The elementwise and upsample steps
// are tried in both dtypes (and both directions), each a case of the comparison.
func Trial(env *lab.Env, step string) (lab.Trial, error) {
	if s, err := MulStepByName(step); err == nil {
		return mulTrial(env, s), nil
	}
	for _, s := range AtomicSteps {
		if s.Name == step {
			return dotTrial(env, s), nil
		}
	}
	for _, s := range UpSteps {
		if s.Name == step {
			return upTrial(env, s), nil
		}
	}
	var names []string
	for _, s := range append(append([]MulStep{}, MulSteps...), InflightDefault) {
		names = append(names, s.Name)
	}
	for _, s := range AtomicSteps {
		names = append(names, s.Name)
	}
	for _, s := range UpSteps {
		names = append(names, s.Name)
	}
	return lab.Trial{}, fmt.Errorf("oneflow: no step %q (steps: %q)", step, names)
}

// Try is the notebook's "edit any step" cell: code in place of step's kernel file, compiled,
// checked and timed beside the original (lab.Env.Try).
func Try(env *lab.Env, step, code string) error {
	t, err := Trial(env, step)
	if err != nil {
		return err
	}
	return env.Try(t, code)
}

// Sanitize runs the reader's code for a step (the original when empty) once under
// compute-sanitizer (lab.Env.Sanitize) with tool ("" for memcheck; racecheck, synccheck,
// initcheck), and shows the first reports with their source lines, threads and blocks: Try's cell
// with Try replaced by Sanitize.
func Sanitize(env *lab.Env, step, code, tool string) error {
	t, err := Trial(env, step)
	if err != nil {
		return err
	}
	return env.Sanitize(t, code, tool)
}

// Profile runs the original step once under Nsight Compute, and the reader's code once more when
// code is not empty (lab.Env.Profile), each in a child process, with the sections that answer the
// lesson's question, and shows both profiles side by side and their warp stall reasons: Try's cell
// with Try replaced by Profile.
func Profile(env *lab.Env, step, code string) error {
	t, err := Trial(env, step)
	if err != nil {
		return err
	}
	return env.Profile(t, code)
}

// sourceOf is a file of the lesson, or code in its place (named my_<file>).
func sourceOf(file, code string) (compile.Source, error) {
	if code != "" {
		return compile.Source{Name: "my_" + file, Code: code}, nil
	}
	return ko.Source(file)
}

// reports compiles file (or code) and reports the named kernels at block 256.
func reports(env *lab.Env, file, code string, defines []string, kernels []string) ([]record.KernelReport, error) {
	src, err := sourceOf(file, code)
	if err != nil {
		return nil, err
	}
	prog, err := env.BuildWith(src, compile.Options{Defines: defines}, kernels...)
	if err != nil {
		return nil, err
	}
	var out []record.KernelReport
	for _, k := range kernels {
		out = append(out, prog.Report(k, Block, 0))
	}
	return out, nil
}

func mulTrial(env *lab.Env, s MulStep) lab.Trial {
	probs := map[DType]*MulProblem{}
	return lab.Trial{Step: s.Name, Lesson: ID, Original: lab.OriginalOf(ko.Kernels, s.File),
		Compile: func(code string) ([]record.KernelReport, error) {
			var ks []string
			for _, d := range DTypes {
				ks = append(ks, s.Kernel+"_"+d.suffix())
			}
			return reports(env, s.File, code, s.Defines, ks)
		},
		Measure: func(code string) ([]record.Record, error) {
			var out []record.Record
			for i, d := range DTypes {
				p := probs[d]
				if p == nil {
					var err error
					if p, err = NewMulProblem(env, d, MulN, uint64(70+i), 0); err != nil {
						return out, err
					}
					probs[d] = p
				}
				rec, err := p.Measure(s, code, s.Name)
				if err != nil {
					return out, err
				}
				out = append(out, lab.Edited(rec, code))
			}
			return out, nil
		},
		Recorded: func(run *record.Run) []record.Record {
			var out []record.Record
			for _, d := range DTypes {
				if r, ok := find(run, "mul", s.Name, d, 0); ok {
					out = append(out, r)
				}
			}
			return out
		},
		Close: func() {
			for _, p := range probs {
				p.Free()
			}
		},
	}
}

func dotTrial(env *lab.Env, s AtomicStep) lab.Trial {
	var p *DotProblem
	return lab.Trial{Step: s.Name, Lesson: ID, Original: lab.OriginalOf(ko.Kernels, s.File),
		Compile: func(code string) ([]record.KernelReport, error) {
			return reports(env, s.File, code, nil, []string{s.Kernel})
		},
		Measure: func(code string) ([]record.Record, error) {
			if p == nil {
				var err error
				if p, err = PinnedDot(env, DotN); err != nil {
					return nil, err
				}
			}
			saved := env.Bench.Method
			env.Bench.Method = DotMethod
			defer func() { env.Bench.Method = saved }()
			rec, _, err := measureDotStep(env, p, PinnedDotModel(DotN), s, code)
			if err != nil {
				return nil, err
			}
			return []record.Record{lab.Edited(rec, code)}, nil
		},
		Recorded: func(run *record.Run) []record.Record {
			if r, ok := find(run, "atomics", s.Name, "", 0); ok {
				return []record.Record{r}
			}
			return nil
		},
		Close: func() {
			if p != nil {
				p.Free()
			}
		},
	}
}

func upTrial(env *lab.Env, s UpStep) lab.Trial {
	probs := map[DType]*UpProblem{}
	prefix := "up2x_"
	if s.Name == "generic" {
		prefix = "up_generic_"
	}
	return lab.Trial{Step: s.Name, Lesson: ID, Original: lab.OriginalOf(ko.Kernels, s.File),
		Compile: func(code string) ([]record.KernelReport, error) {
			var ks []string
			for _, d := range DTypes {
				for _, dir := range []string{"fwd", "bwd"} {
					ks = append(ks, prefix+dir+"_"+d.suffix())
				}
			}
			return reports(env, s.File, code, nil, ks)
		},
		Measure: func(code string) ([]record.Record, error) {
			var out []record.Record
			for i, d := range DTypes {
				p := probs[d]
				if p == nil {
					var err error
					if p, err = NewUpProblem(env, d, ArticleShape, uint64(80+i), 0); err != nil {
						return out, err
					}
					probs[d] = p
				}
				for _, dir := range []string{Forward, Backward} {
					rec, err := p.Measure(s, dir, code)
					if err != nil {
						return out, err
					}
					out = append(out, lab.Edited(rec, code))
				}
			}
			return out, nil
		},
		Recorded: func(run *record.Run) []record.Record {
			var out []record.Record
			in := int64(ArticleShape[0] * ArticleShape[1] * ArticleShape[2] * ArticleShape[3])
			for _, d := range DTypes {
				for _, dir := range []string{Forward, Backward} {
					if r, ok := find(run, "upsample "+dir, s.Name, d, in); ok {
						out = append(out, r)
					}
				}
			}
			return out
		},
		Close: func() {
			for _, p := range probs {
				p.Free()
			}
		},
	}
}
