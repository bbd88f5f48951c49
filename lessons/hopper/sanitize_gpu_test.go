//go:build !nocuda

package hopper

import (
	"math"
	"testing"

	"github.com/cudalessons/cudalessons/helpers/gpu"
	"github.com/cudalessons/cudalessons/helpers/lab"
	"github.com/cudalessons/cudalessons/helpers/lab/labtest"
	kh "github.com/cudalessons/cudalessons/kernels/hopper"
	"github.com/cudalessons/cudalessons/lessons/conv"
	"github.com/cudalessons/cudalessons/lessons/matmul"
)

// sanitizeShapes are small enough for racecheck and reach every path: 64x128x64 is step 1's one
// tile; 200x264x72 is partial tiles in M, N and K (TMA's zero fill, the masked and clipped stores)
// and one super-tile whose second block lies partly past M; 640x512x320 is five k tiles (the
// rings wrap around) and 6 super-tiles of step 4, which the test also has one cluster walk alone
// (the ring's counters and phases carried from tile to tile).
var sanitizeShapes = []matmul.Shape{{M: 64, N: 128, K: 64}, {M: 200, N: 264, K: 72}, {M: 640, N: 512, K: 320}}

// sanitizeSliced is a product the split cuts into slices of K: one super-tile (72 x 40, partial in
// M and N) over 33 k tiles (K = 2100, the last partial), 2 slices on an H100 or H200.
var sanitizeSliced = matmul.Shape{M: 72, N: 40, K: 2100}

// sanitizeConv is a layer small enough for racecheck with channels (20) and filters (300) off the
// tiles: two pixel tiles across each row (the second mostly past the edge), two tiles of filters,
// and 9 k tiles per pixel tile (the rings wrap around).
var sanitizeConv = conv.Shape{N: 1, C: 20, H: 5, W: 130, K: 300, R: 3, S: 1, P: 1}

// TestSanitize launches every kernel of kernels/hopper (every step and variant, in both formats, and
// the float32-in steps with their first kernels) on sanitizeShapes, the convolutions with their
// layout passes on sanitizeConv, for cmd/sanitize's memcheck, racecheck and synccheck pass, and checks each
// result against the float64 reference; it fails unless every kernel of the folder was launched.
func TestSanitize(t *testing.T) {
	env := openHopper(t)
	for _, dtype := range DTypes {
		for i, s := range sanitizeShapes {
			p, err := NewProblem(env, s, dtype, uint64(60+i))
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range append(append([]Step{}, Steps...), Variants...) {
				if _, err := st.Plan(s, env.Device()); err != nil {
					continue
				}
				res, err := p.Check(st, "")
				if err != nil {
					t.Fatalf("%s %s on %v: %v", st.Name, dtype, s, err)
				}
				if !res.OK {
					t.Errorf("%s %s on %v: %v", st.Name, dtype, s, res.Err())
				}
			}
			if s.M == 640 {
				p.clusters = 1
				res, err := p.Check(Persistent, "")
				if err != nil || !res.OK {
					t.Errorf("%s %s on %v walked by one cluster: %v %v", Persistent.Name, dtype, s, err, res.Err())
				}
			}
			p.Free()
		}
	}
	for i, s := range sanitizeShapes[1:] {
		p, err := NewAccurateProblem(env, s, uint64(70+i))
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range Accurate {
			if res, err := p.Check(st, ""); err != nil || !res.OK {
				t.Errorf("%s on %v: %v %v", st.Name, s, err, res.Err())
			}
		}
		p.Free()
	}
	// The split's slices of K and their sum, walked by every cluster and then by one (the ring's
	// counters carried from slice to slice).
	ap, err := NewAccurateProblem(env, sanitizeSliced, 75)
	if err != nil {
		t.Fatal(err)
	}
	if n := Split.Slices(sanitizeSliced, env.Device()); n < 2 {
		t.Errorf("%v: %d slices of K on this GPU, want several", sanitizeSliced, n)
	}
	for _, clusters := range []int{0, 1} {
		ap.clusters = clusters
		if res, err := ap.Check(Split, ""); err != nil || !res.OK {
			t.Errorf("%s on %v in slices of K, %d clusters (0: all): %v %v", Split.Name, sanitizeSliced, clusters, err, res.Err())
		}
	}
	ap.Free()
	// The convolutions: a small layer off every tile, walked by every cluster and then by one.
	cp, err := NewConvProblem(env, sanitizeConv, 80, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, clusters := range []int{0, 1} {
		cp.clusters = clusters
		for _, st := range AllConvs() {
			if res, err := cp.CheckConv(st, ""); err != nil || !res.OK {
				t.Errorf("%s on %v with %d clusters (0: all): %v %v", st.Name, sanitizeConv, clusters, err, res.Err())
			}
		}
	}
	cp.Free()
	// The fused epilogue (ReLU and a second bias) on a small layer of 16 channels and 128 filters:
	// the fitted step's k tiles of 16 (A swizzled over 32 bytes) and n tiles of 128.
	sanitizeConvEpilogue(t, env)
	// Space to depth: AlexNet's first layer in small, through the fitted variants.
	sp, err := NewConvProblem(env, sanitizeConvStrided, 82, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []Step{ConvFitted, ConvSplit} {
		if res, err := sp.CheckConv(st, ""); err != nil || !res.OK {
			t.Errorf("%s on %v: %v %v", st.Name, sanitizeConvStrided, err, res.Err())
		}
	}
	sp.Free()
	labtest.LaunchedEvery(t, kh.Kernels, env)
}

// sanitizeConvStrided is AlexNet's first layer in small: stride 4, 11 x 11, padding 2, 3 channels.
var sanitizeConvStrided = conv.Shape{N: 1, C: 3, H: 23, W: 27, K: 96, R: 11, S: 4, P: 2}

// sanitizeConvSmall is KernelBench's level-1 problem 63 in small: 16 channels, 128 filters, no
// padding, rows wider than one pixel tile.
var sanitizeConvSmall = conv.Shape{N: 1, C: 16, H: 6, W: 140, K: 128, R: 3, S: 1, P: 0}

// sanitizeConvEpilogue runs every conv step with ReLU and a second bias on sanitizeConvSmall and
// checks every output against float64.
func sanitizeConvEpilogue(t *testing.T, env *lab.Env) {
	s := sanitizeConvSmall
	p, err := NewConvProblem(env, s, 81, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	bias2 := make([]float32, s.K)
	for k := range bias2 {
		bias2[k] = float32(k%5)/2 - 1
	}
	b2, err := gpu.Alloc[float32](env.Session, s.K)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Free()
	if err := b2.CopyFromHost(bias2); err != nil {
		t.Fatal(err)
	}
	if err := p.SetEpilogue(true, b2); err != nil {
		t.Fatal(err)
	}
	oh, ow := s.OH(), s.OW()
	want := make([]float64, s.YLen())
	for k := 0; k < s.K; k++ {
		for j := 0; j < oh*ow; j++ {
			want[k*oh*ow+j] = math.Max(conv.ConvAt(s, p.In, 0, k, j/ow, j%ow), 0) + float64(bias2[k])
		}
	}
	for _, st := range AllConvs() {
		if res, err := checkEpilogue(p, st, want); err != nil || !res.OK {
			t.Errorf("%s on %v with ReLU and a second bias: %v %v", st.Name, s, err, res.Err())
		}
	}
}
