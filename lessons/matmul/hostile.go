package matmul

import "math"

// HostileInput is a product's inputs at magnitudes where an fp16 split that is not moved into
// fp16's range returns zeros, loses bits or overflows, or with values no split takes, and the
// product dtype of the step Choose must run on them ("fp16x3", "3xtf32" or "float32").
type HostileInput struct {
	Name  string
	A, B  []float32
	Takes string
}

// HostileInputs are the lesson's hostile products of shape s (M, N multiples of 128 and K of 32,
// so that the splits take the shape; at least 3 rows and 10 columns), built on Inputs(s, seed):
// both operands near 2^-30, one near 2^-30 and one near 1, entries beyond fp16's 65504 and near
// it, 1e30 times 1e-30, float32 subnormals (near 2^-130) times 2^100, rows and columns moved by
// different powers of two, products past float32's range (Inf, as float32 gives), a row spanning
// about 40 binades (3xTF32) and one spanning 100 (float32), and Inf and NaN entries (float32).
func HostileInputs(s Shape, seed uint64) []HostileInput {
	scaled := func(name, takes string, fa, fb float64) HostileInput {
		a, b := Inputs(s, seed)
		mulBy(a, fa)
		mulBy(b, fb)
		return HostileInput{Name: name, A: a, B: b, Takes: takes}
	}
	out := []HostileInput{
		scaled("A and B near 2^-30", "fp16x3", 0x1p-30, 0x1p-30),
		scaled("A near 2^-30, B near 1", "fp16x3", 0x1p-30, 1),
		scaled("A beyond 65504 (near 1e6)", "fp16x3", 1e6, 1),
		scaled("A near 65504", "fp16x3", 65504, 1),
		scaled("A near 1e30, B near 1e-30", "fp16x3", 1e30, 1e-30),
		scaled("A subnormal (near 2^-130), B near 2^100", "fp16x3", 0x1p-130, 0x1p100),
		scaled("A and B near 1e20: C past float32 (Inf)", "fp16x3", 1e20, 1e20),
	}
	a, b := Inputs(s, seed)
	for i := range s.M {
		mulBy(a[i*s.K:(i+1)*s.K], math.Ldexp(1, (i*37)%121-60)) // rows from 2^-60 to 2^60
	}
	for l := range s.K {
		for j := range s.N {
			b[l*s.N+j] *= float32(math.Ldexp(1, (j*29)%81-40)) // columns from 2^-40 to 2^40
		}
	}
	out = append(out, HostileInput{Name: "rows and columns at mixed scales", A: a, B: b, Takes: "fp16x3"})
	a, b = Inputs(s, seed)
	a[1] = 1e12
	out = append(out, HostileInput{Name: "a row spanning about 40 binades", A: a, B: b, Takes: "3xtf32"})
	a, b = Inputs(s, seed)
	a[1], a[2] = 1e15, 1e-15
	out = append(out, HostileInput{Name: "a row spanning 100 binades", A: a, B: b, Takes: "float32"})
	a, b = Inputs(s, seed)
	a[2*s.K+3], a[s.K] = float32(math.Inf(1)), float32(math.Inf(-1))
	b[9] = float32(math.NaN())
	return append(out, HostileInput{Name: "Inf and NaN entries", A: a, B: b, Takes: "float32"})
}

func mulBy(x []float32, f float64) {
	for i := range x {
		x[i] = float32(float64(x[i]) * f)
	}
}
