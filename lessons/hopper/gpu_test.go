//go:build !nocuda

package hopper

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/bench"
	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	"github.com/cudalessons/cudalessons/lessons/matmul"
)

// Awkward shapes: the smallest tiles, partial tiles in M, N and K (TMA's zero fill and the masked
// stores), a single row, K of one 16-deep slice, shapes that leave the persistent step's second
// block of a cluster past M, and more super-tiles than clusters.
var awkward = shapes([][3]int{{64, 128, 64}, {128, 256, 128}, {8, 8, 8}, {1, 8, 16}, {200, 264, 72}, {129, 136, 1000},
	{300, 520, 264}, {1000, 3000, 776}, {640, 1280, 512}, {2048, 2048, 512}})

// shapes makes shapes from (M, N, K) triples.
func shapes(mnk [][3]int) []matmul.Shape {
	out := make([]matmul.Shape, len(mnk))
	for i, d := range mnk {
		out[i] = matmul.Shape{M: d[0], N: d[1], K: d[2]}
	}
	return out
}

// openHopper opens the lab and skips where the GPU is not a Hopper (the steps are refused there,
// which the no-GPU tests prove).
func openHopper(t *testing.T) *lab.Env {
	t.Helper()
	env := labtest.Open(t)
	if err := NeedHopper("tests", env.Device()); err != nil {
		t.Skip(err)
	}
	return env
}

// Every step in both formats on every awkward shape it takes (NaN-poisoned output, every element
// of the small ones against the float64 reference), with a refusal naming the limit on the others;
// the lesson's shape (sampled) in the long mode.
func TestStepsAreCorrect(t *testing.T) {
	env := openHopper(t)
	shapes := awkward
	if !testing.Short() {
		shapes = append(shapes, Article)
	}
	for _, dtype := range DTypes {
		for i, s := range shapes {
			p, err := NewProblem(env, s, dtype, uint64(80+i))
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range append(append([]Step{}, Steps...), Variants...) {
				if _, err := st.Plan(s, env.Device()); err != nil {
					if !strings.Contains(err.Error(), "multiple") {
						t.Errorf("%s refuses %v without naming the limit: %v", st.Name, s, err)
					}
					continue
				}
				res, err := p.Check(st, "")
				if err != nil {
					t.Fatalf("%s %s on %v: %v", st.Name, dtype, s, err)
				}
				if !res.OK {
					t.Errorf("%s %s on %v: %v", st.Name, dtype, s, res.Err())
				} else {
					t.Logf("%s %s on %v: rel L2 %.2e, max abs %.2e", st.Name, dtype, s, res.RelL2, res.MaxAbs)
				}
			}
			if st := Persistent; s.M*s.N >= 1<<20 { // one cluster walks every super-tile
				p.clusters = 1
				if res, err := p.Check(st, ""); err != nil || !res.OK {
					t.Errorf("%s %s on %v with one cluster: %v %v", st.Name, dtype, s, err, res.Err())
				}
			}
			p.Free()
		}
	}
}

// A tensor map the driver would refuse is refused first, naming the rule.
func TestTensorMapRefusals(t *testing.T) {
	env := openHopper(t)
	buf, err := gpu.Alloc[uint16](env.Session, 1024)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Free()
	view, _ := buf.View(1, 100)
	for _, c := range []struct {
		spec gpu.TensorMapSpec
		want string
	}{
		{gpu.TensorMapSpec{Base: buf, DType: gpu.TensorFP16, Rows: 10, Cols: 12, BoxRows: 8, BoxCols: 64, Swizzle: gpu.Swizzle128B}, "multiple of 16 bytes"},
		{gpu.TensorMapSpec{Base: view, DType: gpu.TensorFP16, Rows: 10, Cols: 8, BoxRows: 8, BoxCols: 64, Swizzle: gpu.Swizzle128B}, "16-byte aligned"},
		{gpu.TensorMapSpec{Base: buf, DType: gpu.TensorFP16, Rows: 10, Cols: 64, BoxRows: 8, BoxCols: 128, Swizzle: gpu.Swizzle128B}, "swizzle span"},
	} {
		if _, err := env.Session.NewTensorMap(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error saying %q", c.spec, err, c.want)
		}
	}
	if _, err := env.Session.NewTensorMap(gpu.TensorMapSpec{Base: buf, DType: gpu.TensorFP16, Rows: 16, Cols: 64, BoxRows: 8, BoxCols: 64, Swizzle: gpu.Swizzle128B}); err != nil {
		t.Errorf("a valid map was refused: %v", err)
	}
}

// TestTuneSteps times every step against cuBLAS at 4096^3 (KERNELS_TUNE=1 only: a look at the
// ladder while writing it, not a test of speed).
func TestTuneSteps(t *testing.T) {
	if os.Getenv("KERNELS_TUNE") == "" {
		t.Skip("set KERNELS_TUNE=1 to time the steps")
	}
	env := openHopper(t)
	shapes := []matmul.Shape{Article, {M: 8192, N: 8192, K: 8192}}
	tt, err := RunTorch(shapes, bench.Default)
	if err != nil {
		t.Logf("no cuBLAS baseline: %v", err)
	}
	for _, dtype := range DTypes {
		for _, s := range shapes {
			p, err := NewProblem(env, s, dtype, 7)
			if err != nil {
				t.Fatal(err)
			}
			vendor := 0.0
			if tt != nil {
				vendor = tt.Times[s.String()][dtype].MedianMS
				t.Logf("%s %v cuBLAS %.3f ms %.0f TFLOP/s", dtype, s, vendor, s.FLOPs()/vendor/1e9)
			}
			for _, st := range append(append([]Step{}, Steps...), Variants...) {
				rec, err := p.Measure("tune", st, "")
				if err != nil {
					if errors.Is(err, gpu.ErrUnsupported) {
						t.Logf("%s: %v", st.Name, err)
						continue
					}
					t.Errorf("%s %s %v: %v", st.Name, dtype, s, err)
					continue
				}
				_, prog, cfg, _ := p.Launcher(st, "")
				rep := prog.Report(st.Kernel, cfg.Block.Count(), cfg.SharedBytes)
				t.Logf("%s %v %-24s %.3f ms %6.0f TFLOP/s %s (regs %d, local %d, grid %v, smem %d, rel L2 %.1e)", dtype, s, st.Name, rec.MedianMS,
					s.FLOPs()/rec.MedianMS/1e9, pct(vendor, rec.MedianMS), rep.Registers, rep.LocalBytes, cfg.Grid, cfg.SharedBytes, rec.RelL2)
			}
			p.Free()
		}
	}
	p, err := NewAccurateProblem(env, Article, 7)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	var cub map[string]float64
	if tr, err := matmul.RunTorch([]matmul.Shape{Article}, nil, bench.Default); err == nil {
		cub = map[string]float64{"fp16x3": tr.Times[Article.String()]["fp32"].MedianMS, "tf32": tr.Times[Article.String()]["tf32"].MedianMS}
	}
	for _, st := range Accurate {
		rec, err := p.Measure("tune", st, "")
		if err != nil {
			t.Errorf("%s: %v", st.Name, err)
			continue
		}
		_, prog, cfg, _ := p.Launcher(st, "")
		rep := prog.Report(st.Kernel, cfg.Block.Count(), cfg.SharedBytes)
		base := cub[st.Products]
		t.Logf("float32 %v %-24s %.3f ms, %.1f%% of cuBLAS's speed (%s %.3f ms), rel L2 %.2e (regs %d, local %d, grid %v, smem %d)", Article, st.Name,
			rec.MedianMS, 100*base/rec.MedianMS, map[string]string{"fp16x3": "fp32", "tf32": "TF32"}[st.Products], base, rec.RelL2, rep.Registers, rep.LocalBytes, cfg.Grid, cfg.SharedBytes)
	}
}

func pct(vendor, ms float64) string {
	if vendor == 0 {
		return ""
	}
	return fmt.Sprintf("%5.1f%% of cuBLAS's speed", 100*vendor/ms)
}

// Each exercise's starter fails its check on the GPU and its solution passes it.
func TestExercises(t *testing.T) {
	env := openHopper(t)
	for _, x := range Exercises {
		r, err := x.Check(env, x.Starter)
		if err != nil {
			t.Fatal(err)
		}
		if r.Passed || !r.Compiled {
			t.Errorf("%s: the starter compiled %v and passed %v: %s", x.Title, r.Compiled, r.Passed, r.Reason)
		}
		sol, err := x.Solution()
		if err != nil {
			t.Fatal(err)
		}
		if r, err = x.Check(env, sol); err != nil || !r.Passed || !r.Ran || r.Mine.Median <= 0 {
			t.Errorf("%s: the solution: %+v, %v", x.Title, r, err)
		}
	}
}

// The float32-in steps (the split, TF32) on every awkward shape each takes (every output of the
// small ones against float64, NaN-poisoned), one cluster walking many super-tiles, and the lesson's
// shape in the long mode.
func TestAccurateStepsAreCorrect(t *testing.T) {
	env := openHopper(t)
	// 200 x 131 x 4200 and 256 x 256 x 65536 are cut into slices of K (Step.Slices): 4 of 16 or 17
	// k tiles over two ragged super-tiles, and 33 over KernelBench's problem 6's 2 super-tiles.
	shapes := append(shapes([][3]int{{8, 8, 8}, {200, 264, 72}, {129, 136, 1000}, {640, 512, 320}, {129, 131, 100}, {1, 1, 4},
		{1, 1, 1}, {3, 5, 7}, {255, 255, 255}, {130, 9, 33}, {200, 131, 4200}, {256, 256, 65536}}), matmul.Shape{M: 1000, N: 3000, K: 777})
	if !testing.Short() {
		shapes = append(shapes, Article)
	}
	for i, s := range shapes {
		p, err := NewAccurateProblem(env, s, uint64(120+i))
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range Accurate {
			if _, err := st.Plan(s, env.Device()); err != nil {
				if !strings.Contains(err.Error(), "multiple") {
					t.Errorf("%s refuses %v without naming the limit: %v", st.Name, s, err)
				}
				continue
			}
			p.clusters = 0
			res, err := p.Check(st, "")
			if err != nil {
				t.Fatalf("%s on %v: %v", st.Name, s, err)
			}
			if !res.OK {
				t.Errorf("%s on %v: %v", st.Name, s, res.Err())
			} else {
				t.Logf("%s on %v: rel L2 %.2e, max abs %.2e", st.Name, s, res.RelL2, res.MaxAbs)
			}
			if s.M == 640 || (s.M == 200 && s.K == 4200) {
				p.clusters = 1
				if res, err := p.Check(st, ""); err != nil || !res.OK {
					t.Errorf("%s on %v with one cluster: %v %v", st.Name, s, err, res.Err())
				}
			}
		}
		p.Free()
	}
}

// Multiply runs the split from SplitMinMACs up and lesson 03's pick below it or for inputs out of
// fp16's range, correct against float64 either way; the autograd op through it passes the
// finite-difference gradcheck, with the split forced on (every forward and backward product through
// it) and with the default threshold (none through it at these sizes).
func TestMultiplyAndItsOp(t *testing.T) {
	env := openHopper(t)
	forced := Multiplier{MinMACs: 0}
	for i, c := range []struct {
		mu   Multiplier
		s    matmul.Shape
		big  bool // an input whose row spans more binades than the fp16 split keeps
		want string
	}{
		{Multiplier{SplitMinMACs}, matmul.Shape{M: 1000, N: 3000, K: 777}, false, Split.Name},
		{Multiplier{SplitMinMACs}, matmul.Shape{M: 33, N: 17, K: 65}, false, Lesson03Prefix},
		{forced, matmul.Shape{M: 33, N: 17, K: 65}, false, Split.Name},
		{forced, matmul.Shape{M: 4097, N: 64, K: 16}, false, Split.Name},
		{forced, matmul.Shape{M: 40, N: 24, K: 16}, true, Lesson03Prefix},
	} {
		a, b := matmul.Inputs(c.s, uint64(300+i))
		if c.big {
			a[7] = 1e12
		}
		got, step, err := c.mu.Multiply(env, a, c.s.M, c.s.K, b, c.s.K, c.s.N)
		if err != nil {
			t.Fatalf("%v: %v", c.s, err)
		}
		if !strings.HasPrefix(step, c.want) {
			t.Errorf("%v ran %q, want %q", c.s, step, c.want)
		}
		sample := matmul.SampleOf(c.s, 4, 4, 512, 1)
		res := check.Compare(matmul.Gather(got, sample.Idx), matmul.Reference(c.s, a, b, sample.Idx), matmul.Tolerance(SplitDType, c.s.K))
		if !res.OK {
			t.Errorf("%v (%s): %v", c.s, step, res.Err())
		}
	}
	if _, _, err := Multiply(env, make([]float32, 6), 2, 3, make([]float32, 8), 4, 2); err == nil || !strings.Contains(err.Error(), "inner") {
		t.Errorf("mismatched inner dimensions: %v", err)
	}
	for _, c := range []struct {
		op matmul.Op
		s  matmul.Shape
	}{{forced.Op(env), matmul.Shape{M: 16, N: 24, K: 8}}, {forced.Op(env), matmul.Shape{M: 5, N: 3, K: 7}}, {GPUOp(env), matmul.Shape{M: 5, N: 3, K: 7}}} {
		res, err := matmul.GradCheck(c.op, c.s, 12)
		if err != nil {
			t.Fatal(err)
		}
		if err := res.Err(); err != nil {
			t.Errorf("gradcheck on %v: %v", c.s, err)
		}
	}
}

// Multiply (the split forced on) on lesson 03's hostile products: the split on moved rows and
// columns where every span fits fp16's window, lesson 03's choice elsewhere, every element within
// the rounding model's bound of the float64 product, Inf and NaN as float32 gives them.
func TestMultiplyHostile(t *testing.T) {
	env := openHopper(t)
	s := matmul.Shape{M: 256, N: 384, K: 160}
	forced := Multiplier{MinMACs: 0}
	for _, h := range matmul.HostileInputs(s, 13) {
		name, why, _, _ := forced.Choose(s, env.Device(), h.A, h.B)
		got, step, err := forced.Multiply(env, h.A, s.M, s.K, h.B, s.K, s.N)
		if err != nil {
			t.Fatalf("%s: %v", h.Name, err)
		}
		t.Logf("%s: %s (%s)", h.Name, step, why)
		dtype := SplitDType
		if step != Split.Name {
			dtype = matmul.Choose(s, env.Device(), h.A, h.B).Step.DType
		}
		if step != name || (h.Takes == "fp16x3") != (step == Split.Name) {
			t.Errorf("%s: ran %q, Choose says %q, built for a %s step", h.Name, step, name, h.Takes)
		}
		if bad, first := matmul.CompareBound(s, h.A, h.B, got, dtype); bad > 0 {
			t.Errorf("%s with %s: %d of %d elements out of bounds; first %s", h.Name, step, bad, len(got), first)
		}
	}
}
