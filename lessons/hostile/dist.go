package hostile

import (
	"math"
	"math/rand/v2"
)

// Dist is a distribution of inputs a model produces. Fill writes rows x cols values (cols is the
// innermost dimension) from r.
type Dist struct {
	Name string `json:"name"`
	Why  string `json:"why"`
	// Masks says that the distribution puts -inf masks in rows (attention masks): only ops whose
	// rows are softmax-like take it.
	Masks bool                                            `json:"masks,omitempty"`
	Fill  func(r *rand.Rand, x []float32, rows, cols int) `json:"-"`
}

// normal fills x with normal values of standard deviation s, rounded to float32.
func normal(s float64) func(r *rand.Rand, x []float32, rows, cols int) {
	return func(r *rand.Rand, x []float32, _, _ int) {
		for i := range x {
			x[i] = float32(r.NormFloat64() * s)
		}
	}
}

// uniform fills x with values uniform in [-s, s), rounded to float32.
func uniform(s float64) func(r *rand.Rand, x []float32, rows, cols int) {
	return func(r *rand.Rand, x []float32, _, _ int) {
		for i := range x {
			x[i] = float32((2*r.Float64() - 1) * s)
		}
	}
}

// RowScales are the scales of the mixed distribution, row r taking RowScales[r % 7].
var RowScales = []float64{1e-30, 1e-20, 1e-10, 1, 1e10, 1e20, 1e30}

// Dists are the distributions every op is fed (those with Masks only by softmax-like ops).
var Dists = []Dist{
	{Name: "normal 1", Why: "activations of a trained layer", Fill: normal(1)},
	{Name: "normal 1e-30", Why: "the smallest scale: products and squares underflow float32", Fill: normal(1e-30)},
	{Name: "normal 1e30", Why: "the largest scale: products and squares overflow float32", Fill: normal(1e30)},
	{Name: "uniform 1e-30", Why: "uniform at the smallest scale", Fill: uniform(1e-30)},
	{Name: "uniform 1e30", Why: "uniform at the largest scale", Fill: uniform(1e30)},
	{Name: "uniform 2^-30", Why: "below fp16's range (2^-24 is its smallest subnormal)", Fill: uniform(0x1p-30)},
	{Name: "uniform 1e5", Why: "beyond fp16's largest value, 65504", Fill: uniform(1e5)},
	{Name: "mixed row scales", Why: "rows at scales from 1e-30 to 1e30 (row r at RowScales[r % 7])",
		Fill: func(r *rand.Rand, x []float32, rows, cols int) {
			for i := range x {
				x[i] = float32(r.NormFloat64() * RowScales[(i/max(cols, 1))%len(RowScales)])
			}
		}},
	{Name: "wide rows", Why: "entries of one row spanning 2^-20 to 2^20 (outlier features): past the 28 binades the fp16x3 split keeps, inside the 3xTF32 split's 64",
		Fill: func(r *rand.Rand, x []float32, rows, cols int) {
			for i := range x {
				x[i] = float32(r.NormFloat64() * math.Ldexp(1, r.IntN(41)-20))
			}
		}},
	{Name: "constant rows", Why: "every element of a row equal: zero variance, a uniform softmax",
		Fill: func(r *rand.Rand, x []float32, rows, cols int) {
			for row := 0; row*cols < len(x); row++ {
				v := float32(r.NormFloat64())
				for i := row * cols; i < min((row+1)*cols, len(x)); i++ {
					x[i] = v
				}
			}
		}},
	{Name: "masked -inf", Why: "attention masks: row 0 -inf but one element, row 1 all -inf, the others about half -inf", Masks: true,
		Fill: func(r *rand.Rand, x []float32, rows, cols int) { fillMasked(r, x, cols) }},
	{Name: "inf and nan", Why: "one +inf (rows 0, 3, ...), -inf (rows 1, 4, ...) or NaN (rows 2, 5, ...) in a normal row",
		Fill: func(r *rand.Rand, x []float32, rows, cols int) {
			normal(1)(r, x, rows, cols)
			special := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
			for row := 0; row*cols < len(x) && cols > 0; row++ {
				x[row*cols+r.IntN(cols)] = special[row%3]
			}
		}},
	{Name: "denormals", Why: "float32 subnormals only (|x| < 2^-126)", Fill: uniform(0x1p-127)},
}

// fillMasked draws normal rows and masks them with -inf: row 0 all but one element, row 1 every
// element, the others each element with probability 1/2 (one element always kept).
func fillMasked(r *rand.Rand, x []float32, cols int) {
	normal(1)(r, x, 0, 0)
	ninf := float32(math.Inf(-1))
	for row := 0; row*cols < len(x) && cols > 0; row++ {
		seg := x[row*cols : (row+1)*cols]
		keep := r.IntN(cols)
		for i := range seg {
			switch {
			case row == 1:
				seg[i] = ninf
			case i == keep:
			case row == 0 || r.IntN(2) == 0:
				seg[i] = ninf
			}
		}
	}
}

// DistByName finds a distribution.
func DistByName(name string) (Dist, bool) {
	for _, d := range Dists {
		if d.Name == name {
			return d, true
		}
	}
	return Dist{}, false
}

// Draw fills n values of d, as rows of cols, from seed.
func (d Dist) Draw(n, cols int, seed uint64) []float32 {
	x := make([]float32, n)
	d.Fill(rng(seed), x, n/max(cols, 1), cols)
	return x
}

// rng is the generator of one input of one case.
func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }
