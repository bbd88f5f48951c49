//go:build !nocuda

package hopper

import (
	"os"
	"strings"
	"testing"

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
}

// Both convolution steps match the float64 reference on every output of the awkward layers, with
// every output NaN-poisoned first, and on a sample of the deep layer (every output scanned for NaN).
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
		for _, st := range Convs {
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
	for _, st := range Convs {
		if res, err := p.CheckConv(st, ""); err != nil || !res.OK {
			t.Errorf("%s with one cluster: %v %v", st.Name, err, res.Err())
		}
	}
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
	for _, st := range Convs {
		if _, err := p.CheckConv(st, ""); err == nil || !strings.Contains(err.Error(), "stride 2") {
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
