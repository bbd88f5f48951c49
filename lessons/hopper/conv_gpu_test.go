//go:build !nocuda

package hopper

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/check"
	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/lessons/conv"
)

// convAwkward are layers off every tile: a tiny odd image, channels that are not a multiple of 8
// (the zero-padded copies), filters over one 256-wide tile and not a multiple of 8, rows wider than
// a tile (two tiles across), a 5 x 5 kernel with padding 2, a 1 x 1 kernel, no padding with a
// narrow output, and an odd count of pixel tiles (the cluster's second block past the last).
var convAwkward = []conv.Shape{
	{N: 2, C: 3, H: 7, W: 9, K: 5, R: 3, S: 1, P: 1},
	{N: 1, C: 20, H: 13, W: 130, K: 300, R: 3, S: 1, P: 1},
	{N: 3, C: 72, H: 17, W: 17, K: 40, R: 5, S: 1, P: 2},
	{N: 2, C: 64, H: 9, W: 9, K: 256, R: 1, S: 1, P: 0},
	{N: 1, C: 130, H: 31, W: 5, K: 17, R: 3, S: 1, P: 0},
	{N: 3, C: 256, H: 14, W: 14, K: 264, R: 3, S: 1, P: 1},
	{N: 2, C: 32, H: 12, W: 20, K: 256, R: 3, S: 1, P: 1},
	{N: 2, C: 16, H: 20, W: 140, K: 128, R: 3, S: 1, P: 0},
	{N: 1, C: 8, H: 9, W: 33, K: 256, R: 3, S: 1, P: 1},
}

// Every convolution step and variant (7, 8, 7 fitted in FP16 and in the float32 split) matches the
// float64 reference on every output of the awkward layers, with every output NaN-poisoned first,
// and on a sample of the deep layer (every output scanned for NaN).
func TestConvSteps(t *testing.T) {
	env := openHopper(t)
	for i, s := range append(append([]conv.Shape{}, convAwkward...), conv.Deep) {
		checked := 0
		if s == conv.Deep {
			checked = 4096
		}
		p, err := NewConvProblem(env, s, uint64(500+i), checked)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range AllConvs() {
			res, err := p.CheckConv(st, "")
			if err != nil {
				t.Errorf("%s on %v: %v", st.Name, s, err)
				continue
			}
			if !res.OK {
				t.Errorf("%s on %v: %v", st.Name, s, res.Err())
			}
		}
		p.Free()
	}
}

// One cluster walks every pixel tile of a layer with more super-tiles than clusters: the ring's
// phases run on across tiles.
func TestConvOneCluster(t *testing.T) {
	env := openHopper(t)
	p, err := NewConvProblem(env, conv.Shape{N: 2, C: 96, H: 24, W: 20, K: 300, R: 3, S: 1, P: 1}, 77, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	p.clusters = 1
	for _, st := range AllConvs() {
		if res, err := p.CheckConv(st, ""); err != nil || !res.OK {
			t.Errorf("%s with one cluster: %v %v", st.Name, err, res.Err())
		}
	}
}

// convStrided are strided layers for the fitted variants' space to depth: AlexNet's first layer in
// small (stride 4, 11 x 11 with padding 2, 3 channels: 48 channels of 3 x 3 taps), a stride of 2
// with filters over one n tile, a stride of 3 whose kernel is not a multiple of it, without padding.
var convStrided = []conv.Shape{
	{N: 2, C: 3, H: 39, W: 35, K: 96, R: 11, S: 4, P: 2},
	{N: 1, C: 5, H: 16, W: 18, K: 130, R: 3, S: 2, P: 1},
	{N: 2, C: 16, H: 15, W: 17, K: 8, R: 5, S: 3, P: 0},
}

// The fitted variants (FP16 and the float32 split) match the float64 reference on every output of
// the strided layers, NaN-poisoned first, at their formats' tolerances; with one cluster too.
func TestConvStrided(t *testing.T) {
	env := openHopper(t)
	for i, s := range convStrided {
		p, err := NewConvProblem(env, s, uint64(700+i), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, clusters := range []int{0, 1} {
			p.clusters = clusters
			for _, st := range []Step{ConvFitted, ConvSplit} {
				res, err := p.CheckConv(st, "")
				if err != nil {
					t.Errorf("%s on %v (%d clusters, 0: all): %v", st.Name, s, clusters, err)
					continue
				}
				if !res.OK {
					t.Errorf("%s on %v (%d clusters, 0: all): %v", st.Name, s, clusters, res.Err())
				}
			}
		}
		p.Free()
	}
}

// The fitted step picks the tiles its plan says on the awkward layers: k tiles of 16, 32 and 64
// channels, n tiles of 128 and 256 filters, each of the four pairs at least once, so that every
// swizzle mode of A and both wgmma widths run in TestConvSteps.
func TestConvFittedCoversTheTiles(t *testing.T) {
	env := openHopper(t)
	seen := map[[2]int]bool{}
	for _, s := range convAwkward {
		pl, err := ConvFitted.PlanConv(s, env.Device())
		if err != nil {
			t.Fatalf("%v: %v", s, err)
		}
		seen[[2]int{pl.BK, pl.BN}] = true
	}
	for _, want := range [][2]int{{16, 128}, {16, 256}, {32, 128}, {32, 256}, {64, 128}, {64, 256}} {
		if !seen[want] {
			t.Errorf("no awkward layer runs the fitted step with k tiles of %d and n tiles of %d", want[0], want[1])
		}
	}
}

// convEpilogueLayers are layers for the fused epilogue: one per k tile of the fitted step, with
// padding and without, filters off every n tile.
var convEpilogueLayers = []conv.Shape{
	{N: 2, C: 16, H: 20, W: 140, K: 128, R: 3, S: 1, P: 0},
	{N: 2, C: 64, H: 18, W: 18, K: 136, R: 3, S: 1, P: 0},
	{N: 1, C: 20, H: 13, W: 30, K: 300, R: 3, S: 1, P: 1},
}

// The fused epilogue (ReLU, then a second per-filter bias: KernelBench's level-2 problem 1) of
// every convolution step matches max(conv + bias, 0) + bias2 in float64 on every output, NaN-poisoned
// first, at the format's tolerance (the ReLU moves no output further from the reference than the
// conv's own error, and the second bias adds one float32 rounding); the plain checks refuse the
// problem while the epilogue is set, and take it again once it is cleared.
func TestConvEpilogue(t *testing.T) {
	env := openHopper(t)
	for i, s := range convEpilogueLayers {
		p, err := NewConvProblem(env, s, uint64(900+i), 0)
		if err != nil {
			t.Fatal(err)
		}
		bias2 := make([]float32, s.K)
		for k := range bias2 {
			bias2[k] = float32(k%7)/4 - 0.75 // negative and positive, so ReLU's zeros move
		}
		b2, err := gpu.Alloc[float32](env.Session, s.K)
		if err != nil {
			t.Fatal(err)
		}
		if err := b2.CopyFromHost(bias2); err != nil {
			t.Fatal(err)
		}
		if err := p.SetEpilogue(true, b2); err != nil {
			t.Fatal(err)
		}
		want := make([]float64, s.YLen())
		oh, ow := s.OH(), s.OW()
		for n := 0; n < s.N; n++ {
			for k := 0; k < s.K; k++ {
				for y := 0; y < oh; y++ {
					for x := 0; x < ow; x++ {
						want[((n*s.K+k)*oh+y)*ow+x] = math.Max(conv.ConvAt(s, p.In, n, k, y, x), 0) + float64(bias2[k])
					}
				}
			}
		}
		clipped := 0
		for n := 0; n < s.N; n++ {
			for k := 0; k < s.K; k++ {
				for j := 0; j < oh*ow; j++ {
					if conv.ConvAt(s, p.In, n, k, j/ow, j%ow) < 0 {
						clipped++
					}
				}
			}
		}
		if clipped == 0 || clipped == len(want) {
			t.Fatalf("%v: the ReLU clips %d of %d outputs; the test needs both kinds", s, clipped, len(want))
		}
		for _, st := range AllConvs() {
			if _, err := p.CheckConv(st, ""); err == nil || !strings.Contains(err.Error(), "epilogue") {
				t.Errorf("%s on %v: the plain check took a problem with an epilogue: %v", st.Name, s, err)
			}
			res, err := checkEpilogue(p, st, want)
			if err != nil {
				t.Errorf("%s on %v with ReLU and a second bias: %v", st.Name, s, err)
				continue
			}
			if !res.OK {
				t.Errorf("%s on %v with ReLU and a second bias: %v", st.Name, s, res.Err())
			}
		}
		if err := p.SetEpilogue(false, nil); err != nil {
			t.Fatal(err)
		}
		if res, err := p.CheckConv(ConvFitted, ""); err != nil || !res.OK {
			t.Errorf("%s on %v after the epilogue was cleared: %v %v", ConvFitted.Name, s, err, res.Err())
		}
		b2.Free()
		p.Free()
	}
}

// checkEpilogue runs conv step st once on p's NaN-poisoned output and compares every output with
// want at the tolerance of the step's format.
func checkEpilogue(p *ConvProblem, st Step, want []float64) (check.Result, error) {
	run, _, _, err := p.Launcher(st, "")
	if err != nil {
		return check.Result{}, err
	}
	y, err := p.Output()
	if err != nil {
		return check.Result{}, err
	}
	if err := y.Poison(); err != nil {
		return check.Result{}, err
	}
	if err := run(); err != nil {
		return check.Result{}, err
	}
	if err := p.env.Session.Synchronize(); err != nil {
		return check.Result{}, err
	}
	h, err := y.ToHost()
	if err != nil {
		return check.Result{}, err
	}
	got := make([]float64, len(want))
	for i := range got {
		got[i] = float64(h[i])
	}
	return check.Compare(got, want, conv.Tol(st.Products)), nil
}

// A layer the steps cannot take, and inputs the FP16 step cannot hold, are refused before anything
// runs, naming the limit.
func TestConvRefusals(t *testing.T) {
	env := openHopper(t)
	p, err := NewConvProblem(env, conv.Shape{N: 1, C: 8, H: 16, W: 16, K: 8, R: 3, S: 2, P: 1}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	for _, st := range AllConvs() {
		res, err := p.CheckConv(st, "")
		switch {
		case len(st.S2D) > 0 && (err != nil || !res.OK): // space to depth takes it
			t.Errorf("%s on a strided layer: %v %v", st.Name, err, res.Err())
		case len(st.S2D) == 0 && (err == nil || !strings.Contains(err.Error(), "stride 2")):
			t.Errorf("%s on a strided layer: %v", st.Name, err)
		}
	}
	if _, err := p.CheckConv(Split, ""); err == nil || !strings.Contains(err.Error(), "not a convolution step") {
		t.Errorf("the split as a convolution: %v", err)
	}
	big, err := NewConvProblem(env, conv.Shape{N: 1, C: 8, H: 8, W: 8, K: 8, R: 3, S: 1, P: 1}, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Free()
	big.In.X[5] = 1e6 // past fp16's 65504
	if _, err := big.CheckConv(ConvFP16, ""); err == nil || !strings.Contains(err.Error(), "fp16's range") {
		t.Errorf("the FP16 step on inputs beyond fp16: %v", err)
	}
}

// TestTuneConv times steps 7 and 8, cuDNN and lesson 05's steps on the deep layer (KERNELS_TUNE=1
// only: a look while writing the steps, not a test of speed).
func TestTuneConv(t *testing.T) {
	if os.Getenv("KERNELS_TUNE") == "" {
		t.Skip("set KERNELS_TUNE=1 to time the convolutions")
	}
	env := openHopper(t)
	run := env.NewRun(ID)
	if err := addConv(env, run, true, 1024); err != nil {
		t.Fatal(err)
	}
	for _, r := range run.Records {
		t.Logf("%-40s %-8s %9.1f us  rel L2 %.2e  correct %v  %s", r.Variant, r.DType, 1000*r.MedianMS, r.RelL2, r.Correct, r.Note)
	}
}

// Try runs a reader's copy of a step end to end (checked on the small problem and the sample of
// the large one, then timed beside the original): a 16-bit product, a float32-in product, a layer.
func TestTry(t *testing.T) {
	env := openHopper(t)
	for _, name := range []string{"3", "6", "7"} {
		st, err := StepByName(name)
		if err != nil {
			t.Fatal(err)
		}
		src, err := st.Source("")
		if err != nil {
			t.Fatal(err)
		}
		if err := Try(env, name, "// my copy\n"+src.Code); err != nil { // an edit: the reader's path
			t.Errorf("Try %s: %v", name, err)
		}
	}
}
