package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/cudalessons/cudalessons/helpers/bench"
)

// ID is the lesson's ID (results/05_conv.json, notebooks/05_conv.ipynb).
const ID = "05_conv"

// Shape is a convolution layer on a batch: x (N, C, H, W), K filters of C x R x R, stride S and
// zero padding P on every side (square kernels, as in the article's layer).
type Shape struct {
	N, C, H, W int
	K, R, S, P int
}

// The lesson's shapes.
var (
	// AlexNet is the article's layer: AlexNet's first convolution on a batch of 100 images.
	AlexNet = Shape{N: 100, C: 3, H: 224, W: 224, K: 96, R: 11, S: 4, P: 2}
	// Deep is a layer with many input channels, where the product is long (Kg = 2304 taps) and
	// implicit GEMM pays most: ResNet's 3 x 3, 256 -> 256 at 56 x 56, batch 8.
	Deep = Shape{N: 8, C: 256, H: 56, W: 56, K: 256, R: 3, S: 1, P: 1}
)

// MaxSide bounds H, W and the padding: the kernels keep a tap's (r, s) in 16 bits and mark a
// missing pixel with a coordinate of -65536.
const MaxSide = 8192

func (s Shape) String() string {
	return fmt.Sprintf("x (%d,%d,%d,%d), %d filters %dx%d, stride %d, pad %d", s.N, s.C, s.H, s.W, s.K, s.R, s.R, s.S, s.P)
}

// Short is the shape in a few characters, for table rows.
func (s Shape) Short() string {
	return fmt.Sprintf("%dx%dx%dx%d k%d %dx%d s%d p%d", s.N, s.C, s.H, s.W, s.K, s.R, s.R, s.S, s.P)
}

// OH and OW are the output's height and width.
func (s Shape) OH() int { return (s.H+2*s.P-s.R)/s.S + 1 }

// OW is the output's width.
func (s Shape) OW() int { return (s.W+2*s.P-s.R)/s.S + 1 }

// PH and PW are the max pool's (3 x 3, stride 2, no padding, floor) output height and width.
func (s Shape) PH() int { return (s.OH()-3)/2 + 1 }

// PW is the pooled width.
func (s Shape) PW() int { return (s.OW()-3)/2 + 1 }

// Taps is the length of each output's dot product, C*R*R (the GEMM's K dimension).
func (s Shape) Taps() int { return s.C * s.R * s.R }

// XLen, WLen, YLen and PoolLen are the element counts of the tensors.
func (s Shape) XLen() int { return s.N * s.C * s.H * s.W }

// WLen is the filters' element count.
func (s Shape) WLen() int { return s.K * s.Taps() }

// YLen is the conv output's element count.
func (s Shape) YLen() int { return s.N * s.K * s.OH() * s.OW() }

// PoolLen is the pooled output's element count.
func (s Shape) PoolLen() int { return s.N * s.K * s.PH() * s.PW() }

// Validate refuses a layer no step can compute, naming the problem and the limit: sizes below 1,
// a stride of 0, negative padding or padding over half the kernel (PyTorch's rule), a kernel larger
// than the padded input, sides over MaxSide, and tensors whose per-image offsets overflow 32 bits.
func (s Shape) Validate() error {
	for _, d := range []struct {
		name string
		v    int
	}{{"batch N", s.N}, {"input channels C", s.C}, {"height H", s.H}, {"width W", s.W}, {"filters K", s.K}, {"kernel size R", s.R}} {
		if d.v < 1 {
			return fmt.Errorf("conv %v: %s = %d, must be at least 1", s, d.name, d.v)
		}
	}
	if s.S < 1 {
		return fmt.Errorf("conv %v: stride %d, must be at least 1 (a stride of 0 never moves the window)", s, s.S)
	}
	if s.P < 0 || 2*s.P > s.R {
		return fmt.Errorf("conv %v: padding %d, must be between 0 and half the kernel size (%d), as in PyTorch", s, s.P, s.R/2)
	}
	if s.R > s.H+2*s.P || s.R > s.W+2*s.P {
		return fmt.Errorf("conv %v: the %dx%d kernel is larger than the padded input (%d x %d = H+2P x W+2P): no output pixel", s, s.R, s.R, s.H+2*s.P, s.W+2*s.P)
	}
	if s.H > MaxSide || s.W > MaxSide {
		return fmt.Errorf("conv %v: sides up to %d (the kernels' coordinates are 16-bit)", s, MaxSide)
	}
	if int64(s.C)*int64(s.H)*int64(s.W) >= 1<<31 || int64(s.K)*int64(s.OH())*int64(s.OW()) >= 1<<31 || int64(s.K)*int64(s.Taps()) >= 1<<31 {
		return fmt.Errorf("conv %v: one image's input or output, or the filters, must hold fewer than 2^31 elements (32-bit offsets)", s)
	}
	return nil
}

// ValidatePool adds the pool's rule: MaxPool2d(3, 2) needs a conv output of at least 3 x 3.
func (s Shape) ValidatePool() error {
	if err := s.Validate(); err != nil {
		return err
	}
	if s.OH() < 3 || s.OW() < 3 {
		return fmt.Errorf("conv %v: the conv output is %d x %d, and a 3 x 3 max pool needs at least 3 x 3", s, s.OH(), s.OW())
	}
	return nil
}

// Inputs are a layer's float32 inputs: x uniform in [-1, 1), the filters uniform in [-1, 1) scaled
// by 1/sqrt(C*R*R) (PyTorch's default initialisation has the same scale), so that outputs are of
// order 1/3 whatever the depth, and the bias uniform in [-0.1, 0.1).
type Inputs struct {
	X, W, B []float32
}

// NewInputs draws a layer's inputs from seed.
func NewInputs(s Shape, seed uint64) Inputs {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	u := func(n int, scale float64) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32((2*rng.Float64() - 1) * scale)
		}
		return out
	}
	return Inputs{X: u(s.XLen(), 1), W: u(s.WLen(), 1/math.Sqrt(float64(s.Taps()))), B: u(s.K, 0.1)}
}

// ConvAt is the float64 reference of one conv output y[n][k][oh][ow] (the bias added, no ReLU).
func ConvAt(s Shape, in Inputs, n, k, oh, ow int) float64 {
	acc := float64(in.B[k])
	for c := 0; c < s.C; c++ {
		for r := 0; r < s.R; r++ {
			ih := oh*s.S - s.P + r
			if ih < 0 || ih >= s.H {
				continue
			}
			xr := in.X[((n*s.C+c)*s.H+ih)*s.W:]
			wr := in.W[((k*s.C+c)*s.R+r)*s.R:]
			for q := 0; q < s.R; q++ {
				iw := ow*s.S - s.P + q
				if iw < 0 || iw >= s.W {
					continue
				}
				acc += float64(xr[iw]) * float64(wr[q])
			}
		}
	}
	return acc
}

// PoolAt is the float64 reference of one pooled output: the max over the 3 x 3 window at
// (2ph, 2pw) of the conv outputs, after a ReLU when relu is true.
func PoolAt(s Shape, in Inputs, n, k, ph, pw int, relu bool) float64 {
	m := math.Inf(-1)
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			v := ConvAt(s, in, n, k, 2*ph+i, 2*pw+j)
			if relu {
				v = math.Max(v, 0)
			}
			m = math.Max(m, v)
		}
	}
	return m
}

// Conv is the float64 reference of the whole conv output (small shapes: it costs YLen*Taps
// multiply-adds).
func Conv(s Shape, in Inputs) []float64 {
	out := make([]float64, 0, s.YLen())
	for i := 0; i < s.YLen(); i++ {
		out = append(out, convFlat(s, in, i))
	}
	return out
}

// convFlat is ConvAt of the flat NCHW output index i.
func convFlat(s Shape, in Inputs, i int) float64 {
	ow, oh := i%s.OW(), (i/s.OW())%s.OH()
	k, n := (i/s.OW()/s.OH())%s.K, i/s.OW()/s.OH()/s.K
	return ConvAt(s, in, n, k, oh, ow)
}

// poolFlat is PoolAt of the flat NCHW pooled index i.
func poolFlat(s Shape, in Inputs, i int, relu bool) float64 {
	pw, ph := i%s.PW(), (i/s.PW())%s.PH()
	k, n := (i/s.PW()/s.PH())%s.K, i/s.PW()/s.PH()/s.K
	return PoolAt(s, in, n, k, ph, pw, relu)
}

// Im2colConv is a second, independent float64 reference for the tests: the convolution as an
// explicit im2col matrix (one row per output pixel, one column per tap) times the filters.
func Im2colConv(s Shape, in Inputs) []float64 {
	oh, ow, taps := s.OH(), s.OW(), s.Taps()
	out := make([]float64, s.YLen())
	col := make([]float64, taps)
	for n := 0; n < s.N; n++ {
		for y := 0; y < oh; y++ {
			for x := 0; x < ow; x++ {
				for q := range col {
					c, r, t := q/(s.R*s.R), (q/s.R)%s.R, q%s.R
					ih, iw := y*s.S-s.P+r, x*s.S-s.P+t
					col[q] = 0
					if ih >= 0 && ih < s.H && iw >= 0 && iw < s.W {
						col[q] = float64(in.X[((n*s.C+c)*s.H+ih)*s.W+iw])
					}
				}
				for k := 0; k < s.K; k++ {
					acc := float64(in.B[k])
					for q, v := range col {
						acc += v * float64(in.W[k*taps+q])
					}
					out[((n*s.K+k)*oh+y)*ow+x] = acc
				}
			}
		}
	}
	return out
}

// MaxPool is the float64 reference of MaxPool2d(3, 2) over a conv output y (N, K, OH, OW), after a
// ReLU when relu is true.
func MaxPool(s Shape, y []float64, relu bool) []float64 {
	oh, ow, ph, pw := s.OH(), s.OW(), s.PH(), s.PW()
	out := make([]float64, 0, s.PoolLen())
	for nk := 0; nk < s.N*s.K; nk++ {
		for a := 0; a < ph; a++ {
			for b := 0; b < pw; b++ {
				m := math.Inf(-1)
				for i := 0; i < 3; i++ {
					for j := 0; j < 3; j++ {
						v := y[(nk*oh+2*a+i)*ow+2*b+j]
						if relu {
							v = math.Max(v, 0)
						}
						m = math.Max(m, v)
					}
				}
				out = append(out, m)
			}
		}
	}
	return out
}

// Work is the conv's useful work: 2*Taps FLOPs per output, and the minimum traffic (x, w and the
// bias read once, y written once).
func Work(s Shape) bench.Work {
	return bench.Work{FLOPs: 2 * float64(s.YLen()) * float64(s.Taps()),
		Bytes: 4 * float64(s.XLen()+s.WLen()+s.K+s.YLen())}
}

// FusedWork is the fused layer's: the conv's FLOPs, and x, w, bias read once, the pooled output
// written once.
func FusedWork(s Shape) bench.Work {
	return bench.Work{FLOPs: 2 * float64(s.YLen()) * float64(s.Taps()),
		Bytes: 4 * float64(s.XLen()+s.WLen()+s.K+s.PoolLen())}
}

// Sample picks count distinct indices below n from seed, sorted; all of them when count >= n.
func Sample(n, count int, seed uint64) []int {
	if count >= n {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	seen := map[int]bool{}
	out := make([]int, 0, count)
	for len(out) < count {
		i := rng.IntN(n)
		if !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out
}
