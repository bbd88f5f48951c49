package kernelbench

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/compile"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	kb "github.com/cudalessons/cudalessons/helpers/kernelbench"
)

// small returns the small problem of an id with trial 0's tensors.
func small(t *testing.T, id string) (kb.Problem, [][]float32) {
	t.Helper()
	ps, err := kb.Select(kb.SmallProblems(), id)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	return p, kb.DrawTrial(p, kb.DrawParams(p), 0)
}

// The reductions' references against the formula written out another way: element by element,
// each output from its own walk of x (r outermost in the reference, innermost here).
func TestDimReductionReferences(t *testing.T) {
	for _, id := range []string{"47", "48", "49", "53", "51", "52"} {
		p, tensors := small(t, id)
		idx := []int{0, p.Batch() - 1}
		in := kb.SliceInputs(p, tensors, idx)
		got, err := Reference(p, in, len(idx))
		if err != nil {
			t.Fatal(err)
		}
		_, R, inner := p.Reduced()
		if len(got) != len(idx)*p.OutPer() || p.OutPer() != inner {
			t.Fatalf("%s: %d outputs for %d slices of %d", p.ID(), len(got), len(idx), inner)
		}
		want := make([]float64, len(got))
		for s := range idx {
			for i := range inner {
				col := make([]float64, R)
				for r := range R {
					col[r] = float64(in[0][(s*R+r)*inner+i])
				}
				var v float64
				switch p.Op {
				case kb.SumDim, kb.MeanDim:
					for _, c := range col {
						v += c
					}
					if p.Op == kb.MeanDim {
						v /= float64(R)
					}
				case kb.MaxDim, kb.ArgmaxDim:
					best := 0
					for r, c := range col {
						if c > col[best] {
							best = r
						}
					}
					v = col[best]
					if p.Op == kb.ArgmaxDim {
						v = float64(best)
					}
				case kb.MinDim, kb.ArgminDim:
					best := 0
					for r, c := range col {
						if c < col[best] {
							best = r
						}
					}
					v = col[best]
					if p.Op == kb.ArgminDim {
						v = float64(best)
					}
				}
				want[s*inner+i] = v
			}
		}
		if c := check.Compare(got, want, check.FP64); !c.OK {
			t.Errorf("%s: %v", p.ID(), c)
		}
	}
}

// Ties go to the first index, as in PyTorch: a column of equal values gives 0, and a maximum
// repeated at rows 3 and 5 gives 3.
func TestArgTiesTakeTheFirstIndex(t *testing.T) {
	for _, id := range []string{"51", "52"} {
		p, _ := small(t, id)
		_, R, inner := p.Reduced()
		x := make([]float32, R*inner)
		for r := range R {
			x[r*inner+1] = 0.5
		}
		x[3*inner+1], x[5*inner+1] = 2, 2
		if p.Op == kb.ArgminDim {
			x[3*inner+1], x[5*inner+1] = -2, -2
		}
		got, err := Reference(p, [][]float32{x}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != 0 || got[1] != 3 {
			t.Errorf("%s: ties give %g and %g, want 0 and 3", p.ID(), got[0], got[1])
		}
	}
}

// The row ops' references keep what their formulas promise: log_softmax's exponentials sum to 1,
// RMS norm's outputs have a mean square of ms / (ms + eps), L1 rows a mean |y| of 1, L2 rows a
// norm of 1.
func TestRowOpReferences(t *testing.T) {
	for _, id := range []string{"24", "36", "38", "39"} {
		p, tensors := small(t, id)
		idx := []int{1}
		in := kb.SliceInputs(p, tensors, idx)
		got, err := Reference(p, in, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != p.OutPer() {
			t.Fatalf("%s: %d outputs, want %d", p.ID(), len(got), p.OutPer())
		}
		_, R, inner := p.Reduced()
		var v, want float64
		switch p.Op {
		case kb.LogSoftmax:
			for _, y := range got {
				v += math.Exp(y)
			}
			want = 1
		case kb.RMSNorm:
			i := inner / 2 // one position: its C values
			var ms, ys float64
			for c := range R {
				ms += float64(in[0][c*inner+i]) * float64(in[0][c*inner+i]) / float64(R)
				ys += got[c*inner+i] * got[c*inner+i] / float64(R)
			}
			v, want = ys, ms/(ms+p.Eps)
		case kb.L1Norm:
			for _, y := range got {
				v += math.Abs(y) / float64(len(got))
			}
			want = 1
		case kb.L2Norm:
			for _, y := range got {
				v += y * y
			}
			v, want = math.Sqrt(v), 1
		}
		if math.Abs(v-want) > 1e-12 {
			t.Errorf("%s: %.15g, want %.15g", p.ID(), v, want)
		}
	}
}

// sumTol holds for a float32 sum of torch.rand values taken in the longest order (one after the
// other), and fails a sum that dropped one term: it is a rounding bound, not a loose one.
func TestSumToleranceIsARoundingBound(t *testing.T) {
	const n, cols = 4096, 512
	r := rand.New(rand.NewPCG(1, 2))
	got, dropped, want := make([]float64, cols), make([]float64, cols), make([]float64, cols)
	for c := range cols {
		var s32, d32 float32
		var s64 float64
		for i := range n {
			v := r.Float32()
			s32 += v
			if i != n/2 {
				d32 += v
			}
			s64 += float64(v)
		}
		got[c], dropped[c], want[c] = float64(s32), float64(d32), s64
	}
	tol := sumTol(n, 0)
	if c := check.Compare(got, want, tol); !c.OK {
		t.Errorf("a sequential float32 sum: %v", c)
	}
	if c := check.Compare(dropped, want, tol); c.OK {
		t.Errorf("a sum missing a term passed: %v", c)
	}
	if Exact.RelL2 != 0 || Exact.Rel != 0 || Exact.Abs != 0 {
		t.Errorf("exact is %+v", Exact)
	}
}

// How many threads share a column at KernelBench's shape, from the device: 524160 columns are
// under four waves of an H100's or H200's 132 SMs x 2048 threads, so four threads share each; a
// GPU with a quarter of the SMs needs one; R too short to split keeps one.
func TestDimReduceSplitFromTheDevice(t *testing.T) {
	for _, key := range []string{"h100-sxm", "h200"} {
		prof, err := gpu.LookupProfile(key)
		if err != nil {
			t.Fatal(err)
		}
		d := prof.Device()
		if by := DimReduceSplit(d, 128, 4096, 4095); by != 4 {
			t.Errorf("%s: %d threads a column", key, by)
		}
		if by := DimReduceSplit(d, 128, 100, 4095); by != 1 {
			t.Errorf("%s, R = 100: %d threads a column", key, by)
		}
		d.SMs /= 4
		if by := DimReduceSplit(d, 128, 4096, 4095); by != 1 {
			t.Errorf("%s with 33 SMs: %d threads a column", key, by)
		}
	}
}

// row_norm.cu's grid from the device: 132 blocks on an H100 or H200 for rows of 65535 floats (132
// rows of 256 KB fit three quarters of 50 MB of L2), fewer for rows too long, never more than rows.
func TestRowNormGridFromTheDevice(t *testing.T) {
	for _, key := range []string{"h100-sxm", "h200"} {
		prof, err := gpu.LookupProfile(key)
		if err != nil {
			t.Fatal(err)
		}
		d := prof.Device()
		if g := RowNormGrid(d, 32768, 65535); g != d.SMs {
			t.Errorf("%s: %d blocks", key, g)
		}
		if g := RowNormGrid(d, 32768, 1<<20); g*4<<20 > d.L2Bytes*3/4 || g < 1 {
			t.Errorf("%s, rows of 4 MB: %d blocks", key, g)
		}
		if g := RowNormGrid(d, 6, 5001); g != 6 {
			t.Errorf("%s, 6 rows: %d blocks", key, g)
		}
	}
}

// Every variant of the reductions' kernels compiles with NVRTC (no GPU needed): each OP at each
// BY, RMS norm at 64 and at its most channels, both row norms.
func TestReductionKernelsCompile(t *testing.T) {
	type build struct {
		src     compile.Source
		kernel  string
		defines []string
	}
	var builds []build
	for op := 0; op <= 5; op++ {
		for _, by := range []string{"1", "2", "4", "8"} {
			builds = append(builds, build{kb.DimReduce(), kb.DimReduceKernel, []string{"OP=" + string(rune('0'+op)), "BY=" + by}})
		}
	}
	builds = append(builds, build{kb.RMSNormSource(), kb.RMSNormKernel, []string{"C=64"}}, build{kb.RMSNormSource(), kb.RMSNormKernel, []string{"C=128"}},
		build{kb.RowNorm(), kb.RowNormKernel, []string{"NORM=1"}}, build{kb.RowNorm(), kb.RowNormKernel, []string{"NORM=2"}})
	for _, b := range builds {
		res, err := compile.PTX(b.src, compile.Options{Arch: "compute_75", Defines: b.defines})
		if err != nil {
			t.Fatalf("%s %v: %v", b.src.Name, b.defines, err)
		}
		if !strings.Contains(res.PTX, b.kernel) {
			t.Errorf("%s %v: no %s in the PTX", b.src.Name, b.defines, b.kernel)
		}
		if res.Log != "" && strings.Contains(strings.ToLower(res.Log), "warning") {
			t.Errorf("%s %v: %s", b.src.Name, b.defines, res.Log)
		}
	}
}
