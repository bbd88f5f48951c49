//go:build !nocuda

package kernelbench

import (
	"math/rand/v2"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/check"
	kb "github.com/cudalessons/cudalessons/helpers/kernelbench"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
)

// Ties everywhere: x takes only four values, so every column's maximum and minimum repeat, in the
// rows of every thread that shares the column. Max, min, argmax and argmin on the GPU equal the
// float64 reference exactly (the first index of a tie, as PyTorch), on every sample of the
// NaN-poisoned output.
func TestDimReduceTiesOnTheGPU(t *testing.T) {
	env := labtest.Open(t)
	ps, err := kb.Select(kb.SmallProblems(), "49,53,51,52")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		outer, R, inner := p.Reduced()
		t.Logf("%s: (%d, %d, %d), %d threads a column", p.ID(), outer, R, inner, DimReduceSplit(env.Session.Device, outer, R, inner))
		r := rand.New(rand.NewPCG(7, uint64(p.Number)))
		x := make([]float32, p.Tensors[0].Len())
		for i := range x {
			x[i] = float32(r.IntN(4)) / 4
		}
		impl, err := NewBackend(env).Open(p)
		if err != nil {
			t.Fatal(err)
		}
		idx := make([]int, outer)
		for i := range idx {
			idx[i] = i
		}
		tensors := [][]float32{x}
		if err := impl.Load(tensors); err != nil {
			t.Fatal(err)
		}
		got, bad, err := impl.Output(0, idx)
		impl.Free()
		if err != nil {
			t.Fatal(err)
		}
		want, err := Reference(p, kb.SliceInputs(p, tensors, idx), outer)
		if err != nil {
			t.Fatal(err)
		}
		if c := check.Compare(check.Float64s(got), want, Exact); !c.OK || bad != 0 {
			t.Errorf("%s: %v, %d outputs unwritten or out of range", p.ID(), c.Err(), bad)
		}
	}
}
