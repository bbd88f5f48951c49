package kernelbench

import (
	"math"
	"math/rand/v2"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/parallel"
)

// chunk is the number of values drawn from one generator: a tensor is filled chunk by chunk in
// parallel, each chunk from a generator seeded by (seed, chunk index), so the values do not depend
// on how many goroutines drew them.
const chunk = 1 << 20

// ParamSeed is the seed of the parameters (KernelBench builds its model after set_seed(42)); a
// tensor's seed is this plus its index among the problem's tensors.
const ParamSeed = 42

// TrialSeed is the seed of trial t's inputs: fresh values for every trial, as KernelBench draws each
// correctness trial's inputs from a seed of its own. The generator is Go's PCG, not torch's: the
// values differ from KernelBench's, their distribution is the same.
func TrialSeed(t int) uint64 { return 1000 + 7919*uint64(t) }

// Draw fills a tensor's values from its distribution with the given seed, in parallel.
func Draw(t Tensor, seed uint64) []float32 {
	out := make([]float32, t.Len())
	switch t.Dist {
	case Ones:
		for i := range out {
			out[i] = 1
		}
		return out
	case Zeros:
		return out
	}
	bound := t.Bound()
	chunks := (len(out) + chunk - 1) / chunk
	parallel.For(chunks, func(c int) {
		r := rand.New(rand.NewPCG(seed, uint64(c)))
		part := out[c*chunk : min((c+1)*chunk, len(out))]
		switch t.Dist {
		case Randn:
			for i := range part {
				part[i] = float32(r.NormFloat64())
			}
		case KaimingUniform:
			for i := range part {
				part[i] = float32((2*r.Float64() - 1) * bound)
			}
		default: // Rand
			for i := range part {
				part[i] = r.Float32()
			}
		}
	})
	return out
}

// DrawParams draws the problem's parameters (once for all trials); inputs are left nil.
func DrawParams(p Problem) [][]float32 {
	out := make([][]float32, len(p.Tensors))
	for i, t := range p.Tensors {
		if t.Param {
			out[i] = Draw(t, ParamSeed+uint64(i))
		}
	}
	return out
}

// DrawTrial is trial t's tensors: fresh inputs, and the parameters given (DrawParams).
func DrawTrial(p Problem, params [][]float32, t int) [][]float32 {
	out := make([][]float32, len(p.Tensors))
	for i, ts := range p.Tensors {
		if ts.Param {
			out[i] = params[i]
			continue
		}
		out[i] = Draw(ts, TrialSeed(t)+uint64(i))
	}
	return out
}

// SliceIndices are the batch indices a trial compares: n distinct indices below batch, sorted,
// the first and the last among them when n >= 2 (the edges where tails hide), the rest drawn from
// the trial's seed; every index when n >= batch.
func SliceIndices(batch, n, trial int) []int {
	return check.Pick(rand.New(rand.NewPCG(TrialSeed(trial), 0x511ce)), batch, n)
}

// Gather copies the batch slices idx (each per elements long) of x into one array.
func Gather(x []float32, per int, idx []int) []float32 {
	out := make([]float32, 0, per*len(idx))
	for _, b := range idx {
		out = append(out, x[b*per:(b+1)*per]...)
	}
	return out
}

// SliceInputs are the tensors the reference sees for the slices idx of a trial: the batched first
// tensor cut to those slices, every other tensor whole (B, the weights, the biases).
func SliceInputs(p Problem, trial [][]float32, idx []int) [][]float32 {
	out := append([][]float32{}, trial...)
	if p.sliceCols() { // A stored transposed: a row of C is a column of A
		a := p.Tensors[0].Shape
		out[0] = GatherCols(trial[0], a[0], a[1], idx)
		return out
	}
	for i := 0; i < p.batchedInputs(); i++ {
		out[i] = Gather(trial[i], p.Tensors[i].Len()/p.Tensors[i].Shape[0], idx)
	}
	return out
}

// SliceShape is the shape of a tensor of the problem cut to n batch slices.
func SliceShape(shape []int, n int) []int {
	s := append([]int{}, shape...)
	s[0] = n
	return s
}

// SlicedShape is the shape of the problem's i-th tensor cut to n batch slices (SliceInputs): the
// batched inputs along their batch axis, the others whole.
func (p Problem) SlicedShape(i, n int) []int {
	shape := p.Tensors[i].Shape
	if i >= p.batchedInputs() {
		return shape
	}
	s := append([]int{}, shape...)
	s[p.BatchAxis()] = n
	return s
}

// finite is v, or -1 where v is NaN or Inf (JSON has neither; the verdict beside it says it failed).
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return -1
	}
	return v
}
