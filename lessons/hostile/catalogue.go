package hostile

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
)

// Shape is one shape of an op's inputs, chosen where the op's dispatch changes path.
type Shape struct {
	Dims []int `json:"dims"` // the op's shape, as Op.Dims says
	// Offset is how many floats into its buffer the op's main input starts (1: a view off 16-byte
	// alignment), for ops that take device tensors.
	Offset int `json:"offset,omitempty"`
	// Plain names inputs drawn normal with standard deviation 1 instead of from the distribution
	// (one operand at an extreme scale, the other at 1).
	Plain []string `json:"plain,omitempty"`
	// Axes is how many trailing dimensions the op normalises (layer norm).
	Axes  int    `json:"axes,omitempty"`
	Note  string `json:"note"`            // the path it is for
	Short bool   `json:"short,omitempty"` // part of the short run
}

// String is the shape as the report shows it.
func (s Shape) String() string {
	out := strings.Trim(strings.ReplaceAll(fmt.Sprint(s.Dims), " ", "x"), "[]")
	if s.Offset != 0 {
		out += fmt.Sprintf(" +%d", s.Offset)
	}
	if len(s.Plain) > 0 {
		out += " (" + strings.Join(s.Plain, ", ") + " normal 1)"
	}
	return out
}

// Input is one input tensor of a case.
type Input struct {
	Name  string    `json:"name"`
	Shape []int     `json:"shape"`
	Data  []float32 `json:"-"`
}

// Output is one output of a case: the op's values, and the float64 reference with how it is
// judged: an element bound where the output sums terms (Bound and Mag), else the lesson's
// tolerance (Tol, with Cols the length of a row, the innermost dimension).
type Output struct {
	Name string
	Got  []float32
	Want []float64
	// Mag is, element by element, the sum of the absolute values of the terms the element adds up:
	// the reference evaluated on the absolute values of the inputs. Bound is each element's
	// absolute bound from the rounding model (check.SumBound, matmul.ElementTol). Both nil: the
	// output is judged by Tol.
	Mag, Bound []float64
	Tol        check.Tolerance
	Cols       int
	// RowFloor, when not nil, is each row's own floor in place of Tol.Floor (derived from that
	// row's magnitudes, by the lesson's model): rows at 1e-30 beside rows at 1e30 are each held to
	// their own rounding.
	RowFloor func(row int) float64
}

// Op is one public op of a lesson as the harness calls it.
type Op struct {
	Name   string `json:"name"`
	Lesson string `json:"lesson"`
	// Call is the public entry point and how the harness calls it.
	Call string `json:"call"`
	// Dims says what Shape.Dims are for this op.
	Dims string `json:"dims"`
	// Paths are the steps its dispatch can take (with the backward's, joined by "; " where the op
	// has one); a recorded step exercises a path when one of its parts starts with it.
	Paths []string `json:"paths"`
	// Masks: the op's rows are softmax-like, and it takes the masked distribution.
	Masks  bool    `json:"masks,omitempty"`
	Shapes []Shape `json:"shapes"`
	// Outputs are the names of the outputs, as Run, Reference and the PyTorch function return them.
	Outputs []string `json:"outputs"`

	// Inputs draws the case's inputs: the distributed ones from d, the others as the lesson's own
	// tests draw them.
	Inputs func(s Shape, d Dist, seed uint64) []Input `json:"-"`
	// Predict is the step the op's dispatch picks for these inputs on dev (the lesson's own rule).
	Predict func(dev gpu.DeviceInfo, s Shape, in []Input) string `json:"-"`
	// Run calls the op on the GPU: each output's values and the step that ran; an error means the
	// op refused (or failed to run: Run's callers tell the two apart by whether an output came).
	Run func(env *lab.Env, s Shape, in []Input) (map[string][]float32, string, error) `json:"-"`
	// Reference is each output's float64 reference and tolerance (the lesson's own, for the step
	// that ran where it depends on it).
	Reference func(s Shape, in []Input, step string) []Output `json:"-"`
	// Torch is the body of a Python function of I (the inputs by name, float32 CUDA tensors) and
	// META (the case's dims and offset) returning a dict of the outputs by name: PyTorch's op.
	Torch string `json:"-"`
}

// Exercises reports whether a recorded step takes path p.
func Exercises(step, p string) bool {
	for _, part := range strings.Split(step, "; ") {
		if strings.HasPrefix(part, p) {
			return true
		}
	}
	return false
}

// DistsFor are the distributions op takes.
func (op Op) DistsFor() []Dist {
	var out []Dist
	for _, d := range Dists {
		if !d.Masks || op.Masks {
			out = append(out, d)
		}
	}
	return out
}

// Case is one (op, distribution, shape) of a run, with its seed.
type Case struct {
	Op    *Op
	Dist  Dist
	Shape Shape
	Seed  uint64
}

// ID names the case in file names.
func (c Case) ID(i int) string { return fmt.Sprintf("c%04d", i) }

// Cases are the cases of a run: every shape of every op in ops (all, when empty) under every
// distribution it takes, or only the shapes marked Short; each seeded from seed, the op, the
// distribution and the shape.
func Cases(cat []*Op, ops []string, short bool, seed uint64) []Case {
	var out []Case
	for _, op := range cat {
		if len(ops) > 0 && !slices.Contains(ops, op.Name) {
			continue
		}
		for si, s := range op.Shapes {
			if short && !s.Short {
				continue
			}
			for _, d := range op.DistsFor() {
				h := fnv.New64a()
				fmt.Fprintf(h, "%d|%s|%s|%d", seed, op.Name, d.Name, si)
				out = append(out, Case{Op: op, Dist: d, Shape: s, Seed: h.Sum64()})
			}
		}
	}
	return out
}

// draw is an input of the case: from the distribution unless the shape names it plain.
func draw(s Shape, d Dist, name string, shape []int, seed uint64) Input {
	n := 1
	for _, v := range shape {
		n *= v
	}
	cols := 1
	if len(shape) > 0 {
		cols = shape[len(shape)-1]
	}
	if slices.Contains(s.Plain, name) {
		d = Dists[0]
	}
	return Input{Name: name, Shape: shape, Data: d.Draw(n, cols, seed)}
}

// uniformIn is n values uniform in [lo, hi), as the lessons draw weights.
func uniformIn(name string, shape []int, lo, hi float64, seed uint64) Input {
	n := 1
	for _, v := range shape {
		n *= v
	}
	r := rng(seed)
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(lo + (hi-lo)*r.Float64())
	}
	return Input{Name: name, Shape: shape, Data: x}
}

// find is the input named name.
func find(in []Input, name string) Input {
	for _, x := range in {
		if x.Name == name {
			return x
		}
	}
	return Input{}
}
