package hostile

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cudalessons/cudalessons/lessons/conv"
)

// The conv reference is PyTorch's formula, a convolution of the zero-padded input: on finite
// inputs the lesson's reference (which skips padded taps) gives the same values; an infinite
// filter tap that lands on the padding makes the border outputs NaN (0 x inf), as in PyTorch.
func TestConvReferencePadsWithZeros(t *testing.T) {
	s := conv.Shape{N: 1, C: 2, H: 5, W: 6, K: 2, R: 3, S: 1, P: 1}
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, s.N*s.C*s.H*s.W)
	w := make([]float32, s.K*s.C*s.R*s.R)
	b := []float32{0.5, -0.25}
	for i := range x {
		x[i] = rng.Float32()*2 - 1
	}
	for i := range w {
		w[i] = rng.Float32()*2 - 1
	}
	ref := convOp().Reference
	in := []Input{{Name: "x", Data: x}, {Name: "w", Data: w}, {Name: "bias", Data: b}}
	sh := Shape{Dims: []int{s.N, s.C, s.H, s.W, s.K, s.R, s.S, s.P}}
	got := ref(sh, in, "")[0].Want
	lesson := conv.Conv(s, conv.Inputs{X: x, W: w, B: b})
	for i := range lesson {
		if math.Abs(got[i]-lesson[i]) > 1e-12 {
			t.Fatalf("finite inputs: element %d is %g, the lesson's reference %g", i, got[i], lesson[i])
		}
	}
	w[0] = float32(math.Inf(1)) // filter 0, channel 0, tap (0, 0): on the padding for the top row and left column
	got = ref(sh, in, "")[0].Want
	for oh := 0; oh < s.OH(); oh++ {
		for ow := 0; ow < s.OW(); ow++ {
			v := got[oh*s.OW()+ow]
			if border := oh == 0 || ow == 0; border != math.IsNaN(v) || !border && !math.IsInf(v, 0) {
				t.Errorf("filter 0 at (%d, %d) with an infinite tap: %g", oh, ow, v)
			}
		}
	}
}
